"""Session history: each agent's conversations in agno's session store, one session per thread."""

__all__: list[str] = []
