"""Traces of real runs on the GenAI semantic conventions, and the W3C trace context carried on
every hop: the model endpoint, HTTP tools, MCP servers over stdio and HTTP, and the served
gateway, all on loopback."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from support.client_helpers import add_tool, base_url
from support.fake_llm import FakeLLM, call, text, tools
from support.local_http import LocalServer, ServerState, ServerThread, build_app
from support.mcp_servers import ThreadedHttpServer
from support.traced_mcp_server import http_app
from toolnexus import Toolkit, create_toolkit
from toolnexus.client import create_client
from toolnexus.http import http_tool
from toolnexus.types import Tool, ToolResult

TESTS = Path(__file__).parents[1]
TRACE_SERVER = str(TESTS / "support" / "traced_mcp_server.py")
Recorded = Any  # conftest's `Recorded`: `.spans` (span exporter), `.metrics` (metric reader)


def trace_id(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.trace_id, "032x")


def parent_of(traceparent: str) -> tuple[str, str]:
    """(trace id, parent span id) of a W3C `traceparent`."""
    version, trace, parent, _flags = traceparent.split("-")
    assert version == "00"
    return trace, parent


def span_id(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.span_id, "016x")


def named(otel: Recorded, prefix: str) -> list[ReadableSpan]:
    return [s for s in otel.spans.get_finished_spans() if s.name.startswith(prefix)]


def fail_tool() -> Tool:
    async def fail(args: dict[str, Any], ctx: Any) -> str:
        raise RuntimeError("the disk is on fire")

    return Tool(
        name="fail",
        description="Always fails.",
        input_schema={"type": "object", "properties": {}},
        execute=fail,
    )


@pytest.fixture(scope="module")
def mcp_http() -> Iterator[ThreadedHttpServer]:
    server = ThreadedHttpServer(http_app())
    yield server
    server.stop()


@pytest.fixture(scope="module")
def web() -> Iterator[LocalServer]:
    state = ServerState()
    thread = ServerThread(build_app(state))
    thread.start()
    yield LocalServer(thread.url, state)
    thread.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def toolkit(
    sdk: Recorded, mcp_http: ThreadedHttpServer, web: LocalServer
) -> AsyncIterator[Toolkit]:
    kit = await create_toolkit(
        mcp_config={
            "local": {"command": sys.executable, "args": [TRACE_SERVER]},
            "remote": {"url": mcp_http.url()},
        },
        extra_tools=[
            add_tool(),
            fail_tool(),
            http_tool(name="echo", description="Echo.", method="POST", url=web.url + "/echo/x"),
        ],
        builtins=False,
    )
    yield kit
    await kit.close()


async def run(llm: FakeLLM, kit: Toolkit, *replies: Any, style: str = "openai") -> Any:
    llm.push(*replies)
    client = create_client(
        base_url=base_url(llm, style), style=style, model="test-model", api_key="sk-test"
    )
    try:
        return await client.run("go", kit)
    finally:
        await client.aclose()


async def test_a_run_is_one_span_tree_on_the_genai_conventions(
    otel: Recorded, llm: FakeLLM, toolkit: Toolkit
) -> None:
    result = await run(
        llm,
        toolkit,
        tools(call("add", {"a": 1, "b": 2}, id="c-add"), call("local_traceparent", id="c-mcp")),
        text("done", usage=(7, 3)),
    )
    assert result.text == "done"
    (agent,) = named(otel, "invoke_agent")
    chats = named(otel, "chat ")
    executions = {s.name: s for s in named(otel, "execute_tool ")}
    assert [s.name for s in chats] == ["chat test-model", "chat test-model"]
    assert set(executions) == {"execute_tool add", "execute_tool local_traceparent"}
    assert agent.parent is None
    assert agent.attributes is not None
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.request.model"] == "test-model"
    for span in [*chats, *executions.values()]:
        assert span.parent is not None and span.parent.span_id == agent.context.span_id  # type: ignore[union-attr]
        assert trace_id(span) == trace_id(agent)
    last = chats[-1]
    assert last.kind is SpanKind.CLIENT
    attributes = dict(last.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "test-model"
    assert "gen_ai.response.model" in attributes
    assert attributes["gen_ai.usage.input_tokens"] == 7
    assert attributes["gen_ai.usage.output_tokens"] == 3
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == int(llm.url.rsplit(":", 1)[1])
    assert "gen_ai.input.messages" not in attributes  # contents only on opt-in
    native = dict(executions["execute_tool add"].attributes or {})
    assert native["gen_ai.operation.name"] == "execute_tool"
    assert native["gen_ai.tool.name"] == "add"
    assert native["gen_ai.tool.call.id"] == "c-add"
    assert native["gen_ai.tool.type"] == "function"
    assert native["toolnexus.tool.source"] == "native"
    mcp = dict(executions["execute_tool local_traceparent"].attributes or {})
    assert (mcp["gen_ai.tool.call.id"], mcp["toolnexus.tool.source"]) == ("c-mcp", "mcp")
    # the MCP request is a child of the tool's span, and the stdio server saw it in `_meta`
    (mcp_client,) = named(otel, "tools/call traceparent")
    assert mcp_client.kind is SpanKind.CLIENT
    assert mcp_client.parent is not None
    assert mcp_client.parent.span_id == executions["execute_tool local_traceparent"].context.span_id  # type: ignore[union-attr]
    client_attributes = dict(mcp_client.attributes or {})
    assert client_attributes["mcp.method.name"] == "tools/call"
    assert client_attributes["network.transport"] == "pipe"
    assert "mcp.protocol.version" in client_attributes
    (sent,) = named(otel, "MCP send tools/call traceparent")
    assert sent.parent is not None and sent.parent.span_id == mcp_client.context.span_id  # type: ignore[union-attr]
    seen = result.tool_calls[1]["output"]
    assert parent_of(seen) == (trace_id(agent), span_id(sent))
    # each model request carried the trace context of its own `chat` span
    for request, chat in zip(llm.requests, chats, strict=True):
        assert parent_of(request.headers["traceparent"]) == (trace_id(agent), span_id(chat))


async def test_contents_are_not_recorded_without_opt_in(
    otel: Recorded, llm: FakeLLM, toolkit: Toolkit
) -> None:
    await run(llm, toolkit, text("secret answer"), style="anthropic")
    (chat,) = named(otel, "chat ")
    assert dict(chat.attributes or {})["gen_ai.provider.name"] == "anthropic"
    assert "secret answer" not in json.dumps(
        {k: str(v) for k, v in (chat.attributes or {}).items()}
    )


async def test_http_tools_and_http_mcp_servers_carry_the_trace(
    otel: Recorded, toolkit: Toolkit, web: LocalServer
) -> None:
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("host") as host:
        echoed = await toolkit.execute("echo", {"q": 1})
        remote = await toolkit.execute("remote_traceparent", {})
    ours = format(host.get_span_context().trace_id, "032x")
    headers = {k.lower(): v for k, v in json.loads(echoed.output)["headers"].items()}
    assert parent_of(headers["traceparent"])[0] == ours
    assert parent_of(remote.output)[0] == ours
    (sent,) = named(otel, "MCP send tools/call traceparent")
    assert parent_of(remote.output)[1] == span_id(sent)


async def test_a_tool_error_marks_its_span(otel: Recorded, llm: FakeLLM, toolkit: Toolkit) -> None:
    await run(llm, toolkit, tools(call("fail", {})), text("sorry"))
    (span,) = named(otel, "execute_tool fail")
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "tool_error"
    (agent,) = named(otel, "invoke_agent")
    assert agent.status.status_code is not StatusCode.ERROR


async def test_a_failed_model_call_marks_the_chat_and_run_spans(
    otel: Recorded, llm: FakeLLM, toolkit: Toolkit
) -> None:
    from support.fake_llm import error

    with pytest.raises(Exception):  # noqa: B017 - whichever ProviderError the host sees
        await run(llm, toolkit, error(400, "bad request"))
    (chat,) = named(otel, "chat ")
    (agent,) = named(otel, "invoke_agent")
    for span in (chat, agent):
        assert span.status.status_code is StatusCode.ERROR
        assert dict(span.attributes or {})["error.type"] == "ProviderError"


async def test_the_served_gateway_continues_the_callers_trace(
    otel: Recorded, toolkit: Toolkit
) -> None:
    handle = await Toolkit(extra_tools=[add_tool()]).serve("127.0.0.1:0", mcp={"name": "gw"})
    caller = await create_toolkit(mcp_config={"gw": {"url": handle.url + "/mcp"}}, builtins=False)
    try:
        with trace.get_tracer("test").start_as_current_span("host") as host:
            result = await caller.execute("gw_add", {"a": 2, "b": 3})
        assert result.output == "5"
    finally:
        await caller.close()
        await handle.stop()
    ours = host.get_span_context().trace_id
    spans = {span_id(s): s for s in otel.spans.get_finished_spans()}
    served = [
        s
        for s in spans.values()
        if s.kind is SpanKind.SERVER
        and dict(s.attributes or {}).get("mcp.method.name") == "tools/call"
    ]
    assert served, "the gateway made no MCP server span"
    (server,) = served
    assert server.name == "tools/call add"
    assert server.context is not None and server.context.trace_id == ours
    # walk up: the caller's own span is an ancestor of the gateway's span
    ancestors, node = [], server
    while node.parent is not None and format(node.parent.span_id, "016x") in spans:
        node = spans[format(node.parent.span_id, "016x")]
        ancestors.append(node.name)
    assert "MCP send tools/call add" in ancestors
    assert span_id(node) == format(host.get_span_context().span_id, "016x")


async def test_logs_carry_the_trace_and_span_ids(
    otel: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    from toolnexus._log import warn

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        with trace.get_tracer("test").start_as_current_span("host") as host:
            warn("something to say")
        warn("outside any span")
    inside, outside = caplog.records[-2:]
    context = host.get_span_context()
    assert inside.otelTraceID == format(context.trace_id, "032x")  # type: ignore[attr-defined]
    assert inside.otelSpanID == format(context.span_id, "016x")  # type: ignore[attr-defined]
    assert not hasattr(outside, "otelTraceID")


def test_without_a_provider_nothing_is_recorded_or_sent(llm: FakeLLM) -> None:
    llm.push(tools(call("add", {"a": 1, "b": 2})), text("3"))
    script = f"""
