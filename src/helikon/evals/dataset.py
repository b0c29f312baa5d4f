r"""Eval datasets: `EvalCase` (one or several turns), `EvalDataset` read from JSONL.

One case per line of a JSONL file (blank lines skipped):

```text
{"id": "refund", "input": "Refund order 7", "expected": "Refunded.", "expected_tools": ["refund"]}
{"turns": [{"input": "I am Ada."}, {"input": "Who am I?", "expected": "Ada."}], "metadata": {"tag": "memory"}}
```

`input` is the user's turn; `expected` (a string, or any JSON value for a structured
answer) is compared with the final answer; `expected_tools` lists the tool calls the run
should make, each a name or `{"name": ..., "args": {...}}`; `metadata` is yours; `id`
defaults to `case-<line>`. A multi-turn case has `turns` instead, each with its own
`input`, `expected` and `expected_tools`, run one after the other on one session and
scored per turn. A line that is not a case raises `DatasetError` naming the line and the
field. `dataset.schema.json` (beside this module, `EvalDataset.json_schema()`) describes a
line, for editor completion.

Example:
    ```python
    from helikon.evals import EvalDataset

    data = EvalDataset.from_jsonl_str(
        '{"input": "2+2?", "expected": "4"}\n\n{"id": "chat", "turns": [{"input": "hi"}, {"input": "bye"}]}'
    )
    assert [c.id for c in data] == ["case-1", "chat"] and len(data.cases[1].turns) == 2
    ```
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..core._internal.json_value import JsonObject, JsonValue
from ..core.exceptions import UserError

if TYPE_CHECKING:
    from ..core.session import Session

_CASE_KEYS = frozenset(("id", "input", "expected", "expected_tools", "metadata", "turns"))
_TURN_KEYS = frozenset(("input", "expected", "expected_tools"))


class DatasetError(UserError):
    """A dataset line that is not a case: the message names the line and the field."""


@dataclass(frozen=True, slots=True)
class ExpectedTool:
    """A tool call a turn should make: its `name`, and the `args` it should have (None: any)."""

    name: str
    args: JsonObject | None = None

    def to_json(self) -> JsonValue:
        """The form a dataset line writes: the name alone, or `{"name", "args"}`."""
        return self.name if self.args is None else {"name": self.name, "args": self.args}


@dataclass(frozen=True, slots=True)
class EvalTurn:
    """One user turn of a case and what to expect of the answer to it."""

    input: str
    expected: JsonValue = None
    expected_tools: tuple[ExpectedTool, ...] | None = None
    """None: the turn says nothing about tools (a trajectory evaluator skips it)."""


@dataclass(frozen=True, slots=True)
class EvalCase:
    """A case of a dataset: one turn or several, an id, and your metadata.

    `input`, `expected` and `expected_tools` are the last turn's (the only one, for a
    single-turn case). An evaluator is handed one case per turn (`turn_case`).
    """

    id: str
    turns: tuple[EvalTurn, ...]
    metadata: JsonObject = field(default_factory=lambda: {})

    @staticmethod
    def of(
        input: str,
        *,
        id: str = "case",
        expected: JsonValue = None,
        expected_tools: Sequence[str | ExpectedTool] | None = None,
        metadata: JsonObject | None = None,
    ) -> EvalCase:
        """A single-turn case, built in code."""
        tools = None if expected_tools is None else tuple(_tool(t, f"case {id!r}") for t in expected_tools)
        return EvalCase(id=id, turns=(EvalTurn(input, expected, tools),), metadata=dict(metadata or {}))

    @property
    def input(self) -> str:
        """The (last) turn's input."""
        return self.turns[-1].input

    @property
    def expected(self) -> JsonValue:
        """The (last) turn's expected answer."""
        return self.turns[-1].expected

    @property
    def expected_tools(self) -> tuple[ExpectedTool, ...] | None:
        """The (last) turn's expected tool calls."""
        return self.turns[-1].expected_tools

    @property
    def multi_turn(self) -> bool:
        """Whether the case has several turns."""
        return len(self.turns) > 1

    @staticmethod
    async def from_session(
        session: Session,
        *,
        upto_seq: int | None = None,
        id: str = "session",
        metadata: JsonObject | None = None,
    ) -> EvalCase:
        """A case from a recorded conversation: production becomes a test.

        Each user message starts a turn: its text is the turn's input, the model's last
        answer in the turn its `expected`, the tool calls made in the turn (names and
        arguments) its `expected_tools`. `upto_seq` stops at that event of the log
        (included). Replay the recorded model with `MockModel.from_session`.

        Raises:
            UserError: The conversation (up to `upto_seq`) has no user message.
        """
        from ..core.items import AssistantMessage, ToolCall, UserMessage
        from ..core.session import SequenceId, project

        entries = await session.events()
        if upto_seq is not None:
            entries = [e for e in entries if e.seq <= SequenceId(upto_seq)]
        turns: list[EvalTurn] = []
        text: str | None = None
        answer: str | None = None
        tools: list[ExpectedTool] = []
        for item in [*project([e.event for e in entries]).messages, None]:
            if item is None or isinstance(item, UserMessage):
                if text is not None:
                    turns.append(EvalTurn(text, answer, tuple(tools)))
                if item is not None:
                    text, answer, tools = item.text, None, []
            elif isinstance(item, AssistantMessage) and item.text:
                answer = item.text
            elif isinstance(item, ToolCall):
                args = item.args if isinstance(item.args, dict) else None
                tools.append(ExpectedTool(item.name, cast("JsonObject | None", args)))
        if not turns:
            raise UserError("EvalCase.from_session: the conversation has no user message to make a turn of")
        return EvalCase(id=id, turns=tuple(turns), metadata=dict(metadata or {}))

    def turn_case(self, index: int) -> EvalCase:
        """The case as an evaluator sees turn `index`: that turn alone, the same id and metadata."""
        if not self.multi_turn:
            return self
        return EvalCase(id=self.id, turns=(self.turns[index],), metadata=self.metadata)

    @staticmethod
    def from_json(line: JsonObject) -> EvalCase:
        """The case of a dataset line given as an object (what `to_json` gives).

        Raises:
            DatasetError: It is not a case (the message names the field).
        """
        return _case(json.dumps(line), 1, where="the case")

    def to_json(self) -> JsonObject:
        """The case as a dataset line writes it."""

        def turn(t: EvalTurn) -> JsonObject:
            out: JsonObject = {"input": t.input}
            if t.expected is not None:
                out["expected"] = t.expected
            if t.expected_tools is not None:
                out["expected_tools"] = [e.to_json() for e in t.expected_tools]
            return out

        line: JsonObject = {"id": self.id}
        if self.multi_turn:
            line["turns"] = [turn(t) for t in self.turns]
        else:
            line.update(turn(self.turns[0]))
        if self.metadata:
            line["metadata"] = self.metadata
        return line


