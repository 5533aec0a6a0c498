"""End-to-end encryption of the bots' devices: crypto stores and vaults, cross-signing, key backup, recovery key."""

__all__: list[str] = []
