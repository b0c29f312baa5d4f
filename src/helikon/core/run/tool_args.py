"""Tool-call arguments as the model streams them: parsed, within the depth and size limits.

Arguments past a limit are never parsed (a deep enough document makes `json.loads`
raise `RecursionError`, and one that parses would break every encoder after it). The
call keeps the first characters of the text with a marker saying which limit it broke,
so the session log stays small and readable, and the tool layer answers the model with
an invalid-arguments result that names the limit.
"""

from __future__ import annotations

import json
import re

from .._internal.json_value import JsonValue
from ..exceptions import InvalidArgs

MAX_TOOL_ARGS_DEPTH = 64
"""How deeply a tool call's arguments may nest arrays and objects (the arguments object is level 1)."""

MAX_TOOL_ARGS_CHARS = 4 * 1024 * 1024
"""How long a tool call's arguments may be, in characters of JSON text."""

KEPT_CHARS = 256
"""How much of the text of over-limit arguments the call keeps, for the model and the log."""

DEPTH_CUT = f" ...[cut: nested more than {MAX_TOOL_ARGS_DEPTH} levels deep]"
SIZE_CUT = f" ...[cut: longer than {MAX_TOOL_ARGS_CHARS:,} characters]"

DEPTH_MESSAGE = (
    f"Error: invalid arguments: they are nested more than {MAX_TOOL_ARGS_DEPTH} levels deep, "
    "the limit for tool arguments. Call the tool again with flatter arguments that match its schema."
)
SIZE_MESSAGE = (
    f"Error: invalid arguments: they are longer than {MAX_TOOL_ARGS_CHARS:,} characters, "
    "the limit for tool arguments. Call the tool again with less data per call."
)

# A JSON string (to its closing quote, or as far as it goes: it never fails, so it never
# backtracks), or one bracket. Strings are skipped whole: brackets inside them do not nest.
_TOKEN = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?|[\[\]{}]', re.DOTALL)


def parse_args(raw: str) -> JsonValue:
    """The arguments `raw` holds; the raw text when it is not JSON, cut when over a limit."""
    if not raw:
        return {}
    if len(raw) > MAX_TOOL_ARGS_CHARS:
        return raw[:KEPT_CHARS] + SIZE_CUT
    # Nesting needs a bracket per level: few brackets in all (the usual case) cannot be deep.
    if raw.count("[") + raw.count("{") > MAX_TOOL_ARGS_DEPTH and nested_deeper(raw, MAX_TOOL_ARGS_DEPTH):
        return raw[:KEPT_CHARS] + DEPTH_CUT
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: the stack was deep already
        return raw  # kept verbatim: the tool reports it to the model as invalid arguments


def args_object(args: JsonValue) -> JsonValue:
    """The arguments a tool (or a typed handoff) validates: JSON text parsed, none as `{}`.

    Raises:
        InvalidArgs: The text is not JSON; the message goes back to the model.
    """
    if isinstance(args, str):
        try:
            return json.loads(args) if args.strip() else {}
        except ValueError as exc:
            raise InvalidArgs([f"the arguments are not valid JSON: {exc}"]) from None
    return {} if args is None else args


def nested_deeper(text: str, limit: int) -> bool:
    """Whether the JSON `text` nests arrays and objects more than `limit` levels deep.

    A loop, not a recursion, so any text is safe; it stops at the first level past `limit`.
    """
    depth = 0
    for match in _TOKEN.finditer(text):
        char = text[match.start()]
        if char == "[" or char == "{":
            depth += 1
            if depth > limit:
                return True
        elif char != '"':
            depth -= 1
    return False


def over_limit_message(args: str) -> str | None:
    """What the model reads for arguments `parse_args` cut at a limit; None for any other text."""
    if args.endswith(DEPTH_CUT):
        return DEPTH_MESSAGE
    if args.endswith(SIZE_CUT):
        return SIZE_MESSAGE
    return None
