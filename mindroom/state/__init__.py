"""The daemon's own durable state: the turn journal and schedules."""

__all__: list[str] = []
