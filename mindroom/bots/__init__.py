"""Bots: one Matrix account each (an agent or the router), and the per-message pipeline they run."""

__all__: list[str] = []
