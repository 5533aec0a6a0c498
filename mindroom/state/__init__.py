"""The daemon's own durable state, and where it lives.

`location.open_state_backend(data_dir, url)` gives the backend: `sqlite.SqliteState` (files under the
data directory, the default) or `postgres.backend.PostgresState` (one PostgreSQL database, imported only
for a `postgresql://` URL). A backend holds the lock that makes one daemon its only user
(`backend.StateBackend`) and opens the stores, each with one interface and two implementations: the
turn journal (`journal`), remembered rooms (`rooms`), schedules (`schedules`), snapshots for other
processes (`snapshots`) and sync positions (`tokens`). `migrate` copies SQLite state into PostgreSQL.
"""

__all__: list[str] = []
