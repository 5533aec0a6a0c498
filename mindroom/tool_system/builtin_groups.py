"""The built-in tool groups: the one place a tool of the daemon's own is registered in the catalogue.

Each group is a `ToolProvider` named as an agent's `tools:` list names it. A group named like one of
MindRoom's tools that come later (`tool_names.LATER`, e.g. `scheduler`) is that tool from then on:
`mindroom tools list` shows it available, and agents naming it get its tools.
"""

from __future__ import annotations

from mindroom.tool_system.attachment_tools import ATTACHMENT_TOOL_NAMES, attachment_tools
from mindroom.tool_system.builtin.groups import DAEMON_PART_GROUPS
from mindroom.tool_system.calculator import CALCULATOR_TOOL_NAMES, calculator_tools
from mindroom.tool_system.file_tools import FILE_TOOL_NAMES, file_tools
from mindroom.tool_system.matrix_tools import MATRIX_TOOL_NAMES, matrix_tools
from mindroom.tool_system.providers import ToolProvider
from mindroom.tool_system.shell import SHELL_TOOL_NAMES, shell_tools

__all__ = ["BUILTIN_PROVIDERS"]

BUILTIN_PROVIDERS: tuple[ToolProvider, ...] = (
    ToolProvider("calculator", "built-in group", CALCULATOR_TOOL_NAMES, calculator_tools),
    ToolProvider("file", "built-in group", FILE_TOOL_NAMES, file_tools),
    ToolProvider("shell", "built-in group", SHELL_TOOL_NAMES, shell_tools),
    ToolProvider("matrix", "built-in group", MATRIX_TOOL_NAMES, matrix_tools),
    ToolProvider("attachments", "built-in group", ATTACHMENT_TOOL_NAMES, attachment_tools),
    *DAEMON_PART_GROUPS,  # scheduler, website, delegate, memory, todo, the Matrix, config and context tools
)
"""Every built-in group, in the order `mindroom tools list` shows them."""
