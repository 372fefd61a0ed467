"""The gateway answers a session-less 2025-11-25 request over HTTP exactly as the SDK's own
stateless JSON transport does, whichever way it serves it (one exchange, or the SDK's
transport), in both modes of the endpoint (`initialize` opens a session in the stateful one:
tests/serve/test_mcp_sessions.py).

The oracle is the same SDK `Server` (`build_mcp_server` over the same tools) behind the SDK's
`StreamableHTTPSessionManager(stateless=True, json_response=True)` on its own loopback port.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from support.asgi_server import running
from toolnexus.serve import build_mcp_server
from toolnexus.toolkit import Toolkit

JSON_AND_SSE = "application/json, text/event-stream"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def urls(toolkit: Toolkit) -> AsyncIterator[tuple[str, str, str]]:
    """(the stateless gateway's `/mcp`, the SDK transport's endpoint, the stateful gateway's
    `/mcp`) over the same tools."""
    manager = StreamableHTTPSessionManager(
        app=build_mcp_server(toolkit.tools()),
        stateless=True,
        json_response=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await manager.handle_request(scope, receive, send)

    # The SDK's manager must be entered and left in one task: a task of its own serves it.
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def serve_oracle() -> None:
        async with manager.run(), running(app) as url:
            ready.set_result(url)
            await stop.wait()

    oracle = asyncio.ensure_future(serve_oracle())
    handle = await toolkit.serve("127.0.0.1:0", mcp={"stateless": True})
    stateful = await toolkit.serve("127.0.0.1:0", mcp={})
    try:
        oracle_url = await asyncio.wait_for(asyncio.shield(ready), 10) + "/mcp"
        yield handle.url + "/mcp", oracle_url, stateful.url + "/mcp"
    finally:
        stop.set()
        await handle.stop()
        await stateful.stop()
        await oracle


def _call(name: str, arguments: Any, request_id: Any = 1) -> dict[str, Any]:
    params = {"name": name} if arguments is None else {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _rpc(method: str, params: Any = None, request_id: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


INITIALIZE = _rpc(
    "initialize",
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "test", "version": "1"},
    },
)

# (case, body: JSON-able or raw bytes, headers beyond the defaults)
CASES: list[tuple[str, Any, dict[str, str]]] = [
    ("call", _call("echo", {"text": "hi"}), {}),
    ("call, no version header", _call("echo", {"text": "hi"}), {"mcp-protocol-version": ""}),
    ("call at 2025-06-18", _call("echo", {"text": "hi"}), {"mcp-protocol-version": "2025-06-18"}),
    ("call, string id", _call("echo", {"text": "hi"}, "req-7"), {}),
    ("call, only JSON accepted", _call("echo", {"text": "hi"}), {"accept": "application/json"}),
    ("call, wildcard accept", _call("echo", {"text": "hi"}), {"accept": "*/*"}),
    ("call, charset", _call("echo", {"text": "hé"}), {"content-type": "application/json; c=1"}),
    ("invalid arguments", _call("echo", {"text": 5}), {}),
    ("tool raises", _call("boom", {}), {}),
    ("no arguments", _call("weird.name-1", None), {}),
    ("unknown tool", _call("nope", {}), {}),
    ("params without name", _rpc("tools/call", {"arguments": {}}), {}),
    ("list", _rpc("tools/list"), {}),
    ("list with _meta", _rpc("tools/list", {"_meta": {"x": 1}}), {}),
    ("ping", _rpc("ping"), {}),
    ("unknown method", _rpc("no/such"), {}),
    ("resources not served", _rpc("resources/list"), {}),
    ("initialize", INITIALIZE, {}),
    ("notification", {"jsonrpc": "2.0", "method": "notifications/initialized"}, {}),
    ("batch", [_rpc("ping"), _rpc("ping", request_id=2)], {}),
    ("not JSON-RPC 2.0", {**_rpc("ping"), "jsonrpc": "1.0"}, {}),
    ("id is null", {**_rpc("ping"), "id": None}, {}),
    ("parse error", b'{"jsonrpc": "2.0", "id": 1,', {}),
    ("lone surrogate", b'{"jsonrpc": "2.0", "id": 0, "method": "\\ud800"}', {}),
    (
        "deep nesting",
        b'{"jsonrpc": "2.0", "id": 0, "method": "ping", "params": {"a":'
        + b"[" * 3000
        + b"]" * 3000
        + b"}}",
        {},
    ),
    ("huge number id", b'{"jsonrpc": "2.0", "id": 1' + b"0" * 400 + b', "method": "ping"}', {}),
    ("SSE only accepted", _rpc("ping"), {"accept": "text/event-stream"}),
    ("nothing accepted", _rpc("ping"), {"accept": "image/png"}),
    ("text content type", _rpc("ping"), {"content-type": "text/plain"}),
    ("listed content types", _rpc("ping"), {"content-type": "text/plain, application/json"}),
    ("upper-case content type", _rpc("ping"), {"content-type": "Application/JSON"}),
    ("longer content type", _rpc("ping"), {"content-type": "application/jsonx"}),
]


async def _post(
    client: httpx2.AsyncClient, url: str, body: Any, headers: dict[str, str]
) -> tuple[int, str | None, Any]:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {
        "accept": JSON_AND_SSE,
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
        **headers,
    }
    sent = {k: v for k, v in sent.items() if v}
    response = await client.post(url, content=content, headers=sent)
    kind = response.headers.get("content-type")
    text = response.text
    decoded = json.loads(text) if text and kind == "application/json" else text
    return response.status_code, kind, decoded


@pytest.mark.parametrize(("case", "body", "headers"), CASES, ids=[c[0] for c in CASES])
async def test_answers_as_the_sdk_transport_does(urls, http, case, body, headers):
    gateway, oracle, stateful = urls
    ours = await _post(http, gateway, body, headers)
    theirs = await _post(http, oracle, body, headers)
    assert ours == theirs
    if case != "initialize":
        assert await _post(http, stateful, body, headers) == theirs


async def test_an_answer_carries_no_session_and_keeps_the_connection(urls):
    gateway, _, _ = urls
    async with httpx2.AsyncClient() as client:
        for n in range(3):
            response = await client.post(
                gateway,
                json=_call("echo", {"text": str(n)}, n),
                headers={"accept": JSON_AND_SSE, "mcp-protocol-version": "2025-11-25"},
            )
            assert response.status_code == 200
            assert "mcp-session-id" not in response.headers
            assert response.headers["content-length"] == str(len(response.content))
            assert response.json()["result"]["content"] == [{"type": "text", "text": f"echo: {n}"}]
