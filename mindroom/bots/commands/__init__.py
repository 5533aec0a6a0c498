"""Chat commands: `!help`, `!model`, `!memory` and the others, answered in the thread they were sent in."""

__all__: list[str] = []
