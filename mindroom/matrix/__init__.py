"""The Matrix layer: the only package that imports nio; everything it returns is plain data."""

from __future__ import annotations

import mindroom.matrix.nio_loading  # noqa: F401  # first: peewee loads before nio does
from mindroom.matrix.client import MatrixBotClient
from mindroom.matrix.credentials import (
    DEFAULT_ACCOUNT_PREFIX,
    BotCredentials,
    CredentialStore,
    SyncTokenStore,
    bot_localpart,
    bot_user_id,
)
from mindroom.matrix.errors import (
    MatrixConnectionError,
    MatrixCryptoStoreError,
    MatrixDeviceError,
    MatrixEncryptionError,
    MatrixError,
    MatrixLoginError,
    MatrixRecoveryError,
    MatrixRequestError,
)
from mindroom.matrix.events import MatrixEvent, MatrixEventKind
from mindroom.matrix.inbound import EventHandler, InviteHandler
from mindroom.matrix.user_client import MatrixUserClient

__all__ = [
    "DEFAULT_ACCOUNT_PREFIX",
    "BotCredentials",
    "CredentialStore",
    "EventHandler",
    "InviteHandler",
    "MatrixBotClient",
    "MatrixConnectionError",
    "MatrixCryptoStoreError",
    "MatrixDeviceError",
    "MatrixEncryptionError",
    "MatrixError",
    "MatrixEvent",
    "MatrixEventKind",
    "MatrixLoginError",
    "MatrixRecoveryError",
    "MatrixRequestError",
    "MatrixUserClient",
    "SyncTokenStore",
    "bot_localpart",
    "bot_user_id",
]
