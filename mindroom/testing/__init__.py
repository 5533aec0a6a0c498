"""The testing kit for plugin authors (and this project): hook contexts, a real homeserver, a scripted model,
and a recording Matrix client for unit tests of the pipeline (imported when first used: it loads the
Matrix layer, which the hook kit does not need)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mindroom.testing.contexts import CONTEXT_TYPES, make_hook_context

if TYPE_CHECKING:
    from mindroom.testing.recording_client import RecordingClient, RecordingHomeserver

__all__ = ["CONTEXT_TYPES", "RecordingClient", "RecordingHomeserver", "make_hook_context"]

_LAZY = {
    "RecordingClient": "mindroom.testing.recording_client",
    "RecordingHomeserver": "mindroom.testing.recording_client",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(module), name)
