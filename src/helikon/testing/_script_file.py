"""`ScriptFile`: model scripts in a JSON file, a default list plus per-case lists."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from helikon.core._internal.carrier import carrier
from helikon.core.exceptions import UserError
from helikon.core.model import MODEL_EVENT_ADAPTER, ModelEvent

if TYPE_CHECKING:
    from pathlib import Path


@carrier(kw_only=False)
class ScriptFile:
    """Scripts for `MockModel`, loaded from JSON.

    The file holds `"default"` (a list of scripts, each a list of `ModelEvent` objects in
    their JSON form) and optionally `"cases"`, a map from case id to such a list:

    ```json
    {"default": [[{"type": "token_delta", "text": "Hi"}, {"type": "finish", "reason": "stop"}]],
     "cases": {"case-1": [[{"type": "token_delta", "text": "Hello"}, {"type": "finish"}]]}}
    ```
    """

    default: list[list[ModelEvent]]
    cases: dict[str, list[list[ModelEvent]]] = field(default_factory=lambda: {})

    @classmethod
    def load(cls, path: str | Path) -> ScriptFile:
        """Read and validate a script file."""
        from pathlib import Path  # only a file load needs it (~1 ms of importing helikon.testing)

        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read script file {path}: {exc.strerror}") from exc
        return cls.loads(text, source=str(path))

    @classmethod
    def loads(cls, text: str, *, source: str = "<string>") -> ScriptFile:
        """Parse a script file's JSON text; errors name the source and the failing entry."""
        try:
            data: Any = json.loads(text)
        except ValueError as exc:
            raise UserError(f"{source}: not valid JSON: {exc}") from exc
        if not isinstance(data, dict) or "default" not in data:
            raise UserError(f'{source}: expected an object with a "default" list of scripts')
        default = _scripts(data["default"], f'{source}: "default"')
        cases_data: Any = data.get("cases", {})  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if not isinstance(cases_data, dict):
            raise UserError(f'{source}: "cases" must be an object mapping case ids to script lists')
        cases = {str(k): _scripts(v, f'{source}: cases["{k}"]') for k, v in cases_data.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        return cls(default, cases)

    def scripts(self, case_id: str | None = None) -> list[list[ModelEvent]]:
        """The scripts for `case_id`, falling back to the defaults."""
        if case_id is not None and case_id in self.cases:
            return self.cases[case_id]
        return self.default

    def dumps(self) -> str:
        """The file's JSON text."""

        def dump(scripts: Sequence[Sequence[ModelEvent]]) -> list[list[Any]]:
            return [[MODEL_EVENT_ADAPTER.dump_python(e) for e in s] for s in scripts]

        data: dict[str, Any] = {"default": dump(self.default)}
        if self.cases:
            data["cases"] = {k: dump(v) for k, v in self.cases.items()}
        return json.dumps(data, indent=2)


def _scripts(value: Any, where: str) -> list[list[ModelEvent]]:
    from pydantic import ValidationError

    if not isinstance(value, list):
        raise UserError(f"{where}: expected a list of scripts (each a list of events)")
    out: list[list[ModelEvent]] = []
    for i, script in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        if not isinstance(script, list):
            raise UserError(f"{where}[{i}]: expected a list of events")
        events: list[ModelEvent] = []
        for j, event in enumerate(script):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            try:
                events.append(MODEL_EVENT_ADAPTER.validate_python(event))
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                loc = ".".join(str(p) for p in first["loc"])
                detail = f"{loc}: {first['msg']}" if loc else first["msg"]
                raise UserError(f"{where}[{i}][{j}]: not a model event ({detail})") from None
        out.append(events)
    return out
