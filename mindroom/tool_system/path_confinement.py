"""File access confined to a root folder, never following a symlink: the 2026 plugin API's path helpers.

Every helper walks the relative path one component at a time from an open descriptor of the root, with
`O_NOFOLLOW` on each step (the walk of `mindroom.tool_system.confined_open`, which the file tools and
knowledge bases share), so neither `..`, an absolute path, nor a symlink anywhere on the way (even one
swapped in while the walk runs) leads outside the root. Refusals are `PathConfinementError` (a
`ValueError`); operating-system failures (a missing file, no permission) stay `OSError`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mindroom.errors import MindroomError
from mindroom.tool_system.confined_open import open_file_in, open_folder_below, open_root
from mindroom.tool_system.declarations import ToolFileAccess

__all__ = [
    "DEFAULT_MAX_READ_BYTES",
    "AuthorizedFile",
    "PathConfinementError",
    "open_directory_within_root",
    "read_regular_file_within_root",
    "resolve_agent_file",
    "write_file_within_root",
]

DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024


class PathConfinementError(MindroomError, ValueError):
    """A path that is absolute, climbs out with `..`, crosses a symlink, or names the wrong kind of file."""


def _parts(relative_path: str | os.PathLike[str]) -> list[str]:
    raw = os.fspath(relative_path)
    if not isinstance(raw, str) or "\x00" in raw:
        msg = f"invalid path {raw!r}"
        raise PathConfinementError(msg)
    path = PurePosixPath(raw)
    if path.is_absolute():
        msg = f"{raw!r} is absolute; give a path relative to the root"
        raise PathConfinementError(msg)
    parts = [part for part in path.parts if part != "."]
    if ".." in parts:
        msg = f"{raw!r} climbs out with '..'"
        raise PathConfinementError(msg)
    return parts


def _refusal(error: OSError) -> PathConfinementError | None:
    """The refusal a failed step of the walk stands for (a link, a file where a folder should be), if any."""
    name = os.fspath(error.filename or "").rsplit("/", 1)[-1]
    if error.errno == errno.ELOOP:
        return PathConfinementError(f"{name!r} is a symlink; symlinks are not followed")
    if error.errno == errno.ENOTDIR:
        return PathConfinementError(f"{name!r} is not a folder")
    return None


def _walk(root: Path, parts: list[str], *, create: bool, mode: int) -> int:
    """An open descriptor of the folder `parts` names under `root` (the caller closes it)."""
    root_fd = open_root(root, may_be_link=False)
    try:
        return open_folder_below(root_fd, parts, create=create, mode=mode)
    except OSError as exc:
        raise _refusal(exc) or exc from None
    finally:
        os.close(root_fd)


@contextmanager
def open_directory_within_root(
    root: str | os.PathLike[str],
    relative_path: str | os.PathLike[str] = ".",
    *,
    create: bool = False,
    mode: int = 0o777,
) -> Iterator[int]:
    """A descriptor of the folder under `root` (made, with `mode`, when `create`), closed after the block."""
    fd = _walk(Path(root), _parts(relative_path), create=create, mode=mode)
    try:
        yield fd
    finally:
        os.close(fd)


def _open_file(
    dir_fd: int, name: str, flags: int, mode: int = 0o600, *, link: str = "symlinks are not followed"
) -> int:
    try:
        return open_file_in(dir_fd, name, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            msg = f"{name!r} is a symlink; {link}"
            raise PathConfinementError(msg) from None
        raise


def _split(relative_path: str | os.PathLike[str]) -> tuple[list[str], str]:
    parts = _parts(relative_path)
    if not parts:
        msg = f"{os.fspath(relative_path)!r} names the root itself, not a file"
        raise PathConfinementError(msg)
    return parts[:-1], parts[-1]


def read_regular_file_within_root(
    root: str | os.PathLike[str],
    relative_path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_READ_BYTES,
    truncate: bool = False,
) -> bytes:
    """The bytes of a regular file under `root`; a larger file is an error, or cut at `max_bytes` with `truncate`."""
    folders, name = _split(relative_path)
    with open_directory_within_root(root, PurePosixPath(*folders) if folders else ".") as dir_fd:
        fd = _open_file(dir_fd, name, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            msg = f"{os.fspath(relative_path)!r} is not a regular file"
            raise PathConfinementError(msg)
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        if not truncate:
            msg = f"{os.fspath(relative_path)!r} is larger than {max_bytes} bytes"
            raise PathConfinementError(msg)
        data = data[:max_bytes]
    return data


def write_file_within_root(
    root: str | os.PathLike[str],
    relative_path: str | os.PathLike[str],
    payload: bytes | str,
    *,
    file_mode: int = 0o600,
    dir_mode: int = 0o777,
    exclusive: bool = False,
) -> Path:
    """Write `payload` (text as UTF-8) to a file under `root`, making folders on the way; returns its path.

    `exclusive` refuses an existing file (`FileExistsError`). An existing symlink is never written through.
    """
    data = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
    folders, name = _split(relative_path)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    with open_directory_within_root(
        root, PurePosixPath(*folders) if folders else ".", create=True, mode=dir_mode
    ) as dir_fd:
        fd = _open_file(dir_fd, name, flags, file_mode, link="symlinks are not written through")
    with os.fdopen(fd, "wb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            msg = f"{os.fspath(relative_path)!r} is not a regular file"
            raise PathConfinementError(msg)
        handle.write(data)
    return Path(root).joinpath(*folders, name)


@dataclass(frozen=True, slots=True)
class AuthorizedFile:
    """A model-supplied path a tool may use: its absolute path, and its root and relative path when confined."""

    path: Path
    root: Path | None
    relative_path: PurePosixPath | None


def resolve_agent_file(
    raw_path: str, *, workspace_root: str | os.PathLike[str], file_access: ToolFileAccess | str, field_name: str
) -> AuthorizedFile:
    """Check a path the model gave for argument `field_name` against the tool's declared file access.

    `AGENT`: the path (relative, or absolute inside the workspace) must stay in the workspace and cross no
    symlink. `UNCONFINED`: any path, resolved against the workspace. `NONE`: the tool takes no paths.
    """
    access = ToolFileAccess(file_access)
    if not isinstance(raw_path, str) or not raw_path or "\x00" in raw_path:
        msg = f"{field_name}: a non-empty path is required"
        raise PathConfinementError(msg)
    root = Path(workspace_root).absolute()
    if access is ToolFileAccess.NONE:
        msg = f"{field_name}: this tool declares that it takes no file paths"
        raise PathConfinementError(msg)
    candidate = Path(os.path.expanduser(raw_path)) if access is ToolFileAccess.UNCONFINED else Path(raw_path)
    if access is ToolFileAccess.UNCONFINED:
        return AuthorizedFile(Path(os.path.normpath(root / candidate)), None, None)
    if candidate.is_absolute():
        if os.path.commonpath([os.path.normpath(candidate), root]) != str(root):
            msg = f"{field_name}: {raw_path!r} is outside the workspace"
            raise PathConfinementError(msg)
        candidate = Path(os.path.normpath(candidate)).relative_to(root)
    try:
        parts = _parts(candidate.as_posix())
    except PathConfinementError as exc:
        raise PathConfinementError(f"{field_name}: {exc}") from None
    current = root
    for part in parts:  # every component that exists must be a real folder or file, not a link
        current = current / part
        if current.is_symlink():
            msg = f"{field_name}: {raw_path!r} crosses a symlink"
            raise PathConfinementError(msg)
    relative = PurePosixPath(*parts) if parts else PurePosixPath(".")
    return AuthorizedFile(root.joinpath(*parts), root, relative)
