"""Opening what lies below a folder without following any link: the one walk of every confined file access.

The plugin API's path helpers (`path_confinement`), the `file` tools and knowledge bases all reach a file
the same way: from an open descriptor of the root, one name at a time, each folder opened with
`O_NOFOLLOW | O_DIRECTORY` relative to its parent's descriptor and the file itself with `O_NOFOLLOW`. So a
`..`, a link at any level, or a folder swapped for a link while the walk runs never leads elsewhere: checking
and opening are one step. Each name must be one plain entry name; the callers turn their paths into names
their own way (refusing `..`, or resolving it by name inside the root).

A failure is the system's `OSError`, with two things made reliable for the callers' messages: an entry that
is a link always fails with `ELOOP` (Linux says `ENOTDIR` for a link opened as a folder, and `EEXIST` for one
met by an exclusive create), and `filename` is the part of the path walked so far (`a/b`), not the last name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence

__all__ = ["open_file_in", "open_folder_below", "open_root"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_root(root: str | os.PathLike[str], *, may_be_link: bool) -> int:
    """A descriptor of the root folder itself; `may_be_link`: the operator's own folder, which may be a link."""
    return os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW if may_be_link else _DIR_FLAGS)


def _checked(name: str) -> str:
    if not name or name in {".", ".."} or "/" in name or "\x00" in name:
        msg = f"{name!r} is not the name of one entry"
        raise ValueError(msg)
    return name


def _is_link(folder_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=folder_fd).st_mode)
    except OSError:
        return False


def _failure(error: OSError, folder_fd: int, name: str, walked: str) -> OSError:
    """`error` as the callers read it: `ELOOP` for a link, and the path walked so far as its `filename`."""
    code = errno.ELOOP if _is_link(folder_fd, name) else error.errno or errno.EIO
    return OSError(code, os.strerror(code), walked)  # OSError picks the subclass (FileNotFoundError ...)


def open_folder_below(root_fd: int, names: Sequence[str], *, create: bool = False, mode: int = 0o777) -> int:
    """A new descriptor of the folder `names` leads to below `root_fd` (which stays open); the caller closes it.

    `create` makes each missing folder on the way with `mode`. No name may be `..`, `.` or hold a `/`.
    """
    for name in names:
        _checked(name)
    fd = os.open(".", _DIR_FLAGS, dir_fd=root_fd)
    try:
        for index, name in enumerate(names):
            try:
                child = _open_folder(fd, name, create=create, mode=mode)
            except OSError as exc:
                raise _failure(exc, fd, name, "/".join(names[: index + 1])) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_folder(parent_fd: int, name: str, *, create: bool, mode: int) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):  # made meanwhile: the open below still refuses a link
        os.mkdir(name, mode, dir_fd=parent_fd)
    return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)


def open_file_in(folder_fd: int, name: str, flags: int, mode: int = 0o600, *, walked: str | None = None) -> int:
    """Open the entry `name` of the folder `folder_fd` with `flags` (`O_NOFOLLOW | O_CLOEXEC` added); a failure
    names `walked` (default: `name`), the path from the root for the caller's message."""
    try:
        return os.open(_checked(name), flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder_fd)
    except OSError as exc:
        raise _failure(exc, folder_fd, name, walked or name) from None
