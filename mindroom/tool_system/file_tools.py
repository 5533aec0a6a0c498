"""The built-in `file` tool: read, write and list files inside the agent's own workspace, and nowhere else.

Every path is relative to `<storage_root>/agents/<agent>/workspace/`. `..` is resolved by name and may not climb
out of the workspace. A path is then opened one folder at a time from a descriptor of the workspace
(`openat` with `O_NOFOLLOW | O_DIRECTORY`: the walk of `confined_open`), so checking and opening are one
step: a link at any level is refused, and a folder swapped for a link between two calls (or during one) is
never followed.
Files are opened with `O_NONBLOCK` and must be regular files with one link (`st_nlink == 1`), so a FIFO
cannot hang a call and a hard link cannot reach a file elsewhere. Writes are held to a workspace quota.
The tools are synchronous and run in a worker thread (`in_thread`), never on the event loop.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mindroom.config.main import FileToolConfig
from mindroom.private_files import private_dir
from mindroom.tool_system.confined_open import open_file_in, open_folder_below, open_root
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["FILE_TOOL_NAMES", "MAX_LISTED_ENTRIES", "Workspace", "file_tools"]

FILE_TOOL_NAMES = ("read_file", "write_file", "list_files")
MAX_LISTED_ENTRIES = 500
_FILE_FLAGS = os.O_NONBLOCK | os.O_NOCTTY


@contextmanager
def _closing(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


class Workspace:
    """One agent's workspace folder and the path rules that confine the file tools to it."""

    def __init__(self, root: Path, settings: FileToolConfig | None = None) -> None:
        self.root = root
        self.settings = settings or FileToolConfig()

    def parts(self, raw_path: str) -> tuple[str, ...]:
        """The names `raw_path` walks through from the workspace; `ToolError` if it is absolute or climbs out."""
        if not raw_path or "\x00" in raw_path:
            raise ToolError("a non-empty path is required")
        if raw_path.startswith(("/", "~")):
            raise ToolError(f"{raw_path!r} is not relative; paths are relative to your workspace folder")
        parts: list[str] = []
        for part in raw_path.split("/"):
            if part in {"", "."}:
                continue
            if part == "..":
                if not parts:
                    raise ToolError(f"{raw_path!r} is outside your workspace folder")
                parts.pop()
            else:
                parts.append(part)
        return tuple(parts)

    @staticmethod
    def display(parts: tuple[str, ...]) -> str:
        """A path as the model should name it: relative to the workspace."""
        return "/".join(parts) or "."

    def _open_root(self) -> int:
        # The workspace folder itself is the operator's to place (it may be a link); only what is inside is walked.
        private_dir(self.root)
        return open_root(self.root, may_be_link=True)

    def _folder(self, raw_path: str, parts: tuple[str, ...], *, create: bool = False, missing: str = "file") -> int:
        """A descriptor of the folder `parts` names, reached without following any link (created if asked)."""
        with _closing(self._open_root()) as root:
            try:
                return open_folder_below(root, parts, create=create, mode=0o700)
            except OSError as exc:
                if isinstance(exc, FileNotFoundError) and not create:
                    raise ToolError(f"no {missing} named {raw_path!r} in your workspace") from None
                raise self._refusal(raw_path, exc) from None

    def _open_file(self, raw_path: str, parts: tuple[str, ...], folder: int, flags: int) -> int:
        try:
            return open_file_in(folder, parts[-1], flags | _FILE_FLAGS, 0o600, walked=self.display(parts))
        except OSError as exc:
            raise self._refusal(raw_path, exc) from None

    @staticmethod
    def _refusal(raw_path: str, error: OSError) -> ToolError:
        """The model's answer for a failed open; `error.filename` is the path walked up to the entry at fault."""
        code, where = error.errno, error.filename
        if code == errno.ELOOP:
            return ToolError(f"{raw_path!r}: {where!r} is a link, and the file tools do not follow links")
        if code == errno.ENOTDIR:
            return ToolError(f"{raw_path!r}: {where!r} is not a folder")
        if code == errno.ENOENT:
            return ToolError(f"no file named {raw_path!r} in your workspace")
        if code == errno.EISDIR:
            return ToolError(f"{raw_path!r} is a folder")
        if code == errno.ENXIO:  # a FIFO nobody reads: opening it to write would block
            return ToolError(f"{raw_path!r} is not a regular file")
        return ToolError(f"cannot use {raw_path!r}: {error.strerror}")

    def _check_file(self, raw_path: str, fd: int) -> os.stat_result:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{raw_path!r} is a folder")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{raw_path!r} is not a regular file")
        if info.st_nlink != 1:
            raise ToolError(f"{raw_path!r} has other hard links, and the file tools only open files with one")
        return info

    def read(self, raw_path: str) -> str:
        """The text of a file (truncated to the configured size)."""
        parts = self.parts(raw_path)
        if not parts:
            raise ToolError(f"{raw_path!r} is a folder")
        with _closing(self._folder(raw_path, parts[:-1])) as folder:
            fd = self._open_file(raw_path, parts, folder, os.O_RDONLY)
        limit = self.settings.max_read_bytes
        with os.fdopen(fd, "rb") as handle:
            info = self._check_file(raw_path, fd)
            data = handle.read(limit + 1)
        if b"\x00" in data[:8192]:
            raise ToolError(f"{raw_path!r} is a binary file ({info.st_size} bytes)")
        text = data[:limit].decode("utf-8", errors="replace")
        if len(data) > limit:
            text += f"\n[truncated: showing the first {limit} of {info.st_size} bytes]"
        return text

    def usage(self) -> int:
        """The bytes the regular files in the workspace hold (links are not followed)."""
        total = 0
        with _closing(self._open_root()) as root:
            for _path, _dirs, files, folder in os.fwalk(".", dir_fd=root):
                for name in files:
                    try:
                        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if stat.S_ISREG(info.st_mode):
                        total += info.st_size
        return total

    def write(self, raw_path: str, content: str, *, append: bool = False) -> str:
        """Write (or append) text to a file, creating folders on the way."""
        data = content.encode("utf-8")
        if len(data) > self.settings.max_write_bytes:
            raise ToolError(f"content is larger than the {self.settings.max_write_bytes} byte limit")
        parts = self.parts(raw_path)
        if not parts:
            raise ToolError(f"{raw_path!r} is a folder")
        with _closing(self._folder(raw_path, parts[:-1], create=True)) as folder:
            fd, created = self._open_for_writing(raw_path, parts, folder)
            with _closing(fd):
                try:
                    info = self._check_file(raw_path, fd)
                    self._check_quota(raw_path, info.st_size, len(data) + (info.st_size if append else 0))
                except ToolError:
                    if created:
                        os.unlink(parts[-1], dir_fd=folder)
                    raise
                # Truncate only now: an O_TRUNC open would have emptied a hard-linked file before the checks.
                if append:
                    os.lseek(fd, 0, os.SEEK_END)
                else:
                    os.ftruncate(fd, 0)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
        verb = "appended" if append else "wrote"
        return f"{verb} {len(data)} bytes to {self.display(parts)}"

    def _open_for_writing(self, raw_path: str, parts: tuple[str, ...], folder: int) -> tuple[int, bool]:
        try:
            return open_file_in(folder, parts[-1], os.O_WRONLY | _FILE_FLAGS, walked=self.display(parts)), False
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self._refusal(raw_path, exc) from None
        return self._open_file(raw_path, parts, folder, os.O_WRONLY | os.O_CREAT | os.O_EXCL), True

    def _check_quota(self, raw_path: str, old_size: int, new_size: int) -> None:
        quota = self.settings.workspace_quota_bytes
        total = self.usage() - old_size + new_size
        if total > quota:
            raise ToolError(
                f"writing {raw_path!r} would bring your workspace to {total} bytes, over its quota of {quota} bytes; "
                "delete or shorten files first"
            )

    def listing(self, raw_path: str = ".") -> str:
        """One line per entry of a folder: `name/` for folders, `name (N bytes)` for files."""
        parts = self.parts(raw_path or ".")
        with _closing(self._folder(raw_path, parts, missing="folder")) as folder, os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
            lines = []
            for entry in entries[:MAX_LISTED_ENTRIES]:
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    lines.append(f"{entry.name} (link)")
                elif stat.S_ISDIR(info.st_mode):
                    lines.append(f"{entry.name}/")
                elif stat.S_ISREG(info.st_mode):
                    lines.append(f"{entry.name} ({info.st_size} bytes)")
                else:
                    lines.append(f"{entry.name} (not a regular file)")
        if len(entries) > MAX_LISTED_ENTRIES:
            lines.append(f"[{len(entries) - MAX_LISTED_ENTRIES} more entries not shown]")
        return "\n".join(lines) if lines else f"{self.display(parts)} is empty"


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
        ToolSpec(name="read_file", function=read_file, in_thread=True),
        ToolSpec(name="write_file", function=write_file, in_thread=True),
        ToolSpec(name="list_files", function=list_files, in_thread=True),
    )
