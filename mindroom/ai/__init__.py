"""The AI layer: models, agents, session history and generation (the only package that imports agno).

Importing this package loads none of agno or the model SDKs: each name below is imported from its
module when first used (`__getattr__`). agno, the openai SDK and SQLAlchemy take about a second to
import, which the daemon's start does not wait for: `preload_in_background` loads them once it is ready.
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any

from mindroom.ai.errors import GenerationError, ModelConfigError
from mindroom.hidden_imports import hidden_while_importing
from mindroom.logging_config import get_logger

if TYPE_CHECKING:
    from mindroom.ai.agents import close_caches
    from mindroom.ai.compaction import CompactionChunk, CompactionResult, compact_history
    from mindroom.ai.generation import (
        EarlyAnswer,
        GenerationRequest,
        GenerationResult,
        generate,
        generate_early,
    )
    from mindroom.ai.media import ImageInput, TranscriptionError, speech_service_model, supports_vision, transcribe
    from mindroom.ai.models import PLACEHOLDER_API_KEY, build_model
    from mindroom.ai.offline import OfflineModel
    from mindroom.ai.probe import ModelProbe, probe_model
    from mindroom.ai.routing_model import choose_agent
    from mindroom.ai.sessions.history import (
        forget_turn,
        load_history,
        session_db_path,
        session_exists,
        strip_session_enrichment,
    )
    from mindroom.ai.speech import SpeechError, spoken_text, synthesize
    from mindroom.ai.streamed import stream_generate
    from mindroom.ai.turn_options import TurnOptions
    from mindroom.ai.usage import TokenUsage

__all__ = [
    "PLACEHOLDER_API_KEY",
    "CompactionChunk",
    "CompactionResult",
    "EarlyAnswer",
    "GenerationError",
    "GenerationRequest",
    "GenerationResult",
    "ImageInput",
    "ModelConfigError",
    "ModelProbe",
    "OfflineModel",
    "SpeechError",
    "TokenUsage",
    "TranscriptionError",
    "TurnOptions",
    "build_model",
    "choose_agent",
    "close_caches",
    "compact_history",
    "forget_turn",
    "generate",
    "generate_early",
    "load_history",
    "preload_in_background",
    "probe_model",
    "session_db_path",
    "session_exists",
    "speech_service_model",
    "spoken_text",
    "stream_generate",
    "strip_session_enrichment",
    "supports_vision",
    "synthesize",
    "transcribe",
]

logger = get_logger(__name__)

_HOME = {
    "close_caches": "agents",
    "CompactionChunk": "compaction",
    "CompactionResult": "compaction",
    "compact_history": "compaction",
    "EarlyAnswer": "generation",
    "GenerationRequest": "generation",
    "GenerationResult": "generation",
    "generate": "generation",
    "generate_early": "generation",
    "stream_generate": "streamed",
    "TokenUsage": "usage",
    "TurnOptions": "turn_options",
    "ModelProbe": "probe",
    "probe_model": "probe",
    "ImageInput": "media",
    "TranscriptionError": "media",
    "speech_service_model": "media",
    "supports_vision": "media",
    "transcribe": "media",
    "PLACEHOLDER_API_KEY": "models",
    "build_model": "models",
    "OfflineModel": "offline",
    "choose_agent": "routing_model",
    "forget_turn": "sessions.history",
    "load_history": "sessions.history",
    "session_db_path": "sessions.history",
    "session_exists": "sessions.history",
    "strip_session_enrichment": "sessions.history",
    "SpeechError": "speech",
    "spoken_text": "speech",
    "synthesize": "speech",
}
"""Where each public name lives; the module is imported when the name is first read."""
_TURN_MODULES = ("generation", "streamed", "agents", "compaction", "routing_model", "media", "tools")


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def _preload(postgres: bool) -> None:
    try:
        with hidden_while_importing("pygments"):  # httpx's command line (never run here) would load it
            importlib.import_module("httpx")
        for home in _TURN_MODULES:
            importlib.import_module(f"{__name__}.{home}")
        importlib.import_module("agno.models.openai")
        try:  # the answer's Markdown renderer (mindroom.bots.formatting): the Rust port, else markdown-it-py
            importlib.import_module("markdown_it_pyrs")
        except ImportError:
            importlib.import_module("markdown_it")
        sessions = importlib.import_module(f"{__name__}.sessions.history")
        if postgres:
            sessions._postgres_store_class()
            importlib.import_module("agno.db.postgres")
        else:
            sessions.sqlite_store_class()
    except Exception as exc:  # the first turn imports them again and reports what is wrong
        logger.warning("preloading the model libraries failed", error=str(exc))


def preload_in_background(*, postgres: bool = False) -> None:
    """Import, in a thread, what the first turn needs and the daemon's start does not (agno, the SDKs and
    the session store of the state's backend: SQLite, or PostgreSQL with `postgres`).

    Called once the daemon is ready, so neither the start nor the first message waits for them, and by a
    standby while it waits: the turns it takes over would otherwise import them on the event loop.
    """
    threading.Thread(target=_preload, args=(postgres,), name="preload-ai", daemon=True).start()
