"""The file tools: Read, Write, Edit, Glob and Grep, each confined to one `Sandbox`.

The seam is `Sandbox` (`sandbox.py`): a directory capability every tool is built on
(`ReadTool(sandbox)`). The tools resolve each path beneath the sandbox's root descriptor
with the kernel's help, which decides in the same call that opens the file (`_confine.py`:
the rule list, every refusal naming its rule); `_walk.py` is the confined directory walk
of Glob and Grep, `_text.py` how a file's text is shown and written back.
"""

from .edit import EditTool
from .read import ReadTool
from .sandbox import Sandbox
from .search import GlobTool, GrepTool
from .write import WriteTool

__all__ = ["EditTool", "GlobTool", "GrepTool", "ReadTool", "Sandbox", "WriteTool"]
