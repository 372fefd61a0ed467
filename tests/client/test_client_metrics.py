"""on_metric events and `metrics()` after real runs (client.md §12)."""

from __future__ import annotations

import logging

import pytest

from support.client_helpers import add_tool, kit
from support.fake_llm import call, error, text, tools
from toolnexus.client import ProviderError
from toolnexus.client._metrics import Metrics


async def test_events_of_a_run(llm, make_client):
    events = []
    llm.push(tools(call("add", {"a": 1, "b": 2}), call("ghost", {})), text("3", usage=(7, 1)))
    await make_client("openai", on_metric=events.append).run("x", kit(add_tool()))
    kinds = [e["event"] for e in events]
    assert kinds == ["llm", "tool", "tool", "llm", "run"]
    llm1 = events[0]
    assert set(llm1) == {"event", "model", "status", "ms", "prompt_tokens", "completion_tokens"}
    assert (llm1["model"], llm1["status"], llm1["prompt_tokens"], llm1["completion_tokens"]) == (
        "test-model",
        "ok",
        10,
        5,
    )
    tool_events = sorted((e["tool"], e["source"], e["is_error"]) for e in events[1:3])
    assert tool_events == [("add", "native", False), ("ghost", "custom", True)]
    assert all("pending" not in e for e in events[1:3])
    run = events[-1]
    assert set(run) == {"event", "model", "turns", "tool_calls", "total_tokens", "ms"}
    assert (run["turns"], run["tool_calls"], run["total_tokens"]) == (2, 2, 23)
    assert all(e["ms"] >= 0 for e in events)


async def test_metrics_text_matches_the_events(llm, make_client):
    events = []
    llm.push(tools(call("add", {"a": 1, "b": 2})), text("3"), error(400, "nope"))
    client = make_client("openai", on_metric=events.append)
    await client.run("x", kit(add_tool()))
    with pytest.raises(ProviderError):
        await client.run("y")
    replay = Metrics()
    for event in events:
        replay.record(event)
    rendered = client.metrics()
    assert rendered == replay.render()
    lines = rendered.splitlines()
    assert 'toolnexus_llm_requests_total{model="test-model",status="ok"} 2' in lines
    assert 'toolnexus_llm_requests_total{model="test-model",status="error"} 1' in lines
    assert 'toolnexus_llm_tokens_total{type="prompt"} 20' in lines
    assert 'toolnexus_llm_tokens_total{type="completion"} 10' in lines
    assert (
        'toolnexus_tool_calls_total{tool="add",source="native",is_error="false",pending="false"} 1'
        in lines
    )
    assert 'toolnexus_tool_duration_seconds_count{tool="add"} 1' in lines
    assert 'toolnexus_run_errors_total{model="test-model"} 1' in lines
    assert rendered.endswith("\n")


async def test_metrics_before_any_activity(make_client):
    assert make_client("openai").metrics() == Metrics().render()


async def test_a_failing_on_metric_never_breaks_a_run(llm, make_client, caplog):
    def broken(event):
        raise RuntimeError("sink down")

    llm.push(text("ok"))
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        result = await make_client("openai", on_metric=broken).run("x")
    assert result.text == "ok"
    assert "[toolnexus] on_metric raised: sink down" in caplog.messages


async def test_async_on_metric(llm, make_client):
    seen = []

    async def sink(event):
        seen.append(event["event"])

    llm.push(text("ok"))
    await make_client("anthropic", on_metric=sink).run("x")
    await llm.until(lambda: seen == ["llm", "run"])


RUN_KEYS = {"event", "model", "turns", "tool_calls", "total_tokens", "ms"}


@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_run_event_is_last_and_carries_the_error_when_the_run_raised(llm, make_client, style):
    events = []
    llm.push(tools(call("add", {"a": 1, "b": 2})), error(400, "context too long"))
    client = make_client(style, on_metric=events.append)
    with pytest.raises(ProviderError):
        await client.run("x", kit(add_tool()))
    assert [e["event"] for e in events] == ["llm", "tool", "llm", "run"]
    failed, run = events[-2], events[-1]
    assert (failed["status"], failed["prompt_tokens"], failed["completion_tokens"]) == (
        "error",
        0,
        0,
    )
    assert set(run) == RUN_KEYS | {"error"}
    assert run["error"] == "LLM 400: context too long"
    assert (run["turns"], run["tool_calls"], run["total_tokens"]) == (1, 1, 15)


async def test_tool_event_keys(llm, make_client):
    events = []
    llm.push(tools(call("add", {"a": 1, "b": 2})), text("3"))
    await make_client("openai", on_metric=events.append).run("x", kit(add_tool()))
    tool = next(e for e in events if e["event"] == "tool")
    assert set(tool) == {"event", "tool", "source", "is_error", "ms"}


async def test_a_raising_on_text_ends_the_run_with_its_error(llm, make_client):
    events = []

    def on_text(delta):
        raise RuntimeError("terminal gone")

    llm.push(text("hello there", chunk_size=2, stall_after=3))
    with pytest.raises(RuntimeError, match="terminal gone"):
        await make_client("openai", on_metric=events.append).ask("x", on_text=on_text)
    assert events[-1]["event"] == "run" and events[-1]["error"] == "terminal gone"
    await llm.until(lambda: llm.disconnects >= 1)  # the response was closed


async def test_invented_tool_names_are_one_series(llm, make_client):
    events = []
    invented = [call(f"made_up_{n}", {}) for n in range(2000)]
    llm.push(tools(call("add", {"a": 1, "b": 2}), *invented), text("done"))
    client = make_client("openai", on_metric=events.append)
    await client.run("x", kit(add_tool()))
    lines = client.metrics().splitlines()
    calls = [line for line in lines if line.startswith("toolnexus_tool_calls_total{")]
    assert calls == [
        'toolnexus_tool_calls_total{tool="(unknown)",source="custom",is_error="true",'
        'pending="false"} 2000',
        'toolnexus_tool_calls_total{tool="add",source="native",is_error="false",pending="false"} 1',
    ]
    durations = [line for line in lines if line.startswith("toolnexus_tool_duration_seconds_count")]
    assert durations == [
        'toolnexus_tool_duration_seconds_count{tool="(unknown)"} 2000',
        'toolnexus_tool_duration_seconds_count{tool="add"} 1',
    ]
    # on_metric still says which name the model asked for, and that it was not a tool
    ghosts = [e for e in events if e["event"] == "tool" and e.get("unknown")]
    assert len(ghosts) == 2000 and ghosts[0]["tool"].startswith("made_up_")
