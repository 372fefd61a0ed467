"""MCP Apps (`io.modelcontextprotocol/ui`): an App on the official SDK's extension framework
keeps its tool's `_meta.ui` in `Tool.metadata`, its `ui://` resource is readable through the
toolkit (found by the tool's server among several), a streamed run says which call has an App
(`ui` event), and through the gateway the SDK's client sees the `_meta` and reads the resource.
An app-only tool (`visibility: ["app"]`) is not offered to the model but stays callable, and
listed by the gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import mcp_types as types
import pytest
import pytest_asyncio

from mcp import Client
from support.fake_llm import call, text, tools
from support.llm_fixtures import llm, llm_server, make_client  # noqa: F401
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.apps_server import CLOCK_HTML, CLOCK_URI
from support.mcp_servers.apps_server import app as apps_app
from support.mcp_servers.sdk_eras import app as eras_app
from toolnexus import create_toolkit
from toolnexus.toolkit import Toolkit

APP_MIME = "text/html;profile=mcp-app"


@pytest.fixture(scope="module")
def upstreams() -> Iterator[dict[str, str]]:
    servers = {"apps": ThreadedHttpServer(apps_app()), "eras": ThreadedHttpServer(eras_app())}
    yield {name: server.url() for name, server in servers.items()}
    for server in servers.values():
        server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def toolkit(upstreams: dict[str, str]) -> AsyncIterator[Toolkit]:
    # two servers offer resources: the App's resource is read from its tool's server
    config = {name: {"url": url} for name, url in upstreams.items()}
    kit = await create_toolkit(mcp_config=config, builtins=False)
    yield kit
    await kit.close()


async def test_the_app_reaches_the_toolkit(toolkit: Toolkit) -> None:
    clock = toolkit.get("apps_clock")
    assert clock is not None and clock.metadata is not None
    assert clock.metadata["_meta"] == {"ui": {"resourceUri": CLOCK_URI}}
    page = await toolkit.read_mcp_resource(CLOCK_URI)
    assert not page.is_error
    assert page.output == CLOCK_HTML
    # toolnexus declares Apps support to its servers
    assert (await toolkit.execute("apps_supports_apps", {})).output == "True"


async def test_an_app_only_tool_is_hidden_from_the_model_and_callable_by_the_app(
    toolkit: Toolkit,
) -> None:
    alarm = toolkit.get("apps_set_alarm")
    assert alarm is not None and alarm.metadata is not None
    assert alarm.metadata["_meta"] == {"ui": {"resourceUri": CLOCK_URI, "visibility": ["app"]}}
    # the model is not offered it, on any wire, nor does tool search find it
    declared = [
        [d["function"]["name"] for d in toolkit.to_openai()],
        [d["name"] for d in toolkit.to_openai_responses()],
        [d["name"] for d in toolkit.to_anthropic()],
        [d["name"] for d in toolkit.to_gemini()[0]["functionDeclarations"]],
    ]
    for names in declared:
        assert "apps_clock" in names and "apps_set_alarm" not in names
    assert "apps_set_alarm" not in [t.name for t in toolkit.search_tools("alarm")]
    # the host calls it for the app, as ever
    result = await toolkit.execute("apps_set_alarm", {"at": "07:00"})
    assert (result.output, result.is_error) == ("alarm at 07:00", False)


async def test_the_model_cannot_call_an_app_only_tool(
    toolkit: Toolkit,
    llm,  # noqa: F811 - the fixture imported above
    make_client,  # noqa: F811
):
    llm.push(tools(call("apps_set_alarm", {"at": "05:00"}, id="c1")))
    llm.push(text("done"))
    events = [e async for e in make_client("openai").stream("wake me", toolkit)]
    assert "ui" not in [e["type"] for e in events]  # no App to render for a refused call
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert result["is_error"] is True
    assert "for its MCP App only" in str(result)


async def test_a_streamed_call_of_an_app_tool_has_a_ui_event(
    toolkit: Toolkit,
    llm,  # noqa: F811 - the fixture imported above
    make_client,  # noqa: F811
):
    llm.push(tools(call("apps_clock", {}, id="c1"), call("eras_echo", {"text": "x"}, id="c2")))
    llm.push(text("done"))
    events = [e async for e in make_client("openai").stream("time?", toolkit)]
    kinds = [e["type"] for e in events]
    assert kinds[:5] == ["tool_call", "ui", "tool_call", "tool_result", "tool_result"]
    assert events[1] == {
        "type": "ui",
        "id": "c1",
        "name": "apps_clock",
        "resource_uri": CLOCK_URI,
        "server": "apps",
    }


async def test_the_app_reaches_a_gateway_caller(toolkit: Toolkit) -> None:
    handle = await toolkit.serve("127.0.0.1:0", mcp={"name": "gw"})
    try:
        async with Client(handle.url + "/mcp") as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert listed["apps_clock"].meta == {"ui": {"resourceUri": CLOCK_URI}}
            assert listed["eras_echo"].meta is None
            # a gateway caller is a host: it lists the app-only tool, with its visibility
            alarm = {"ui": {"resourceUri": CLOCK_URI, "visibility": ["app"]}}
            assert listed["apps_set_alarm"].meta == alarm
            called = await client.call_tool("apps_set_alarm", {"at": "06:30"})
            assert [c.text for c in called.content if isinstance(c, types.TextContent)] == [
                "alarm at 06:30"
            ]
            [page] = (await client.read_resource(CLOCK_URI)).contents
            assert isinstance(page, types.TextResourceContents)
            assert (page.mime_type, page.text) == (APP_MIME, CLOCK_HTML)
            result = await client.call_tool("apps_clock", {})
            assert [c.text for c in result.content if isinstance(c, types.TextContent)] == ["12:00"]
    finally:
        await handle.stop()
