"""The daemon's state in SQLite files under the data directory (the default), locked by `flock`.

One module per store, each implementing the interface of the module of the same name one level up
(`mindroom.state.journal.TurnJournal` by `journal.SqliteTurnJournal`, ...); `backend.SqliteState` opens them.
"""

__all__: list[str] = []
