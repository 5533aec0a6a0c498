"""Schedules: `!schedule` posts, stored durably and fired through `schedule:fired`."""

__all__: list[str] = []
