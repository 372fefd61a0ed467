"""Deferred tools and `Toolkit.search_tools`: what is deferred, how search ranks, and the
deferred declarations each wire's adapter emits."""

from __future__ import annotations

from typing import Any

import pytest

from support.tool_search_fixture import labelled_requests, real_mcp_tools, recall_at_5
from toolnexus import (
    SkillDef,
    Toolkit,
    create_toolkit,
    define_tool,
    http_tool,
    http_tools_from_openapi,
    tool,
)
from toolnexus.adapters import ANTHROPIC_TOOL_SEARCH, to_anthropic
from toolnexus.errors import ConfigTypeError
from toolnexus.types import Tool


@tool(defer_loading=True)
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city to report on.
    """
    return f"sunny in {city}"


@define_tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def _explicit(name: str, description: str, **schema_props: str) -> Tool:
    properties = {
        key: {"type": "string", "description": text} for key, text in schema_props.items()
    }
    return define_tool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": properties},
        execute=lambda args: "done",
        defer_loading=True,
    )


async def test_a_deferred_tool_is_callable_as_ever() -> None:
    toolkit = Toolkit(builtins=False, extra_tools=[get_weather, add])
    assert [t.defer_loading for t in toolkit.tools()] == [True, False]
    assert [t.name for t in toolkit.deferred()] == ["get_weather"]
    result = await toolkit.execute("get_weather", {"city": "Oslo"})
    assert (result.output, result.is_error) == ("sunny in Oslo", False)


def test_defer_loading_must_be_a_bool() -> None:
    def echo(text: str) -> str:
        return text

    with pytest.raises(ConfigTypeError, match="defer_loading"):
        define_tool(echo, defer_loading="yes")  # type: ignore[arg-type]


async def test_create_toolkit_defers_every_tool_without_touching_the_originals() -> None:
    async with await create_toolkit(extra_tools=[add], builtins=False, defer_loading=True) as kit:
        assert kit.get("add") is not None and kit.get("add").defer_loading  # type: ignore[union-attr]
    assert add.defer_loading is False
    with pytest.raises(ConfigTypeError, match="defer_loading"):
        await create_toolkit(defer_loading=1)  # type: ignore[arg-type]


async def test_each_source_can_be_deferred_on_its_own() -> None:
    spec = {
        "openapi": "3.0.0",
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {"/pets": {"get": {"operationId": "listPets", "summary": "List pets"}}},
    }
    listed = await http_tools_from_openapi(spec, defer_loading=True)
    assert [(t.name, t.defer_loading) for t in listed] == [("listPets", True)]
    assert [t.defer_loading for t in await http_tools_from_openapi(spec)] == [False]
    ping = http_tool(name="ping", description="Ping", method="GET", url="http://127.0.0.1:9")
    pong = http_tool(
        name="pong", description="Pong", method="GET", url="http://127.0.0.1:9", defer_loading=True
    )
    notes = [SkillDef("notes", "Take notes.", description="Taking notes")]
    async with await create_toolkit(
        skills=notes, extra_tools=[*listed, ping, pong], builtins=False, skills_defer_loading=True
    ) as toolkit:
        assert [t.name for t in toolkit.deferred()] == ["skill", "listPets", "pong"]
        assert [t.name for t in toolkit.search_tools("load the notes skill")] == ["skill"]
    with pytest.raises(ConfigTypeError, match="skills_defer_loading"):
        await create_toolkit(skills_defer_loading="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigTypeError, match="defer_loading"):
        await http_tools_from_openapi(spec, defer_loading=1)  # type: ignore[arg-type]


def test_search_ranks_over_name_description_and_parameters() -> None:
    toolkit = Toolkit(
        builtins=False,
        extra_tools=[
            get_weather,
            add,
            _explicit("fs_readFile", "Return a file's text.", path="Where the file lives"),
            _explicit("send_mail", "Send an email message.", recipient="The address to write to"),
            _explicit("calendar_add", "Create an event.", when="The start, as an ISO timestamp"),
        ],
    )
    assert [t.name for t in toolkit.search_tools("weather forecast")] == ["get_weather"]
    assert toolkit.search_tools("read a file")[0].name == "fs_readFile"  # the name's words
    assert toolkit.search_tools("address")[0].name == "send_mail"  # a parameter's description
    assert toolkit.search_tools("ISO timestamp")[0].name == "calendar_add"
    info = toolkit.search_tools("email")[0]
    assert (info.description, info.input_schema["properties"]["recipient"]["type"]) == (
        "Send an email message.",
        "string",
    )
    assert toolkit.search_tools("quantum chromodynamics") == []
    assert toolkit.search_tools("", limit=3) == []
    assert len(toolkit.search_tools("the a file email weather event number", limit=2)) == 2
    with pytest.raises(ConfigTypeError):
        toolkit.search_tools("x", limit=-1)


def test_the_index_follows_the_tool_set() -> None:
    toolkit = Toolkit(builtins=False, extra_tools=[add])
    assert toolkit.search_tools("weather") == []
    toolkit.register(get_weather)
    assert [t.name for t in toolkit.search_tools("weather")] == ["get_weather"]


def test_an_empty_toolkit_finds_nothing() -> None:
    assert Toolkit(builtins=False).search_tools("anything") == []


def _wire(kit: Toolkit) -> dict[str, Any]:
    return {
        "anthropic": kit.to_anthropic(defer=True),
        "responses": kit.to_openai_responses(defer=True),
        "openai": kit.to_openai(defer=True),
        "gemini": kit.to_gemini(defer=True),
    }


def test_deferred_declarations_per_wire() -> None:
    kit = Toolkit(builtins=False, extra_tools=[add, get_weather])
    wire = _wire(kit)
    assert [d.get("defer_loading") for d in wire["anthropic"]] == [None, True, None]
    assert wire["anthropic"][-1] == {
        "type": "tool_search_tool_bm25_20251119",
        "name": "tool_search_tool_bm25",
    }
    assert [d.get("defer_loading") for d in wire["responses"]] == [None, True, None]
    assert wire["responses"][-1] == {"type": "tool_search"}
    # chat completions and Gemini have no deferred form: only the eager tools are declared
    assert [d["function"]["name"] for d in wire["openai"]] == ["add"]
    assert [d["name"] for d in wire["gemini"][0]["functionDeclarations"]] == ["add"]
    # without defer=True, or without a deferred tool, nothing changes
    assert "defer_loading" not in str(kit.to_anthropic()) + str(kit.to_openai_responses())
    assert len(kit.to_openai()) == 2
    eager = Toolkit(builtins=False, extra_tools=[add])
    assert eager.to_anthropic(defer=True) == eager.to_anthropic()
    assert to_anthropic([get_weather], defer=True)[-1] == ANTHROPIC_TOOL_SEARCH


def test_recall_at_5_over_real_mcp_servers_tools() -> None:
    toolkit = Toolkit(builtins=False, extra_tools=real_mcp_tools(lambda args, ctx: "done"))
    labelled = labelled_requests()
    assert len(toolkit.tools()) >= 300 and len(labelled) >= 100
    names = {t.name for t in toolkit.tools()}
    assert all(set(case["tools"]) <= names for case in labelled)  # the labels name real tools
    assert recall_at_5(toolkit, labelled) >= 0.9
