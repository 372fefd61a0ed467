"""End to end over the local fake LLM, both wire styles: a lead delegates to two children in
parallel under one token budget, and one child suspends for input that the host answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from support.client_helpers import base_url
from support.fake_llm import FakeLLM, RecordedRequest, Reply, call, running, text, tools
from toolnexus import Tool, ToolContext, ToolResult, pending
from toolnexus.agents import AgentRuntime, Budget, Handle, agent, compactor
from toolnexus.client import InMemoryConversationStore, create_client
from toolnexus.types import Answer, Request


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLM]:
    with running() as llm:
        yield llm


def tool_texts(request: RecordedRequest) -> list[str]:
    """The tool results a request carries, in either wire style."""
    out: list[str] = []
    for message in request.body["messages"]:
        if message["role"] == "tool":
            out.append(message["content"])
        elif message["role"] == "user" and isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    out.append(content if isinstance(content, str) else content[0]["text"])
    return out


def system_of(request: RecordedRequest) -> str:
    body = request.body
    if isinstance(body.get("system"), str):
        return body["system"]
    return next((m["content"] for m in body["messages"] if m["role"] == "system"), "")


def script(request: RecordedRequest) -> Reply:
    model = request.body["model"]
    results = tool_texts(request)
    if model == "lead-model":
        if not results:
            return tools(
                call("task", {"agent": "researcher", "prompt": "find the release date"}),
                call("task", {"agent": "approver", "prompt": "get the launch code"}),
            )
        return text("report: " + " | ".join(results))
    if model == "approver-model":
        if not results:
            return tools(call("ask_human", {"question": "what is the launch code?"}))
        return text(f"code is {results[0]}")
    assert "You research." in system_of(request)
    return text("released on 2026-07-01")


async def ask_human(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    if ctx.answer is not None and ctx.answer.ok and ctx.answer.data:
        return ToolResult(str(ctx.answer.data["output"]))
    return pending(kind="input", prompt=str(args["question"]))


@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_parallel_delegation_with_a_shared_budget_and_a_human_answer(
    server: FakeLLM, style: str
) -> None:
    server.reset()
    for _ in range(5):
        server.push(script)
    human = Tool(
        "ask_human",
        "Ask the human operator a question.",
        {
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
        },
        "native",
        ask_human,
    )
    researcher = agent("researcher", does="finds facts", soul="You research.")
    approver = agent(
        "approver", does="asks the human", uses={"tools": [human]}, model="approver-model"
    )
    lead = agent(
        "lead",
        does="coordinates",
        team=[researcher, approver],
        model="lead-model",
        budget=Budget(max_tokens=100),
    )
    asked: list[Request] = []

    async def host(request: Request) -> Answer:
        asked.append(request)
        return Answer(id=request.id, ok=True, data={"output": "ALPHA-7"})

    client = create_client(
        base_url=base_url(server, style),
        style=style,
        model="research-model",
        api_key="sk-test",
        retry_base_ms=1,
    )
    result = await lead.run("prepare the launch", client=client, wait_for=host)
    assert result.status == "done", result
    assert result.text == "report: released on 2026-07-01 | code is ALPHA-7"
    assert [r.prompt for r in asked] == ["what is the launch code?"]
    # Five LLM calls of 15 tokens (the fake's usage) all count against the lead's tree.
    assert (result.total_tokens, result.own_tokens, result.turns) == (75, 30, 2)
    rt = result.runtime
    assert rt is not None and rt.root.state == "closed"
    lead_handle: Handle = rt.root.children[0]
    assert lead_handle.pool.tokens == 25
    assert [c.id for c in lead_handle.children] == [
        "root/lead.1/researcher.1",
        "root/lead.1/approver.2",
    ]
    assert all(c.pool.tokens <= 100 for c in lead_handle.children)
    trace = rt.trace
    starts = [
        i for i, line in enumerate(trace) if "/" in line.split(":")[0] and "idle→running" in line
    ]
    first_end = min(
        i
        for i, line in enumerate(trace)
        if line.startswith("root/lead.1/") and "running→idle" in line
    )
    assert len(starts) >= 2 and starts[1] < first_end  # both children ran at once
    assert any('escalate → root answers ("nearest interpreter")' in line for line in trace)
    lead_requests = [r for r in server.requests if r.body["model"] == "lead-model"]
    assert len(lead_requests) == 2
    assert _declared(lead_requests[0], style) == ["task"]
    await client.aclose()


def _declared(request: RecordedRequest, style: str) -> list[str]:
    if style == "openai":
        return [t["function"]["name"] for t in request.body.get("tools", ())]
    return [t["name"] for t in request.body.get("tools", ())]


async def test_an_anthropic_run_with_a_compactor_sends_no_system_role(server: FakeLLM) -> None:
    server.reset()
    server.push(text("short answer"))
    store = InMemoryConversationStore()
    seeded: list[dict[str, Any]] = []
    for i in range(20):
        seeded.append({"role": "user", "content": f"question {i} " + "pad " * 40})
        seeded.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]})
    await store.save("root/talker.1", seeded)
    hook = compactor(max_tokens=300, keep_tail=100, summarize=lambda older: "EARLIER-TALK")
    talker = agent("talker", does="talks", soul="You are terse.", hooks={"before_llm": hook})
    client = create_client(
        base_url=base_url(server, "anthropic"), style="anthropic", model="m", api_key="sk-test"
    )
    rt = AgentRuntime(registry=talker.registry(), client=client, store=store)
    h = rt.spawn(rt.root, "talker")
    assert isinstance(h, Handle)
    result = await rt.run_turn(h, "and now?")
    assert result.text == "short answer"
    body = server.requests[0].body
    assert all(m["role"] != "system" for m in body["messages"])
    assert body["system"].startswith("You are terse.\n\n[Summary of earlier conversation]\n")
    assert body["messages"][-1] == {"role": "user", "content": "and now?"}
    await rt.close(rt.root)
    await client.aclose()
