"""The gateway relays resource subscriptions and change notifications: a caller's subscription
goes to the upstream server owning the URI (one upstream subscription however many callers
hold it, dropped when the last goes), an upstream update reaches only the sessions subscribed
to it, and upstream list changes reach the callers after the gateway's own lists changed. The
upstream is an official-SDK server (tests/support/mcp_servers/watched_server.py) spoken to at
2025-11-25 (`legacy`) and 2026-07-28 (`auto`); the callers are the official SDK's client,
with sessions (2025-11-25) or listening (2026-07-28)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

from mcp import Client
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.watched_server import app as watched_app
from toolnexus import create_toolkit

WATCHED, OTHER = "test://watched", "test://other"
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


@pytest.fixture(scope="module")
def upstreams() -> Iterator[dict[str, ThreadedHttpServer]]:
    servers = {
        "watched": ThreadedHttpServer(watched_app()),
        "plain": ThreadedHttpServer(watched_app(subscribe=False, prefix="plain://")),
    }
    yield servers
    for server in servers.values():
        server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session", params=["legacy", "auto"])
async def gateway(
    request: pytest.FixtureRequest, upstreams: dict[str, ThreadedHttpServer]
) -> AsyncIterator[str]:
    era = request.param
    kit = await create_toolkit(
        mcp_config={
            "up": {"url": upstreams["watched"].url(), "protocol": era},
            "plain": {"url": upstreams["plain"].url(), "protocol": era},
        },
        builtins=False,
    )
    handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw"})
    yield handle.url + "/mcp"
    await handle.stop()
    await kit.close()


class Heard:
    """The notifications one caller of the gateway received."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def __call__(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self.messages.append(message)

    def updates(self) -> list[str]:
        return [
            str(m.params.uri)
            for m in self.messages
            if isinstance(m, types.ResourceUpdatedNotification)
        ]

    def of(self, kind: type[Any]) -> list[Any]:
        return [m for m in self.messages if isinstance(m, kind)]


def session(gateway: str, heard: Heard | None = None) -> Client:
    """A 2025-11-25 caller: a session, with the standalone stream updates arrive on."""
    return Client(gateway, mode="legacy", message_handler=heard)


async def until(check: Callable[[], Any], what: str, within: float = 15) -> Any:
    deadline = time.monotonic() + within
    while not (found := check()):
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.01)
    return found


async def held(client: Client) -> list[str] | None:
    """The URIs the upstream server holds subscriptions to now (its `held` tool); `None` while
    the gateway cannot reach it."""
    result = await client.call_tool("up_held", {})
    if result.is_error:
        return None
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def until_held(client: Client, expected: list[str]) -> None:
    deadline = time.monotonic() + 15
    while (now := await held(client)) != expected:
        assert time.monotonic() < deadline, f"the upstream holds {now}, not {expected}"
        await asyncio.sleep(0.01)


async def test_only_the_subscriber_hears_an_update(gateway: str) -> None:
    ada, bob = Heard(), Heard()
    async with session(gateway, ada) as a, session(gateway, bob) as b:
        await a.subscribe_resource(WATCHED)
        await b.subscribe_resource(OTHER)
        await until_held(a, [OTHER, WATCHED])
        await a.call_tool("up_touch", {"uri": WATCHED})
        await until(ada.updates, "ada heard the update")
        await b.call_tool("up_touch", {"uri": OTHER})
        await until(bob.updates, "bob heard the update")
        assert (ada.updates(), bob.updates()) == ([WATCHED], [OTHER])
        await a.unsubscribe_resource(WATCHED)
        await b.unsubscribe_resource(OTHER)
        await until_held(a, [])


async def test_unsubscribing_stops_the_updates_and_the_last_one_out_drops_it(
    gateway: str,
) -> None:
    ada, bob = Heard(), Heard()
    async with session(gateway) as observer:
        async with session(gateway, ada) as a, session(gateway, bob) as b:
            await a.subscribe_resource(WATCHED)
            await b.subscribe_resource(WATCHED)
            await until_held(observer, [WATCHED])
            await a.unsubscribe_resource(WATCHED)
            assert await held(observer) == [WATCHED]  # bob still holds it
            await observer.call_tool("up_touch", {"uri": WATCHED})
            await until(bob.updates, "bob heard the update")
            await observer.call_tool("up_touch", {"uri": WATCHED})
            await until(lambda: len(bob.updates()) == 2, "bob heard the second update")
            assert ada.updates() == []
        # bob's session ended (the client's DELETE) without unsubscribing: dropped upstream
        await until_held(observer, [])


