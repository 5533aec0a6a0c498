"""The exceptions the AI layer raises; no agno or provider exception type ever leaves `mindroom.ai`.

MindroomError
├── ModelConfigError   a model cannot be built (names the model and the missing key, package or option)
└── GenerationError    the model failed while answering (short, secret-free, safe to show in chat)
"""

from __future__ import annotations

from typing import Literal

from mindroom.errors import MindroomError

__all__ = ["FailureKind", "GenerationError", "ModelConfigError"]

FailureKind = Literal[
    "timeout",
    "stalled",
    "unreachable",
    "rejected",
    "rate_limited",
    "http",
    "context_overflow",
    "misconfigured",
    "failed",
]


class ModelConfigError(MindroomError):
    """A model config cannot be turned into a working model (missing key, package, or bad option)."""

    def __init__(self, model: str, problem: str) -> None:
        self.model = model
        self.problem = problem
        super().__init__(f"model {model!r}: {problem}")


class GenerationError(MindroomError):
    """The model could not answer; `str(error)` is a short message fit for the chat room."""

    def __init__(self, message: str, *, kind: FailureKind = "failed", status_code: int | None = None) -> None:
        self.kind: FailureKind = kind
        self.status_code = status_code
        super().__init__(message)
