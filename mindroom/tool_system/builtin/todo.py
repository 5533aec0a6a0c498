"""The built-in `todo` tool (MindRoom's name): a work plan per conversation, with priorities and dependencies.

The plan belongs to the room and thread of the turn (`todo_store`); every agent with the tool that works in
that conversation sees and changes the same plan. An item may be assigned to an agent of the config that the
person the turn speaks for may talk to in this room. Templates are YAML files in the agent's workspace
(`todo_templates`). MindRoom's built-in templates and its reminders of open work are not offered here.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mindroom.tool_system.builtin.parts import ToolCaller, daemon_parts, tool_caller
from mindroom.tool_system.builtin.todo_store import (
    PRIORITIES,
    STATUSES,
    TERMINAL_STATUSES,
    NoWrite,
    is_actionable,
    is_blocked,
    read_plan,
    todos_path,
    update_plan,
    would_cycle,
)
from mindroom.tool_system.builtin.todo_templates import load_template, templates
from mindroom.tool_system.runtime_context import get_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["MAX_TITLE_CHARS", "add_todo", "list_todos", "plan", "todo_tools", "update_todo"]

MAX_TITLE_CHARS = 500
_MARKS = {"critical": "🔴", "high": "🟠", "medium": "🟡", "low": "🟢"}
_LIST_PREFIX = re.compile(r"^(\d+[.)]\s*|[-*]\s+)")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _short_id(taken: set[str]) -> str:
    while (candidate := secrets.token_hex(3)) in taken:
        pass
    return candidate


def _scope() -> tuple[ToolCaller, Path]:
    caller = tool_caller()
    bound = get_runtime_context()
    paths = bound.runtime_paths if bound is not None else None
    if paths is None:
        raise ToolError("the work plan needs the daemon's data directory")
    return caller, todos_path(paths.storage_root, caller.room_id, caller.thread_id)


def _assignee_problem(caller: ToolCaller, agent: str) -> str | None:
    """Why `agent` cannot be given work by the caller here (unknown, or one the person may not talk to)."""
    if not agent or agent == caller.agent_name:
        return None
    agents = set(caller.config.agents) if caller.config is not None else set()
    if agent not in agents:
        return f"Unknown agent '{agent}'. Available: {', '.join(sorted(agents)) or 'none'}"
    rooms = daemon_parts().rooms
    if rooms is not None and not rooms.may_reach(caller.requester_id, caller.room_id, agent):
        return f"Cannot give todo work to '{agent}': that agent is not allowed to reply to you in this room."
    return None


def _default_assignee(caller: ToolCaller) -> str:
    agents = caller.config.agents if caller.config is not None else {}
    return caller.agent_name if caller.agent_name in agents else ""


def _item(taken: set[str], title: str, priority: str, deps: list[str], agent: str, requester: str) -> dict[str, Any]:
    now = _now()
    item_id = _short_id(taken)
    taken.add(item_id)
    return {
        "id": item_id,
        "title": title,
        "status": "open",
        "priority": priority,
        "depends_on": deps,
        "assigned_agent": agent,
        "requester_id": requester,
        "created_at": now,
        "updated_at": now,
        "completed_at": None,
    }


def _title(raw: str) -> str:
    title = raw.strip()
    if not title:
        raise ToolError("Title cannot be empty.")
    if len(title) > MAX_TITLE_CHARS:
        raise ToolError(f"a title is at most {MAX_TITLE_CHARS} characters")
    return title


def _line(item: dict[str, Any]) -> str:
    assigned = f" @{item['assigned_agent']}" if item.get("assigned_agent") else ""
    priority = item.get("priority", "medium")
    return f"- {_MARKS.get(priority, '')} `{item['id']}` {item['title']} [{priority}]{assigned}"


def plan(tasks: str) -> str:
    """Create a multi-step work plan for the current conversation: one task per line.

    A line may start with a list marker ("1.", "-") and a priority ("[high] Ship it").

    Args:
        tasks: The tasks, one per line.
    """
    caller, path = _scope()
    parsed: list[tuple[str, str]] = []
    for raw in tasks.splitlines():
        text = _LIST_PREFIX.sub("", raw.strip()).strip()
        priority = "medium"
        for candidate in PRIORITIES:
            if text.lower().startswith(f"[{candidate}] "):
                priority, text = candidate, text[len(candidate) + 3 :].strip()
        if text:
            parsed.append((_title(text), priority))
    if not parsed:
        return "No tasks provided. Write one task per line."
    agent = _default_assignee(caller)

    def create(data: dict[str, Any]) -> list[dict[str, Any]]:
        taken = {item["id"] for item in data["items"]}
        made = [_item(taken, title, priority, [], agent, caller.requester_id) for title, priority in parsed]
        data["items"].extend(made)
        data["updated_at"] = _now()
        return made

    created = update_plan(path, create)
    return "\n".join([f"Created {len(created)} item(s) in this conversation's work plan:", *map(_line, created)])


def add_todo(title: str, depends_on: str = "", priority: str = "medium", assigned_agent: str = "") -> str:
    """Add one item to the current conversation's work plan.

    Args:
        title: What is to be done.
        depends_on: IDs of items this one waits on, separated by commas.
        priority: low, medium, high or critical.
        assigned_agent: The agent to do it (default: you).
    """
    caller, path = _scope()
    clean = _title(title)
    priority = priority.strip().lower() or "medium"
    if priority not in PRIORITIES:
        return f"Invalid priority '{priority}'. Must be: low, medium, high, critical."
    deps = [dep.strip() for dep in depends_on.split(",") if dep.strip()]
    agent = assigned_agent.strip() or _default_assignee(caller)
    problem = _assignee_problem(caller, agent)
    if problem is not None:
        return problem

    def create(data: dict[str, Any]) -> dict[str, Any] | NoWrite:
        taken = {item["id"] for item in data["items"]}
        missing = [dep for dep in deps if dep not in taken]
        if missing:
            return NoWrite(f"Dependency `{missing[0]}` not found.")
        item = _item(taken, clean, priority, deps, agent, caller.requester_id)
        data["items"].append(item)
        data["updated_at"] = _now()
        return item

    result = update_plan(path, create)
    if isinstance(result, str):
        return result
    after = f" (depends on {', '.join(f'`{dep}`' for dep in deps)})" if deps else ""
    return f"Created: {_MARKS[priority]} `{result['id']}` **{clean}** [{priority}]{after}" + (
        f" assigned to {agent}" if agent else ""
    )


def list_todos(show_all: bool = False) -> str:
    """List the current conversation's work plan: what can be done now, what waits, and (show_all) what is done.

    Args:
        show_all: Also list finished and cancelled items.
    """
    _caller, path = _scope()
    items: list[dict[str, Any]] = read_plan(path).get("items", [])
    if not items:
        return "No items in this conversation's work plan."
    by_id = {item["id"]: item for item in items}
    ready = sorted((i for i in items if is_actionable(i, by_id)), key=lambda i: PRIORITIES.get(i["priority"], 9))
    waiting = [i for i in items if i["status"] == "open" and is_blocked(i, by_id)]
    done = [i for i in items if i["status"] in TERMINAL_STATUSES]
    lines = [f"Work plan: {len(done)}/{len(items)} complete."]
    if ready:
        lines += ["Actionable:", *map(_line, ready)]
    if waiting:
        lines.append("Blocked:")
        for item in waiting:
            open_deps = [d for d in item["depends_on"] if by_id.get(d, {}).get("status") not in TERMINAL_STATUSES]
            lines.append(f"- `{item['id']}` {item['title']} waiting on {', '.join(f'`{d}`' for d in open_deps)}")
    if show_all and done:
        lines += ["Done/Cancelled:", *(f"- {i['status']} `{i['id']}` {i['title']}" for i in done)]
    return "\n".join(lines)


def _apply_update(
    caller: ToolCaller, item: dict[str, Any], by_id: dict[str, dict[str, Any]], changes: dict[str, Any]
) -> str | None:
    """Change `item` in place; a refusal when a change is not allowed."""
    for agent in {item.get("assigned_agent", ""), changes.get("assigned_agent", "")} - {""}:
        problem = _assignee_problem(caller, agent)
        if problem is not None:
            return problem
    for dep in changes.get("depends_on") or []:
        if dep not in by_id:
            return f"Dependency `{dep}` not found."
        if dep == item["id"]:
            return "Cannot depend on itself."
        if would_cycle(by_id, item["id"], dep):
            return f"Adding dependency `{dep}` would create a cycle."
    item.update(changes)
    if "status" in changes:
        item["completed_at"] = _now() if changes["status"] == "done" else None
    item["requester_id"] = caller.requester_id
    item["updated_at"] = _now()
    return None


def update_todo(
    todo_id: str,
    title: str = "",
    priority: str = "",
    status: str = "",
    depends_on: str | None = None,
    assigned_agent: str = "",
) -> str:
    """Change an item of the current conversation's work plan (only the fields given).

    Args:
        todo_id: The item's ID.
        title: A new title.
        priority: low, medium, high or critical.
        status: open, done or cancelled.
        depends_on: The IDs it waits on, separated by commas ("" clears them).
        assigned_agent: The agent to do it.
    """
    caller, path = _scope()
    changes: dict[str, Any] = {}
    if title.strip():
        changes["title"] = _title(title)
    if priority:
        if priority.lower() not in PRIORITIES:
            return f"Invalid priority '{priority}'. Must be: low, medium, high, critical."
        changes["priority"] = priority.lower()
    if status:
        if status.lower() not in STATUSES:
            return f"Invalid status '{status}'. Must be: open, done, cancelled."
        changes["status"] = status.lower()
    if depends_on is not None:
        changes["depends_on"] = [dep.strip() for dep in depends_on.split(",") if dep.strip()]
    if assigned_agent.strip():
        changes["assigned_agent"] = assigned_agent.strip()
    if not changes:
        return "No fields to update."

    def change(data: dict[str, Any]) -> str | NoWrite:
        by_id = {item["id"]: item for item in data["items"]}
        item = by_id.get(todo_id.strip())
        if item is None:
            return NoWrite(f"Todo `{todo_id}` not found.")
        refusal = _apply_update(caller, item, by_id, changes)
        if refusal is not None:
            return NoWrite(refusal)
        data["updated_at"] = _now()
        freed = [
            f"`{other['id']}` {other['title']}"
            for other in data["items"]
            if item["id"] in other.get("depends_on", []) and is_actionable(other, by_id)
        ]
        unblocked = f"\nNow unblocked: {', '.join(freed)}" if freed and item["status"] in TERMINAL_STATUSES else ""
        shown = ", ".join(f"{key}={value}" for key, value in changes.items())
        return f"Updated `{item['id']}`: {shown}{unblocked}"

    return update_plan(path, change)


def _template_tools(workspace: Path) -> tuple[Callable[..., str], Callable[[], str]]:
    def apply_template(name: str, params: dict[str, str | int | bool] | None = None, dry_run: bool = False) -> str:
        """Add the items of a work-plan template from your workspace (todo/templates/<name>.yaml) to this plan.

        Args:
            name: The template's name (list_templates shows them).
            params: Values for the template's parameters.
            dry_run: Only show what would be created.
        """
        template, values = load_template(workspace, name.strip(), dict(params or {}))
        caller, path = _scope()
        default = _default_assignee(caller)
        for todo in template.todos:
            problem = _assignee_problem(caller, str(todo.get("assigned_agent") or default))
            if problem is not None:
                return problem
        header = [f"Template `{template.name}` v{template.version}"]
        header += [f"- `{key}`: `{value}`" for key, value in values.items()]
        if dry_run:
            return "\n".join([*header, "Preview:", *(f"- {i}. {t['title']}" for i, t in enumerate(template.todos, 1))])

        def create(data: dict[str, Any]) -> list[dict[str, Any]]:
            taken = {item["id"] for item in data["items"]}
            made: list[dict[str, Any]] = []
            for todo in template.todos:
                deps = [made[index - 1]["id"] for index in todo.get("depends_on", [])]
                agent = str(todo.get("assigned_agent") or default)
                made.append(
                    _item(taken, todo["title"], str(todo.get("priority", "medium")), deps, agent, caller.requester_id)
                )
            data["items"].extend(made)
            data["updated_at"] = _now()
            return made

        created = update_plan(path, create)
        return "\n".join([*header, f"Created {len(created)} todo(s):", *map(_line, created)])

    def list_templates() -> str:
        """List the work-plan templates in your workspace (todo/templates/*.yaml)."""
        found = templates(workspace)
        if not found:
            return "No templates: add YAML files to todo/templates/ in your workspace."
        rows = ["| name | version | description | params |", "| --- | --- | --- | --- |"]
        rows += [f"| `{t.name}` | {t.version} | {t.description} | {', '.join(t.params) or '-'} |" for t in found]
        return "\n".join(rows)

    return apply_template, list_templates


def todo_tools(env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `todo` group: plan, add_todo, list_todos, update_todo, apply_template, list_templates."""
    apply_template, list_templates = _template_tools(env.workspace)
    functions = (plan, add_todo, list_todos, update_todo, apply_template, list_templates)
    return tuple(ToolSpec(name=function.__name__, function=function, in_thread=True) for function in functions)
