"""`mindroom.message_target`: the import path of `MessageTarget` in the 2026 plugin API.

An alias onto `mindroom.hooks.target`; the class is the one `MessageEnvelope.target` holds.
"""

from mindroom.hooks.target import MessageTarget, session_id_for

__all__ = ["MessageTarget", "session_id_for"]
