"""The running daemon: the composition root, live state, hot reload, schedules and metrics."""

__all__: list[str] = []
