"""Stateful streamable HTTP (the MCP profile's default): sessions, the resumable event stream,
`DELETE`, the bounds, session ownership under OAuth, and the stateless mode, over loopback
with raw HTTP where the wire is the point (the SDK client runs the same server in
test_mcp_caller.py and the conformance suite in test_conformance.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
import pytest_asyncio

from support.oauth_server import AuthServer, running_auth_server
from support.polling import wait_until
from toolnexus.errors import ConfigError
from toolnexus.serve import ResourceAuth, ServeHandle
from toolnexus.serve._mcp._http import _CURRENT, SessionEvents
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext

HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


class Gate:
    """Lets the test decide when the `step` tool finishes."""

    def __init__(self) -> None:
        self.open = asyncio.Event()


def _toolkit(gate: Gate) -> Toolkit:
    async def step(args: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.log("info", "started")
        await gate.open.wait()
        return "done"

    def echo(args: dict[str, Any], ctx: ToolContext) -> str:
        return "echo"

    return Toolkit(
        builtins=False,
        extra_tools=[
            Tool("step", "Logs, then waits for the test", None, "native", step),
            Tool("echo", "Echoes", None, "native", echo),
        ],
    )


@pytest.fixture(scope="module")
def gate() -> Gate:
    return Gate()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def served(gate: Gate) -> AsyncIterator[ServeHandle]:
    handle = await _toolkit(gate).serve("127.0.0.1:0", mcp={})
    yield handle
    await handle.stop()


async def _events(response: Any) -> AsyncIterator[tuple[str | None, dict[str, Any] | None]]:
    """The SSE events of a response: (id, decoded data; `None` for a priming event)."""
    event_id: str | None = None
    data = ""
    async for line in response.aiter_lines():
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line:
            yield event_id, json.loads(data) if data else None
            event_id, data = None, ""


async def _open(http: httpx2.AsyncClient, url: str, headers: dict[str, str] | None = None) -> str:
    """Initialize a session; its id."""
    sent = {**HEADERS, **(headers or {})}
    response = await http.post(url, json=INITIALIZE, headers=sent)
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    answered = await http.post(url, json=done, headers={**sent, "mcp-session-id": session})
    assert answered.status_code == 202
    return session


def _call(name: str, request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": {}},
    }


async def test_a_dropped_stream_resumes_from_its_last_event(served, http, gate):
    url = served.url + "/mcp"
    session = await _open(http, url)
    headers = {**HEADERS, "mcp-session-id": session}
    last_seen = None
    async with http.stream("POST", url, json=_call("step", 7), headers=headers) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for event_id, message in _events(response):
            last_seen = event_id
            if message is not None:
                assert message["method"] == "notifications/message"
                assert message["params"]["data"] == "started"
                break  # the client goes away mid-call
    assert last_seen is not None
    gate.open.set()  # the call finishes while nobody listens
    resumed = {**headers, "last-event-id": last_seen}
    answer = None
    async with http.stream("GET", url, headers=resumed) as response:
        assert response.status_code == 200
        async for _, message in _events(response):
            if message is not None:
                answer = message
                break
    assert answer is not None
    assert answer["id"] == 7
    assert answer["result"]["content"] == [{"type": "text", "text": "done"}]


async def test_a_session_ends_with_delete(served, http):
    url = served.url + "/mcp"
    session = await _open(http, url)
    headers = {**HEADERS, "mcp-session-id": session}
    assert (await http.post(url, json=_call("echo", 1), headers=headers)).status_code == 200
    assert (await http.delete(url, headers=headers)).status_code == 200
    gone = await http.post(url, json=_call("echo", 2), headers=headers)
    assert gone.status_code == 404
    assert gone.json()["error"]["message"] == "Session not found"


async def test_a_request_without_a_session_is_served_on_its_own(served, http):
    response = await http.post(served.url + "/mcp", json=_call("echo", 3), headers=HEADERS)
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers
    assert response.json()["result"]["content"][0]["text"] == "echo"
    stream = await http.get(served.url + "/mcp", headers=HEADERS)
    assert stream.status_code == 405  # no session: no stream to push to


async def test_open_sessions_are_bounded_and_idle_ones_expire(http):
    handle = await _toolkit(Gate()).serve(
        "127.0.0.1:0", mcp={"maxSessions": 2, "sessionIdleTimeout": 200}
    )
    url = handle.url + "/mcp"
    try:
        first = await _open(http, url)
        await _open(http, url)
        refused = await http.post(url, json=INITIALIZE, headers=HEADERS)
        assert refused.status_code == 503
        assert refused.json()["error"]["message"] == "Too many open sessions"

        async def expired() -> bool:
            headers = {**HEADERS, "mcp-session-id": first}
            response = await http.post(url, json=_call("echo", 1), headers=headers)
            return response.status_code == 404

        # Polled more slowly than the idle timeout: each request restarts the idle clock.
        await wait_until(expired, timeout=10, check_every=0.5)
        await wait_until(lambda: _admits(http, url), timeout=10, check_every=0.5)
    finally:
        await handle.stop()


async def _admits(http: httpx2.AsyncClient, url: str) -> bool:
    response = await http.post(url, json=INITIALIZE, headers=HEADERS)
    return response.status_code == 200


async def test_stateless_mode_opens_no_session(http):
    handle = await _toolkit(Gate()).serve("127.0.0.1:0", mcp={"stateless": True})
    try:
        response = await http.post(handle.url + "/mcp", json=INITIALIZE, headers=HEADERS)
        assert response.status_code == 200
        assert "mcp-session-id" not in response.headers
        assert (await http.get(handle.url + "/mcp", headers=HEADERS)).status_code == 405
    finally:
        await handle.stop()


@pytest.mark.parametrize(
    "profile",
    [{"stateless": "yes"}, {"maxSessions": 0}, {"sessionIdleTimeout": -1}, {"sessionEvents": 1.5}],
)
async def test_bad_session_settings_are_config_errors(profile):
    with pytest.raises(ConfigError, match=next(iter(profile))):
        await _toolkit(Gate()).serve("127.0.0.1:0", mcp=profile)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def authz() -> AsyncIterator[AuthServer]:
    async with running_auth_server() as server:
        yield server


async def test_a_session_belongs_to_the_caller_who_opened_it(authz, http, gate):
    auth = ResourceAuth(issuer=authz.issuer, jwks_refresh_interval=0)
    handle = await _toolkit(gate).serve("127.0.0.1:0", mcp={}, auth=auth)
    url = handle.url + "/mcp"
    try:
        alice = {"authorization": "Bearer " + authz.token(url)}
        mallory = {"authorization": "Bearer " + authz.token(url, sub="user-2", client_id="c-2")}
        session = await _open(http, url, alice)
        call = await http.post(
            url, json=_call("echo", 1), headers={**HEADERS, **alice, "mcp-session-id": session}
        )
        assert call.status_code == 200
        theirs = {**HEADERS, **mallory, "mcp-session-id": session}
        posted = await http.post(url, json=_call("echo", 2), headers=theirs)
        assert posted.status_code == 404
        streamed = await http.get(url, headers={**theirs, "last-event-id": "x-1"})
        assert streamed.status_code == 404
        deleted = await http.delete(url, headers=theirs)
        assert deleted.status_code == 404
        call = await http.post(
            url, json=_call("echo", 3), headers={**HEADERS, **alice, "mcp-session-id": session}
        )
        assert call.status_code == 200  # still the owner's
    finally:
        await handle.stop()


async def test_the_event_log_is_per_session_and_bounded():
    store = SessionEvents(limit=3, sessions=2)
    ping = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress")
    mine, other = store.new_log(), store.new_log()
    store.bind("a", mine)
    store.bind("b", other)
    token = _CURRENT.set(other)
    foreign = await store.store_event("1", ping)
    _CURRENT.reset(token)
    token = _CURRENT.set(mine)
    try:
        ids = [await store.store_event("1", ping if n else None) for n in range(5)]
        replayed: list[str | None] = []

        async def sent(event: Any) -> None:
            replayed.append(event.event_id)

        assert await store.replay_events_after(ids[2], sent) == "1"
        assert replayed == ids[3:]
        assert await store.replay_events_after(ids[0], sent) is None  # dropped: 3 kept
        assert await store.replay_events_after(foreign, sent) is None  # another session's
    finally:
        _CURRENT.reset(token)
    store.bind("c", store.new_log())  # a third session: the oldest log goes
    assert (store.log_of("a"), len(store)) == (None, 2)
    store.forget("b")
    assert (store.log_of("b"), len(store)) == (None, 1)
