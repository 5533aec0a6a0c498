"""MCP servers as tools: one supervised connection per server, over stdio or HTTP, and their tools for agents."""

__all__: list[str] = []
