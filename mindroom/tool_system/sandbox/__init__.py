"""Where commands run: the bubblewrap sandbox, its network, and keeping hold of every process a command starts."""

__all__: list[str] = []
