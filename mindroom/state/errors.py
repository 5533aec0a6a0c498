"""What the state layer reports.

MindroomError
└── StateError                the daemon's state cannot be used (names where it is, never a password)
    ├── StateLockedError      another daemon holds the state; names it (host, pid, since when)
    ├── StateLostError        the state's lock was lost while running (the database session ended for good)
    └── StateFencedError      an answer was about to go out while this daemon could not show it holds the lock
"""

from __future__ import annotations

from mindroom.errors import MindroomError
from mindroom.state.holder import LockHolder

__all__ = ["StateError", "StateFencedError", "StateLockedError", "StateLostError"]


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


class StateFencedError(StateError):
    """This daemon cannot show that it still holds the state's lock, so what it was about to send is not sent
    (another daemon may hold the lock and answer the same message)."""