async def test_an_upstream_list_change_reaches_the_caller_after_the_lists_changed(
    gateway: str,
) -> None:
    heard = Heard()
    async with session(gateway, heard) as caller:
        declared = caller.server_capabilities
        assert declared.tools and declared.tools.list_changed
        assert declared.resources and declared.resources.list_changed
        assert declared.resources.subscribe
        assert declared.prompts and declared.prompts.list_changed
        before = {t.name for t in (await caller.list_tools()).tools}
        await caller.call_tool("up_grow", {"what": "tools"})
        await until(lambda: heard.of(types.ToolListChangedNotification), "tools changed")
        after = {t.name for t in (await caller.list_tools()).tools}
        [added] = after - before  # listed again before the caller was told
        assert added.startswith("up_grown_")
        assert not (await caller.call_tool(added, {})).is_error
        await caller.call_tool("up_grow", {"what": "resources"})
        await until(lambda: heard.of(types.ResourceListChangedNotification), "resources")
        uris = [str(r.uri) for r in (await caller.list_resources()).resources]
        assert any(u.startswith("test://grown_") for u in uris)
        await caller.call_tool("up_grow", {"what": "prompts"})
        await until(lambda: heard.of(types.PromptListChangedNotification), "prompts changed")
        names = [p.name for p in (await caller.list_prompts()).prompts]
        assert any(n.startswith("up_grown_") for n in names)
        grown = next(n for n in names if n.startswith("up_grown_"))
        got = await caller.get_prompt(grown)
        assert got.messages[0].content.text.endswith("says hi")  # type: ignore[union-attr]


async def test_a_caller_at_2026_07_28_listens_for_what_it_named(gateway: str) -> None:
    async with Client(gateway) as caller, session(gateway) as observer:
        listening = caller.listen(resource_subscriptions=[WATCHED], tools_list_changed=True)
        async with listening as stream:
            assert stream.honored.resource_subscriptions == [WATCHED]
            await until_held(observer, [WATCHED])
            await observer.call_tool("up_touch", {"uri": OTHER})  # not named: not heard
            await observer.call_tool("up_touch", {"uri": WATCHED})
            event = await asyncio.wait_for(anext(stream), 15)
            assert event == ResourceUpdated(uri=WATCHED)
            await observer.call_tool("up_grow", {"what": "tools"})
            assert await asyncio.wait_for(anext(stream), 15) == ToolsListChanged()
        await until_held(observer, [])  # the stream closed: its subscription went too


async def test_a_server_that_takes_no_subscriptions_is_named_at_once(gateway: str) -> None:
    async with session(gateway) as caller:
        await caller.list_resources()  # the gateway learns who owns what
        with pytest.raises(MCPError) as caught:
            await caller.subscribe_resource("plain://watched")
    assert caught.value.error.code == types.INVALID_PARAMS
    assert caught.value.error.message == (
        'cannot subscribe to plain://watched: MCP server "plain" does not offer resource '
        "subscriptions (it does not declare resources.subscribe)"
    )


async def test_a_request_without_a_session_cannot_subscribe(gateway: str) -> None:
    import httpx2

    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": WATCHED}}
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    async with httpx2.AsyncClient() as http:
        answer = (await http.post(gateway, json=body, headers=headers)).json()
    assert answer["error"]["code"] == types.INVALID_REQUEST
    assert answer["error"]["message"].startswith("resources/subscribe needs a session")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def mixed(upstreams: dict[str, ThreadedHttpServer]) -> AsyncIterator[tuple[Any, str]]:
    """A gateway whose toolkit declares a resource of its own beside the upstream ones."""
    kit = await create_toolkit(
        mcp_config={"up": {"url": upstreams["watched"].url(), "protocol": "legacy"}},
        builtins=False,
    )

    @kit.resource("own://note")
    def note() -> str:
        return "mine"

    handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw"})
    yield kit, handle.url + "/mcp"
    await handle.stop()
    await kit.close()


