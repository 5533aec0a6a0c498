"""Usage and budgets: what each turn spent, recorded off the reply path, shown to people, and capped."""

__all__: list[str] = []
