"""What one `mindroom doctor` check reports: pass, warn or fail, and the fix; redacted as it is made."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mindroom.logging_config import redact_text

__all__ = ["CheckResult", "CheckStatus", "check_fail", "check_ok", "check_warn"]


class CheckStatus(enum.StrEnum):
    """How a check went."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One line of the report: what was checked, how it went, and the fix when it did not pass."""

    name: str
    status: CheckStatus
    detail: str
    fix: str = ""


def check_ok(name: str, detail: str) -> CheckResult:
    """A passed check."""
    return CheckResult(name, CheckStatus.PASS, redact_text(detail))


def check_warn(name: str, detail: str, fix: str = "") -> CheckResult:
    """A check that passed with a reservation (and what to do about it, if anything)."""
    return CheckResult(name, CheckStatus.WARN, redact_text(detail), redact_text(fix))


def check_fail(name: str, detail: str, fix: str) -> CheckResult:
    """A failed check and its fix."""
    return CheckResult(name, CheckStatus.FAIL, redact_text(detail), redact_text(fix))
