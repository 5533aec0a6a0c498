"""The OAuth connections' errors: a provider unknown or not set up, a failed exchange, a connection missing."""

from __future__ import annotations

from mindroom.errors import MindroomError

__all__ = ["OAuthConnectionRequiredError", "OAuthError", "OAuthFlowError"]


class OAuthError(MindroomError):
    """An OAuth provider is unknown, not set up, or answered with an error (the message names which)."""


class OAuthFlowError(OAuthError):
    """A callback that cannot finish: its state is unknown, used, expired, or from another browser."""


class OAuthConnectionRequiredError(OAuthError):
    """The person has no usable connection to the provider; the message carries the link to connect."""

    def __init__(self, provider: str, connect_url: str | None) -> None:
        self.provider = provider
        self.connect_url = connect_url
        where = f"open {connect_url} to connect it" if connect_url else f"send !connect {provider} to the agent"
        super().__init__(f"Your {provider} account is not connected: {where}, then ask again.")
