"""The toolkit served as MCP (the gateway), driven by the official SDK client in both eras:
negotiation, pass-through of an upstream SDK server's results, suspension relayed as input
requests or pushed elicitation, request state shared by replicas, and the HTTP answer types."""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from mcp.client.stdio import StdioServerParameters

from mcp import Client, MCPError
from support.mcp_gateway_stdio import TOOLS
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.sdk_eras import AUDIO_BYTES, IMAGE_BYTES, SUN_ICON
from support.mcp_servers.sdk_eras import app as eras_app
from toolnexus import create_toolkit
from toolnexus.serve import ServeHandle
from toolnexus.toolkit import Toolkit

GATEWAY_STDIO = Path(__file__).parents[1] / "support" / "mcp_gateway_stdio.py"
KEY = "s" * 40


@pytest.fixture(scope="module")
def upstream() -> Any:
    server = ThreadedHttpServer(eras_app())
    yield server
    server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(upstream: ThreadedHttpServer) -> AsyncIterator[ServeHandle]:
    toolkit = await create_toolkit(
        mcp_config={"up": {"url": upstream.url()}}, extra_tools=TOOLS, builtins=False
    )
    handle = await toolkit.serve("127.0.0.1:0", mcp={"name": "gw", "requestStateKeys": [KEY]})
    yield handle
    await handle.stop()
    await toolkit.close()


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_both_eras_over_http(gateway: ServeHandle, mode: str, version: str) -> None:
    async with Client(gateway.url + "/mcp", mode=mode) as client:
        assert client.protocol_version == version
        result = await client.call_tool("up_echo", {"text": "hi"})
        assert (result.content[0].text, result.is_error) == ("hi", False)


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_both_eras_over_stdio(mode: str, version: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(GATEWAY_STDIO)])
    async with Client(params, mode=mode) as client:
        assert client.protocol_version == version
        assert client.server_info is not None and client.server_info.name == "gw-stdio"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_upstream_results_pass_through(gateway: ServeHandle, mode: str) -> None:
    async with Client(gateway.url + "/mcp", mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        weather = listed["up_weather"]
        assert weather.title == "Weather report"
        assert weather.annotations is not None and weather.annotations.read_only_hint is True
        assert weather.output_schema is not None
        assert [(i.src, i.mime_type) for i in weather.icons or ()] == [(SUN_ICON, "image/svg+xml")]
        # the client validates structuredContent against the output schema
        checked = await client.call_tool("up_weather", {"city": "Oslo"})
        assert checked.structured_content == {"city": "Oslo", "degrees": 21}
        media = await client.call_tool("up_media", {})
        kinds = [block.type for block in media.content]
        assert kinds == ["text", "image", "audio", "resource_link", "resource"]
        assert base64.b64decode(media.content[1].data) == IMAGE_BYTES  # type: ignore[union-attr]
        assert base64.b64decode(media.content[2].data) == AUDIO_BYTES  # type: ignore[union-attr]
        assert str(media.content[3].uri) == "eras://notes"  # type: ignore[union-attr]
        both = await client.call_tool("up_both", {})
        assert both.content[0].text == "human readable summary"  # type: ignore[union-attr]
        assert both.structured_content == {"summary": "machine", "n": 2}


async def _answer_form(context: Any, params: Any) -> Any:
    import mcp_types as types

    if getattr(params, "mode", None) == "url":
        return types.ElicitResult(action="accept")
    return types.ElicitResult(action="accept", content={"answer": "Ada"})


async def test_a_suspension_reaches_a_modern_client_as_an_input_request(
    gateway: ServeHandle,
) -> None:
    async with Client(gateway.url + "/mcp", elicitation_callback=_answer_form) as client:
        raw = await client.session.call_tool("ask", {}, allow_input_required=True)
        import mcp_types as types

        assert isinstance(raw, types.InputRequiredResult)
        [(_key, entry)] = list((raw.input_requests or {}).items())
        assert entry.params.requested_schema == {  # type: ignore[union-attr]
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "Your name?"}},
            "required": ["answer"],
        }
        assert raw.request_state is not None and "Your name" not in raw.request_state  # sealed
        done = await client.call_tool("ask", {})  # the SDK's own driver answers and retries
        assert done.content[0].text == "hello Ada"  # type: ignore[union-attr]
    asked: list[Any] = []

    async def record(context: Any, params: Any) -> Any:
        asked.append(params)
        return await _answer_form(context, params)

    async with Client(gateway.url + "/mcp", elicitation_callback=record) as client:
        signed = await client.call_tool("sign_in", {})
        assert signed.content[0].text == "signed in: True"  # type: ignore[union-attr]
    [url_mode] = asked  # an `authorization` suspension is a URL-mode entry
    assert (url_mode.mode, url_mode.message, url_mode.url) == (
        "url",
        "Sign in",
        "https://example.test/sso",
    )


