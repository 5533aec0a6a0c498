"""The built-in tools that need the daemon's own parts (schedules, hand-offs, memories, Matrix rooms, config),
under MindRoom's names; they reach those parts through `parts`, which the running daemon provides."""

__all__: list[str] = []
