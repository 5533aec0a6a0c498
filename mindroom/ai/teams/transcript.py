"""`TeamTranscript`: a team's answer as people read it, built up as its members and its leader speak.

    🤝 **Team Response** (Research, Writer)

    **Research**: what Research said

    **Writer**: what Writer said

    **Team Consensus**: what the leader made of it

A member that failed or ran out of time is named in its place. Every method returns the text it adds, so a
streamed answer grows by appending only: parts appear in the order the members finish.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["TEAM_HEADER", "TeamTranscript"]

TEAM_HEADER = "🤝 **Team Response**"
_NO_CONSENSUS = "_The team reached no consensus; only the members' answers are shown._"


class TeamTranscript:
    """The shown text of one team answer (`text`), appended to by the run's events."""

    def __init__(self, members: Mapping[str, str], *, routed: bool = False) -> None:
        """`members`: member id -> display name, in the team's order; `routed`: one member answers for the team."""
        self.members = dict(members)
        self.routed = routed
        self.text = ""
        self.parts = 0
        self._consensus = False
        self._routed_to: str | None = None

    def _add(self, text: str) -> str:
        self.text += text
        return text

    def _name(self, member_id: str | None) -> str:
        return self.members.get(member_id or "", member_id or "a member")

    def header(self) -> str:
        """The first line, naming the members."""
        if self.text:
            return ""
        return self._add(f"{TEAM_HEADER} ({', '.join(self.members.values())})")

    def member(self, member_id: str | None, text: str) -> str:
        """One member's finished answer."""
        self.parts += 1
        return self.header() + self._add(f"\n\n**{self._name(member_id)}**: {text.strip()}")

    def member_failed(self, member_id: str | None, reason: str) -> str:
        """A member that did not answer, and why (in words safe to show)."""
        self.parts += 1
        return self.header() + self._add(f"\n\n⚠️ **{self._name(member_id)}** did not answer: {reason}")

    def routed_to(self, member_id: str | None) -> str:
        """In a routed team: the member whose answer follows, as the leader's text, is this one."""
        if self._routed_to is not None or self._consensus:
            return ""
        self._routed_to = member_id or ""
        self.parts += 1
        return self.header() + self._add(f"\n\n**{self._name(member_id)}**: ")

    def leader(self, delta: str) -> str:
        """Text of the leader: the consensus (or, routed, the chosen member's words)."""
        if not delta:
            return ""
        added = self.header()
        if self._routed_to is None and not self._consensus:
            self._consensus = True
            added += self._add("\n\n**Team Consensus**: ")
        return added + self._add(delta)

    def end(self) -> str:
        """What closes the answer: a note when the members spoke and the leader said nothing of its own."""
        added = self.header()
        if not self._consensus and not self.routed and self._routed_to is None:
            added += self._add(f"\n\n{_NO_CONSENSUS}")
        return added
