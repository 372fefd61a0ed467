"""`DurableClient` in one process: runs as workflows, steps, replays, conversations, answers.

The module runs once on each kind of DBOS system database (a SQLite file, then PostgreSQL on a
real server). DBOS is launched once per kind, on the module's own event loop (DBOS makes its
thread pool that loop's default executor and shuts it down on destroy). The kill -9 tests, in
`test_kill_resume.py`, use processes of their own.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pydantic
import pytest
import pytest_asyncio
from dbos import DBOS
from dbos._error import DBOSException

from support.client_helpers import base_url
from support.db_servers import PG_PASSWORD, PostgresServer
from support.fake_llm import FakeLLM, call, error, text, tools
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.sdk_eras import app as eras_app
from support.polling import wait_until
from toolnexus import Answer, Toolkit, ToolResult, create_toolkit, define_tool, pending
from toolnexus.client import Client, ProviderError, create_client, create_in_process_client
from toolnexus.durable import (
    DurableClient,
    DurableError,
    WorkflowNotFound,
    step_key,
    stream_events,
)
from toolnexus.errors import (
    ConfigError,
    RunCancelled,
    StoreError,
    StreamingUnsupported,
    ToolnexusError,
)
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
        # DBOS made its pool the loop's default executor and shut it down: the module's next
        # system database runs on this loop too, and its first test may not call DBOS first.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())


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


async def test_host_calls_to_a_database_that_stops_answering_fail_in_time(
    launched: str, llm: FakeLLM, client: Client, request: pytest.FixtureRequest
) -> None:
    if not launched.startswith("postgresql"):
        pytest.skip("a SQLite file cannot stop answering; the PostgreSQL round pauses its server")
    server: PostgresServer = request.getfixturevalue("postgres")
    runs = durable(client, Effects(), db_timeout_s=1.0)
    llm.push(tools(call("approve", {"item": "p"})), text("ok"))
    run = await runs.start("go", workflow_id="paused-db-1")
    asked = await wait_until(run.pending, timeout=10)
    yes = Answer(asked.id, True, {"output": "yes"})
    with server.paused():
        for host_call in (run.pending, lambda: run.answer(yes), run.cancel):
            with pytest.raises(StoreError) as caught:
                await host_call()
            message = str(caught.value)
            assert message == (
                "the DBOS system database did not answer within 1 s (durable run 'paused-db-1')"
            )
            assert PG_PASSWORD not in message
        started = time.monotonic()
        with pytest.raises(StoreError) as caught:
            await runs.start("again", workflow_id="paused-db-2")
        assert str(caught.value) == (
            "the DBOS system database did not answer within 1 s "
            "(starting durable run 'paused-db-2')"
        )
        assert time.monotonic() - started < 6  # a hang guard, not a speed figure
    # Nothing was lost: once the database answers again, the run takes its answer and ends.
    await run.answer(yes)
    assert (await run.result()).text == "ok"


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
    # `start` and `stream` share their options: a misspelt one is refused, as a keyword is.
    with pytest.raises(TypeError, match="unexpected keyword argument 'workflowid'"):
        await durable(client, Effects()).start("go", workflowid="w")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'workflowid'"):
        await anext(durable(client, Effects()).stream("go", workflowid="w"))  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="history or id"):
        await anext(durable(client, Effects()).stream("go", history=[], id="c"))


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


# -- replays, as after a crash ------------------------------------------------------------------
# `DBOS.fork_workflow_async(id, step)` starts a copy of a run that keeps the record of every step
# before `step` and replays it: what a process resuming a crashed run does.


async def step_ids(workflow_id: str, name: str) -> list[int]:
    steps = await DBOS.list_workflow_steps_async(workflow_id)
    return [s["function_id"] for s in steps if s["function_name"] == name]


async def test_a_replay_runs_the_hooks_again_and_reads_the_completed_calls_back(
    launched: str, llm: FakeLLM
) -> None:
    turns: list[int] = []
    metrics: list[dict[str, Any]] = []

    def before_llm(info: Any) -> None:
        turns.append(info["turn"])

    hooked = create_client(
        base_url=base_url(llm, "openai"),
        style="openai",
        model="m",
        api_key="k",
        retries=0,
        hooks={"before_llm": before_llm},
        on_metric=metrics.append,
    )
    try:
        effects = Effects()
        runs = durable(hooked, effects, deps="the deps")
        llm.push(tools(call("bump", {"k": "r"})), text("first"))
        await runs.run("go", workflow_id="replay-hooks")
        last_model_call = (await step_ids("replay-hooks", "toolnexus.llm"))[-1]
        turns.clear()
        metrics.clear()
        llm.push(text("second"))
        forked = await DBOS.fork_workflow_async("replay-hooks", last_model_call)
        result = await forked.get_result()
    finally:
        await hooked.aclose()
    assert result.text == "second"
    assert result.tool_calls[0]["output"] == "bumped r"  # read back, not run again
    assert [name for name, _ in effects.calls] == ["bump"]
    assert len(llm.requests) == 3  # the replayed model call was not sent again
    assert turns == [0, 1]  # the hooks ran again, on both turns
    # A replayed tool call reports its `tool` event again; a replayed model call sends nothing,
    # so it reports no `llm` event.
    assert [m["event"] for m in metrics] == ["tool", "llm", "run"]


async def test_a_replayed_stream_writes_each_event_once_though_its_tools_reported_progress(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    runs = DurableClient(client, progress_toolkit(), name=f"t{next(_names)}")
    llm.push(tools(call("count", {"n": 2}, id="c1")), text("first"))
    events = [e async for e in runs.stream("go", workflow_id="replay-stream")]
    last_model_call = (await step_ids("replay-stream", "toolnexus.llm"))[-1]
    llm.push(text("again"))
    forked = await DBOS.fork_workflow_async("replay-stream", last_model_call)
    replayed = [e async for e in runs.run_of(forked.get_workflow_id()).stream()]
    # The record of the first turn and its tool call is read back (the progress the tool
    # reported the first time is not replayed, and nothing shifted); the last turn is new.
    assert (
        replayed[:2]
        == events[:2]
        == [
            {"type": "tool_call", "id": "c1", "name": "count", "args": {"n": 2}},
            {
                "type": "tool_result",
                "id": "c1",
                "name": "count",
                "output": "counted 2",
                "is_error": False,
            },
        ]
    )
    assert [e["type"] for e in replayed[2:]] == ["text", "usage", "done"]
    assert replayed[2] == {"type": "text", "delta": "again"}
    assert len(llm.requests) == 3


async def test_a_save_replayed_after_a_crash_is_not_applied_twice(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    runs = durable(client, Effects())
    llm.push(text("saved once"))
    await runs.ask("remember this", id="conv-replay", workflow_id="replay-save")
    before = await client.conversation_store.get("conv-replay")
    save = (await step_ids("replay-save", "toolnexus.conversation.save"))[0]
    forked = await DBOS.fork_workflow_async("replay-save", save)  # the save runs again
    await forked.get_result()
    assert await client.conversation_store.get("conv-replay") == before
    assert before is not None and [m.get("content") for m in before] == [
        "remember this",
        "saved once",
    ]


async def test_an_answer_sent_before_the_run_suspends_waits_for_it(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    opened = asyncio.Event()
    effects = Effects()

    async def gate() -> str:
        """Wait for the test."""
        await asyncio.wait_for(opened.wait(), 30)
        return "opened"

    toolkit = Toolkit(extra_tools=[*effects.toolkit().tools(), define_tool(gate)])
    runs = DurableClient(client, toolkit, name=f"t{next(_names)}")
    llm.push(tools(call("gate")), tools(call("approve", {"item": "early"})), text("done"))
    run = await runs.start("go", workflow_id="answer-early")
    await llm.until_requests(1, timeout=10)
    assert await run.pending() is None  # still in the gate: not suspended yet
    await run.answer(Answer("appr-early", True))
    opened.set()
    result = await run.result()
    assert [c["output"] for c in result.tool_calls] == ["opened", "approved early"]
    assert effects.calls == [("approve", False), ("approve", True)]


async def test_starting_a_run_in_progress_attaches_to_it(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    runs = durable(client, Effects())
    llm.push(tools(call("approve", {"item": "twice"})), text("once"))
    first = await runs.start("go", workflow_id="attach-1")
    await wait_until(first.pending, timeout=10)
    second = await runs.start("go", workflow_id="attach-1")
    assert second.workflow_id == "attach-1"
    await runs.answer("attach-1", Answer("appr-twice", True))
    assert (await first.result()).text == (await second.result()).text == "once"
    assert len(llm.requests) == 2  # one run: its two model calls


async def test_the_tool_calls_of_one_turn_run_at_once_and_see_the_runs_deps(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    arrived: list[str] = []
    both = asyncio.Event()

    async def meet(who: str, ctx: ToolContext[str]) -> str:
        """Wait for the other call."""
        arrived.append(who)
        if len(arrived) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 30)  # run one after the other, this never returns
        return f"{who} met, with {ctx.deps}"

    runs = DurableClient(
        client, Toolkit(extra_tools=[define_tool(meet)]), name=f"t{next(_names)}", deps="deps"
    )
    llm.push(tools(call("meet", {"who": "a"}), call("meet", {"who": "b"})), text("met"))
    result = await runs.run("go", workflow_id="concurrent-1")
    assert [c["output"] for c in result.tool_calls] == ["a met, with deps", "b met, with deps"]


async def test_what_dbos_reports_about_a_run_reaches_the_host_as_a_toolnexus_error(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    runs = durable(client, Effects())
    llm.push(tools(call("approve", {"item": "c"})))
    run = await runs.start("go", workflow_id="cancel-1")
    await wait_until(run.pending, timeout=10)
    await run.cancel()
    with pytest.raises(RunCancelled, match="cancel-1"):
        await run.result()
    with pytest.raises(RunCancelled, match="cancel-1"):
        async for _ in runs.run_of("cancel-1").stream():
            pass
    # The id is taken by a run of another DurableClient (another workflow).
    with pytest.raises(DurableError, match="cancel-1") as taken:
        await durable(client, Effects()).start("go", workflow_id="cancel-1")
    assert isinstance(taken.value, ToolnexusError)
    assert isinstance(taken.value.__cause__, DBOSException)


async def test_an_mcp_input_request_suspends_the_durable_run_until_answered(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    # An MCP server of the 2026-07-28 era, stateless: the answered call carries everything.
    server = ThreadedHttpServer(eras_app("--state-key", "k" * 40, "--stateless"))
    toolkit = await create_toolkit(mcp_config={"srv": {"url": server.url()}}, builtins=False)
    try:
        runs = DurableClient(client, toolkit, name=f"t{next(_names)}")
        llm.push(tools(call("srv_greet", {"greeting": "Hey"})), text("greeted"))
        run = await runs.start("greet me", workflow_id="mcp-input")
        asked = await wait_until(run.pending, timeout=20)
        assert (asked.kind, asked.prompt) == ("input", "What is your name?")
        assert asked.data is not None and asked.data["mcp"]["tool"] == "greet"
        await run.answer(Answer(asked.id, True, {"name": "Ada"}))
        result = await run.result()
    finally:
        await toolkit.close()
        server.stop()
    assert result.text == "greeted"
    assert [c["output"] for c in result.tool_calls] == ["Hey, Ada!"]
    tool_steps = await step_ids("mcp-input", "toolnexus.tool:srv_greet")
    assert len(tool_steps) == 2  # the call that asked, and the answered call: a step each


async def test_run_with_history_and_an_output_type(
    launched: str, llm: FakeLLM, client: Client
) -> None:
    runs = durable(client, Effects())
    llm.push(text('{"ok": false}'))
    history = [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "noted"}]
    result = await runs.run("judge", workflow_id="typed-1", history=history, output_type=Verdict)
    assert result.output == Verdict(ok=False)
    sent = llm.requests[0].body["messages"]
    assert [m["content"] for m in sent if m["role"] != "system"] == ["earlier", "noted", "judge"]
    again = await runs.run("judge", workflow_id="typed-1", output_type=Verdict)
    assert again.output == Verdict(ok=False) and len(llm.requests) == 1
