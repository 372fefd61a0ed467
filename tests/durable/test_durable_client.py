"""`DurableClient` in one process: runs as workflows, steps, replays, conversations, answers.

The module runs once on each kind of DBOS system database (a SQLite file, then PostgreSQL on a
real server). DBOS is launched once per kind, on the module's own event loop (DBOS makes its
thread pool that loop's default executor and shuts it down on destroy). The kill -9 tests, in
`test_kill_resume.py`, use processes of their own.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pydantic
import pytest
import pytest_asyncio
from dbos import DBOS

from support.client_helpers import base_url
from support.fake_llm import FakeLLM, call, error, text, tools
from support.polling import wait_until
from toolnexus import Answer, Toolkit, ToolResult, define_tool, pending
from toolnexus.client import Client, ProviderError, create_client, create_in_process_client
from toolnexus.durable import DurableClient, WorkflowNotFound, step_key, stream_events
from toolnexus.errors import ConfigError, StreamingUnsupported
from toolnexus.types import ToolContext

_names = itertools.count()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def launched(system_db_url: str) -> AsyncIterator[str]:
    db_url = system_db_url
    DBOS(config={"name": "toolnexus-durable-inprocess", "system_database_url": db_url})
    DBOS.launch()
    try:
        yield db_url
    finally:
        DBOS.destroy(destroy_registry=True)


@pytest_asyncio.fixture(loop_scope="module")
async def client(llm: FakeLLM) -> AsyncIterator[Client]:
    made = create_client(
        base_url=base_url(llm, "openai"), style="openai", model="m", api_key="k", retries=0
    )
    yield made
    await made.aclose()


class Effects:
    """Side effects of the test tools, counted."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def toolkit(self) -> Toolkit:
        async def bump(k: str) -> str:
            """Bump k."""
            self.calls.append(("bump", (k, step_key())))
            await asyncio.sleep(0)
            return f"bumped {k}"

        async def approve(item: str, ctx: ToolContext) -> ToolResult | str:
            """Approve item."""
            self.calls.append(("approve", ctx.answer is not None))
            if ctx.answer is None:
                return pending(kind="approval", prompt=f"approve {item}?", id=f"appr-{item}")
            return f"approved {item}"

        return Toolkit(extra_tools=[define_tool(bump), define_tool(approve)])


def durable(client: Client, effects: Effects, **options: Any) -> DurableClient:
    return DurableClient(client, effects.toolkit(), name=f"t{next(_names)}", **options)


pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_a_finished_run_is_replayed_by_its_id_without_calling_anything_again(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    effects = Effects()
    runs = durable(client, effects)
    llm.push(tools(call("bump", {"k": "a"})), text("done"))
    first = await runs.run("go", workflow_id="replay-1")
    again = await runs.run("go", workflow_id="replay-1")
    assert first.text == again.text == "done"
    assert again.tool_calls == first.tool_calls
    assert len(llm.requests) == 2
    assert [name for name, _ in effects.calls] == ["bump"]


async def test_each_model_call_and_each_tool_call_is_a_step_in_call_order(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    effects = Effects()
    runs = durable(client, effects)
    calls = [call("bump", {"k": k}) for k in "abc"]
    llm.push(tools(*calls), text("done"))
    result = await runs.run("go", workflow_id="steps-1")
    assert [c["output"] for c in result.tool_calls] == ["bumped a", "bumped b", "bumped c"]
    steps = await DBOS.list_workflow_steps_async("steps-1")
    names = [s["function_name"] for s in steps]
    assert names == ["toolnexus.llm"] + ["toolnexus.tool:bump"] * 3 + ["toolnexus.llm"]
    # The idempotency key a tool sees is its own step's, numbered in call order.
    keys = sorted(key for _, (_, key) in effects.calls)
    assert keys == [f"steps-1/{s['function_id']}" for s in steps[1:4]]


async def test_ask_continues_and_saves_the_conversation(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    runs = durable(client, Effects())
    llm.push(text("one"), text("two"))
    await runs.ask("first", id="conv-1")
    second = await runs.ask("second", id="conv-1")
    assert second.text == "two"
    sent = llm.requests[1].body["messages"]
    assert [m["content"] for m in sent if m["role"] in ("user", "assistant")] == [
        "first",
        "one",
        "second",
    ]
    saved = await client.conversation_store.get("conv-1")
    assert saved is not None and [m.get("content") for m in saved][-2:] == ["second", "two"]


async def test_a_run_that_waited_appends_its_turn_after_the_turns_saved_meanwhile(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    runs = durable(client, Effects())
    llm.push(tools(call("approve", {"item": "x"})))
    waiting = await runs.start("slow", workflow_id="merge-1", id="conv-merge")
    await wait_until(waiting.pending, timeout=10)
    llm.push(text("quick answer"))
    await runs.ask("quick", id="conv-merge")  # finishes while the first run waits
    llm.push(text("slow answer"))
    await waiting.answer(Answer("appr-x", True))
    await waiting.result()
    saved = await client.conversation_store.get("conv-merge")
    assert saved is not None
    said = [m.get("content") for m in saved if m["role"] in ("user", "assistant")]
    assert said[:2] == ["quick", "quick answer"]
    assert said[2] == "slow" and said[-1] == "slow answer"


async def test_a_suspended_run_waits_for_its_answer_sent_by_workflow_id(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    effects = Effects()
    runs = durable(client, effects)
    llm.push(tools(call("approve", {"item": "x"})), text("ok"))
    run = await runs.start("go", workflow_id="suspend-1")
    asked = await wait_until(run.pending, timeout=10)
    assert asked.id == "appr-x" and asked.prompt == "approve x?"
    with pytest.raises(ConfigError, match="does not match"):
        await runs.answer("suspend-1", Answer("other", True))
    await runs.answer("suspend-1", Answer("appr-x", True, {"output": "yes"}))
    await runs.answer("suspend-1", {"id": "appr-x", "ok": True})  # a duplicate: delivered once
    result = await run.result()
    assert result.text == "ok"
    assert [c["output"] for c in result.tool_calls] == ["approved x"]
    assert effects.calls == [("approve", False), ("approve", True)]
    assert await run.pending() is None


async def test_a_declined_answer_and_an_answer_timeout_read_as_declined(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    effects = Effects()
    runs = durable(client, effects)
    llm.push(tools(call("approve", {"item": "x"})), text("ok"))
    run = await runs.start("go", workflow_id="decline-1")
    await wait_until(run.pending, timeout=10)
    await run.answer(Answer("appr-x", False, reason="declined"))
    result = await run.result()
    assert result.tool_calls[0]["output"] == "declined/expired: approve x?"

    hurried = durable(client, effects, answer_timeout_s=0.05)
    llm.push(tools(call("approve", {"item": "y"})), text("ok"))
    late = await hurried.run("go", workflow_id="timeout-1")
    assert late.tool_calls[0]["output"] == "declined/expired: approve y?"


async def test_a_failed_model_call_fails_the_run_and_stays_failed(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    runs = durable(client, Effects())
    llm.push(error(400, "bad request"))
    with pytest.raises(ProviderError, match="bad request"):
        await runs.run("go", workflow_id="fail-1")
    with pytest.raises(ProviderError, match="bad request"):
        await runs.run("go", workflow_id="fail-1")  # recorded: not sent again
    assert len(llm.requests) == 1


async def test_a_partitioned_queue_bounds_the_runs_of_each_model(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    await DBOS.register_queue_async(
        "toolnexus-per-model", partition_concurrency=1, polling_interval_sec=0.01
    )
    active, most = 0, 0

    async def hold() -> str:
        """Hold a while."""
        nonlocal active, most
        active += 1
        most = max(most, active)
        await asyncio.sleep(0.02)  # long enough for an unbounded second run to overlap
        active -= 1
        return "held"

    runs = DurableClient(
        client,
        Toolkit(extra_tools=[define_tool(hold)]),
        name=f"t{next(_names)}",
        queue="toolnexus-per-model",
        queue_per_model=True,
    )
    for _ in range(3):
        llm.push(tools(call("hold")), text("done"))
    started = [await runs.start("go") for _ in range(3)]
    results = [await run.result() for run in started]
    assert [r.text for r in results] == ["done"] * 3
    assert most == 1


async def test_bad_use_is_refused_clearly(launched: str, client: Client) -> None:
    with pytest.raises(TypeError, match="toolnexus Client"):
        DurableClient(object())  # type: ignore[arg-type]
    twice = f"twice-{next(_names)}"
    DurableClient(client, name=twice)
    with pytest.raises(ConfigError, match="already exists"):
        DurableClient(client, name=twice)
    with pytest.raises(ConfigError, match="needs a queue"):
        DurableClient(client, name=f"no-queue-{next(_names)}", queue_per_model=True)
    with pytest.raises(WorkflowNotFound):
        await durable(client, Effects()).answer("nope", Answer("a", True))
    with pytest.raises(WorkflowNotFound):
        await durable(client, Effects()).result("nope")
    whole = create_in_process_client(model="local", generate=lambda request: {"content": "x"})
    with pytest.raises(StreamingUnsupported):
        await anext(DurableClient(whole, name=f"whole-{next(_names)}").stream("go"))


# -- streaming ----------------------------------------------------------------------------------


def merged(events: list[Any]) -> list[dict[str, Any]]:
    """Events with each turn's text deltas joined and `progress` dropped (what a step keeps)."""
    out: list[dict[str, Any]] = []
    for event in events:
        if event["type"] == "progress":
            continue
        if event["type"] == "text" and out and out[-1]["type"] == "text":
            out[-1] = {"type": "text", "delta": out[-1]["delta"] + event["delta"]}
        else:
            out.append(dict(event))
    return out


def progress_toolkit() -> Toolkit:
    async def count(n: int, ctx: ToolContext) -> str:
        """Count to n, reporting progress."""
        assert ctx.on_progress is not None
        for i in range(n):
            await ctx.on_progress({"progress": i + 1, "total": n, "message": f"at {i + 1}"})
        return f"counted {n}"

    return Toolkit(extra_tools=[define_tool(count)])


async def test_a_durable_stream_yields_the_clients_events_with_each_turns_text_whole(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    script = [
        tools(call("count", {"n": 3}, id="c1"), text="let me count"),
        text("three", chunk_size=2),
    ]
    llm.push(*script)
    plain = [e async for e in client.stream("go", progress_toolkit())]
    assert [e["type"] for e in plain].count("progress") == 3
    llm.push(*script)
    runs = DurableClient(client, progress_toolkit(), name=f"t{next(_names)}")
    events = [e async for e in runs.stream("go", workflow_id="stream-1")]
    assert events[:-1] == merged(plain)[:-1]
    assert [e["type"] for e in events] == [
        "text",
        "tool_call",
        "tool_result",
        "text",
        "usage",
        "done",
    ]
    done = events[-1]
    assert done["type"] == "done" and done["result"].text == "three"
    assert done["result"].tool_calls[0]["output"] == "counted 3"
    assert len(llm.requests) == 4

    # Attaching to the finished run reads its events back, calling nothing again.
    again = [e async for e in runs.stream("go", workflow_id="stream-1")]
    assert again[:-1] == events[:-1] and again[-1]["result"].text == "three"
    later = [e async for e in runs.run_of("stream-1").stream(offset=3)]
    assert later[:-1] == events[3:-1]
    assert len(llm.requests) == 4


async def test_a_durable_stream_yields_events_as_they_come_through_a_suspension(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    effects = Effects()
    runs = durable(client, effects)
    llm.push(tools(call("approve", {"item": "s"})), text("approved it"))
    events = runs.stream("go", workflow_id="stream-wait", id="conv-stream")
    seen = [await anext(events), await anext(events)]
    assert [e["type"] for e in seen] == ["tool_call", "pending"]
    asked = seen[1]
    # The event comes as the run suspends; the request it waits on is published right after.
    waiting = await wait_until(lambda: runs.pending("stream-wait"), timeout=10)
    assert asked["type"] == "pending" and asked["request"] == waiting
    # The run waits (durably) while the stream is open; the answer lets both go on.
    await runs.answer("stream-wait", Answer(asked["request"].id, True))
    rest = [e async for e in events]
    assert [e["type"] for e in rest] == ["tool_result", "text", "usage", "done"]
    assert rest[0]["type"] == "tool_result" and rest[0]["output"] == "approved s"
    saved = await client.conversation_store.get("conv-stream")
    assert saved is not None and saved[-1]["content"] == "approved it"


async def test_leaving_a_durable_stream_early_leaves_the_run_running(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    runs = durable(client, Effects())
    llm.push(tools(call("bump", {"k": "e"})), text("ended"))
    async for event in runs.stream("go", workflow_id="stream-early"):
        assert event["type"] == "tool_call"
        break
    result = await runs.result("stream-early")
    assert result.text == "ended"
    events = [e async for e in runs.run_of("stream-early").stream()]
    assert [e["type"] for e in events] == ["tool_call", "tool_result", "text", "usage", "done"]


class Verdict(pydantic.BaseModel):
    ok: bool


async def test_a_durable_stream_of_a_typed_run_yields_its_output(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    runs = durable(client, Effects())
    llm.push(text('{"ok": true}'))
    events = [
        e async for e in runs.stream("judge", workflow_id="stream-typed", output_type=Verdict)
    ]
    assert [e["type"] for e in events] == ["text", "output", "usage", "done"]
    assert events[1] == {"type": "output", "output": Verdict(ok=True)}
    done = events[-1]
    assert done["type"] == "done" and done["result"].output == Verdict(ok=True)


async def test_a_durable_stream_raises_what_the_run_failed_with(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    runs = durable(client, Effects())
    llm.push(error(400, "bad stream request"))
    with pytest.raises(ProviderError, match="bad stream request"):
        async for _ in runs.stream("go", workflow_id="stream-fail"):
            pass
    # A run started without streaming has no events to read: only its end.
    llm.push(text("plain"))
    await runs.run("go", workflow_id="stream-none")
    events = [e async for e in runs.run_of("stream-none").stream()]
    assert [e["type"] for e in events] == ["done"]
    with pytest.raises(WorkflowNotFound):
        await anext(stream_events("stream-nobody"))
    with pytest.raises(ConfigError, match="offset"):
        await anext(stream_events("stream-none", offset=-1))
