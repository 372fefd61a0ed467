"""The import surface of python-api.md: every listed name, its signature, and a light import."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from typing import Any

import pytest

import toolnexus
import toolnexus.types

# "Names importable from `toolnexus`" (python-api.md), in the order that page lists them.
CORE_TYPES = [
    "Tool",
    "ToolResult",
    "ToolContext",
    "Context",
    "Request",
    "Answer",
    "pending",
    "auth_required",
    "pending_of",
    "answer_output",
    "answer_declined",
    "sanitize",
]
SKILL_NAMES = [
    "load_skills",
    "list_skills",
    "SkillDef",
    "SkillInfo",
    "SkillSkip",
    "SKILL_TOOL_DESCRIPTION",
    "SKILLS_PROMPT_PREAMBLE",
]
MCP_NAMES = [
    "load_mcp",
    "load_mcp_with_context",
    "list_mcp_tools",
    "parse_mcp_config",
    "ToolInfo",
    "McpSource",
]
CLIENT_NAMES = [
    "create_client",
    "Client",
    "create_in_process_client",
    "RunResult",
    "Hooks",
    "ConversationStore",
    "InMemoryConversationStore",
    "RunTimeout",
    "RunCancelled",
    "ProviderError",
]
LISTED = [
    *CORE_TYPES,
    "create_toolkit",
    "Toolkit",
    "McpServerState",
    "define_tool",
    "tool",
    "http_tool",
    "http_tools_from_openapi",
    *SKILL_NAMES,
    "SkillSource",
    "SkillInventory",
    *MCP_NAMES,
    "McpInventory",
    "create_builtin_tools",
    "select_builtins",
    "builtins_enabled",
    "agent",
    "agent_tools",
    "parse_agents_config",
    "to_openai",
    "to_anthropic",
    "to_gemini",
    *CLIENT_NAMES,
    "ServeHandle",
    "TaskStore",
    "InMemoryTaskStore",
    "FileTaskStore",
    "resolve_store",
    "build_agent_card",
    "exposed_mcp_tools",
]
# Where python-api.md says a name lives besides the package root.
HOME_MODULES = {
    "toolnexus.skill": SKILL_NAMES,
    "toolnexus.mcp_source": MCP_NAMES,
    "toolnexus.client": CLIENT_NAMES,
    "toolnexus.types": CORE_TYPES,
}


def test_every_listed_name_imports_from_the_package_root() -> None:
    namespace: dict[str, Any] = {}
    exec(f"from toolnexus import {', '.join(LISTED)}", namespace)
    missing = [name for name in LISTED if namespace.get(name) is None]
    assert missing == []
    assert set(LISTED) <= set(toolnexus.__all__)
    assert set(LISTED) <= set(dir(toolnexus))


@pytest.mark.parametrize("module", sorted(HOME_MODULES))
def test_names_are_the_same_objects_in_their_home_module(module: str) -> None:
    home = importlib.import_module(module)
    for name in HOME_MODULES[module]:
        assert getattr(home, name) is getattr(toolnexus, name), name


def test_types_module_exports_the_core_types() -> None:
    assert set(CORE_TYPES) <= set(toolnexus.types.__all__)
    assert toolnexus.Context is toolnexus.ToolContext
    assert toolnexus.tool is toolnexus.define_tool


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        toolnexus.nope  # noqa: B018


# -- signatures ---------------------------------------------------------------------------------

# Documented parameter lists. Each documented parameter must exist in the same place, with the
# same kind (keyword-only after `*`) and, when documented, the same default. The implementation
# may add parameters after them only if they have defaults (documented calls keep working), and
# may give a default to one the page lists without (`ToolResult(output, is_error=False)`).
SIGNATURES: dict[str, str] = {
    "Tool": "name, description, input_schema, source, execute",
    "Tool.execute": "self, args=None, ctx=None",
    "ToolResult": "output, is_error, metadata=None",
    "ToolContext": "signal=None, timeout=None, answer=None",
    "Request": "id, kind, prompt, url=None, data=None, expiresAt=None",
    "Answer": "id, ok, data=None, reason=None",
    "pending": "*, kind, prompt, id=None, url=None, data=None, expiresAt=None",
    "auth_required": "url, prompt='Authorization required to continue'",
    "pending_of": "result",
    "answer_output": "id, output",
    "answer_declined": "id, reason='declined'",
    "sanitize": "value",
    "create_toolkit": (
        "mcp_config=None, skills_dir=None, skills=None, skill_provider=None, skills_filter=None, "
        "skill_sample_limit=0, extra_tools=None, builtins=None, agents=None, wait_for=None, "
        "disable_tools=None, disable_skills=None, cancel=None"
    ),
    "Toolkit.tools": "self",
    "Toolkit.get": "self, name",
    "Toolkit.execute": "self, name, args=None, ctx=None",
    "Toolkit.register": "self, *tools",
    "Toolkit.add_agent": "self, card_or_agent, *, headers=None, timeout=None, poll_every=None",
    "Toolkit.skills_prompt": "self",
    "Toolkit.mcp_status": "self",
    "Toolkit.mcp_servers": "self",
    "Toolkit.to_openai": "self",
    "Toolkit.to_anthropic": "self",
    "Toolkit.to_gemini": "self",
    "Toolkit.serve": (
        "self, addr, *, client=None, a2a=None, on_task=None, mcp=None, on_call=None, "
        "auth_token=None"
    ),
    "Toolkit.serve_stdio": "self, mcp=None, on_call=None",
    "Toolkit.close": "self",
    "McpServerState": "status, error, transport, tool_count",
    "define_tool": "fn=None, *, name=None, description=None, input_schema=None",
    "http_tool": (
        "*, name, description, method, url, headers=None, query=None, body='json', "
        "input_schema=None, timeout=None, result_mode='text'"
    ),
    "http_tools_from_openapi": "spec, *, base_url=None, headers=None, include=None",
    "load_skills": "dirs=None, *, skills=None, filter=None, sample_limit=0",
    "list_skills": "dirs=None, *, skills=None",
    "SkillInventory": "skills, skipped",
    "load_mcp": "config, wait_for=None",
    "load_mcp_with_context": "config, wait_for=None, *, cancel=None",
    "list_mcp_tools": "config, *, cancel=None",
    "parse_mcp_config": "path_or_dict",
    "ToolInfo": "name, description, input_schema",
    "create_builtin_tools": "cfg=None",
    "select_builtins": "cfg",
    "builtins_enabled": "cfg",
    "agent": "card, *, headers=None, timeout=None, poll_every=None",
    "agent_tools": "agent",
    "parse_agents_config": "block",
    "to_openai": "tools",
    "to_anthropic": "tools",
    "to_gemini": "tools",
    "create_client": (
        "*, base_url, style, model, api_key=None, headers=None, system_prompt=None, "
        "max_turns=10, hooks=None, retries=2, retry_base_ms=500, timeout_ms=None, store=None, "
        "on_metric=None, wait_for=None, request_params=None, body_transform=None, "
        "on_error=None, retryable_statuses=None, http_client=None, read_timeout_ms=600000, "
        "tool_concurrency=16"
    ),
    "create_in_process_client": "*, model, generate, **options",
    "Client.run": "self, prompt, toolkit=None, history=None, cancel=None",
    "Client.ask": "self, prompt, toolkit=None, *, id=None, on_text=None, cancel=None",
    "Client.stream": "self, prompt, toolkit=None, *, id=None, cancel=None",
    "Client.conversation": "self, toolkit=None",
    "Client.translate": (
        "self, messages, *, tools=None, toolkit=None, tool_choice=None, system=None, max_tokens=0"
    ),
    "Client.metrics": "self",
    "RunResult": (
        "text, messages, tool_calls, tool_call_count, turns, usage, model, status, limit, pending"
    ),
    "FileTaskStore": "dir",
}


def _documented(spec: str) -> list[inspect.Parameter]:
    namespace: dict[str, Any] = {}
    exec(f"def documented({spec}): pass", namespace)
    return list(inspect.signature(namespace["documented"]).parameters.values())


def _actual(dotted: str) -> list[inspect.Parameter]:
    owner, _, attr = dotted.partition(".")
    target = getattr(toolnexus, owner)
    if attr:
        return list(inspect.signature(getattr(target, attr)).parameters.values())
    return list(inspect.signature(target).parameters.values())


@pytest.mark.parametrize("dotted", sorted(SIGNATURES))
def test_signature_matches_the_documented_one(dotted: str) -> None:
    documented = _documented(SIGNATURES[dotted])
    actual = _actual(dotted)
    shown = [str(p.replace(annotation=inspect.Parameter.empty)) for p in actual]
    assert [p.name for p in actual[: len(documented)]] == [p.name for p in documented], shown
    for doc, real in zip(documented, actual, strict=False):
        assert real.kind == doc.kind, f"{real.name}: {real.kind} (documented {doc.kind})"
        if doc.default is not inspect.Parameter.empty:
            assert real.default == doc.default, f"{real.name} defaults to {real.default!r}"
    for extra in actual[len(documented) :]:
        assert extra.kind is extra.VAR_KEYWORD or extra.default is not inspect.Parameter.empty, (
            f"undocumented required parameter {extra.name}"
        )


def test_client_is_built_with_the_same_options_as_create_client() -> None:
    options = _actual("create_client")
    assert _actual("Client")[: len(options)] == options


# -- a light import -----------------------------------------------------------------------------

HEAVY = ("mcp", "starlette", "uvicorn", "httpx2", "pydantic", "jsonschema", "toolnexus.cli")


@pytest.mark.parametrize(
    "code",
    [
        "import toolnexus",
        # the names a host touches to build a toolkit of plain tools, without using them yet
        "from toolnexus import Tool, Toolkit, create_toolkit, to_openai, to_gemini, sanitize",
    ],
)
def test_import_loads_no_heavy_dependency(code: str) -> None:
    probe = f"import sys\n{code}\nprint(sorted(m for m in sys.modules if m in {HEAVY!r}))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.parametrize(
    ("code", "absent"),
    [
        ("import toolnexus", ("toolnexus.agents",)),
        ("import toolnexus.agents", ("mcp", "starlette", "uvicorn", "toolnexus.cli")),
    ],
)
def test_the_agents_layer_loads_only_when_imported(code: str, absent: tuple[str, ...]) -> None:
    probe = f"import sys\n{code}\nprint(sorted(m for m in sys.modules if m in {absent!r}))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stdout


def test_all_is_a_literal_list_equal_to_the_lazy_table() -> None:
    import ast
    from pathlib import Path

    source = Path(toolnexus.__file__).read_text()
    (node,) = [
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)
    ]
    listed = ast.literal_eval(node.value)  # a type checker can read only a literal
    assert sorted(listed) == sorted(["__version__", *toolnexus._EXPORTS])
    assert len(listed) == len(set(listed))


def test_the_version_is_one_string() -> None:
    from importlib.metadata import version

    assert version("toolnexus") == toolnexus.__version__
