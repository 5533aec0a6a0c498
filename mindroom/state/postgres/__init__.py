"""The daemon's state in PostgreSQL: one session per daemon holds the lock and does every write, in order.

Imported only when the state's URL is a PostgreSQL one, so SQLite users need no driver (`psycopg`).
"""

__all__: list[str] = []
