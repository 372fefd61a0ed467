"""Definitions: `agent`/`Agent`, `registry()`, `Agent.run`, `as_tool`, model sources, cancel."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agents_driver import ScriptedModel, load, model_of, registry_of, tools_of

from toolnexus import Toolkit
from toolnexus.agents import AgentRuntime, Budget, Handle, agent
from toolnexus.client import create_in_process_client
from toolnexus.types import Answer, Request

WORLD = load("world.json")
TOOLS = tools_of(WORLD)


def explore_ux() -> Any:
    return agent(
        "explore",
        does="read-only research",
        uses={"tools": [TOOLS["lookup"]]},
        model="m-explore-ux",
    )


def coder_of(tmp_path: Path) -> Any:
    soul = tmp_path / "coder.md"
    soul.write_text("You are the CODER. Fix what explore finds.", encoding="utf-8")
    return agent("coder", does="fixes bugs", soul_file=soul, team=[explore_ux()], model="m-coder")


async def test_level_one_delegation_reads_the_soul_file(tmp_path: Path) -> None:
    result = await coder_of(tmp_path).run("fix it", in_process=model_of(WORLD))
    assert result.status == "done"
    assert "bug at line 42" in result.text and "[soul:loaded]" in result.text
    assert result.runtime is not None and result.runtime.root.state == "closed"


def test_registry_is_the_team_closure_and_checks_names(tmp_path: Path) -> None:
    coder = coder_of(tmp_path)
    registry = coder.registry()
    assert list(registry) == ["coder", "explore"]
    assert registry["coder"].task_targets == ["explore"]
    assert registry["coder"].system_prompt.startswith("You are the CODER")
    assert registry["explore"].model == "m-explore-ux" and registry["explore"].task_targets == []
    twin = agent("explore", does="another one")
    with pytest.raises(ValueError, match="two different agents"):
        agent("lead", does="x", team=[explore_ux(), twin]).registry()
    with pytest.raises(ValueError):
        agent("x", does="y", soul="a", soul_file="b")
    with pytest.raises(ValueError):
        agent("bad name!", does="y")
    with pytest.raises(ValueError):
        agent("x", does="")
    with pytest.raises(ValueError):
        agent("x", does="y", uses={"skills": []})
    defs = registry_of(WORLD)
    defs["coordinator"].task_targets = ["ghost"]
    with pytest.raises(ValueError, match="ghost"):
        AgentRuntime(registry=defs, in_process=model_of(WORLD))
    with pytest.raises(FileNotFoundError):
        agent("x", does="y", soul_file=tmp_path / "missing.md").registry()
    selfish = agent("selfish", does="recurses")
    selfish.team.append(selfish)
    assert list(selfish.registry()) == ["selfish"]


async def test_as_tool_returns_the_final_text_to_a_classic_client() -> None:
    model = model_of(WORLD)

    def outer(request: dict[str, Any]) -> dict[str, Any]:
        tools = [m for m in request["messages"] if m["role"] == "tool"]
        if not tools:
            args = {"prompt": "scan the repo"}
            return {"tool_calls": [{"name": "explore", "arguments": args}]}
        return {"content": f"old-api summary: {tools[-1]['content']}"}

    model.overrides["m-outer"] = outer
    tool = explore_ux().as_tool(in_process=model)
    assert tool.name == "explore" and tool.source == "native"
    assert tool.input_schema["required"] == ["prompt"]
    client = create_in_process_client(model="m-outer", generate=model)
    result = await client.run("summarise", Toolkit(extra_tools=[tool]))
    assert "bug at line 42" in result.text
    assert result.tool_calls[0]["metadata"]["agent"] == "explore"
    assert result.tool_calls[0]["metadata"]["status"] == "done"


async def test_a_suspending_agent_tool_is_answered_outside_and_resumed() -> None:
    model = model_of(WORLD)
    asked: list[Request] = []

    def outer(request: dict[str, Any]) -> dict[str, Any]:
        tools = [m for m in request["messages"] if m["role"] == "tool"]
        if not tools:
            return {"tool_calls": [{"name": "asker", "arguments": {"prompt": "get it"}}]}
        return {"content": f"outer: {tools[-1]['content']}"}

    def approve(request: Request) -> Answer:
        asked.append(request)
        return Answer(id=request.id, ok=True)

    model.overrides["m-outer"] = outer
    asker = agent(
        "asker", does="asks", uses={"tools": [TOOLS["check_secret"]]}, model="m-asker"
    ).as_tool(in_process=model)
    client = create_in_process_client(model="m-outer", generate=model, wait_for=approve)
    result = await client.run("go", Toolkit(extra_tools=[asker]))
    assert result.text == "outer: asker-done: secret-token"
    assert len(asked) == 1 and asked[0].data == {"path": ["root", "asker.1"]}
    asker_calls = [r for r in model.requests if r["model"] == "m-asker"]
    assert len(asker_calls) == 3  # one before parking, two in the resumed replay


def test_model_sources_are_exactly_one() -> None:
    defs = registry_of(WORLD)
    client = create_in_process_client(model="m", generate=lambda r: {"content": "x"})
    with pytest.raises(ValueError, match="mutually exclusive"):
        AgentRuntime(registry=defs, client=client, in_process=lambda r: {"content": "x"})
    with pytest.raises(ValueError) as missing:
        AgentRuntime(registry=defs)
    assert str(missing.value) == (
        "toolnexus.agents: AgentRuntime needs a model: pass client=, llm=, in_process= or "
        "transport="
    )
    with pytest.raises(TypeError):
        asyncio.run(agent("x", does="y").run("hi", in_process=lambda r: {}, bogus=1))


class PublishedTransport:
    """A published-style synchronous transport answering OpenAI chat completions."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> Any:
        self.posts.append(payload)
        has_tool = any(m["role"] == "tool" for m in payload["messages"])
        message: dict[str, Any]
        if has_tool:
            message = {"role": "assistant", "content": "looked it up"}
        else:
            call = {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps({"q": "z"})},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }


