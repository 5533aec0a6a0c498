"""`register_tool_with_metadata` in both generations' shapes, and registered toolkits in the tool catalogue."""

import json
import textwrap
from types import SimpleNamespace

import pytest
from structlog.testing import capture_logs

from mindroom.ai.tools import foreign_tool_specs
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.plugins.loader import load_plugin_dir
from mindroom.tool_system import declarations, metadata
from mindroom.tool_system.catalog import ToolCatalogError, build_tool_catalog, plugin_tool_specs
from mindroom.tool_system.declarations import (
    ConfigField,
    SetupType,
    ToolCategory,
    ToolExecutionTarget,
    ToolFileAccess,
    ToolManagedInitArg,
    ToolStatus,
)
from mindroom.tool_system.metadata import ToolMetadataValidationError, get_tool_by_name
from mindroom.tool_system.registration import (
    DEFAULT_FILE_ACCESS,
    get_tool_registration,
    managed_init_kwargs,
    register_tool_with_metadata,
)
from mindroom.tool_system.runtime_context import ToolRuntimeContext, bind_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment

# A toolkit as the published plugins of both generations write one: the older call has no file_access.
OLDER_TOOLS = """
from agno.tools import Toolkit

from mindroom.tool_system.metadata import SetupType, ToolCategory, ToolStatus, register_tool_with_metadata


class GoalTools(Toolkit):
    def __init__(self) -> None:
        super().__init__(name="goal", tools=[self.set_goal, self.get_goal])
        self.goal = None

    async def set_goal(self, goal: str) -> str:
        \"\"\"Set the goal.\"\"\"
        self.goal = goal
        return "ok"

    async def get_goal(self) -> str:
        \"\"\"Read the goal.\"\"\"
        return str(self.goal)


@register_tool_with_metadata(
    name="thread_goal",
    display_name="Thread Goal",
    description="A goal per thread.",
    category=ToolCategory.PRODUCTIVITY,
    status=ToolStatus.AVAILABLE,
    setup_type=SetupType.NONE,
    icon="CiBullseye",
    icon_color="text-amber-500",
)
def thread_goal_factory() -> type[GoalTools]:
    \"\"\"Factory function for the toolkit.\"\"\"
    return GoalTools
"""

NEWER_TOOLS = """
from pathlib import Path

from agno.tools import Toolkit

from mindroom.tool_system.declarations import ToolCategory, ToolFileAccess, ToolManagedInitArg
from mindroom.tool_system.registration import register_tool_with_metadata


class LedgerTools(Toolkit):
    def __init__(self, runtime_paths=None, agent_name=None) -> None:
        self.where = (runtime_paths, agent_name)
        super().__init__(name="ledger", tools=[self.whoami])

    def whoami(self) -> str:
        \"\"\"Who the ledger belongs to.\"\"\"
        return f"{self.where[1]}"


@register_tool_with_metadata(
    name="ledger",
    display_name="Ledger",
    description="Per-agent ledger.",
    category=ToolCategory.PRODUCTIVITY,
    file_access=ToolFileAccess.NONE,
    managed_init_args=(ToolManagedInitArg.RUNTIME_PATHS, ToolManagedInitArg.AGENT_NAME),
)
def ledger_factory():
    return LedgerTools


def plain_tool(text: str) -> str:
    \"\"\"A plain function tool beside the toolkit.\"\"\"
    return text
"""


def make_plugin(root, name, source):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": name, "tools_module": "tools.py"}))
    (folder / "tools.py").write_text(textwrap.dedent(source))
    return load_plugin_dir(folder)


def config(**agents):
    return Config.model_validate(
        {"agents": {name: {"display_name": name, "tools": tools} for name, tools in agents.items()}}
    )


# -- the decorator ------------------------------------------------------------------------------------------


def _register(**changes):
    values = {
        "name": "demo_tool",
        "display_name": "Demo",
        "description": "A demo.",
        "category": ToolCategory.DEVELOPMENT,
    }

    def factory():
        return object

    return register_tool_with_metadata(**{**values, **changes})(factory)


def test_registration_returns_the_factory_unchanged_and_marks_it():
    def factory():
        return dict

    decorated = register_tool_with_metadata(
        name="marked", display_name="M", description="d", category=ToolCategory.RESEARCH, file_access="agent"
    )(factory)

    assert decorated is factory
    registration = get_tool_registration(factory)
    assert registration.name == "marked"
    assert registration.metadata.file_access is ToolFileAccess.AGENT
    assert registration.metadata.file_access_declared is True
    assert get_tool_registration(lambda: None) is None


