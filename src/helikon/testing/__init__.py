"""Test doubles for your own tests: scripted models and the helpers to write scripts.

Example:
    ```python
    from helikon import LlmAgent
    from helikon.testing import MockModel, text_turn, tool_call_turn

    model = MockModel.with_scripts([tool_call_turn("search", {"q": "x"}), text_turn("done")])
    ```
"""

from ._capture import CapturedRequest, capture_requests
from ._mock_model import FunctionModel, MockModel, ScriptFunction
from ._script_file import ScriptFile
from ._scripts import (
    Delay,
    Script,
    ScriptStep,
    handoff_turn,
    reasoning_turn,
    text_turn,
    tool_call_turn,
    tool_calls_turn,
)
from ._session_scripts import scripts_from_session
from ._test_model import TestModel

__all__ = [
    "CapturedRequest",
    "Delay",
    "FunctionModel",
    "MockModel",
    "Script",
    "ScriptFile",
    "ScriptFunction",
    "ScriptStep",
    "TestModel",
    "capture_requests",
    "handoff_turn",
    "reasoning_turn",
    "scripts_from_session",
    "text_turn",
    "tool_call_turn",
    "tool_calls_turn",
]
