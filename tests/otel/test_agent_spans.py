"""Agent turns as `invoke_agent {name}` spans parented to the delegating tool call, the agent's
identity on its spans, and the `execute_tool` span of a tool the host executes directly."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from toolnexus import Toolkit
from toolnexus.agents import agent
from toolnexus.client import create_in_process_client
from toolnexus.types import Tool

Recorded = Any  # conftest's `Recorded`


def lookup_tool() -> Tool:
    def lookup(args: dict[str, Any], ctx: Any) -> str:
        return f"data({args.get('q', '')})"

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    return Tool("lookup", "Look something up.", schema, "native", lookup)


def broken_tool() -> Tool:
    def broken(args: dict[str, Any], ctx: Any) -> str:
        raise RuntimeError("out of order")

    return Tool("broken", "Always fails.", {"type": "object", "properties": {}}, "native", broken)


USAGE = {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}


async def scripted(request: dict[str, Any]) -> dict[str, Any]:
    """The coordinator delegates twice to explore, which looks one thing up each time."""
    answered = [m for m in request["messages"] if m["role"] == "tool"]
    if request["model"] == "m-coordinator":
        if not answered:
            calls = [
                {"id": f"t{i}", "name": "task", "arguments": {"agent": "explore", "prompt": p}}
                for i, p in enumerate(("find A", "find B"))
            ]
            return {"tool_calls": calls, "usage": USAGE}
        return {"content": "synthesis: " + " + ".join(m["content"] for m in answered)}
    if not answered:
        call = {"id": "l1", "name": "lookup", "arguments": {"q": "x"}}
        return {"tool_calls": [call], "usage": USAGE}
    return {"content": f"found:{answered[0]['content']}", "usage": USAGE}


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def own_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


async def test_each_agent_turn_is_an_invoke_agent_span_under_its_delegating_call(
    otel: Recorded,
) -> None:
    explore = agent(
        "explore", does="read-only research", uses={"tools": [lookup_tool()]}, model="m-explore"
    )
    coordinator = agent(
        "coordinator", does="splits and delegates", team=[explore], model="m-coordinator"
    )
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("host") as host:
        result = await coordinator.run("answer using two lookups", in_process=scripted)
    assert result.status == "done", result.text
    assert result.text.count("found:data(x)") == 2
    spans = otel.spans.get_finished_spans()
    assert {s.context.trace_id for s in spans} == {host.get_span_context().trace_id}
    (top,) = [s for s in spans if s.name == "invoke_agent coordinator"]
    assert parent_id(top) == host.get_span_context().span_id
    assert attrs(top)["gen_ai.agent.name"] == "coordinator"
    assert attrs(top)["gen_ai.agent.id"] == "root/coordinator.1"
    assert attrs(top)["gen_ai.operation.name"] == "invoke_agent"
    tasks = [s for s in spans if s.name == "execute_tool task"]
    assert len(tasks) == 2
    assert {parent_id(t) for t in tasks} == {own_id(top)}
    assert {attrs(t)["gen_ai.tool.call.id"] for t in tasks} == {"t0", "t1"}
    children = [s for s in spans if s.name == "invoke_agent explore"]
    assert len(children) == 2
    # each child run hangs under its own delegating call, not under a sibling's
    assert sorted(parent_id(c) or 0 for c in children) == sorted(own_id(t) for t in tasks)
    assert {attrs(c)["gen_ai.agent.id"] for c in children} == {
        "root/coordinator.1/explore.1",
        "root/coordinator.1/explore.2",
    }
    for child in children:
        inner = [s for s in spans if parent_id(s) == own_id(child)]
        assert sorted(s.name for s in inner) == [
            "chat m-explore",
            "chat m-explore",
            "execute_tool lookup",
        ]
        for span in inner:
            assert attrs(span)["gen_ai.agent.name"] == "explore"
            assert attrs(span)["gen_ai.agent.id"] == attrs(child)["gen_ai.agent.id"]


async def test_an_agent_tool_runs_under_the_outer_runs_tool_span(otel: Recorded) -> None:
    explore = agent(
        "explore", does="read-only research", uses={"tools": [lookup_tool()]}, model="m-explore"
    )

    async def outer(request: dict[str, Any]) -> dict[str, Any]:
        if not any(m["role"] == "tool" for m in request["messages"]):
            call = {"id": "e1", "name": "explore", "arguments": {"prompt": "scan"}}
            return {"tool_calls": [call]}
        return {"content": "summary"}

    client = create_in_process_client(model="outer", generate=outer)
    tool = explore.as_tool(in_process=scripted)
    result = await client.run("go", [tool])
    assert result.text == "summary"
    spans = otel.spans.get_finished_spans()
    (run,) = [s for s in spans if s.name == "invoke_agent"]
    (call,) = [s for s in spans if s.name == "execute_tool explore"]
    (inner,) = [s for s in spans if s.name == "invoke_agent explore"]
    assert "gen_ai.agent.name" not in attrs(run)  # a plain client run is no named agent
    assert parent_id(call) == own_id(run)
    assert parent_id(inner) == own_id(call)
    assert attrs(inner)["gen_ai.agent.id"] == "root/explore.1"


async def test_a_direct_execute_has_its_own_tool_span(otel: Recorded) -> None:
    kit = Toolkit(extra_tools=[lookup_tool(), broken_tool()])
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("host") as host:
        ok = await kit.execute("lookup", {"q": "y"})
        failed = await kit.execute("broken", {})
        unknown = await kit.execute("nope", {})
    assert ok.output == "data(y)"
    assert failed.is_error and unknown.is_error
    spans = {s.name: s for s in otel.spans.get_finished_spans() if s.name != "host"}
    assert set(spans) == {"execute_tool lookup", "execute_tool broken", "execute_tool nope"}
    for span in spans.values():
        assert parent_id(span) == host.get_span_context().span_id
        assert attrs(span)["gen_ai.operation.name"] == "execute_tool"
        assert "gen_ai.tool.call.id" not in attrs(span)  # no model call behind it
    assert attrs(spans["execute_tool lookup"])["toolnexus.tool.source"] == "native"
    assert spans["execute_tool lookup"].status.status_code is StatusCode.UNSET
    for name in ("execute_tool broken", "execute_tool nope"):
        assert spans[name].status.status_code is StatusCode.ERROR
        assert attrs(spans[name])["error.type"] == "tool_error"
    assert attrs(spans["execute_tool nope"])["toolnexus.tool.source"] == "custom"
