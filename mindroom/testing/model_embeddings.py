"""The scripted model server's `/v1/embeddings`: deterministic vectors, so knowledge search is tested offline.

A text's vector counts its words, each word hashed to one of `dimensions` slots (default 64) with a sign:
texts that share words point the same way, so a query finds the chunks that use its words, and the same
text always gets the same vector. Nothing here is a language model; it is a stand-in with a stable geometry.
"""

from __future__ import annotations

import hashlib
import json
import re
from http import HTTPStatus
from typing import Any

__all__ = ["DEFAULT_DIMENSIONS", "embed_text", "embeddings_reply"]

DEFAULT_DIMENSIONS = 64
_WORD = re.compile(r"\w+", re.UNICODE)


def embed_text(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The vector of `text`: signed word counts in hashed slots (all zeros but one slot for a text of no word)."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "big") % dimensions
        vector[slot] += 1.0 if digest[4] & 1 else -1.0
    if not any(vector):
        vector[0] = 1.0  # a zero vector has no direction, and cosine distance to it is undefined
    return vector


def embeddings_reply(raw: bytes) -> tuple[int, dict[str, Any]]:
    """The status and body answering an OpenAI embeddings request."""
    try:
        request = json.loads(raw or b"{}")
    except ValueError:
        request = None
    inputs = request.get("input") if isinstance(request, dict) else None
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not all(isinstance(text, str) for text in inputs):
        error = {"message": "input must be a string or a list of strings", "type": "scripted_error"}
        return HTTPStatus.BAD_REQUEST, {"error": {**error, "param": "input", "code": None}}
    assert isinstance(request, dict)
    dimensions = request.get("dimensions") or DEFAULT_DIMENSIONS
    data = [
        {"object": "embedding", "index": index, "embedding": embed_text(text, int(dimensions))}
        for index, text in enumerate(inputs)
    ]
    tokens = sum(len(_WORD.findall(text)) for text in inputs)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return HTTPStatus.OK, {"object": "list", "data": data, "model": request.get("model", "scripted"), "usage": usage}
