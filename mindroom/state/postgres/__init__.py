"""The daemon's state in PostgreSQL: one session per daemon holds the lock and does every write, in order.

One module per store, each implementing the interface of the module of the same name in `mindroom.state`
(`mindroom.state.journal.TurnJournal` by `journal.PostgresTurnJournal`, ...; sync positions and snapshots
in `positions`); `backend.PostgresState` opens them. Imported only when the state's URL is a PostgreSQL
one, so SQLite users need no driver (`psycopg`).
"""

__all__: list[str] = []
