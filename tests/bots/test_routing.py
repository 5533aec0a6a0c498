"""Routing: which agents a message mentions, and who answers it."""

from typing import Any

import pytest

from mindroom.bots.routing import RouteDecision, decide_route, mentioned_agents

HELPER = "@mindroom_helper:localhost"
CODER = "@mindroom_coder:localhost"
RESEARCH = "@mindroom_research:localhost"
AGENTS = {"helper": HELPER, "coder": CODER, "research": RESEARCH}
DISPLAY_NAMES = {"helper": "Helper", "coder": "Code Smith", "research": "Research Desk"}


def pill(user_id: str, text: str) -> str:
    """A Matrix pill as clients write it into `formatted_body`."""
    return f'<a href="https://matrix.to/#/{user_id}">{text}</a>'


# -- mentioned_agents ---------------------------------------------------------------------------------

TEXT_MENTIONS = [
    pytest.param("hello there", (), id="no-mention"),
    pytest.param("@helper can you help", ("helper",), id="name-at-start"),
    pytest.param("can you help @helper", ("helper",), id="name-at-end"),
    pytest.param("@HELPER hi", ("helper",), id="name-any-case"),
    pytest.param("@helpers are welcome", (), id="longer-word-is-not-the-name"),
    pytest.param("@helper2 hi", (), id="digit-after-name"),
    pytest.param("@helper-2 hi", (), id="hyphen-after-name"),
    pytest.param("@helper_bot hi", (), id="underscore-after-name"),
    pytest.param("ask @helper.", ("helper",), id="full-stop-after-name"),
    pytest.param("@helper, hi", ("helper",), id="comma-after-name"),
    pytest.param("@helper: hi", ("helper",), id="colon-after-name"),
    pytest.param("@helper? are you there", ("helper",), id="question-mark-after-name"),
    pytest.param("@helper! now", ("helper",), id="exclamation-after-name"),
    pytest.param("(@helper)", ("helper",), id="inside-parentheses"),
    pytest.param("hi @helper\nnext line", ("helper",), id="newline-after-name"),
    pytest.param("helper please", (), id="name-without-at"),
    pytest.param("@Helper hi", ("helper",), id="display-name-one-word"),
    pytest.param("@Code Smith please", ("coder",), id="display-name-two-words"),
    pytest.param("@code smith please", ("coder",), id="display-name-any-case"),
    pytest.param("@Code Smithy please", (), id="display-name-longer-word"),
    pytest.param("@Code please", (), id="display-name-first-word-only"),
    pytest.param("@coder please", ("coder",), id="config-name-besides-display-name"),
    pytest.param(f"{CODER} please", ("coder",), id="full-user-id"),
    pytest.param("@mindroom_coder:localhostx hi", (), id="user-id-prefix-of-longer-id"),
    pytest.param("@nobody hi", (), id="unknown-name"),
    pytest.param("@mindroom_nobody:localhost hi", (), id="unknown-user-id"),
    pytest.param("@research then @helper", ("research", "helper"), id="order-of-appearance"),
    pytest.param("@helper then @research", ("helper", "research"), id="order-of-appearance-reversed"),
    pytest.param("@Research Desk, @Code Smith, @helper", ("research", "coder", "helper"), id="order-mixed-forms"),
    pytest.param("@helper @helper @Helper", ("helper",), id="duplicates-once"),
    pytest.param(f"{HELPER} and @helper", ("helper",), id="duplicate-id-and-name-once"),
]


@pytest.mark.parametrize(("body", "expected"), TEXT_MENTIONS)
def test_mentioned_agents_in_body(body: str, expected: tuple[str, ...]) -> None:
    assert mentioned_agents({"body": body}, AGENTS, DISPLAY_NAMES) == expected