@dataclass(frozen=True, slots=True)
class EvalDataset:
    """The cases of an eval, in order. Iterate it, or read `cases`."""

    cases: tuple[EvalCase, ...]
    name: str = "dataset"

    def __iter__(self) -> Iterator[EvalCase]:
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)

    @staticmethod
    def from_jsonl_str(text: str, *, name: str = "dataset") -> EvalDataset:
        """The dataset of a JSONL text (one case per line, blank lines skipped).

        Raises:
            DatasetError: A line is no JSON object, a field has the wrong type, an unknown
                field is present, or two cases share an id. The message names the line.
        """
        cases: list[EvalCase] = []
        seen: dict[str, int] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            case = _case(line, number)
            if case.id in seen:
                raise DatasetError(
                    f"{name} line {number}: id {case.id!r} is already the id of line {seen[case.id]}"
                )
            seen[case.id] = number
            cases.append(case)
        return EvalDataset(tuple(cases), name)

    @staticmethod
    def from_jsonl_path(path: str | Path) -> EvalDataset:
        """The dataset of a JSONL file (its name is the file's stem)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise DatasetError(f"cannot read the dataset {str(path)!r}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise DatasetError(f"the dataset {str(path)!r} is not UTF-8: {exc}") from None
        return EvalDataset.from_jsonl_str(text, name=path.stem)

    @staticmethod
    def json_schema() -> JsonObject:
        """The JSON Schema of one dataset line (also shipped as `helikon/evals/dataset.schema.json`)."""
        loaded: Any = json.loads((Path(__file__).parent / "dataset.schema.json").read_text(encoding="utf-8"))
        return loaded


def _case(line: str, number: int, where: str = "") -> EvalCase:
    where = where or f"line {number}"
    try:
        data: Any = json.loads(line)
    except ValueError as exc:
        raise DatasetError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise DatasetError(f"{where}: a case is a JSON object, not {type(data).__name__}")
    fields = cast("dict[str, Any]", data)
    unknown = sorted(set(fields) - _CASE_KEYS)
    if unknown:
        raise DatasetError(
            f"{where}: unknown field {unknown[0]!r} (a case has {', '.join(sorted(_CASE_KEYS))})"
        )
    case_id = fields.get("id", f"case-{number}")
    if not isinstance(case_id, str) or not case_id:
        raise DatasetError(f"{where}: field 'id' must be a non-empty string, not {case_id!r}")
    metadata: object = fields.get("metadata", {})
    if not isinstance(metadata, dict):
        raise DatasetError(f"{where}: field 'metadata' must be an object, not {type(metadata).__name__}")
    if "turns" in fields:
        if any(key in fields for key in _TURN_KEYS):
            raise DatasetError(f"{where}: a case has 'turns' or 'input', not both")
        raw_turns: object = fields["turns"]
        if not isinstance(raw_turns, list) or not raw_turns:
            raise DatasetError(f"{where}: field 'turns' must be a non-empty list of turns")
        turns = tuple(_turn(t, f"{where}, turns[{i}]") for i, t in enumerate(cast("list[Any]", raw_turns)))
    else:
        turns = (_turn(fields, where, keys=_CASE_KEYS),)
    return EvalCase(id=case_id, turns=turns, metadata=cast("JsonObject", metadata))


def _turn(data: Any, where: str, keys: frozenset[str] = _TURN_KEYS) -> EvalTurn:
    if not isinstance(data, dict):
        raise DatasetError(f"{where}: a turn is a JSON object, not {type(data).__name__}")
    fields = cast("dict[str, Any]", data)
    unknown = sorted(set(fields) - keys)
    if unknown:
        raise DatasetError(
            f"{where}: unknown field {unknown[0]!r} (a turn has {', '.join(sorted(_TURN_KEYS))})"
        )
    text = fields.get("input")
    if not isinstance(text, str):
        raise DatasetError(f"{where}: field 'input' must be a string, not {text!r}")
    tools: object = fields.get("expected_tools")
    if tools is not None and not isinstance(tools, list):
        raise DatasetError(f"{where}: field 'expected_tools' must be a list of tool names or {{name, args}}")
    listed = cast("list[Any]", tools or [])
    expected_tools = None if tools is None else tuple(_tool(t, f"{where}, expected_tools") for t in listed)
    return EvalTurn(text, fields.get("expected"), expected_tools)


def _tool(entry: Any, where: str) -> ExpectedTool:
    if isinstance(entry, ExpectedTool):
        return entry
    if isinstance(entry, str) and entry:
        return ExpectedTool(entry)
    if isinstance(entry, dict):
        spec = cast("dict[str, Any]", entry)
        name: object = spec.get("name")
        args: object = spec.get("args")
        extra = sorted(set(spec) - {"name", "args"})
        if isinstance(name, str) and name and (args is None or isinstance(args, dict)) and not extra:
            return ExpectedTool(name, cast("JsonObject | None", args))
    raise DatasetError(
        f'{where}: {entry!r} is no tool call: give a name, or {{"name": ..., "args": {{...}}}}'
    )


__all__ = ["DatasetError", "EvalCase", "EvalDataset", "EvalTurn", "ExpectedTool"]
