"""What the state layer reports.

MindroomError
└── StateError                the daemon's state cannot be used (names where it is, never a password)
    ├── StateLockedError      another daemon holds the state; names it (host, pid, since when)
    └── StateLostError        the state's lock was lost while running (the database session ended for good)
"""

from __future__ import annotations

from mindroom.errors import MindroomError
from mindroom.state.holder import LockHolder

__all__ = ["StateError", "StateLockedError", "StateLostError"]


class StateError(MindroomError):
    """The daemon's state cannot be opened or used."""


class StateLockedError(StateError):
    """Another daemon runs on this state; this one must not run the bots."""

    def __init__(self, location: str, holder: LockHolder | None) -> None:
        self.location = location
        self.holder = holder
        held_by = holder.describe() if holder is not None else "a daemon that left no name"
        super().__init__(
            f"the state at {location} is held by another daemon ({held_by}); not running the bots here"
            " (stop that daemon first, or start this one with --standby to take over when it stops)"
        )


class StateLostError(StateError):
    """The lock on the state was lost while the daemon ran: another daemon may be running the bots now."""
