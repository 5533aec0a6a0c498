"""OAuth connections: a person connects their own account at a provider, and tools act with its token.

`providers` resolves the providers and their OAuth apps from config and seeds, `flow` holds the pending
authorizations (PKCE, single-use state bound to the person and the browser), `exchange` talks to the
provider's endpoints, `vault` keeps tokens sealed in the state backend, and `service.OAuthConnections`
puts them together for the chat commands, the callback route and the tools.
"""

__all__: list[str] = []
