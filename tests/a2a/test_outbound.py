"""Remote A2A agents as tools, against a scripted peer and against our own `serve(a2a=...)`."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from support.a2a_peer import Peer
from support.asgi_server import running
from support.polling import wait_until
from toolnexus._env import EnvVarError
from toolnexus.a2a import Agent, agent, agent_tools, parse_agents_config
from toolnexus.client import create_in_process_client
from toolnexus.skill import SkillDef
from toolnexus.toolkit import Toolkit, create_toolkit
from toolnexus.types import Answer, Tool, ToolContext, ToolResult, pending

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
CARD = "/.well-known/agent-card.json"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def peer() -> AsyncIterator[Peer]:
    peer = Peer()
    async with running(peer.app) as url:
        peer.base_url = url
        yield peer


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def tools(peer: Peer) -> dict[str, Tool]:
    found = await agent_tools(agent(peer.base_url + CARD, poll_every=10))
    return {t.name: t for t in found}


async def call(tool: Tool, task: str, ctx: ToolContext | None = None) -> ToolResult:
    return await tool.execute({"task": task}, ctx)


def test_agent_defaults_and_validation():
    declared = agent("http://x/card.json")
    assert declared == Agent(
        card="http://x/card.json", headers=None, timeout=300000, poll_every=1000
    )
    assert agent("u", headers={"A": "b"}, timeout=5, poll_every=2.5) == Agent(
        "u", {"A": "b"}, 5, 2.5
    )
    for bad in [{"timeout": 0}, {"poll_every": -1}, {"timeout": "10"}]:
        with pytest.raises(ValueError, match="positive number of milliseconds"):
            agent("u", **bad)
    with pytest.raises(ValueError, match="Agent Card URL"):
        agent("")


def test_parse_agents_config():
    block = {
        "research": {
            "card": "http://r/card",
            "headers": {"Authorization": "Bearer ${TOKEN}"},
            "timeout": 5000,
            "pollEvery": 50,
        },
        "plain": {"card": "http://p/card"},
        "off": {"card": "http://o/card", "enabled": False},
        "gone": {"card": "http://g/card", "disabled": True, "enabled": True},
        "nocard": {"headers": {}},
        "numbercard": {"card": 5},
        "notadict": "http://x",
    }
    assert parse_agents_config(block) == [
        Agent("http://r/card", {"Authorization": "Bearer ${TOKEN}"}, 5000, 50),
        Agent("http://p/card", None, 300000, 1000),
    ]
    assert parse_agents_config(None) == []
    assert parse_agents_config({}) == []


async def test_a_deferred_agent_makes_deferred_tools(peer, tools):
    block = {"lazy": {"card": peer.base_url + CARD, "deferLoading": True}}
    [lazy] = parse_agents_config(block)
    assert lazy.defer_loading is True
    found = await agent_tools(lazy)
    assert [t.defer_loading for t in found] == [True] * len(tools)
    assert not any(t.defer_loading for t in tools.values())
    assert parse_agents_config({"bad": {"card": "http://b/card", "deferLoading": "yes"}}) == []


async def test_card_resolution_makes_one_tool_per_skill(tools):
    assert list(tools) == ["Peer_Agent__do_it", "Peer_Agent__plain", "Peer_Agent__named_only"]
    assert [t.description for t in tools.values()] == ["Does it", "Plain", "named only"]
    for tool in tools.values():
        assert tool.source == "a2a"
        assert tool.input_schema == {
            "type": "object",
            "properties": {
                "task": {
                    "type": "string",
                    "description": "The task to send to the agent, in natural language.",
                }
            },
            "required": ["task"],
            "additionalProperties": False,
        }


async def test_submit_then_poll_to_completion(peer, tools):
    peer.requests.clear()
    result = await call(tools["Peer_Agent__do_it"], "echo hello")
    assert (result.output, result.is_error) == ("echo: echo hello", False)
    meta = result.metadata
    assert meta is not None
    assert set(meta) == {"agent", "taskId", "contextId", "state", "polls", "ms", "protocol"}
    assert (meta["agent"], meta["state"], meta["polls"]) == ("Peer Agent!", "completed", 2)
    # the card says 0.3; the peer knows no message/send, so this agent now speaks legacy
    assert meta["protocol"] == "legacy"
    assert UUID.fullmatch(meta["taskId"])
    assert isinstance(meta["ms"], int) and meta["ms"] >= 0

    send, first_poll, second_poll = [
        r for r in peer.requests if r["body"]["method"] != "message/send"
    ]
    assert send["path"] == "/"  # no card url: the card URL's origin is the endpoint
    assert send["headers"]["content-type"] == "application/json"
    wire = UUID.sub("<uuid>", send["raw"].decode())
    assert wire == (
        '{"jsonrpc":"2.0","id":"<uuid>","method":"SendMessage","params":{"message":'
        '{"role":"user","messageId":"<uuid>","parts":[{"kind":"text","text":"echo hello"}]},'
        '"configuration":{"blocking":false}}}'
    )
    assert send["body"]["id"] != send["body"]["params"]["message"]["messageId"]
    for poll in (first_poll, second_poll):
        assert UUID.sub("<uuid>", poll["raw"].decode()) == (
            '{"jsonrpc":"2.0","id":"<uuid>","method":"GetTask","params":{"id":"<uuid>"}}'
        )
        assert poll["body"]["params"]["id"] == meta["taskId"]
    assert len({r["body"]["id"] for r in peer.requests}) == len(peer.requests)


async def test_card_url_names_the_endpoint(peer):
    [tool, *_] = await agent_tools(agent(peer.base_url + "/cards/rpc-path.json", poll_every=10))
    peer.requests.clear()
    assert (await call(tool, "immediate")).output == "echo: immediate"
    assert [r["path"] for r in peer.requests] == ["/rpc", "/rpc"]
    assert [r["body"]["method"] for r in peer.requests] == ["message/send", "SendMessage"]
    assert "a2a-version" not in peer.requests[1]["headers"]
    peer.requests.clear()
    assert (await call(tool, "immediate")).metadata["protocol"] == "legacy"  # type: ignore[index]
    assert [r["body"]["method"] for r in peer.requests] == ["SendMessage"]


@pytest.mark.parametrize(
    ("task", "output", "polls"),
    [
        ("multi", 'one\ntwo\n{"x":1}\nthree', 1),
        ("history", "{}", 1),  # the last agent message with a part: a data part
        ("empty", "{}", 1),
        ("nostate", "echo: nostate", 1),
        ("immediate", "echo: immediate", 0),
    ],
)
async def test_completed_outputs(tools, task, output, polls):
    result = await call(tools["Peer_Agent__plain"], task)
    assert (result.output, result.is_error) == (output, False)
    assert result.metadata is not None
    assert (result.metadata["state"], result.metadata["polls"]) == ("completed", polls)


async def test_a_direct_message_reply(tools):
    result = await call(tools["Peer_Agent__plain"], "message")
    assert (result.output, result.is_error) == ("direct", False)


@pytest.mark.parametrize(
    ("task", "template", "state"),
    [
        ("fail now", "A2A task {id} failed: bad input", "failed"),
        ("fail quiet", "A2A task {id} failed", "failed"),
        ("canceled", "A2A task {id} canceled", "canceled"),
    ],
)
async def test_failed_and_canceled_tasks(tools, task, template, state):
    result = await call(tools["Peer_Agent__do_it"], task)
    assert result.is_error and result.metadata is not None
    assert result.output == template.format(id=result.metadata["taskId"])
    assert result.metadata["state"] == state


@pytest.mark.parametrize(
    ("task", "output"),
    [
        ("http500", "HTTP 500: server broke"),
        ("rpcerror", "no capacity"),
        ("rpcbare", "JSON-RPC error -32099"),
        ("notask", "the agent's answer is a task without an id"),
    ],
)
async def test_transport_and_protocol_errors(tools, task, output):
    result = await call(tools["Peer_Agent__do_it"], task)
    assert (result.output, result.is_error) == (output, True)
    assert result.metadata is not None
    assert (result.metadata["taskId"], result.metadata["polls"]) == ("", 0)


async def test_unreachable_agent():
    gone = Peer()
    async with running(gone.app) as url:
        [tool, *_] = await agent_tools(agent(url + CARD, poll_every=10))
    # The peer has stopped: the card fetch raises, a call is an error result.
    with pytest.raises(Exception) as caught:
        await agent_tools(agent(url + CARD))
    assert str(caught.value)
    result = await call(tool, "echo x")
    assert result.is_error and result.output
    assert result.metadata is not None
    assert (result.metadata["taskId"], result.metadata["state"]) == ("", "")


async def test_local_timeout_cancels_the_remote_task(peer, tools):
    peer.requests.clear()
    result = await call(tools["Peer_Agent__do_it"], "forever", ToolContext(timeout=0.08))
    assert result.is_error and result.metadata is not None
    task_id, state = result.metadata["taskId"], result.metadata["state"]
    # How many polls fit in the budget depends on the machine: before the first GetTask the
    # last known state is `submitted`, after it `working`.
    assert state in ("submitted", "working")
    assert result.output == f"A2A task {task_id} timed out after 80ms (state={state})"
    [cancel] = peer.calls("CancelTask")
    assert cancel["body"]["params"] == {"id": task_id}
    assert UUID.sub("<uuid>", cancel["raw"].decode()) == (
        '{"jsonrpc":"2.0","id":"<uuid>","method":"CancelTask","params":{"id":"<uuid>"}}'
    )


async def test_agent_timeout_is_the_default_budget(peer):
    [tool, *_] = await agent_tools(agent(peer.base_url + CARD, timeout=60, poll_every=15))
    result = await call(tool, "forever")
    assert result.metadata is not None
    task_id, state = result.metadata["taskId"], result.metadata["state"]
    assert result.output == f"A2A task {task_id} timed out after 60ms (state={state})"


@pytest.mark.parametrize("cancel_supported", [True, False])
async def test_signal_cancels_locally_and_remotely(peer, tools, cancel_supported):
    peer.requests.clear()
    peer.cancel_supported = cancel_supported
    try:
        signal = asyncio.Event()
        running_call = asyncio.ensure_future(
            call(tools["Peer_Agent__do_it"], "forever", ToolContext(signal=signal))
        )
        await wait_until(lambda: peer.calls("GetTask"))
        signal.set()
        result = await asyncio.wait_for(running_call, 10)
    finally:
        peer.cancel_supported = True
    assert result.metadata is not None
    task_id = result.metadata["taskId"]
    assert (result.output, result.is_error) == (f"A2A task {task_id} canceled", True)
    assert result.metadata["state"] == "canceled"
    # A poll counts once sent; the one in flight when the signal fired may not have arrived.
    received = len(peer.calls("GetTask"))
    assert received <= result.metadata["polls"] <= received + 1
    assert [c["body"]["params"]["id"] for c in peer.calls("CancelTask")] == [task_id]


async def test_an_already_set_signal_sends_nothing(peer, tools):
    peer.requests.clear()
    signal = asyncio.Event()
    signal.set()
    result = await call(tools["Peer_Agent__do_it"], "echo x", ToolContext(signal=signal))
    assert (result.output, result.is_error) == ("A2A task  canceled", True)
    assert peer.requests == []


async def test_env_headers_expand_per_request_and_never_leak(monkeypatch):
    peer = Peer(token="t0ps3cret")
    async with running(peer.app) as url:
        declared = agent(
            url + CARD, headers={"Authorization": "Bearer ${PEER_TOKEN}"}, poll_every=10
        )
        monkeypatch.delenv("PEER_TOKEN", raising=False)
        with pytest.raises(EnvVarError, match="environment variable PEER_TOKEN is not set"):
            await agent_tools(declared)
        monkeypatch.setenv("PEER_TOKEN", "t0ps3cret")
        [tool, *_] = await agent_tools(declared)
        assert (await call(tool, "echo ok")).output == "echo: echo ok"
        assert peer.requests[-1]["headers"]["authorization"] == "Bearer t0ps3cret"
        monkeypatch.delenv("PEER_TOKEN")
        result = await call(tool, "echo again")
        assert (result.output, result.is_error) == (
            "environment variable PEER_TOKEN is not set",
            True,
        )
        monkeypatch.setenv("PEER_TOKEN", "wrong")
        result = await call(tool, "echo denied")
        assert (result.output, result.is_error) == ("HTTP 401: who are you?", True)
        assert "wrong" not in json.dumps(result.metadata)


async def test_missing_task_argument(tools):
    result = await tools["Peer_Agent__do_it"].execute({}, None)
    assert result.is_error and "task" in result.output


async def test_create_toolkit_isolates_a_failing_agent(peer, caplog):
    broken = peer.base_url + "/cards/broken.json"
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        toolkit = await create_toolkit(
            builtins=False, agents=[agent(broken), agent(peer.base_url + CARD, poll_every=10)]
        )
    assert [t.name for t in toolkit.tools()] == [
        "Peer_Agent__do_it",
        "Peer_Agent__plain",
        "Peer_Agent__named_only",
    ]
    assert f'[toolnexus] A2A agent "{broken}" failed: HTTP 503: card store offline' in [
        r.getMessage() for r in caplog.records
    ]
    result = await toolkit.execute("Peer_Agent__do_it", {"task": "echo via toolkit"})
    assert result.output == "echo: echo via toolkit"
    invalid = await toolkit.execute("Peer_Agent__do_it", {"task": 5})
    assert invalid.is_error and "Invalid arguments" in invalid.output


async def test_add_agent_raises_and_registers(peer):
    toolkit = Toolkit()
    with pytest.raises(Exception, match="HTTP 503: card store offline"):
        await toolkit.add_agent(peer.base_url + "/cards/broken.json")
    same = await toolkit.add_agent(peer.base_url + CARD, poll_every=10)
    assert same is toolkit
    assert toolkit.get("Peer_Agent__plain") is not None
    result = await toolkit.execute("Peer_Agent__plain", {"task": "immediate"})
    assert result.output == "echo: immediate"


async def test_add_agent_options_override_an_agent(peer):
    toolkit = Toolkit()
    await toolkit.add_agent(agent(peer.base_url + CARD), timeout=60, poll_every=15)
    result = await toolkit.execute("Peer_Agent__do_it", {"task": "forever"})
    assert result.metadata is not None
    task_id, state = result.metadata["taskId"], result.metadata["state"]
    assert result.output == f"A2A task {task_id} timed out after 60ms (state={state})"


async def test_config_agents_block(peer):
    toolkit = await create_toolkit(
        mcp_config={
            "mcpServers": {},
            "agents": {
                "peer": {"card": peer.base_url + CARD, "pollEvery": 10},
                "off": {"card": peer.base_url + "/cards/broken.json", "disabled": True},
            },
        },
        builtins=False,
    )
    try:
        assert [t.source for t in toolkit.tools()] == ["a2a"] * 3
        result = await toolkit.execute("Peer_Agent__named_only", {"task": "echo from config"})
        assert result.output == "echo: echo from config"
    finally:
        await toolkit.close()


# -- a full round trip through our own A2A server ------------------------------------------------


def ask_color(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return pending(kind="question", prompt="Which color?")


async def served_model(request: dict[str, Any]) -> dict[str, Any]:
    messages = request["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        return {"content": "unreachable"}
    if last["content"].startswith("ask"):
        return {"tool_calls": [{"name": "ask_color", "arguments": {}}]}
    return {"content": f"served: {last['content']}"}


async def test_round_trip_through_our_own_server():
    toolkit_a = await create_toolkit(
        skills=[SkillDef(name="summarize", content="...", description="Summarize text")],
        builtins=False,
        extra_tools=[Tool("ask_color", "Ask for a color", None, "native", ask_color)],
    )
    client = create_in_process_client(model="m", generate=served_model)
    async with await toolkit_a.serve("127.0.0.1:0", client=client, a2a={"name": "helper"}) as a:
        toolkit_b = Toolkit(builtins=False)
        await toolkit_b.add_agent(a.url + CARD, poll_every=10)
        assert [t.name for t in toolkit_b.tools()] == ["helper_summarize"]
        assert toolkit_b.get("helper_summarize").description == "Summarize text"  # type: ignore[union-attr]

        result = await toolkit_b.execute("helper_summarize", {"task": "a long text"})
        assert (result.output, result.is_error) == ("served: a long text", False)
        assert result.metadata is not None
        assert (result.metadata["agent"], result.metadata["state"]) == ("helper", "completed")
        # our server offers 1.0 with streaming: the whole call is one stream, no polling
        assert (result.metadata["polls"], result.metadata["protocol"]) == (0, "1.0")
        assert result.metadata["contextId"]

        # input-required comes back as a suspension carrying the served Request
        waiting = await toolkit_b.execute("helper_summarize", {"task": "ask me"})
        assert waiting.metadata is not None and waiting.is_error
        request = waiting.metadata["pending"]
        assert (request.kind, request.prompt, waiting.output) == (
            "question",
            "Which color?",
            "Which color?",
        )
        assert request.data["a2a"]["taskId"] == waiting.metadata["taskId"]
        answer = Answer(id=request.id, ok=True, data={"text": "red"})
        done = await toolkit_b.execute(
            "helper_summarize", {"task": "ask me"}, ToolContext(answer=answer)
        )
        assert (done.output, done.is_error) == ("served: red", False)
        assert done.metadata is not None and done.metadata["taskId"] == waiting.metadata["taskId"]
    await toolkit_a.close()


def test_the_repr_of_an_agent_and_a_server_config_shows_no_credentials() -> None:
    from toolnexus.a2a import agent
    from toolnexus.mcp_source._config import check_server

    secrets = ("sk-live-7781234", "key-99887766", "pw-hush-4455", "gh-token-123456")
    spec = agent(
        "https://me:pw-hush-4455@agents.example/card",
        headers={
            "Authorization": "Bearer sk-live-7781234",
            "X-Api-Key": "key-99887766",
            "X-Trace": "on",
        },
    )
    shown = repr(spec)
    assert not any(secret in shown for secret in secrets)
    assert "'X-Trace': 'on'" in shown and "'Authorization': '[redacted]'" in shown
    remote = check_server(
        "remote",
        {
            "url": "https://me:pw-hush-4455@mcp.example/mcp",
            "headers": {"X-Auth-Token": "sk-live-7781234"},
        },
    )
    local = check_server("local", {"command": "server", "env": {"GITHUB_TOKEN": "gh-token-123456"}})
    for server in (remote, local):
        assert not any(secret in repr(server) for secret in secrets)
    assert "'GITHUB_TOKEN': '[redacted]'" in repr(local)