async def test_the_toolkits_own_resources_keep_their_subscriptions(
    mixed: tuple[Any, str],
) -> None:
    kit, gateway = mixed
    heard = Heard()
    async with session(gateway, heard) as caller:
        await caller.subscribe_resource("own://note")
        await caller.subscribe_resource(WATCHED)
        await until_held(caller, [WATCHED])  # only the upstream URI went upstream
        await kit.notify_resource_updated("own://note")
        await caller.call_tool("up_touch", {"uri": WATCHED})
        await until(lambda: len(heard.updates()) == 2, "both updates")
        assert sorted(heard.updates()) == ["own://note", WATCHED]
        await caller.unsubscribe_resource(WATCHED)
        await until_held(caller, [])
    async with Client(gateway) as listener, session(gateway) as observer:
        wanted = ["own://note", WATCHED, "plain://nobody"]
        async with listener.listen(resource_subscriptions=wanted) as stream:
            assert stream.honored.resource_subscriptions == wanted
            await until_held(observer, sorted(["plain://nobody", WATCHED]))
            await kit.notify_resource_updated("own://note")
            assert await asyncio.wait_for(anext(stream), 15) == ResourceUpdated(uri="own://note")
        await until_held(observer, [])


async def test_a_restarted_upstream_is_subscribed_again() -> None:
    server = ThreadedHttpServer(watched_app())
    port = server.port
    kit = await create_toolkit(
        mcp_config={"up": {"url": server.url(), "protocol": "legacy"}}, builtins=False
    )
    handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw"})
    try:
        async with session(handle.url + "/mcp") as caller:
            await caller.subscribe_resource(WATCHED)
            await until_held(caller, [WATCHED])
            server.stop()
            server = ThreadedHttpServer(watched_app(), port=port)  # knows no subscription
            await until_held(caller, [WATCHED])  # the gateway reconnected and subscribed again
    finally:
        await handle.stop()
        await kit.close()
        server.stop()


async def test_a_caller_over_stdio_hears_its_update(
    upstreams: dict[str, ThreadedHttpServer],
) -> None:
    from mcp.client.stdio import StdioServerParameters

    gateway = Path(__file__).parents[1] / "support" / "mcp_gateway_stdio.py"
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(gateway), "--upstream", upstreams["watched"].url(), "--protocol", "legacy"],
    )
    heard = Heard()
    async with Client(params, mode="legacy", message_handler=heard) as caller:
        await caller.subscribe_resource(OTHER)
        await caller.call_tool("asks_touch", {"uri": OTHER})
        await until(heard.updates, "the update over stdio")
        assert heard.updates() == [OTHER]
        await caller.unsubscribe_resource(OTHER)


async def test_an_expired_session_lets_its_subscriptions_go(
    upstreams: dict[str, ThreadedHttpServer],
) -> None:
    import httpx2

    kit = await create_toolkit(
        mcp_config={"up": {"url": upstreams["watched"].url(), "protocol": "legacy"}},
        builtins=False,
    )
    handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw", "sessionIdleTimeout": 300})
    gateway = handle.url + "/mcp"
    headers = {"accept": "application/json, text/event-stream"}
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    try:
        # a caller without the standalone stream: idle between its requests
        async with httpx2.AsyncClient(headers=headers) as http:
            opened = await http.post(
                gateway, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
            )
            headers["mcp-session-id"] = opened.headers["mcp-session-id"]
            headers["mcp-protocol-version"] = "2025-11-25"
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(gateway, json=initialized, headers=headers)
            subscribe = {"uri": OTHER}
            body = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": subscribe}
            answered = await http.post(gateway, json=body, headers=headers)
            # answered only once the upstream server took the subscription
            assert '"result":{}' in answered.text.replace(" ", "")
        async with session(gateway) as observer:  # kept alive by its own stream
            await until_held(observer, [])  # the raw session ended 300 ms after its request
    finally:
        await handle.stop()
        await kit.close()


async def test_a_stopped_gateway_leaves_nothing_listening_on_its_toolkit(
    upstreams: dict[str, ThreadedHttpServer],
) -> None:
    """One toolkit served and stopped again and again (a host restarting its endpoint) keeps
    no relay of a stopped gateway alive: its upstream changes are heard only by live ones."""
    import gc

    def relays() -> int:
        gc.collect()
        return sum(type(o).__name__ == "RelayedChanges" for o in gc.get_objects())

    alive = relays()  # the other tests' gateway, still serving
    kit = await create_toolkit(
        mcp_config={"up": {"url": upstreams["watched"].url(), "protocol": "legacy"}},
        builtins=False,
    )
    try:
        for _ in range(3):
            handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw"})
            async with Client(handle.url + "/mcp") as caller:
                await caller.list_tools()
            await handle.stop()
        # The stopped servers' last tasks may still be unwinding: poll with a deadline.
        deadline = time.monotonic() + 10
        while relays() != alive and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert relays() == alive
    finally:
        await kit.close()
