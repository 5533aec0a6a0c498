"""nio's store without the PostgreSQL driver: imported first by `mindroom.matrix`, before anything imports nio.

nio keeps its crypto store with peewee, which imports psycopg whenever it is installed, for PostgreSQL databases
nio never opens (its stores are SQLite): about 10 MB and a tenth of a second at every start. State in PostgreSQL
imports the driver itself when it opens.
"""

from __future__ import annotations

from mindroom.hidden_imports import hidden_while_importing

__all__: list[str] = []

with hidden_while_importing("psycopg"):
    import peewee  # noqa: F401
