"""`StrictModel`: the base of every `config.yaml` model (unknown keys are errors, values are frozen)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["StrictModel"]


class StrictModel(BaseModel):
    """A frozen pydantic model that refuses keys it does not know, so a typo is an error with its path."""

    model_config = ConfigDict(extra="forbid", frozen=True)
