"""`mindroom.dispatch_source`: the source kinds dispatch policy names, at the 2026 plugin API's import path.

An alias onto the constants in `mindroom.hooks.origin`.
"""

from mindroom.hooks.origin import (
    ACTIVE_THREAD_FOLLOW_UP_SOURCE_KIND,
    EXTERNAL_TRIGGER_SOURCE_KIND,
    HOOK_DISPATCH_SOURCE_KIND,
    HOOK_SOURCE_KIND,
    SCHEDULED_SOURCE_KIND,
    SILENT_SCHEDULED_SOURCE_KIND,
    TRUSTED_INTERNAL_RELAY_SOURCE_KIND,
)

__all__ = [
    "ACTIVE_THREAD_FOLLOW_UP_SOURCE_KIND",
    "EXTERNAL_TRIGGER_SOURCE_KIND",
    "HOOK_DISPATCH_SOURCE_KIND",
    "HOOK_SOURCE_KIND",
    "SCHEDULED_SOURCE_KIND",
    "SILENT_SCHEDULED_SOURCE_KIND",
    "TRUSTED_INTERNAL_RELAY_SOURCE_KIND",
]
