"""nio's store without the PostgreSQL driver: imported first by `mindroom.matrix`, before anything imports nio.

nio keeps its crypto store with peewee, which imports psycopg whenever it is installed, for PostgreSQL databases
nio never opens (its stores are SQLite): about 10 MB and a tenth of a second at every start. peewee is imported
here with the driver out of its sight; state in PostgreSQL imports the driver itself when it opens.
"""

from __future__ import annotations

import sys

__all__ = ["load_peewee_without_postgres"]


def load_peewee_without_postgres() -> None:
    """Import peewee while `import psycopg` fails; a no-op once either is imported."""
    if "peewee" in sys.modules or "psycopg" in sys.modules:
        return
    sys.modules["psycopg"] = None  # type: ignore[assignment]  # None in sys.modules: that import raises ImportError
    try:
        import peewee  # noqa: F401
    finally:
        if "psycopg" in sys.modules and sys.modules["psycopg"] is None:
            del sys.modules["psycopg"]


load_peewee_without_postgres()