async def test_replicas_sharing_a_key_finish_each_others_rounds(
    gateway: ServeHandle,
) -> None:
    toolkit = Toolkit(extra_tools=TOOLS)
    same = await toolkit.serve("127.0.0.1:0", mcp={"name": "gw", "requestStateKeys": [KEY]})
    other = await toolkit.serve("127.0.0.1:0", mcp={"name": "gw", "requestStateKeys": ["o" * 40]})
    try:
        async with Client(gateway.url + "/mcp", elicitation_callback=_answer_form) as first:
            raw = await first.session.call_tool("ask", {}, allow_input_required=True)
        key = next(iter(raw.input_requests or {}))  # type: ignore[union-attr]
        responses = {key: {"action": "accept", "content": {"answer": "Bo"}}}
        async with Client(same.url + "/mcp", elicitation_callback=_answer_form) as second:
            done = await second.call_tool(
                "ask",
                {},
                input_responses=responses,  # type: ignore[arg-type]
                request_state=raw.request_state,  # type: ignore[union-attr]
            )
            assert done.content[0].text == "hello Bo"  # type: ignore[union-attr]
        async with Client(other.url + "/mcp", elicitation_callback=_answer_form) as third:
            with pytest.raises(MCPError) as refused:
                await third.call_tool(
                    "ask",
                    {},
                    input_responses=responses,  # type: ignore[arg-type]
                    request_state=raw.request_state,  # type: ignore[union-attr]
                )
            assert refused.value.code == -32602
    finally:
        await same.stop()
        await other.stop()


async def test_the_handshake_era_gets_pushed_elicitation_over_stdio() -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(GATEWAY_STDIO)])
    async with Client(params, mode="legacy", elicitation_callback=_answer_form) as client:
        result = await client.call_tool("ask", {})
        assert (result.content[0].text, result.is_error) == ("hello Ada", False)  # type: ignore[union-attr]
        url = await client.call_tool("sign_in", {})
        assert url.content[0].text == "signed in: True"  # type: ignore[union-attr]
        again = await client.call_tool("stubborn", {})
        assert (again.content[0].text, again.is_error) == ("unresolved: Again?", True)  # type: ignore[union-attr]


async def test_the_handshake_era_over_http_is_asked_in_its_session(gateway: ServeHandle) -> None:
    async with Client(gateway.url + "/mcp", mode="legacy", elicitation_callback=_answer_form) as c:
        result = await c.call_tool("sign_in", {})
        assert not result.is_error
        assert result.content[0].text == "signed in: True"  # type: ignore[union-attr]


async def test_plain_legacy_calls_are_json_and_progress_streams(gateway: ServeHandle) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "up_echo", "arguments": {"text": "x"}},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
    }
    async with httpx2.AsyncClient() as http:
        plain = await http.post(gateway.url + "/mcp", json=body, headers=headers)
        assert plain.headers["content-type"].startswith("application/json")
        assert plain.json()["result"]["content"][0]["text"] == "x"
    events: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append(progress)

    async with Client(gateway.url + "/mcp", mode="legacy") as client:
        done = await client.call_tool(
            "up_progress", {"seconds": 0.7, "every": 0.2}, progress_callback=on_progress
        )
        assert done.is_error is False
    assert events[:2] == [1.0, 2.0]
