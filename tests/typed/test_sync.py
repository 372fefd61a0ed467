"""`run_sync`, `ask_sync`, `stream_sync`: on every wire (OpenAI chat completions, Anthropic
messages, OpenAI responses), with no loop, in a loop's worker thread, timeouts, Ctrl-C."""

from __future__ import annotations

import _thread
import asyncio
import json
import threading
import time

import pydantic
import pytest

from support.client_helpers import add_tool, base_url, kit
from support.fake_llm import FakeLLM, Reply, call, text, tools
from toolnexus import Context, RunTimeout, Toolkit, create_client, tool
from toolnexus.client import Client

WIRES = ("openai", "anthropic", "openai-responses")
PATHS = {"openai": "/chat/completions", "anthropic": "/messages", "openai-responses": "/responses"}


def sync_client(llm: FakeLLM, style: str = "openai", **options: object) -> Client:
    return create_client(
        base_url=base_url(llm, style),
        style=style,
        model="m",
        api_key="sk-test",
        retry_base_ms=1,
        **options,  # type: ignore[arg-type]
    )


class Answer(pydantic.BaseModel):
    value: int


@pytest.mark.parametrize("style", WIRES)
def test_run_sync_without_a_loop(llm: FakeLLM, style: str) -> None:
    llm.push(tools(call("add", {"a": 1, "b": 2})), text('{"value": 3}'))
    with sync_client(llm, style) as client:
        result = client.run_sync(
            "1+2?", kit(add_tool()), output_type=Answer, output_mode="prompted"
        )
        assert result.output == Answer(value=3)
        assert result.tool_calls[0]["output"] == "3"
        llm.push(text("again"))
        assert client.ask_sync("more", id="s").text == "again"
        loop = client._sync._own_loop()
    assert loop.is_closed()  # close() stopped the loop the sync calls used
    assert [r.path.endswith(PATHS[style]) for r in llm.requests] == [True] * 3
    assert '"3"' in json.dumps(llm.requests[1].body)  # the tool's result went back on this wire


@pytest.mark.parametrize("style", WIRES)
def test_ask_sync_continues_the_conversation_on_every_wire(llm: FakeLLM, style: str) -> None:
    llm.push(text("first answer"), text("second answer"))
    with sync_client(llm, style) as client:
        assert client.ask_sync("first question", id="chat").text == "first answer"
        assert client.ask_sync("second question", id="chat").text == "second answer"
    sent = json.dumps(llm.requests[1].body)
    assert all(said in sent for said in ("first question", "first answer", "second question"))
    assert all(r.path.endswith(PATHS[style]) for r in llm.requests)


@pytest.mark.parametrize("style", WIRES)
def test_stream_sync_is_a_plain_iterator(llm: FakeLLM, style: str) -> None:
    llm.push(tools(call("add", {"a": 2, "b": 5}), chunk_size=3), text("hello there", chunk_size=3))
    with sync_client(llm, style) as client:
        events = list(client.stream_sync("hi", kit(add_tool())))
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["tool_call", "tool_result"] and kinds[-2:] == ["usage", "done"]
    call_event, result_event = events[0], events[1]
    assert call_event["type"] == "tool_call" and call_event["args"] == {"a": 2, "b": 5}
    assert result_event["type"] == "tool_result" and result_event["output"] == "7"
    deltas = "".join(e["delta"] for e in events if e["type"] == "text")
    assert deltas == "hello there"
    done = events[-1]
    assert done["type"] == "done" and done["result"].text == "hello there"
    assert all(r.body.get("stream") is True for r in llm.requests)
    assert all(r.path.endswith(PATHS[style]) for r in llm.requests)


@pytest.mark.parametrize("style", WIRES)
def test_stream_sync_stopped_early_closes_the_run(llm: FakeLLM, style: str) -> None:
    llm.push(text("a long answer", chunk_size=2))
    with sync_client(llm, style) as client:
        for event in client.stream_sync("hi"):
            assert event["type"] == "text"
            break
        llm.push(text("next"))
        assert client.run_sync("again").text == "next"  # the client still works


async def test_run_sync_inside_a_running_loops_worker_thread(llm: FakeLLM) -> None:
    llm.push(text("from a thread"))
    client = sync_client(llm)
    try:
        result = await asyncio.to_thread(client.run_sync, "hi")
        assert result.text == "from a thread"
        with pytest.raises(RuntimeError, match="await"):
            client.run_sync("on the loop itself")
    finally:
        await asyncio.to_thread(client.close)


def test_run_sync_reuses_the_toolkits_loop(llm: FakeLLM) -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    @tool
    async def where(ctx: Context[str]) -> str:
        """Say which loop runs this."""
        loops.append(asyncio.get_running_loop())
        return ctx.deps

    toolkit = Toolkit(extra_tools=[where])
    with sync_client(llm) as client:
        for _ in range(2):
            llm.push(tools(call("where")), text("ok"))
            result = client.run_sync("where?", toolkit, deps="here")
            assert result.tool_calls[0]["output"] == "here"
    assert len(loops) == 2 and loops[0] is loops[1]


def test_run_sync_honours_timeout_ms(llm: FakeLLM) -> None:
    llm.push(Reply(hang=True))
    with sync_client(llm, timeout_ms=200) as client, pytest.raises(RunTimeout):
        client.run_sync("hang")


def test_ctrl_c_cancels_the_run(llm: FakeLLM) -> None:
    llm.push(Reply(hang=True))
    client = sync_client(llm)

    def interrupt_when_waiting() -> None:
        deadline = time.monotonic() + 10
        while not llm.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        _thread.interrupt_main()

    threading.Thread(target=interrupt_when_waiting, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            client.run_sync("hang")
        llm.push(text("after"))
        assert client.run_sync("again").text == "after"
    finally:
        client.close()
