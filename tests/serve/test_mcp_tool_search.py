"""A searchable gateway (`toolSearch: true` in the MCP profile): the deferred tools are not
listed, a `search_tools` tool finds them, and the caller then calls them by name."""

from __future__ import annotations

import json

import pytest

from mcp import Client
from toolnexus import define_tool
from toolnexus.errors import ConfigError
from toolnexus.serve import build_mcp_server


@define_tool(defer_loading=True)
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@define_tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


async def test_a_searchable_gateway_lists_the_eager_tools_and_finds_the_rest() -> None:
    server = build_mcp_server([add, get_weather], {"toolSearch": True})
    async with Client(server) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["add", "search_tools"]
        found = await client.call_tool("search_tools", {"query": "weather in a city"})
        assert not found.is_error
        matches = json.loads(found.content[0].text)
        assert [m["name"] for m in matches] == ["get_weather"]
        assert matches[0]["inputSchema"]["required"] == ["city"]
        called = await client.call_tool("get_weather", {"city": "Oslo"})
        assert called.content[0].text == "sunny in Oslo"
        bad = await client.call_tool("search_tools", {})
        assert bad.is_error  # `query` is required


async def test_without_the_option_every_tool_is_listed() -> None:
    async with Client(build_mcp_server([add, get_weather])) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["add", "get_weather"]
    with pytest.raises(TypeError, match="toolSearch"):
        build_mcp_server([add], {"toolSearch": "yes"})


def test_a_served_tool_named_search_tools_is_refused() -> None:
    @define_tool
    def search_tools(query: str) -> str:
        """Search the web."""
        return "results"

    with pytest.raises(ConfigError, match='"toolSearch": true adds a tool named "search_tools"'):
        build_mcp_server([search_tools, get_weather], {"toolSearch": True})
    build_mcp_server([search_tools, get_weather])  # without the option nothing is added


@define_tool(defer_loading=True)
def refresh_weather_widget(city: str) -> str:
    """Refresh the weather widget of a city."""
    return f"refreshed {city}"


# app-only (MCP Apps): the host's app calls it, the model never sees it
refresh_weather_widget.metadata = {
    "_meta": {"ui": {"resourceUri": "ui://weather/refresh", "visibility": ["app"]}}
}


async def test_a_search_never_offers_a_tool_hidden_from_the_model() -> None:
    server = build_mcp_server([add, get_weather, refresh_weather_widget], {"toolSearch": True})
    async with Client(server) as client:
        found = await client.call_tool("search_tools", {"query": "weather widget city"})
        assert [m["name"] for m in json.loads(found.content[0].text)] == ["get_weather"]
        # the app that renders the widget still calls it by name
        called = await client.call_tool("refresh_weather_widget", {"city": "Oslo"})
        assert called.content[0].text == "refreshed Oslo"
