"""Teams: several agents answering one turn together under a leader model."""

__all__: list[str] = []
