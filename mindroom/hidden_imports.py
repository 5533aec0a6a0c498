"""Importing a library without the optional packages it would load for a feature the daemon never uses.

Some libraries import an optional package whenever it is installed: peewee (nio's store) the PostgreSQL
driver, for databases nio never opens; structlog Twisted's logging, installed with the embedded homeserver.
Each costs megabytes and part of a second at every start. Inside `hidden_while_importing` those packages
fail to import, so the library goes on without them; afterwards they import as usual.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["hidden_while_importing"]


@contextmanager
def hidden_while_importing(*names: str) -> Iterator[None]:
    """`import <name>` raises ImportError inside the block for each of `names` not imported yet."""
    hidden = [name for name in names if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # None in sys.modules: the import raises ImportError
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
