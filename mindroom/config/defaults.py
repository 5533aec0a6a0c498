"""`defaults:` (every agent's settings unless it sets its own) and MindRoom's `compaction` and `streaming` blocks.

History compaction folds a conversation's older turns into a summary once its stored history passes a
budget. This daemon's own key for that budget is `defaults.history_token_budget`; MindRoom's `compaction`
blocks (in `defaults`, and per agent or team) say the same and more, and win where they are written.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from mindroom.config.rooms import ThreadMode
from mindroom.config.strict import StrictModel
from mindroom.config.tool_entries import parse_tool_entries

__all__ = ["CompactionConfig", "CompactionOverrideConfig", "DefaultsConfig", "StreamingConfig", "one_history_limit"]


def one_history_limit(runs: int | None, messages: int | None) -> None:
    """`ValueError` when both history limits are set (MindRoom's rule: they exclude each other)."""
    if runs is not None and messages is not None:
        msg = "num_history_runs and num_history_messages exclude each other: set one"
        raise ValueError(msg)


class CompactionOverrideConfig(StrictModel):
    """An agent's or team's `compaction:`: what it changes of `defaults.compaction` (unset keys inherit)."""

    enabled: bool | None = None
    threshold_tokens: int | None = Field(default=None, ge=1)
    """Fold once the stored history passes this many tokens."""
    threshold_percent: float | None = Field(default=None, gt=0, lt=1)
    """Fold once it passes this share of the window (`replay_window_tokens`, else the model's `context_window`)."""
    replay_window_tokens: int | None = Field(default=None, ge=1)
    model: str | None = None
    """The model that writes the summary (unset: the answering model)."""

    @model_validator(mode="after")
    def _one_threshold(self) -> CompactionOverrideConfig:
        if self.threshold_tokens is not None and self.threshold_percent is not None:
            msg = "threshold_tokens and threshold_percent exclude each other: set one"
            raise ValueError(msg)
        return self


class CompactionConfig(CompactionOverrideConfig):
    """`defaults.compaction`: whether history is folded, from what size on, and by which model."""

    enabled: bool | None = True


class StreamingConfig(StrictModel):
    """`defaults.streaming`: how often a streamed answer is edited (MindRoom's key, in seconds)."""

    update_interval: float = Field(default=5.0, gt=0)


class DefaultsConfig(StrictModel):
    """Defaults for every agent unless the agent overrides them."""

    tools: list[Any] = Field(default_factory=list)
    """Tool entries every agent gets (unless `include_default_tools: false`), in MindRoom's shapes."""

    @field_validator("tools")
    @classmethod
    def _tool_entries(cls, value: list[Any]) -> list[Any]:
        parse_tool_entries(value, "defaults.tools")
        return value

    enable_streaming: bool = True
    markdown: bool = True
    num_history_runs: int = Field(default=10, ge=0)
    num_history_messages: int | None = Field(default=None, ge=1)
    """Instead of `num_history_runs`: how many earlier messages the model sees."""
    max_tool_calls_from_history: int | None = Field(default=None, ge=0)
    max_tool_calls_per_turn: int | None = Field(default=None, ge=1)
    """The most tool calls one turn runs (unset: no limit); later calls get an error the model reads."""
    show_tool_calls: bool | None = None
    """`true`: each tool call is marked in the answer (🔧 `name`); `false`: the model is told they are not
    shown; unset: not marked, nothing told."""
    streaming_edit_interval_ms: int = Field(default=500, ge=50)
    streaming: StreamingConfig | None = None
    """MindRoom's spelling of the edit interval (`update_interval`, seconds); wins over `streaming_edit_interval_ms`."""
    max_concurrent_turns_per_agent: int = Field(default=4, ge=1)
    thread_mode: ThreadMode = "thread"
    max_attachment_bytes: int = Field(default=20 * 1024 * 1024, ge=1)
    # A hook step that holds the event loop longer than this is logged and counted (`blocked_loop`); it
    # fails the hook only if the hook also runs past its timeout.
    hooks_blocking_threshold_ms: int = Field(default=100, ge=1)
    hooks_room_policy_power_level: int = Field(default=100, ge=0)
    """The power level a room's `com.mindroom.hooks.policy` sender needs for the policy to count."""
    history_token_budget: int | None = Field(default=12000, ge=0)
    """Past this many tokens (characters / 4) of stored history, older turns are folded into a summary the
    agent's model writes, before the next answer. 0 or null: never. `compaction` says more."""
    compaction: CompactionConfig | None = None
    """MindRoom's compaction settings (`null` or `enabled: false`: never fold)."""
    max_preload_chars: int = Field(default=50000, ge=1)
    """The most characters an agent's `context_files` add to its instructions."""
    thread_summary_model: str | None = None
    """The model (a key of `models:`) that writes thread summaries; unset: no summaries (unless per room)."""
    thread_summary_first_threshold: int = Field(default=1, ge=1)
    """A thread's first summary is written once it has this many messages."""
    thread_summary_subsequent_interval: int = Field(default=10, ge=1)
    """A summary is written again after this many more messages."""
    thread_summary_temperature: float | None = 0.2
    """The summary model's temperature (null: the provider's own)."""

    @field_validator("compaction", mode="before")
    @classmethod
    def _null_is_off(cls, value: Any) -> Any:
        return {"enabled": False} if value is None else value

    @model_validator(mode="after")
    def _one_limit(self) -> DefaultsConfig:
        if "num_history_runs" in self.model_fields_set:
            one_history_limit(self.num_history_runs, self.num_history_messages)
        return self

    @property
    def edit_interval_s(self) -> float:
        """Seconds between the edits of a streamed answer."""
        if self.streaming is not None:
            return self.streaming.update_interval
        return self.streaming_edit_interval_ms / 1000.0
