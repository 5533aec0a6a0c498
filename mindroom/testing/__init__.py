"""The testing kit for plugin authors (and this project): hook contexts, a real homeserver, a scripted model."""

from mindroom.testing.contexts import CONTEXT_TYPES, make_hook_context

__all__ = ["CONTEXT_TYPES", "make_hook_context"]
