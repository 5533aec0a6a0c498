"""MindRoom: a Matrix chat-bot daemon for AI agents with a typed, hot-reloadable hook host."""

__version__ = "0.1.0"
