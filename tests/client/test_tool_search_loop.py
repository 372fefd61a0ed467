"""Tool search in the loop, on every wire: `local` declares the eager tools plus `search_tools`
and then the tools a search named (for the rest of the conversation); `native` sends the
deferred form with the provider's search tool and keeps its result blocks verbatim."""

from __future__ import annotations

from typing import Any

import pytest

from support.client_helpers import kit
from support.fake_llm import FakeLLM, call, text, tools
from toolnexus import define_tool
from toolnexus.errors import ConfigError

STYLES = ["openai", "anthropic", "openai-responses"]


@define_tool(defer_loading=True)
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@define_tool(defer_loading=True)
def send_mail(to: str, body: str) -> str:
    """Send an email message."""
    return "sent"


@define_tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def _names(style: str, body: dict[str, Any]) -> list[str]:
    names = []
    for declaration in body.get("tools", []):
        function = declaration.get("function", declaration)
        names.append(function.get("name") or declaration["type"])
    return names


@pytest.mark.parametrize("style", STYLES)
async def test_local_search_declares_what_it_found_from_the_next_request_on(
    style: str, llm: FakeLLM, make_client: Any
) -> None:
    llm.push(
        tools(call("search_tools", {"query": "weather"})),
        tools(call("get_weather", {"city": "Oslo"})),
        text("Sunny in Oslo."),
        text("Still sunny."),
    )
    client = make_client(style, tool_search="local")
    toolkit = kit(add, get_weather, send_mail)
    result = await client.ask("Weather in Oslo?", toolkit, id="c1")
    assert result.text == "Sunny in Oslo."
    first, second, third = (r.body for r in llm.requests)
    assert _names(style, first) == ["add", "search_tools"]
    assert _names(style, second) == ["add", "get_weather", "search_tools"]
    assert _names(style, third) == _names(style, second)
    assert "sunny in Oslo" in str(third)
    # the conversation keeps what its searches loaded
    await client.ask("And now?", toolkit, id="c1")
    assert _names(style, llm.requests[3].body) == ["add", "get_weather", "search_tools"]


@pytest.mark.parametrize("style", STYLES)
async def test_no_search_without_deferred_tools_or_when_off(
    style: str, llm: FakeLLM, make_client: Any
) -> None:
    llm.push(text("a"), text("b"))
    await make_client(style).run("hi", kit(add))
    await make_client(style, tool_search=None).run("hi", kit(add, get_weather))
    assert _names(style, llm.requests[0].body) == ["add"]
    assert _names(style, llm.requests[1].body) == ["add", "get_weather"]
    assert "defer_loading" not in str(llm.requests[1].body)


async def test_native_is_refused_where_the_wire_has_none(make_client: Any) -> None:
    with pytest.raises(ConfigError, match="no tool search of its own"):
        await make_client("openai", tool_search="native").run("hi", kit(add, get_weather))
    with pytest.raises(ConfigError, match="tool_search must be"):
        make_client("openai", tool_search="remote")


async def test_auto_is_local_on_chat_completions(llm: FakeLLM, make_client: Any) -> None:
    llm.push(text("ok"))
    await make_client("openai").run("hi", kit(add, get_weather))
    assert _names("openai", llm.requests[0].body) == ["add", "search_tools"]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


ANTHROPIC_SEARCH = [
    {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "tool_search_tool_bm25",
        "input": {"query": "weather"},
    },
    {
        "type": "tool_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
        },
    },
]
RESPONSES_SEARCH = [
    {
        "type": "tool_search_call",
        "id": "tsc_1",
        "call_id": None,
        "execution": "server",
        "arguments": {"query": "weather"},
        "status": "completed",
    },
    {
        "type": "tool_search_output",
        "id": "tso_1",
        "call_id": None,
        "execution": "server",
        "status": "completed",
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                "strict": False,
                "defer_loading": True,
            }
        ],
    },
]


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize(
    ("style", "search_tool", "blocks", "where"),
    [
        ("anthropic", "tool_search_tool_bm25_20251119", ANTHROPIC_SEARCH, "thinking"),
        ("openai-responses", "tool_search", RESPONSES_SEARCH, "reasoning"),
    ],
)
async def test_native_search_keeps_the_provider_blocks_verbatim(
    style: str,
    search_tool: str,
    blocks: list[dict[str, Any]],
    where: str,
    streaming: bool,
    llm: FakeLLM,
    make_client: Any,
) -> None:
    llm.push(tools(call("get_weather", {"city": "Oslo"}), **{where: blocks}), text("Sunny."))
    client, toolkit = make_client(style), kit(add, get_weather)
    if streaming:
        events = [e async for e in client.stream("Weather in Oslo?", toolkit)]
        result = events[-1]["result"]
    else:
        result = await client.run("Weather in Oslo?", toolkit)
    assert result.text == "Sunny."
    first, second = (r.body for r in llm.requests)
    declared = {d.get("name") or d["type"]: d for d in first["tools"]}
    assert declared["get_weather"]["defer_loading"] is True
    assert "defer_loading" not in declared["add"]
    assert first["tools"][-1]["type"] == search_tool
    sent = second["messages"] if style == "anthropic" else second["input"]
    kept = [part for item in sent for part in [item, *_listed(item.get("content"))]]
    assert all(block in kept for block in blocks)  # as the provider sent them
    assert "sunny in Oslo" in str(sent)


async def test_local_search_with_a_typed_result_keeps_the_output_tool(
    llm: FakeLLM, make_client: Any
) -> None:
    llm.push(
        tools(call("search_tools", {"query": "weather"})),
        tools(call("final_result", {"response": 21})),
    )
    client = make_client("openai", output_type=int, output_mode="tool")
    result = await client.run("Degrees in Oslo?", kit(add, get_weather))
    assert result.output == 21
    first, second = (r.body for r in llm.requests)
    assert _names("openai", first) == ["add", "search_tools", "final_result"]
    assert _names("openai", second) == ["add", "get_weather", "search_tools", "final_result"]


@pytest.mark.parametrize("style", STYLES)
async def test_a_toolkit_tool_named_search_tools_is_refused_before_any_request(
    style: str, llm: FakeLLM, make_client: Any
) -> None:
    @define_tool
    def search_tools(query: str) -> str:
        """Search the web."""
        return "results"

    with pytest.raises(ConfigError, match=r'named "search_tools".*disable_tools'):
        await make_client(style, tool_search="local").run("hi", kit(search_tools, get_weather))
    assert llm.requests == []