def test_registration_without_file_access_is_unconfined_and_warned_about_once():
    with capture_logs() as logs:
        first = _register(name="older_style_once")
        _register(name="older_style_once")

    meta = get_tool_registration(first).metadata
    assert meta.file_access is DEFAULT_FILE_ACCESS is ToolFileAccess.UNCONFINED
    assert meta.file_access_declared is False
    warnings = [entry for entry in logs if entry["event"].startswith("tool registered without file_access")]
    assert len(warnings) == 1
    assert warnings[0]["tool"] == "older_style_once"


def test_registration_records_every_documented_field_with_defaults():
    meta = get_tool_registration(_register(file_access=ToolFileAccess.NONE)).metadata

    assert meta.status is ToolStatus.AVAILABLE
    assert meta.setup_type is SetupType.NONE
    assert meta.default_execution_target is ToolExecutionTarget.PRIMARY
    assert (meta.requires_primary_runtime, meta.executes_code, meta.supports_toolkit_filters) == (False, False, True)
    assert meta.managed_init_args == () and meta.function_names == ()


def test_registration_accepts_enum_values_as_strings():
    meta = get_tool_registration(
        _register(category="research", status="requires_config", setup_type="api_key")
    ).metadata

    assert (meta.category, meta.status, meta.setup_type) == (
        ToolCategory.RESEARCH,
        ToolStatus.REQUIRES_CONFIG,
        SetupType.API_KEY,
    )


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"name": "has space"}, "tool name"),
        ({"category": "cooking"}, "category"),
        ({"file_access": "everything"}, "file_access"),
        ({"oauth_fallback_fields": ["token"]}, "OAUTH"),
        (
            {
                "setup_type": SetupType.OAUTH,
                "config_fields": [ConfigField("api_key", "Key")],
                "oauth_fallback_fields": ["token"],
            },
            "not config_fields",
        ),
        ({"managed_init_args": ["magic"]}, "managed_init_args"),
    ],
)
def test_registration_rejects_what_the_api_rejects(changes, match):
    with pytest.raises(ValueError, match=match):
        _register(**changes)


def test_registration_rejects_unknown_keywords():
    with pytest.raises(TypeError):
        _register(colour="red")


# -- declarations -------------------------------------------------------------------------------------------


def test_declaration_enums_are_str_enums_with_lowercase_member_values():
    for kind in (SetupType, ToolCategory, ToolExecutionTarget, ToolFileAccess, ToolManagedInitArg, ToolStatus):
        assert issubclass(kind, str)
        assert all(member.value == member.name.lower() for member in kind)
    assert len(ToolCategory) == 10
    assert len(ToolManagedInitArg) == 11
    assert ToolManagedInitArg.SHARED_DIRECTORY_ROOTS.kwarg == "shared_directory_roots"


def test_config_field_defaults_and_validation():
    field = ConfigField("api_key", "API key", type="password")

    assert (field.required, field.default, field.authored_override) == (True, None, True)
    with pytest.raises(ValueError, match="type"):
        ConfigField("x", "X", type="colour")
    with pytest.raises(ValueError, match="identifier"):
        ConfigField("not a name", "X")


def test_older_import_paths_of_metadata_still_resolve():
    assert metadata.SetupType is declarations.SetupType
    assert metadata.ToolStatus is declarations.ToolStatus
    assert metadata.ToolCategory is declarations.ToolCategory
    assert metadata.ToolManagedInitArg is declarations.ToolManagedInitArg
    assert metadata.register_tool_with_metadata is register_tool_with_metadata


def test_managed_init_kwargs_pass_only_the_listed_values():
    meta = get_tool_registration(
        _register(
            name="managed",
            file_access=ToolFileAccess.AGENT,
            managed_init_args=[ToolManagedInitArg.AGENT_NAME, ToolManagedInitArg.FILE_ACCESS, "shared_directory_roots"],
        )
    ).metadata

    kwargs = managed_init_kwargs(meta, {"agent_name": "code", "runtime_paths": "ignored"})

    assert kwargs == {"agent_name": "code", "file_access": ToolFileAccess.AGENT, "shared_directory_roots": ()}


# -- the catalogue ------------------------------------------------------------------------------------------


def test_older_registered_toolkit_appears_in_the_catalogue_under_its_name(tmp_path):
    plugin = make_plugin(tmp_path, "thread-goal", OLDER_TOOLS)

    catalog = build_tool_catalog(config(helper=["thread_goal"]), [plugin], adapt=foreign_tool_specs)

    assert catalog.selection(["thread_goal"]) == ("set_goal", "get_goal")
    assert catalog.providers["thread_goal"].label == "plugin toolkit 'thread_goal'"
    assert plugin_tool_specs(plugin, foreign_tool_specs) == ()  # the factory itself is not a tool
    specs = catalog.tools_for(["thread_goal"], AgentToolEnvironment("helper", tmp_path / "ws"))
    assert [spec.name for spec in specs] == ["set_goal", "get_goal"]


