"""The served MCP endpoint keeps one kind of per-caller state: the sealed `requestState` of a
2026-07-28 input-required round. It is bound to the caller that received it: another OAuth
subject's retry with it is refused, and the tool never sees the answer (the endpoint is
stateless otherwise: no sessions, no resumable streams)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest_asyncio
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp import Client
from support.oauth_server import AuthServer, running_auth_server
from toolnexus.serve import ResourceAuth, ServeHandle
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolResult, pending

ANSWERED: list[str] = []


def _asking() -> Tool:
    def ask(args: dict[str, Any], ctx: Any) -> ToolResult:
        if ctx.answer is None:
            return pending(kind="input", prompt="Your name?")
        name = str((ctx.answer.data or {}).get("answer"))
        ANSWERED.append(name)
        return ToolResult(f"hello {name}")

    return Tool("ask", "Ask for a name", None, "native", ask)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def authz() -> AsyncIterator[AuthServer]:
    async with running_auth_server() as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(authz: AuthServer) -> AsyncIterator[ServeHandle]:
    handle = await Toolkit(extra_tools=[_asking()]).serve(
        "127.0.0.1:0",
        mcp={"name": "owned-mcp"},
        auth=ResourceAuth(issuer=authz.issuer, jwks_refresh_interval=0),
    )
    yield handle
    await handle.stop()


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


async def _never(context: Any, params: Any) -> Any:
    raise AssertionError("the round is answered by hand")


async def _with(handle: ServeHandle, token: str, call: Any) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as authed,
        Client(
            streamable_http_client(handle.url + "/mcp", http_client=authed),
            elicitation_callback=_never,
        ) as client,
    ):
        return await call(client)


async def test_a_request_state_is_usable_only_by_the_caller_it_was_given_to(
    gateway: ServeHandle, authz: AuthServer
):
    resource = gateway.url + "/mcp"
    alice = authz.token(resource, sub="alice")
    bob = authz.token(resource, sub="bob")  # same OAuth client, another subject
    asked = await _with(
        gateway, alice, lambda c: c.session.call_tool("ask", {}, allow_input_required=True)
    )
    assert asked.request_state is not None
    [key] = list(asked.input_requests or {})
    responses: Any = {key: {"action": "accept", "content": {"answer": "Mallory"}}}

    async def retry(client: Any) -> Any:
        return await client.call_tool(
            "ask", {}, input_responses=responses, request_state=asked.request_state
        )

    refused: list[BaseException] = []
    try:
        await _with(gateway, bob, retry)
    except* MCPError as group:  # raised inside the client's task group
        refused.extend(_leaves(group))
    assert [str(e) for e in refused] == ["Invalid or expired requestState"]
    assert "Mallory" not in ANSWERED
    done = await _with(gateway, alice, retry)
    assert done.content[0].text == "hello Mallory"
