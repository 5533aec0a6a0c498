"""The daemon's own durable state, and where it lives.

`location.open_state_backend(data_dir, url)` gives the backend: `sqlite.backend.SqliteState` (files under
the data directory, the default) or `postgres.backend.PostgresState` (one PostgreSQL database, imported
only for a `postgresql://` URL). A backend holds the lock that makes one daemon its only user
(`backend.StateBackend`) and opens the stores (`backend.StateStores`).

Each store is one interface (a `typing.Protocol`, with its records) in a module here, implemented once in
`sqlite/` and once in `postgres/` under the same module name, neither deriving from the other: the turn
journal (`journal`), answered questions (`answers`), tool-call approvals (`approvals`), remembered rooms
(`rooms`), schedules (`schedules`), snapshots for other processes (`snapshots`), sync positions
(`tokens`) and the bots' crypto items (`crypto`). Attachments are files in both cases (`attachments`).
`migrate` copies SQLite state into PostgreSQL.
"""

__all__: list[str] = []
