"""`!usage`: what the sender's turns spent this month and today; administrators also anyone's and the top spenders.

- `!usage`: your own.
- `!usage @person:server` (administrators): that person's.
- `!usage top` (administrators): who spent most this month.
"""

from __future__ import annotations

from mindroom.bots.commands.table import Command, is_administrator
from mindroom.bots.runtime import Entity, LiveState
from mindroom.bots.usage.ledger import UsageLedger
from mindroom.bots.usage.report import person_report, top_spenders
from mindroom.hooks.context import MessageEnvelope

__all__ = ["usage_command"]

_USAGE = "Usage: `!usage` (yours), `!usage @person:server` or `!usage top` (administrators)"


def usage_command(ledger: UsageLedger) -> Command:
    """`!usage` on `ledger`, for the orchestrator to register."""

    async def run(entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        asked = args.strip()
        person = envelope.requester_id
        if not asked or asked == person:
            return await person_report(ledger, person, own=True)
        if asked.lower() != "top" and not asked.startswith("@"):
            return f"❌ {_USAGE}"
        if not is_administrator(live, envelope, "usage"):
            return "❌ Only administrators can see other people's usage."
        if asked.lower() == "top":
            return await top_spenders(ledger)
        return await person_report(ledger, asked, own=False)

    return Command("usage", "what your turns spent this month and today (administrators: anyone's, top)", run)
