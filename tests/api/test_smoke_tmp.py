import pytest
from openai import AsyncOpenAI

pytestmark = pytest.mark.asyncio


async def test_smoke(make_api, model_server):
    api = await make_api({"helper": {"display_name": "Helper", "role": "Helps"}}, env={"OPENAI_COMPAT_API_KEYS": "k1"})
    model_server.set_default({"text": "hello there"}) if False else None
    client = AsyncOpenAI(base_url=api.url + "/v1", api_key="k1")
    models = await client.models.list()
    print([m.id for m in models.data])
    answer = await client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "hi"}])
    print(answer)
    stream = await client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "hi"}], stream=True)
    async for chunk in stream:
        print(chunk.choices[0].delta)
    async with api.client() as c:
        r = await c.get("/api/overview")
        print(r.status_code, r.text[:2000])
        r = await c.get("/metrics")
        print(r.status_code, r.text[:300])
