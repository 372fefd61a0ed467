"""The gateway relays what an upstream server sends during a tool call to the caller the call
is made for, and the caller's answers back: log messages (at the caller's level), sampling
requests and elicitations, in both eras on either side. The upstream is the official SDK's
`MCPServer` (tests/support/mcp_servers/sdk_eras.py) spoken to at 2026-07-28 (`up`) and at
2025-11-25 (`old`); the callers are the official SDK's client, over HTTP (2026-07-28) and over
stdio (2025-11-25, a connection with a way back to the caller)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.sdk_eras import app as eras_app
from toolnexus import create_toolkit

GATEWAY_STDIO = Path(__file__).parents[1] / "support" / "mcp_gateway_stdio.py"
CHATTY = [("warning", "disk almost full", "disk"), ("info", "all good", None)]


class Caller:
    """What one client of the gateway heard and was asked."""

    def __init__(self, name: str = "caller") -> None:
        self.name = name
        self.logs: list[tuple[str, Any, str | None]] = []
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.asked: list[Any] = []

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append((params.level, params.data, params.logger))

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        self.sampled.append(params)
        text = params.messages[0].content.text  # type: ignore[union-attr]
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"{self.name} heard {text}"),
            model="m",
        )

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params)
        return types.ElicitResult(action="accept", content={"name": self.name})

    def callbacks(self) -> dict[str, Any]:
        return {
            "logging_callback": self.log,
            "sampling_callback": self.sample,
            "elicitation_callback": self.elicit,
        }


@pytest.fixture(scope="module")
def upstream() -> Iterator[ThreadedHttpServer]:
    server = ThreadedHttpServer(eras_app())
    yield server
    server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(upstream: ThreadedHttpServer) -> AsyncIterator[str]:
    kit = await create_toolkit(
        mcp_config={
            "up": {"url": upstream.url()},
            "old": {"url": upstream.url(), "protocol": "legacy"},
        },
        builtins=False,
    )
    handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw"})
    yield handle.url + "/mcp"
    await handle.stop()
    await kit.close()


def _text(result: types.CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


async def test_a_modern_upstreams_sampling_is_an_input_required_round_for_the_caller(gateway):
    ada = Caller("ada")
    async with Client(gateway, **ada.callbacks()) as client:
        result = await client.call_tool("up_sampled", {})
    assert not result.is_error
    assert "ada heard hi" in _text(result)  # the caller's reply reached the upstream tool
    [asked] = ada.sampled
    assert (asked.max_tokens, asked.messages[0].content.text) == (5, "hi")  # type: ignore[union-attr]


async def test_a_caller_without_sampling_is_named_in_the_error(gateway):
    async with Client(gateway) as client:
        result = await client.call_tool("up_sampled", {})
    assert (result.is_error, _text(result)) == (
        True,
        'MCP server "up" asked for sampling, which the MCP client calling through toolnexus '
        "did not declare",
    )


@pytest.mark.parametrize("server", ["up", "old"])
async def test_upstream_log_messages_reach_the_caller_at_its_level(gateway, server):
    everything, warnings_only, silent = Caller(), Caller(), Caller()
    async with Client(gateway, log_level="debug", **everything.callbacks()) as client:
        assert _text(await client.call_tool(f"{server}_chatty", {})) == "logged"
    async with Client(gateway, log_level="warning", **warnings_only.callbacks()) as client:
        await client.call_tool(f"{server}_chatty", {})
    async with Client(gateway, **silent.callbacks()) as client:  # asked for none
        await client.call_tool(f"{server}_chatty", {})
    assert everything.logs == CHATTY
    assert warnings_only.logs == CHATTY[:1]
    assert silent.logs == []


async def test_concurrent_callers_hear_only_their_own_upstream_messages(gateway):
    callers = [Caller(name) for name in ("ada", "bob", "cy")]

    async def call(caller: Caller) -> str:
        async with Client(gateway, log_level="debug", **caller.callbacks()) as client:
            logged = await client.call_tool("old_chatty", {})
            sampled = await client.call_tool("up_sampled", {})
        return _text(logged) + " / " + _text(sampled)

    outputs = await asyncio.gather(*(call(c) for c in callers))
    for caller, output in zip(callers, outputs, strict=True):
        assert f"{caller.name} heard hi" in output
        assert caller.logs == CHATTY
        assert len(caller.sampled) == 1


async def test_a_legacy_upstreams_push_to_a_caller_that_cannot_answer_during_the_call(gateway):
    ada = Caller("ada")
    async with Client(gateway, **ada.callbacks()) as client:
        sampled = await client.call_tool("old_sampled", {})
        greeted = await client.call_tool("old_greet", {})
    assert "answers sampling only in a later round (2026-07-28)" in _text(sampled)
    assert "cannot be asked during a call" in _text(greeted)
    assert (sampled.is_error, greeted.is_error, ada.sampled, ada.asked) == (True, True, [], [])


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_a_caller_with_a_way_back_answers_pushes_in_either_upstream_era(
    upstream: ThreadedHttpServer, protocol: str
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(GATEWAY_STDIO), "--upstream", upstream.url(), "--protocol", protocol],
    )
    ada = Caller("ada")
    async with Client(params, mode="legacy", **ada.callbacks()) as client:
        sampled = await client.call_tool("asks_sampled", {})
        greeted = await client.call_tool("asks_greet", {})
        logged = await client.call_tool("asks_chatty", {})
    assert "ada heard hi" in _text(sampled)
    assert _text(greeted) == "Hello, ada!"
    assert _text(logged) == "logged"
    assert [p.message for p in ada.asked] == ["What is your name?"]
    assert len(ada.sampled) == 1
    assert ("warning", "disk almost full", "disk") in ada.logs


async def test_url_elicitations_reach_the_caller_in_either_upstream_era(
    gateway, upstream: ThreadedHttpServer
) -> None:
    ada = Caller("ada")
    async with Client(gateway, **ada.callbacks()) as client:  # 2026-07-28: a round
        assert _text(await client.call_tool("up_visit", {})) == "visited: accept"
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(GATEWAY_STDIO), "--upstream", upstream.url(), "--protocol", "legacy"],
    )
    async with Client(params, mode="legacy", **ada.callbacks()) as client:  # pushed, pushed on
        assert _text(await client.call_tool("asks_visit", {})) == "visited: accept"
    assert [(type(p).__name__, p.url) for p in ada.asked] == [
        ("ElicitRequestURLParams", "https://example.test/login")
    ] * 2
