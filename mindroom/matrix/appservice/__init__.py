"""Application-service mode: the homeserver pushes the bots' events to the daemon in transactions."""

__all__: list[str] = []
