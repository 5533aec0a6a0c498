"""The exceptions of the Matrix layer.

    MindroomError
    └── MatrixError              anything the Matrix layer reports
        ├── MatrixConnectionError  the homeserver could not be reached (also a `ConnectionError`)
        ├── MatrixRequestError     the homeserver answered with a Matrix error (errcode, HTTP status)
        ├── MatrixLoginError       a bot could not log in, register or reuse its credentials (names the bot)
        ├── MatrixDeviceError      a bot's device cannot go on: the bot is not started (names the bot)
        │   ├── MatrixCryptoStoreError its crypto store is lost or unreadable (names the file; nothing replaces it)
        │   └── MatrixRecoveryError    its crypto state cannot be opened or restored with the recovery key given
        └── MatrixEncryptionError  an event for an encrypted room could not be encrypted (it is not sent at all)

Matrix error responses on the read-only and state helpers (`resolve_room`, `get_room_state`,
`put_room_state`) come back as `None`/`False` instead; connection errors always raise.
"""

from __future__ import annotations

from mindroom.errors import MindroomError

__all__ = [
    "MatrixConnectionError",
    "MatrixCryptoStoreError",
    "MatrixDeviceError",
    "MatrixEncryptionError",
    "MatrixError",
    "MatrixLoginError",
    "MatrixRecoveryError",
    "MatrixRequestError",
]


class MatrixError(MindroomError):
    """Base class for errors of the Matrix layer."""


class MatrixConnectionError(MatrixError, ConnectionError):
    """The homeserver could not be reached, or the connection broke mid-request.

    `refused` is true when nothing listened at the homeserver's address (it is down or restarting):
    asking again soon costs the homeserver nothing, so retries need not back off.
    """

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


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


class MatrixDeviceError(MatrixError):
    """A bot's device cannot go on (its crypto state is lost, or does not open); `bot_name` names the bot."""

    bot_name: str


class MatrixCryptoStoreError(MatrixDeviceError):
    """A bot's crypto store is missing or unreadable while its device has published keys; names the file."""

    def __init__(self, bot_name: str, path: str, problem: str) -> None:
        self.bot_name = bot_name
        self.path = path
        self.problem = problem
        super().__init__(
            f"bot {bot_name!r}: crypto store {problem}; messages encrypted for its device cannot be read without"
            " it, so the bot is not started with a new device unless MINDROOM_NEW_CRYPTO_DEVICE=1 is set"
        )


class MatrixRecoveryError(MatrixDeviceError):
    """A bot's crypto state (in the database) or secret storage cannot be opened with the recovery key given, so
    its device cannot go on or be restored; names the bot, what is wrong and the fix."""

    def __init__(self, bot_name: str, problem: str, fix: str) -> None:
        self.bot_name = bot_name
        self.problem = problem
        self.fix = fix
        super().__init__(f"bot {bot_name!r}: {problem}; {fix}")


class MatrixEncryptionError(MatrixError):
    """An event meant for an encrypted room could not be encrypted; it was not sent (never as plaintext)."""

    def __init__(self, room_id: str, reason: str) -> None:
        self.room_id = room_id
        self.reason = reason
        super().__init__(f"cannot encrypt for room {room_id}: {reason}")