async def test_a_published_transport_drives_a_two_turn_run() -> None:
    transport = PublishedTransport()
    looker = agent("looker", does="looks", uses={"tools": [TOOLS["lookup"]]}, model="gpt-x")
    result = await looker.run("look", transport=transport)
    assert (result.status, result.text, result.turns) == ("done", "looked it up", 2)
    assert [p["model"] for p in transport.posts] == ["gpt-x", "gpt-x"]


async def test_llm_says_the_endpoint_and_model_and_transport_does_the_io() -> None:
    transport = PublishedTransport()
    urls: list[str] = []
    post = transport.post

    def recording(url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float):
        urls.append(url)
        return post(url, headers, payload, timeout)

    transport.post = recording  # type: ignore[method-assign]
    llm = {"base_url": "http://gateway.invalid/v1", "style": "openai", "model": "gpt-y"}
    looker = agent("looker", does="looks", uses={"tools": [TOOLS["lookup"]]})
    result = await looker.run("look", llm={**llm, "api_key": "k"}, transport=transport)
    assert (result.status, result.text) == ("done", "looked it up")
    assert [p["model"] for p in transport.posts] == ["gpt-y", "gpt-y"]
    assert urls == ["http://gateway.invalid/v1/chat/completions"] * 2


async def test_agent_turns_show_in_the_clients_metrics_and_a_root_interpreter_answers() -> None:
    model = model_of(WORLD)
    approvals: list[str] = []

    def approve(request: Request) -> Answer:
        approvals.append(request.id)
        return Answer(id=request.id, ok=True)

    client = create_in_process_client(model="base", generate=model, wait_for=approve)
    rt = AgentRuntime(registry=registry_of(WORLD), client=client)
    asker = rt.spawn(rt.root, "asker")
    assert isinstance(asker, Handle)
    result = await rt.run_turn(asker, "go")
    assert result.text == "asker-done: secret-token" and approvals
    assert f'{asker.id}: escalate → root answers ("nearest interpreter")' in rt.trace
    assert 'toolnexus_llm_requests_total{model="m-asker",status="ok"} 2' in client.metrics()
    await rt.close(rt.root)
    await client.run("still open")  # the host's client is never closed by the runtime


async def test_an_llm_options_runtime_closes_its_client_with_the_root() -> None:
    from support.fake_llm import running, text

    with running() as server:
        server.reset()
        server.push(text("hello"), text("again"))
        options = {
            "base_url": server.url + "/v1",
            "style": "openai",
            "model": "m",
            "api_key": "k",
        }
        rt = AgentRuntime(registry=registry_of(WORLD), llm=options)
        peer = rt.spawn(rt.root, "peer")
        assert isinstance(peer, Handle)
        assert (await rt.run_turn(peer, "hi")).text == "hello"
        assert server.connections == 1
        await rt.close(rt.root)
        # Its pooled connection is gone: the next request (were it made) opens a new one.
        await rt.client.run("again")
        assert server.connections == 2
        await rt.client.aclose()


async def test_cancelling_agent_run_closes_every_handle() -> None:
    model = model_of(WORLD)
    reasons: list[tuple[str, str]] = []

    def on_close(h: Handle, reason: str) -> None:
        reasons.append((h.id, reason))

    slow = agent("slow", does="slow", model="m-slow", on_close=on_close)
    lead = agent("lead", does="leads", team=[slow], model="m-lead", on_close=on_close)

    def lead_model(request: dict[str, Any]) -> dict[str, Any]:
        args = {"agent": "slow", "prompt": "wait"}
        return {"tool_calls": [{"name": "task", "arguments": args}]}

    model.overrides["m-lead"] = lead_model
    task = asyncio.ensure_future(lead.run("go", in_process=model))
    await asyncio.wait_for(model.started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(reasons) == [
        ("root/lead.1", "interrupted"),
        ("root/lead.1/slow.1", "interrupted"),
    ]


async def test_budgets_on_agent_definitions_apply(tmp_path: Path) -> None:
    looper = agent(
        "looper",
        does="loops",
        uses={"tools": [TOOLS["lookup"]]},
        model="m-loop",
        budget=Budget(max_turns=2),
    )
    result = await looper.run("go", in_process=model_of(WORLD))
    assert (result.status, result.limit, result.turns) == ("incomplete", "maxTurns", 2)


def test_scripted_model_is_keyed_by_model() -> None:
    assert isinstance(model_of(WORLD), ScriptedModel)
