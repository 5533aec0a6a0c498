"""The built-in `file` tool: read, write and list files inside the agent's own workspace, and nowhere else.

Every path is relative to `<storage_root>/workspaces/<agent>/`. A path is resolved (following `..` and
symlinks) before use and refused unless the result is still inside the workspace, so neither `../x`,
an absolute path, nor a symlink pointing out of the workspace reaches another file. Writes open the
final path with `O_NOFOLLOW`, so a symlink swapped in after the check is not followed either.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from mindroom.config.main import FileToolConfig
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["FILE_TOOL_NAMES", "MAX_LISTED_ENTRIES", "Workspace", "file_tools"]

FILE_TOOL_NAMES = ("read_file", "write_file", "list_files")
MAX_LISTED_ENTRIES = 500


class Workspace:
    """One agent's workspace folder and the path rules that confine the file tools to it."""

    def __init__(self, root: Path, settings: FileToolConfig | None = None) -> None:
        self.root = root
        self.settings = settings or FileToolConfig()

    def _real_root(self) -> Path:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self.root.resolve()

    def resolve(self, raw_path: str) -> Path:
        """The real path `raw_path` names inside the workspace; `ToolError` if it is absolute or escapes."""
        if not raw_path or "\x00" in raw_path:
            raise ToolError("a non-empty path is required")
        relative = Path(raw_path)
        if relative.is_absolute() or raw_path.startswith("~"):
            raise ToolError(f"{raw_path!r} is not relative; paths are relative to your workspace folder")
        root = self._real_root()
        resolved = (root / relative).resolve()
        if resolved != root and root not in resolved.parents:
            raise ToolError(f"{raw_path!r} is outside your workspace folder")
        return resolved

    def display(self, path: Path) -> str:
        """`path` as the model should name it: relative to the workspace."""
        relative = path.relative_to(self._real_root()).as_posix()
        return relative or "."

    def read(self, raw_path: str) -> str:
        """The text of a file (truncated to the configured size)."""
        path = self.resolve(raw_path)
        if not path.is_file():
            raise ToolError(f"no file named {raw_path!r} in your workspace")
        limit = self.settings.max_read_bytes
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            raise ToolError(f"cannot read {raw_path!r}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(limit + 1)
        if b"\x00" in data[:8192]:
            raise ToolError(f"{raw_path!r} is a binary file ({path.stat().st_size} bytes)")
        text = data[:limit].decode("utf-8", errors="replace")
        if len(data) > limit:
            text += f"\n[truncated: showing the first {limit} of {path.stat().st_size} bytes]"
        return text

    def write(self, raw_path: str, content: str, *, append: bool = False) -> str:
        """Write (or append) text to a file, creating folders on the way."""
        data = content.encode("utf-8")
        if len(data) > self.settings.max_write_bytes:
            raise ToolError(f"content is larger than the {self.settings.max_write_bytes} byte limit")
        path = self.resolve(raw_path)
        if path == self._real_root() or path.is_dir():
            raise ToolError(f"{raw_path!r} is a folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.resolve(self.display(path.parent)) != path.parent:  # a folder on the way was swapped for a link
            raise ToolError(f"{raw_path!r} is outside your workspace folder")
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if append else os.O_TRUNC)
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as exc:
            raise ToolError(f"cannot write {raw_path!r}: {exc.strerror}") from None
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        verb = "appended" if append else "wrote"
        return f"{verb} {len(data)} bytes to {self.display(path)}"

    def listing(self, raw_path: str = ".") -> str:
        """One line per entry of a folder: `name/` for folders, `name (N bytes)` for files."""
        path = self.resolve(raw_path or ".")
        if not path.is_dir():
            raise ToolError(f"no folder named {raw_path!r} in your workspace")
        lines = []
        entries = sorted(path.iterdir(), key=lambda entry: entry.name)
        for entry in entries[:MAX_LISTED_ENTRIES]:
            info = entry.lstat()
            if stat.S_ISLNK(info.st_mode):
                lines.append(f"{entry.name} (link)")
            elif stat.S_ISDIR(info.st_mode):
                lines.append(f"{entry.name}/")
            else:
                lines.append(f"{entry.name} ({info.st_size} bytes)")
        if len(entries) > MAX_LISTED_ENTRIES:
            lines.append(f"[{len(entries) - MAX_LISTED_ENTRIES} more entries not shown]")
        return "\n".join(lines) if lines else f"{self.display(path)} is empty"


def file_tools(env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `file` group: `read_file`, `write_file` and `list_files` in the agent's workspace."""
    workspace = Workspace(env.workspace, env.settings.file)

    def read_file(path: str) -> str:
        """Read a text file from your workspace folder.

        Args:
            path: The file's path relative to your workspace, for example "notes/todo.md".
        """
        return workspace.read(path)

    def write_file(path: str, content: str, append: bool = False) -> str:
        """Write a text file in your workspace folder (folders on the way are created).

        Args:
            path: The file's path relative to your workspace, for example "notes/todo.md".
            content: The text to write.
            append: Add to the end of the file instead of replacing it.
        """
        return workspace.write(path, content, append=append)

    def list_files(path: str = ".") -> str:
        """List the files and folders in a folder of your workspace.

        Args:
            path: The folder relative to your workspace; "." is the workspace itself.
        """
        return workspace.listing(path)

    return (
        ToolSpec(name="read_file", function=read_file),
        ToolSpec(name="write_file", function=write_file),
        ToolSpec(name="list_files", function=list_files),
    )