import asyncio, sys
sys.path.insert(0, {str(TESTS)!r})
import opentelemetry.trace  # installed and imported, but no provider configured
from support.client_helpers import add_tool
from toolnexus import Toolkit, _otel
from toolnexus.client import create_client

async def main():
    client = create_client(base_url={llm.url + "/v1"!r}, style="openai", model="m", api_key="k")
    result = await client.run("go", Toolkit(extra_tools=[add_tool()]))
    await client.aclose()
    print(result.text, _otel.telemetry())

asyncio.run(main())
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "None"]
    assert len(llm.requests) == 2
    assert all("traceparent" not in r.headers for r in llm.requests)


def test_importing_toolnexus_loads_no_opentelemetry() -> None:
    script = "import sys, toolnexus; print(any(m.startswith('opentelemetry') for m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"


async def served_model(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": "served"}


async def test_a_served_a2a_task_runs_in_the_callers_trace(otel: Recorded) -> None:
    from toolnexus.client import create_in_process_client
    from toolnexus.skill import SkillDef

    served = await create_toolkit(
        skills=[SkillDef(name="summarize", content="...", description="Sum up")], builtins=False
    )
    client = create_in_process_client(model="m", generate=served_model)
    async with await served.serve("127.0.0.1:0", client=client, a2a={"name": "helper"}) as a:
        caller = Toolkit()
        await caller.add_agent(a.url + "/.well-known/agent-card.json", poll_every=10)
        with trace.get_tracer("test").start_as_current_span("host") as host:
            result = await caller.execute("helper_summarize", {"task": "a long text"})
        assert (result.output, result.is_error) == ("served", False)
        await caller.close()
    ours = host.get_span_context().trace_id
    spans = {span_id(s): s for s in otel.spans.get_finished_spans()}
    (agent,) = [s for s in spans.values() if s.name == "invoke_agent"]
    assert agent.context is not None and agent.context.trace_id == ours
    node, chain = agent, []
    while node.parent is not None and format(node.parent.span_id, "016x") in spans:
        node = spans[format(node.parent.span_id, "016x")]
        chain.append((node.name, node.kind))
    assert ("POST /", SpanKind.SERVER) in chain
    assert node is spans[format(host.get_span_context().span_id, "016x")]


async def test_metrics_beside_the_spans(otel: Recorded, llm: FakeLLM, toolkit: Toolkit) -> None:
    await run(
        llm,
        toolkit,
        tools(call("add", {"a": 1, "b": 2}), call("local_traceparent")),
        text("3", usage=(11, 4)),
    )
    points = otel_points(otel)
    assert {
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "toolnexus.tool.calls",
        "toolnexus.tool.duration",
    } <= set(points)
    tokens = {
        p.attributes["gen_ai.token.type"]: p
        for p in points["gen_ai.client.token.usage"]
        if p.attributes.get("gen_ai.request.model") == "test-model"
    }
    assert set(tokens) == {"input", "output"}
    assert any(
        p.attributes["gen_ai.tool.name"] == "add" and p.value >= 1
        for p in points["toolnexus.tool.calls"]
    )
    assert any(
        p.attributes.get("gen_ai.tool.name") == "traceparent"  # the server's own name for it
        and p.attributes["mcp.method.name"] == "tools/call"
        for p in points["mcp.client.operation.duration"]
    )


async def test_invented_tool_names_are_one_metric_series(
    otel: Recorded, llm: FakeLLM, toolkit: Toolkit
) -> None:
    await run(llm, toolkit, tools(*(call(f"invented_{n}") for n in range(2000))), text("ok"))
    names = {
        p.attributes["gen_ai.tool.name"]
        for metric in ("toolnexus.tool.calls", "toolnexus.tool.duration")
        for p in otel_points(otel)[metric]
    }
    assert not any(name.startswith("invented_") for name in names)
    assert "(unknown)" in names
    spans = named(otel, "execute_tool invented_")  # each span still names what was asked
    assert len(spans) == 2000
    assert spans[0].attributes is not None
    assert str(spans[0].attributes["gen_ai.tool.name"]).startswith("invented_")


async def test_a_streamed_run_has_the_same_tree(
    otel: Recorded, llm: FakeLLM, toolkit: Toolkit
) -> None:
    llm.push(tools(call("add", {"a": 1, "b": 2})), text("3", usage=(5, 1)))
    client = create_client(
        base_url=base_url(llm, "openai"), style="openai", model="test-model", api_key="sk-test"
    )
    try:
        events = [event async for event in client.stream("go", toolkit)]
    finally:
        await client.aclose()
    assert events[-1]["type"] == "done"
    (agent,) = named(otel, "invoke_agent")
    chats = named(otel, "chat ")
    assert len(chats) == 2
    for span in [*chats, *named(otel, "execute_tool ")]:
        assert span.parent is not None and span.parent.span_id == agent.context.span_id  # type: ignore[union-attr]
    for request, chat in zip(llm.requests, chats, strict=True):
        assert parent_of(request.headers["traceparent"]) == (trace_id(agent), span_id(chat))
    assert dict(chats[-1].attributes or {})["gen_ai.usage.output_tokens"] == 1


async def test_contents_are_recorded_on_opt_in(
    otel: Recorded, llm: FakeLLM, toolkit: Toolkit, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLNEXUS_OTEL_CAPTURE_CONTENT", "true")
    await run(llm, toolkit, tools(call("add", {"a": 20, "b": 22})), text("forty-two"))
    first, last = named(otel, "chat ")
    asked = json.loads(str(dict(first.attributes or {})["gen_ai.input.messages"]))
    assert asked[-1] == {"role": "user", "content": "go"}
    answered = str(dict(last.attributes or {})["gen_ai.output.messages"])
    assert "forty-two" in answered
    (tool,) = named(otel, "execute_tool add")
    assert dict(tool.attributes or {})["gen_ai.tool.call.result"] == "42"


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_every_mcp_request_is_a_client_span(
    otel: Recorded, mcp_http: ThreadedHttpServer, era: str
) -> None:
    kit = await create_toolkit(
        mcp_config={"remote": {"url": mcp_http.url(), "protocol": era}}, builtins=False
    )
    try:
        tracer = trace.get_tracer("test")
        with tracer.start_as_current_span("host") as host:
            (resource,) = await kit.list_mcp_resources()
            read = await kit.read_mcp_resource(resource.uri)
            (prompt,) = await kit.list_mcp_prompts()
            got = await kit.get_mcp_prompt("remote", prompt.name, {"name": "Ada"})
            called = await kit.execute("remote_traceparent", {})
        assert read.output == "hello from a resource"
        assert got.messages and not called.is_error
    finally:
        await kit.close()
    spans = [s for s in otel.spans.get_finished_spans() if s.kind is SpanKind.CLIENT]
    ours = {s.name: s for s in spans if not s.name.startswith("MCP send")}
    # at load (before the host span) and on each call
    assert {"tools/list", "resources/list", "resources/read note://hello", "prompts/list"} <= set(
        ours
    )
    assert {"prompts/get greet", "tools/call traceparent"} <= set(ours)
    for name in ("resources/read note://hello", "prompts/get greet", "tools/call traceparent"):
        span = ours[name]
        assert span.parent is not None
        assert trace_id(span) == format(host.get_span_context().trace_id, "032x")
    for span in ours.values():
        attributes = dict(span.attributes or {})
        assert attributes["mcp.method.name"] == span.name.split(" ")[0]
        assert attributes["network.transport"] == "tcp"
        assert "mcp.protocol.version" in attributes
        if era == "legacy":  # a stateful HTTP session: its id is on every request's span
            assert attributes["mcp.session.id"]
        else:  # the stateless era has no session
            assert "mcp.session.id" not in attributes
    assert dict(ours["resources/read note://hello"].attributes or {})["mcp.resource.uri"] == (
        "note://hello"
    )
    assert dict(ours["prompts/get greet"].attributes or {})["gen_ai.prompt.name"] == "greet"
    # the SDK's own request span is a child of ours
    (sent,) = [s for s in spans if s.name == "MCP send resources/read"]
    assert sent.parent is not None
    assert sent.parent.span_id == ours["resources/read note://hello"].context.span_id  # type: ignore[union-attr]


def otel_points(otel: Recorded) -> dict[str, list[Any]]:
    """The toolnexus scope's cumulative data points, by metric name."""
    data = otel.metrics.get_metrics_data()
    points: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data is not None else []:
        for scope in resource.scope_metrics:
            if scope.scope.name == "toolnexus":
                for metric in scope.metrics:
                    points.setdefault(metric.name, []).extend(metric.data.data_points)
    return points


def otel_totals(otel: Recorded, model: str) -> dict[str, float]:
    """What the OpenTelemetry instruments counted for `model`'s calls and for the tools."""
    points = otel_points(otel)
    calls = [
        p
        for p in points.get("gen_ai.client.operation.duration", [])
        if p.attributes.get("gen_ai.request.model") == model
    ]
    tokens = [
        p
        for p in points.get("gen_ai.client.token.usage", [])
        if p.attributes.get("gen_ai.request.model") == model
    ]
    totals: dict[str, float] = {
        "llm ok": sum(p.count for p in calls if "error.type" not in p.attributes),
        "llm error": sum(p.count for p in calls if "error.type" in p.attributes),
        "prompt": sum(p.sum for p in tokens if p.attributes["gen_ai.token.type"] == "input"),
        "completion": sum(p.sum for p in tokens if p.attributes["gen_ai.token.type"] == "output"),
    }
    for p in points.get("toolnexus.tool.calls", []):
        key = f"tool {p.attributes['gen_ai.tool.name']} {'error.type' in p.attributes}"
        totals[key] = totals.get(key, 0) + p.value
    for p in points.get("toolnexus.tool.duration", []):
        key = f"tool time {p.attributes['gen_ai.tool.name']}"
        totals[key] = totals.get(key, 0) + p.count
    return totals


def prometheus_totals(text: str, model: str) -> dict[str, float]:
    """The same figures read from `client.metrics()`."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name, _, labels = series.partition("{")
        label = dict(part.split("=", 1) for part in labels.rstrip("}").split(",") if part)
        label = {k: v.strip('"') for k, v in label.items()}
        number = float(value)
        if name == "toolnexus_llm_requests_total" and label["model"] == model:
            totals[f"llm {label['status']}"] = totals.get(f"llm {label['status']}", 0) + number
        elif name == "toolnexus_llm_tokens_total":
            totals[label["type"]] = number
        elif name == "toolnexus_tool_calls_total":
            key = f"tool {label['tool']} {label['is_error'] == 'true'}"
            totals[key] = totals.get(key, 0) + number
        elif name == "toolnexus_tool_duration_seconds_count":
            totals[f"tool time {label['tool']}"] = number
    return totals


def minus(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


async def test_the_otel_metrics_count_what_the_prometheus_text_counts(
    otel: Recorded, llm: FakeLLM, toolkit: Toolkit
) -> None:
    from support.fake_llm import error

    model = "metrics-model"
    before = otel_totals(otel, model)

    def deny_twos(event: dict[str, Any]) -> dict[str, Any] | None:
        denied = ToolResult("denied: no twos", True)
        return {"result": denied} if event["args"].get("a") == 2 else None

    client = create_client(
        base_url=base_url(llm, "openai"),
        style="openai",
        model=model,
        api_key="sk-x",
        hooks={"before_tool": deny_twos},
    )
    try:
        llm.push(
            tools(call("add", {"a": 1, "b": 2}), call("local_traceparent"), call("fail")),
            tools(call("add", {"a": 2, "b": 2})),
            text("done", usage=(9, 5)),
        )
        await client.run("go", toolkit)
        llm.push(error(400, "bad request"))
        with pytest.raises(Exception):  # noqa: B017 - whichever ProviderError the host sees
            await client.run("again", toolkit)
        prometheus = prometheus_totals(client.metrics(), model)
    finally:
        await client.aclose()
    counted = minus(otel_totals(otel, model), before)
    assert counted == prometheus
    assert counted["llm ok"] == 3 and counted["llm error"] == 1
    assert counted["tool add False"] == 1 and counted["tool fail True"] == 1
    assert counted["tool add True"] == 1  # answered by the hook: counted (and traced) too
    assert counted["prompt"] > 0 and counted["completion"] > 0
