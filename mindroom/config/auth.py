"""MindRoom's import path of the `authorization:` section's model."""

from __future__ import annotations

from mindroom.config.access import AuthorizationConfig

__all__ = ["AuthorizationConfig"]
