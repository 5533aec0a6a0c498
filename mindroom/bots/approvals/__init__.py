"""Approvals: a person allows or denies an agent's tool call on a card, once or for a while."""

__all__: list[str] = []
