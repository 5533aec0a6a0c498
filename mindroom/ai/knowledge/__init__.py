"""Knowledge bases: files and Git checkouts indexed by words and vectors, searched by agents' turns."""

__all__: list[str] = []
