"""The docs page rendered from the OpenAPI document: every route listed, every value escaped, no script."""

from __future__ import annotations

from mindroom.api.docs_page import DOCS_CSP, routes_page

DOCUMENT = {
    "info": {"title": "Daemon <b>", "version": "1.2", "description": "What it serves."},
    "paths": {
        "/api/items/{item_id}": {
            "get": {
                "summary": "<script>alert(1)</script>",
                "parameters": [{"name": "item_id", "in": "path", "required": True}, {"name": "q", "in": "query"}],
                "responses": {"200": {}, "404": {}},
            },
            "put": {
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}}},
                "responses": {"200": {}},
            },
            "parameters": [],  # path-level fields are not operations
        }
    },
}


def test_docs_page_lists_each_operation_escaped_without_script():
    page = routes_page(DOCUMENT)

    assert "<title>Daemon &lt;b&gt; 1.2</title>" in page
    assert page.count("<td>/api/items/{item_id}</td>") == 2
    assert "<td>item_id (path, required); q (query)</td>" in page and "<td>200, 404</td>" in page
    assert "<td>application/json: Item</td>" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script" not in page
    assert "script-src 'none'" in DOCS_CSP and "unsafe" not in DOCS_CSP
