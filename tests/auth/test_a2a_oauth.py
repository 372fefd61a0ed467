"""An A2A agent that needs a person's OAuth sign-in: our outbound tool answers its first call
with an `authorization` Request (the URL to open), and once the host answers with where the
browser landed, signs in (the MCP SDK's client: discovery from the agent's `401`, PKCE,
`resource`) and sends the task. The agent is a toolnexus agent behind the SDK's own
authorization-server routes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest_asyncio

from support.a2a_secured import answer_did
from support.oauth_server import SdkAuthServer, running_sdk_auth_server
from toolnexus.a2a import agent, agent_tools
from toolnexus.client import create_client
from toolnexus.serve import ResourceAuth, RunTaskClient, ServeHandle
from toolnexus.testing import ScriptedModel, override, text, tool_call, tools
from toolnexus.toolkit import Toolkit
from toolnexus.types import Answer, Request, Tool, ToolContext

SIGN_IN = {"type": "oauth", "store": "memory"}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def world() -> AsyncIterator[tuple[SdkAuthServer, ServeHandle]]:
    async with running_sdk_auth_server(["agent:use"]) as server:
        auth = ResourceAuth(issuer=server.issuer, jwks_uri=server.jwks_uri, scopes=["agent:use"])
        handle = await Toolkit().serve(
            "127.0.0.1:0",
            a2a={"name": "signed", "skills": []},
            client=RunTaskClient(answer_did),
            auth=auth,
        )
        yield server, handle
        await handle.stop()


async def _landing(url: str) -> str:
    """Where a browser following the authorization URL is sent back to (not fetched)."""
    async with httpx2.AsyncClient(follow_redirects=False) as http:
        response = await http.get(url)
    assert response.status_code in (302, 303, 307), response.text
    return str(response.headers["location"])


async def _tool(handle: ServeHandle) -> Tool:
    [tool] = await agent_tools(agent(handle.url, poll_every=10, auth=SIGN_IN))
    return tool


async def test_sign_in_through_the_tools_suspension(world, caplog):
    caplog.set_level(logging.DEBUG)
    server, handle = world
    tool = await _tool(handle)
    first = await tool.execute({"task": "report"}, ToolContext(timeout=20))
    request = (first.metadata or {}).get("pending")
    assert first.is_error and isinstance(request, Request)
    assert request.kind == "authorization" and request.url is not None
    assert request.url.startswith(server.issuer + "authorize?")
    assert first.output == f"{request.prompt}\n{request.url}"

    landed = await _landing(request.url)
    browsed = len(caplog.records)  # what came before was the test's own "browser"
    answer = Answer(request.id, True, {"callbackUrl": landed})
    done = await tool.execute({"task": "report"}, ToolContext(timeout=20, answer=answer))
    assert (done.output, done.is_error) == ("did: report", False)

    again = await tool.execute({"task": "more"}, ToolContext(timeout=20))
    assert (again.output, again.is_error) == ("did: more", False)  # signed in: no new request
    assert server.provider.authorized_scopes == [["agent:use"]]
    logged = "".join(r.getMessage() + repr(r.__dict__) for r in caplog.records[browsed:])
    logged += repr(first) + repr(done) + repr(tool)
    code = landed.split("code=")[1].split("&")[0]  # the code the answer carried
    secrets = [*server.keys.issued_tokens, code]
    assert all(s.rsplit(".", 1)[-1] not in logged for s in secrets)


async def test_declined_sign_in(world):
    _, handle = world
    tool = await _tool(handle)
    first = await tool.execute({"task": "x"}, ToolContext(timeout=20))
    request = (first.metadata or {})["pending"]
    declined = await tool.execute(
        {"task": "x"}, ToolContext(timeout=20, answer=Answer(request.id, False, reason="no"))
    )
    assert declined.is_error and declined.output == "authorization declined (no)"


async def test_sign_in_through_the_clients_wait_for(world):
    _, handle = world
    asked: list[Request] = []

    async def wait_for(request: Request) -> Answer:
        asked.append(request)
        assert request.url is not None
        return Answer(request.id, True, {"callbackUrl": await _landing(request.url)})

    tool = await _tool(handle)
    client = create_client(
        base_url="http://127.0.0.1:1/v1",
        style="openai",
        model="m",
        api_key="sk-test-a2a-oauth",
        wait_for=wait_for,
    )
    model = ScriptedModel(tools(tool_call(tool.name, {"task": "through the loop"})), text("ok"))
    with override(client, model):
        result = await client.run("ask the agent", Toolkit(extra_tools=[tool]))
    assert [r.kind for r in asked] == ["authorization"]
    tool_messages: list[Any] = [m for m in result.messages if m.get("role") == "tool"]
    assert "did: through the loop" in str(tool_messages[-1]["content"])
