"""The AI layer: models, agents, session history and generation (the only package that imports agno)."""

from __future__ import annotations

from mindroom.ai.agents import close_caches, preload_in_background
from mindroom.ai.compaction import CompactionChunk, CompactionResult, compact_history
from mindroom.ai.errors import GenerationError, ModelConfigError
from mindroom.ai.generation import (
    EarlyAnswer,
    GenerationRequest,
    GenerationResult,
    generate,
    generate_early,
    stream_generate,
)
from mindroom.ai.media import ImageInput, TranscriptionError, supports_vision, transcribe
from mindroom.ai.models import PLACEHOLDER_API_KEY, build_model
from mindroom.ai.offline import OfflineModel
from mindroom.ai.routing_model import choose_agent
from mindroom.ai.sessions import forget_turn, load_history, session_db_path, session_exists, strip_session_enrichment

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
    "OfflineModel",
    "TranscriptionError",
    "build_model",
    "choose_agent",
    "close_caches",
    "compact_history",
    "forget_turn",
    "generate",
    "generate_early",
    "load_history",
    "preload_in_background",
    "session_db_path",
    "session_exists",
    "stream_generate",
    "strip_session_enrichment",
    "supports_vision",
    "transcribe",
]