@pytest.mark.asyncio
async def test_newer_registered_toolkit_gets_its_managed_values_per_agent(tmp_path):
    plugin = make_plugin(tmp_path, "ledger-plugin", NEWER_TOOLS)
    paths = RuntimePaths.for_directory(tmp_path)

    catalog = build_tool_catalog(
        config(alice=["ledger"], bob=["ledger", "plain_tool"]), [plugin], adapt=foreign_tool_specs, runtime_paths=paths
    )

    alice = catalog.tools_for(["ledger"], AgentToolEnvironment("alice", tmp_path / "a"))
    bob = catalog.tools_for(["ledger", "plain_tool"], AgentToolEnvironment("bob", tmp_path / "b"))
    assert [spec.name for spec in bob] == ["whoami", "plain_tool"]
    assert alice[0].function() == "alice"
    assert bob[0].function() == "bob"


def test_a_registered_toolkit_named_like_its_plugin_joins_the_plugins_tools(tmp_path):
    plugin = make_plugin(tmp_path, "thread_goal", OLDER_TOOLS)

    catalog = build_tool_catalog(config(helper=["thread_goal"]), [plugin], adapt=foreign_tool_specs)

    assert catalog.providers["thread_goal"].kind == "plugin"
    assert catalog.selection(["thread_goal"]) == ("set_goal", "get_goal")


def test_a_registered_toolkit_that_cannot_be_built_is_a_catalogue_error(tmp_path):
    source = """
    from mindroom.tool_system.registration import register_tool_with_metadata

    @register_tool_with_metadata(name="broken", display_name="B", description="d", category="research")
    def broken_factory():
        return int
    """
    plugin = make_plugin(tmp_path, "broken-plugin", source)

    with pytest.raises(ToolCatalogError, match="cannot use its tool 'broken'"):
        build_tool_catalog(config(), [plugin], adapt=foreign_tool_specs)


# -- get_tool_by_name -----------------------------------------------------------------------------------------


def test_get_tool_by_name_builds_a_new_instance_of_a_registered_toolkit(tmp_path):
    make_plugin(tmp_path, "ledger-lookup", NEWER_TOOLS)
    paths = RuntimePaths.for_directory(tmp_path)
    runtime = ToolRuntimeContext(SimpleNamespace(), "research", "!room:localhost")  # type: ignore[arg-type]

    with bind_runtime_context(runtime):
        toolkit = get_tool_by_name("ledger", paths, worker_target=None)

    assert toolkit.where == (paths, "research")
    assert toolkit is not get_tool_by_name("ledger", paths, worker_target=None)


def test_get_tool_by_name_needs_worker_target_and_names_available_tools(tmp_path):
    make_plugin(tmp_path, "ledger-again", NEWER_TOOLS)

    with pytest.raises(TypeError):
        get_tool_by_name("ledger", None)  # type: ignore[call-arg]
    with pytest.raises(ToolMetadataValidationError, match="ledger") as info:
        get_tool_by_name("no_such_tool", None, worker_target=None)
    assert isinstance(info.value, ValueError)


def test_a_module_value_whose_attribute_lookup_raises_is_neither_hook_nor_tool(tmp_path):
    source = """
    class Weird:
        def __getattr__(self, name):
            raise RuntimeError("no attributes here")

    weird = Weird()
    """
    plugin = make_plugin(tmp_path, "weird-plugin", source)

    catalog = build_tool_catalog(config(), [plugin], adapt=foreign_tool_specs)

    assert plugin.discovered_hooks == ()
    assert catalog.providers["weird-plugin"].tool_names == ()


def test_registered_toolkits_with_unhashable_declarations_are_found(tmp_path):
    source = """
    from agno.tools import Toolkit
    from mindroom.tool_system.declarations import ConfigField, ToolCategory
    from mindroom.tool_system.registration import register_tool_with_metadata

    class Search(Toolkit):
        def __init__(self, depth="1"):
            super().__init__(name="search", tools=[self.search])

        def search(self, query: str) -> str:
            \"\"\"Search.\"\"\"
            return query

    @register_tool_with_metadata(
        name="searcher", display_name="S", description="d", category=ToolCategory.RESEARCH, file_access="none",
        config_fields=[ConfigField("depth", "Depth", type="select", options=[{"label": "1", "value": "1"}])],
    )
    def search_factory():
        return Search

    alias_factory = search_factory
    """
    plugin = make_plugin(tmp_path, "search-plugin", source)

    catalog = build_tool_catalog(config(helper=["searcher"]), [plugin], adapt=foreign_tool_specs)

    assert catalog.selection(["searcher"]) == ("search",)
