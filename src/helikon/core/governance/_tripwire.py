"""How a tripped guardrail is named in the run's error: which guardrail, what kind, its info.

Example:
    ```python
    from helikon import GuardrailVerdict
    from helikon.core.governance._tripwire import tripwire_message

    verdict = GuardrailVerdict.tripwire("input_policy", {"matched": "PRIVATE KEY"}, guardrail="BlockSecrets")
    message = tripwire_message("input", verdict)
    assert message == 'the input guardrail BlockSecrets tripped (input_policy): {"matched":"PRIVATE KEY"}'
    ```
"""

from __future__ import annotations

import json

from . import GuardrailVerdict

_MAX_INFO = 200  # enough of the info to see why; the whole of it is on GuardrailTriggered


def guardrail_name(guardrail: object) -> str:
    """A guardrail's `name` attribute when it has one, else its class name."""
    name = getattr(guardrail, "name", None)
    return name if isinstance(name, str) and name else type(guardrail).__name__


def tripwire_message(stage: str, verdict: GuardrailVerdict) -> str:
    """The `AgentError.message` of a run that `verdict` halted at `stage` (`input` or `output`)."""
    info = verdict.info
    if verdict.kind == "other" and isinstance(info, dict) and info.keys() == {"guardrail", "error"}:
        return f"the {stage} guardrail {info['guardrail']} raised {info['error']}"
    if verdict.kind == "other" and isinstance(info, dict) and info.keys() == {"guardrail", "returned"}:
        return (
            f"the {stage} guardrail {info['guardrail']} returned {info['returned']}, not a GuardrailVerdict"
        )
    who = f"the {stage} guardrail {verdict.guardrail}" if verdict.guardrail else f"an {stage} guardrail"
    if info is None:
        return f"{who} tripped ({verdict.kind})"
    text = json.dumps(info, ensure_ascii=False, separators=(",", ":"), default=repr)
    if len(text) > _MAX_INFO:
        text = text[: _MAX_INFO - 3] + "..."
    return f"{who} tripped ({verdict.kind}): {text}"


__all__ = ["guardrail_name", "tripwire_message"]
