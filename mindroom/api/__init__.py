"""The daemon's one HTTP app: the OpenAI-compatible API (`/v1`), the REST API (`/api`), the dashboard (`/`)
and `/metrics`, on FastAPI served by uvicorn in the daemon's own event loop (`ApiServer`)."""

__all__: list[str] = []
