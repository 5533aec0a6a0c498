"""The exceptions of the Matrix layer.

    MindroomError
    └── MatrixError              anything the Matrix layer reports
        ├── MatrixConnectionError  the homeserver could not be reached (also a `ConnectionError`)
        ├── MatrixRequestError     the homeserver answered with a Matrix error (errcode, HTTP status)
        └── MatrixLoginError       a bot could not log in, register or reuse its credentials (names the bot)

Matrix error responses on the read-only and state helpers (`resolve_room`, `get_room_state`,
`put_room_state`) come back as `None`/`False` instead; connection errors always raise.
"""

from __future__ import annotations

from mindroom.errors import MindroomError

__all__ = ["MatrixConnectionError", "MatrixError", "MatrixLoginError", "MatrixRequestError"]


class MatrixError(MindroomError):
    """Base class for errors of the Matrix layer."""


class MatrixConnectionError(MatrixError, ConnectionError):
    """The homeserver could not be reached, or the connection broke mid-request."""


class MatrixRequestError(MatrixError):
    """The homeserver rejected a request; carries the Matrix `errcode` and HTTP status when known."""

    def __init__(self, action: str, errcode: str | None, message: str, status: int | None = None) -> None:
        self.action = action
        self.errcode = errcode
        self.status = status
        self.message = message
        super().__init__(f"{action} failed: {errcode or 'error'} {message}".rstrip())


class MatrixLoginError(MatrixError):
    """A bot could not obtain a working access token; the message names the bot and what was tried."""

    def __init__(self, bot_name: str, reasons: list[str]) -> None:
        self.bot_name = bot_name
        self.reasons = reasons
        detail = "; ".join(reasons) or "no password, stored token or registration secret available"
        super().__init__(f"bot {bot_name!r} could not log in to Matrix: {detail}")
