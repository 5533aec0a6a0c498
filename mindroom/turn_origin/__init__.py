"""`mindroom.turn_origin`: the import path of `TurnOrigin` and its enums in the 2026 plugin API.

An alias onto `mindroom.hooks.origin`; the class is the one `MessageEnvelope.origin` holds.
"""

from mindroom.hooks.origin import SenderKind, TurnIntent, TurnOrigin, TurnTrust, select_intent

__all__ = ["SenderKind", "TurnIntent", "TurnOrigin", "TurnTrust", "select_intent"]
