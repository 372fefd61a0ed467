"""What the gateway's client is told when an upstream server fails a request the gateway relays
(resources/read, prompts/get, completion/complete, the listings): an error naming the server
and what it could not do, with the server's own code (an unknown resource stays -32602),
-32001 for a server that did not answer within its `timeout`, -32603 for a lost or refused
connection; never a bare internal error, a traceback or a secret. The official SDK client in
both eras, against real upstream SDK servers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio

from mcp import Client, MCPError
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.sdk_eras import app as eras_app
from toolnexus import create_toolkit
from toolnexus.toolkit import Toolkit

MODES = ["auto", "legacy"]
SECRET_VAR = "MCPTESTS_RELAY_SECRET"
SECRET = "relay-secret-4f1c9a"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def slow_gateway(asks: ThreadedHttpServer) -> AsyncIterator[str]:
    kit = await create_toolkit(
        mcp_config={"asks": {"url": asks.url(), "timeout": 500}}, builtins=False
    )
    handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw"})
    yield handle.url + "/mcp"
    await handle.stop()
    await kit.close()


async def _error(call: Any) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await call
    return caught.value


@pytest.mark.parametrize("mode", MODES)
async def test_an_upstream_error_keeps_its_code_and_names_the_server(
    slow_gateway: str, mode: str
) -> None:
    async with Client(slow_gateway, mode=mode) as client:
        unknown = await _error(client.read_resource("nope://x"))
        assert unknown.code == types.INVALID_PARAMS
        assert (
            unknown.message
            == 'MCP server "asks" could not read nope://x: Unknown resource: nope://x'
        )


@pytest.mark.parametrize("mode", MODES)
async def test_an_upstream_that_does_not_answer_in_time_is_a_timeout(
    slow_gateway: str, mode: str
) -> None:
    async with Client(slow_gateway, mode=mode) as client:
        slow = await _error(client.read_resource("ask://slow"))
        assert slow.code == types.REQUEST_TIMEOUT
        assert slow.message == 'MCP server "asks" could not read ask://slow: timed out after 500 ms'
        # the server itself carries on
        listed = (await client.list_resources(cache_mode="bypass")).resources
        assert "ask://name" in [str(r.uri) for r in listed]


@pytest.mark.parametrize("back_up", [False, True])
async def test_a_lost_upstream_is_told_then_reconnected_by_the_next_relayed_request(
    monkeypatch: pytest.MonkeyPatch, back_up: bool
) -> None:
    monkeypatch.setenv(SECRET_VAR, SECRET)
    server = ThreadedHttpServer(eras_app("--stateless"))
    port = server.port
    # a secret in the URL's query: it must never reach the gateway's client
    url = server.url() + f"?key=${{{SECRET_VAR}}}"
    kit: Toolkit = await create_toolkit(
        mcp_config={"doomed": {"url": url, "timeout": 5000}}, builtins=False
    )
    handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw"})
    try:
        async with Client(handle.url + "/mcp") as client:
            listed = (await client.list_resources(cache_mode="bypass")).resources
            assert "eras://notes" in [str(r.uri) for r in listed]
            prompts = (await client.list_prompts(cache_mode="bypass")).prompts
            assert [p.name for p in prompts] == ["doomed_review"]
            server.stop()
            lost = await _error(client.read_resource("eras://notes"))
            assert (lost.code, lost.message) == (
                types.INTERNAL_ERROR,
                'MCP server "doomed" could not read eras://notes: connection lost',
            )
            failures = [lost]
            if back_up:  # the next relayed request reconnects, as a tool call would
                server = ThreadedHttpServer(eras_app("--stateless"), port=port)
                read = await client.read_resource("eras://notes")
                assert read.contents[0].text == "the notes"  # type: ignore[union-attr]
                got = await client.get_prompt("doomed_review", {"code": "x = 1"})
                assert got.messages[0].content.text == "Review this (terse): x = 1"  # type: ignore[union-attr]
                assert kit.mcp_servers()["doomed"].status == "connected"
            else:  # told once; the next request's reconnect attempt is refused
                refused = await _error(client.get_prompt("doomed_review", {"code": "x"}))
                assert refused.code == types.INTERNAL_ERROR
                assert refused.message.startswith(
                    'MCP server "doomed" could not get prompt review: failed: cannot connect to '
                    f"http://127.0.0.1:{port}/mcp: "
                )
                # within 5 s of that attempt: at once, with the same reason
                again = await _error(client.read_resource("eras://notes"))
                assert again.message.startswith(
                    'MCP server "doomed" could not read eras://notes: failed: cannot connect to '
                )
                failures += [refused, again]
            for failure in failures:
                assert SECRET not in failure.message and "Traceback" not in failure.message
    finally:
        await handle.stop()
        await kit.close()
        server.stop()


async def test_an_answer_that_breaks_the_form_is_the_clients_error(slow_gateway: str) -> None:
    async def unused(context: Any, params: Any) -> Any:
        raise AssertionError("answered by hand below")

    async with Client(slow_gateway, elicitation_callback=unused) as client:
        first = await client.session.read_resource("ask://name", allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        [key] = first.input_requests or {}
        wrong = await _error(
            client.session.read_resource(
                "ask://name",
                input_responses={key: types.ElicitResult(action="accept", content={"name": 5})},
                request_state=first.request_state,
                allow_input_required=True,
            )
        )
        assert (wrong.code, wrong.message) == (
            types.INVALID_PARAMS,
            'The answer does not fit the form MCP server "asks" asked for; invalid: name',
        )