STRUCTURED_MENTIONS = [
    pytest.param(
        {"body": "Code Smith: hi", "formatted_body": f"{pill(CODER, 'Code Smith')}: hi"},
        ("coder",),
        id="pill",
    ),
    pytest.param(
        {"body": "Someone: hi", "formatted_body": f"{pill('@someone:localhost', 'Someone')}: hi"},
        (),
        id="pill-unknown-user",
    ),
    pytest.param(
        {
            "body": "Code Smith Helper hi",
            "formatted_body": f"{pill(CODER, 'Code Smith')} {pill(HELPER, 'Helper')} hi",
        },
        ("coder", "helper"),
        id="pills-in-order",
    ),
    pytest.param(
        {
            "body": "Helper Code Smith hi",
            "formatted_body": f"{pill(HELPER, 'Helper')} {pill(CODER, 'Code Smith')} hi",
        },
        ("helper", "coder"),
        id="pills-in-order-reversed",
    ),
    pytest.param(
        {"body": "Helper Helper", "formatted_body": f"{pill(HELPER, 'Helper')} {pill(HELPER, 'Helper')}"},
        ("helper",),
        id="pill-duplicate-once",
    ),
    pytest.param(
        {"body": "x", "formatted_body": f"<a href='https://matrix.to/#/{HELPER}'>x</a>"},
        ("helper",),
        id="pill-single-quoted-href",
    ),
    pytest.param(
        {"body": "x", "formatted_body": "<a href='https://matrix.to/#/@mindroom_helper:localhost/$event'>x</a>"},
        ("helper",),
        id="pill-with-event-path",
    ),
    pytest.param(
        {"body": "x", "formatted_body": "<a href='https://matrix.to/#/@mindroom_helper:localhost.evil'>x</a>"},
        (),
        id="pill-longer-user-id",
    ),
    pytest.param(
        {"body": "x", "formatted_body": "<a href='https://example.org/#/@mindroom_helper:localhost'>x</a>"},
        (),
        id="link-not-matrix-to",
    ),
    pytest.param({"body": "hi", "m.mentions": {"user_ids": [HELPER]}}, ("helper",), id="m-mentions"),
    pytest.param({"body": "hi", "m.mentions": {"user_ids": ["@stranger:localhost"]}}, (), id="m-mentions-unknown"),
    pytest.param({"body": "hi", "m.mentions": {"user_ids": [HELPER, HELPER]}}, ("helper",), id="m-mentions-twice"),
    pytest.param({"body": "hi", "m.mentions": {"user_ids": [7, None, HELPER]}}, ("helper",), id="m-mentions-junk"),
    pytest.param({"body": "hi", "m.mentions": {"user_ids": HELPER}}, (), id="m-mentions-not-a-list"),
    pytest.param({"body": "hi", "m.mentions": [HELPER]}, (), id="m-mentions-not-an-object"),
    pytest.param({"body": "hi", "m.mentions": {"room": True}}, (), id="m-mentions-room-only"),
    pytest.param(
        {"body": f"{HELPER} and {CODER}", "m.mentions": {"user_ids": [CODER, HELPER]}},
        ("helper", "coder"),
        id="m-mentions-ordered-by-body",
    ),
    pytest.param(
        {"body": "hi all", "m.mentions": {"user_ids": [CODER, HELPER]}},
        ("coder", "helper"),
        id="m-mentions-absent-from-body-in-list-order",
    ),
    pytest.param(
        {"body": "@research first", "m.mentions": {"user_ids": [HELPER]}},
        ("research", "helper"),
        id="m-mentions-absent-from-body-after-text-mentions",
    ),
    pytest.param(
        {
            "body": "Helper @helper",
            "formatted_body": f"{pill(HELPER, 'Helper')} @helper",
            "m.mentions": {"user_ids": [HELPER]},
        },
        ("helper",),
        id="pill-m-mentions-and-name-once",
    ),
    pytest.param({"formatted_body": pill(HELPER, "Helper")}, ("helper",), id="pill-without-body"),
    pytest.param({"body": 5, "formatted_body": pill(HELPER, "Helper")}, ("helper",), id="pill-with-non-string-body"),
    pytest.param({"body": "@helper", "formatted_body": 5}, ("helper",), id="non-string-formatted-body"),
    pytest.param({}, (), id="empty-content"),
]


@pytest.mark.parametrize(("content", "expected"), STRUCTURED_MENTIONS)
def test_mentioned_agents_structured(content: dict[str, Any], expected: tuple[str, ...]) -> None:
    assert mentioned_agents(content, AGENTS, DISPLAY_NAMES) == expected


def test_mentioned_agents_without_display_names_uses_config_names() -> None:
    assert mentioned_agents({"body": "@Code Smith and @coder"}, AGENTS, {}) == ("coder",)
    assert mentioned_agents({"body": "@Code Smith"}, AGENTS, {}) == ()


def test_mentioned_agents_of_no_agents_is_empty() -> None:
    assert mentioned_agents({"body": "@helper", "m.mentions": {"user_ids": [HELPER]}}, {}, {}) == ()


def test_mentioned_agents_order_of_pill_and_plain_name() -> None:
    content = {
        "body": "Urgent: Code Smith, then @helper",
        "formatted_body": f"<strong>Urgent</strong>: {pill(CODER, 'Code Smith')}, then @helper",
    }
    assert mentioned_agents(content, AGENTS, DISPLAY_NAMES) == ("coder", "helper")


def test_mentioned_agents_ignores_name_inside_a_word() -> None:
    assert mentioned_agents({"body": "write to ops@helper about it"}, AGENTS, DISPLAY_NAMES) == ()


# -- decide_route -------------------------------------------------------------------------------------

ROUTES = [
    pytest.param(("coder",), ("helper", "coder"), RouteDecision("mentioned", ("coder",)), id="mentioned-present"),
    pytest.param(
        ("research", "helper"),
        ("helper", "coder", "research"),
        RouteDecision("mentioned", ("research", "helper")),
        id="mentioned-keep-mention-order",
    ),
    pytest.param(
        ("research", "helper"),
        ("helper", "coder"),
        RouteDecision("mentioned", ("helper",)),
        id="mentioned-partly-absent",
    ),
    pytest.param(("coder",), ("coder",), RouteDecision("mentioned", ("coder",)), id="mentioned-only-agent"),
    pytest.param(("research",), ("helper",), RouteDecision("single", ("helper",)), id="mentioned-absent-single"),
    pytest.param(
        ("research",),
        ("helper", "coder"),
        RouteDecision("router", ("helper", "coder")),
        id="mentioned-absent-several",
    ),
    pytest.param((), ("helper",), RouteDecision("single", ("helper",)), id="no-mention-single-agent"),
    pytest.param(
        (),
        ("coder", "helper", "research"),
        RouteDecision("router", ("coder", "helper", "research")),
        id="no-mention-several-agents-in-room-order",
    ),
    pytest.param((), (), None, id="no-agents"),
    pytest.param(("helper",), (), None, id="mentioned-but-no-agents"),
]


@pytest.mark.parametrize(("mentioned", "agents_in_room", "expected"), ROUTES)
def test_decide_route(
    mentioned: tuple[str, ...], agents_in_room: tuple[str, ...], expected: RouteDecision | None
) -> None:
    assert decide_route(mentioned, agents_in_room) == expected


def test_decide_route_accepts_lists() -> None:
    assert decide_route(["coder"], ["helper", "coder"]) == RouteDecision("mentioned", ("coder",))
    assert decide_route([], ["helper", "coder"]) == RouteDecision("router", ("helper", "coder"))
