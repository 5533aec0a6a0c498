"""Tools for agents and the runtime context tool code runs in."""

__all__: list[str] = []
