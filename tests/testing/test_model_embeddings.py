"""The scripted server's embeddings endpoint, through the real `openai` client: stable vectors with a geometry."""

from __future__ import annotations

import openai
import pytest

from mindroom.testing.model_embeddings import embed_text
from mindroom.testing.model_server import ScriptedModelServer

pytest_plugins = ("mindroom.testing.model_server",)


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / ((sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5))


def test_embeddings_endpoint_answers_each_input_with_a_vector_of_the_asked_width(model_server: ScriptedModelServer):
    with openai.OpenAI(base_url=model_server.base_url, api_key="test", max_retries=0, timeout=5) as client:
        reply = client.embeddings.create(model="embed", input=["the red fox", "blue whale"], dimensions=32)

    assert [item.index for item in reply.data] == [0, 1]
    assert all(len(item.embedding) == 32 for item in reply.data)
    assert reply.data[0].embedding == embed_text("the red fox", 32)
    assert reply.usage.prompt_tokens == 5


def test_embeddings_of_texts_sharing_words_are_closer_than_of_unrelated_texts():
    query = embed_text("where does the red fox sleep")

    near = _cosine(query, embed_text("The red fox sleeps in a den."))
    far = _cosine(query, embed_text("Quarterly budget spreadsheet totals."))

    assert near > far
    assert embed_text("same words") == embed_text("Same words!")


def test_embeddings_endpoint_refuses_input_that_is_not_text(model_server: ScriptedModelServer):
    with (
        openai.OpenAI(base_url=model_server.base_url, api_key="test", max_retries=0, timeout=5) as client,
        pytest.raises(openai.BadRequestError),
    ):
        client.embeddings.create(model="embed", input=[[1, 2, 3]])  # type: ignore[list-item]
