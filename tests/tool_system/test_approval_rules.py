"""`tool_approval:` rules in the tool call path: which calls ask, what the card shows, and who is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.config.approval import ToolApprovalConfig
from mindroom.constants import RuntimePaths
from mindroom.hooks.registry import HookRegistry
from mindroom.hooks.tool_contexts import ApprovalRequest
from mindroom.tool_system.approval_rules import approval_prompt, needs_approval
from mindroom.tool_system.calls import call_tool
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import ToolSpec

pytestmark = pytest.mark.asyncio


def rules(**config) -> ToolApprovalConfig:
    return ToolApprovalConfig.model_validate(config)


async def test_approval_rules_decide_by_action_default_and_script(tmp_path: Path):
    script = tmp_path / "rules" / "check.py"
    script.parent.mkdir()
    script.write_text("async def check(tool_name, arguments, agent_name):\n    return arguments.get('n', 0) > 10\n")
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {})
    approval = rules(
        default="require_approval",
        rules=[{"match": "safe_*", "action": "auto_approve"}, {"match": "count", "script": "rules/check.py"}],
    )

    assert (await needs_approval(approval, "safe_read", {}, "a", paths))[0] is False
    assert (await needs_approval(approval, "other", {}, "a", paths)) == (True, None)
    assert (await needs_approval(approval, "count", {"n": 3}, "a", paths))[0] is False
    assert (await needs_approval(approval, "count", {"n": 30}, "a", paths))[0] is True
    script.write_text("def check(tool_name, arguments, agent_name):\n    raise RuntimeError('broken')\n")
    assert (await needs_approval(approval, "count", {"n": 3}, "a", paths))[0] is True  # a broken script asks


async def test_approval_prompt_shows_arguments_with_secrets_redacted():
    prompt = approval_prompt(None, {"query": "weather", "api_key": "sk-abcdefghijklmnop", "blob": "x" * 2000})

    assert prompt.startswith("the approval default asks first. Arguments: {")
    assert "weather" in prompt and "sk-abcdefghijklmnop" not in prompt and prompt.endswith("…")


def context(approval: ToolApprovalConfig, answer: bool | None, asked: list[ApprovalRequest]) -> ToolRuntimeContext:
    async def requester(request: ApprovalRequest) -> bool:
        asked.append(request)
        return bool(answer)

    config = type("C", (), {"tool_approval": approval})()
    return ToolRuntimeContext(
        HookRegistry.empty(),
        agent_name="a",
        requester_id="@alice:x" if answer is not None else None,
        correlation_id="turn",
        config=config,
        approval_requester=requester if answer is not None else None,
    )


@pytest.mark.parametrize(("answer", "ran"), [(True, True), (False, False), (None, False)])
async def test_approval_rule_runs_the_call_only_when_the_person_allows_it(answer, ran):
    calls: list[int] = []
    spec = ToolSpec(name="deploy", function=lambda n: calls.append(n) or "deployed")
    asked: list[ApprovalRequest] = []
    approval = rules(rules=[{"match": "dep*", "action": "require_approval", "timeout_days": 0.5}])

    with bind_runtime_context(context(approval, answer, asked)):
        text = await call_tool(spec, "a", {"n": 1})

    assert (calls == [1]) is ran
    if ran:
        assert text == "deployed"
    else:
        assert text.startswith("[TOOL CALL DECLINED]")
    if answer is not None:
        (request,) = asked
        assert (request.tool_name, request.timeout_s, request.plugin_name, request.hook_name) == (
            "deploy", 43200.0, "tool_approval", "dep*"
        )  # fmt: skip
    else:
        assert "nobody to ask" in text
