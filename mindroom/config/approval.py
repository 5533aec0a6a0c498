"""`tool_approval:` in MindRoom's keys: which tool calls wait for a person's ✅ before they run.

```yaml
tool_approval:
  default: auto_approve          # or require_approval: the decision when no rule matches
  timeout_days: 7                # how long a card stays open
  rules:                         # in order, the first match wins
    - match: "run_shell_command" # a glob over the function name the model calls
      action: require_approval
    - match: "github_*"
      script: approval/github.py # check(tool_name, arguments, agent_name) -> bool (True: ask)
      timeout_days: 0.5
```
"""

from __future__ import annotations

import fnmatch
import math
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mindroom.config.strict import StrictModel

__all__ = ["ApprovalAction", "ApprovalRuleConfig", "ToolApprovalConfig"]

ApprovalAction = Literal["auto_approve", "require_approval"]
_MAX_TIMEOUT_DAYS = 36500.0


def _timeout(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = "timeout_days must be a number of days"
        raise ValueError(msg)
    if not math.isfinite(value) or not 0 < value <= _MAX_TIMEOUT_DAYS:
        msg = f"timeout_days must be above 0 and at most {_MAX_TIMEOUT_DAYS:g}"
        raise ValueError(msg)
    return float(value)


class ApprovalRuleConfig(StrictModel):
    """One rule: a glob over function names, and either a fixed action or a script that decides per call."""

    match: str
    action: ApprovalAction | None = None
    script: str | None = None
    timeout_days: float | None = None

    @field_validator("match", "script")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            msg = "must not be blank"
            raise ValueError(msg)
        return value

    @field_validator("timeout_days", mode="before")
    @classmethod
    def _days(cls, value: Any) -> Any:
        return None if value is None else _timeout(value)

    @model_validator(mode="after")
    def _one_decider(self) -> ApprovalRuleConfig:
        if (self.action is None) == (self.script is None):
            msg = "set exactly one of action or script"
            raise ValueError(msg)
        return self

    def matches(self, function_name: str) -> bool:
        """Whether this rule covers a call of `function_name` (case-sensitive glob)."""
        return fnmatch.fnmatchcase(function_name, self.match)


class ToolApprovalConfig(StrictModel):
    """The approval rules (top level `tool_approval:`)."""

    default: ApprovalAction = "auto_approve"
    timeout_days: float = 7.0
    rules: list[ApprovalRuleConfig] = Field(default_factory=list)
    scheduled_any_arguments: bool = True

    @field_validator("timeout_days", mode="before")
    @classmethod
    def _days(cls, value: Any) -> Any:
        return _timeout(value)

    def rule_for(self, function_name: str) -> ApprovalRuleConfig | None:
        """The first rule matching `function_name`, if any."""
        return next((rule for rule in self.rules if rule.matches(function_name)), None)

    @property
    def active(self) -> bool:
        """Whether any call can need approval (a rule exists, or the default asks)."""
        return bool(self.rules) or self.default == "require_approval"
