"""MindRoom's package of built-in tools, for plugins written against MindRoom (only `mindroom.tools.shell` is here)."""

__all__: list[str] = []
