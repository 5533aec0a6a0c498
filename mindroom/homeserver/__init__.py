"""The embedded Synapse homeserver: one process manager shared with the testing kit."""

__all__: list[str] = []
