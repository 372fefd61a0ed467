"""Streaming both styles: events, assembly, back-pressure, stalls, early close, ask(on_text)."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

from support.client_helpers import STYLES, add_tool, kit
from support.fake_llm import Reply, call, error, text, tools
from toolnexus import ProviderConnectionError
from toolnexus.client import ProviderError, RunCancelled, RunResult, RunTimeout
from toolnexus.types import Tool


async def collect(stream):
    return [event async for event in stream]


@pytest.mark.parametrize("style", STYLES)
async def test_text_stream_events(llm, make_client, style):
    llm.push(text("Hello streaming world", chunk_size=5))
    events = await collect(make_client(style).stream("hi"))
    deltas = [e["delta"] for e in events if e["type"] == "text"]
    assert deltas == ["Hello", " stre", "aming", " worl", "d"]
    assert [e["type"] for e in events[-2:]] == ["usage", "done"]
    assert events[-2]["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    result = events[-1]["result"]
    assert isinstance(result, RunResult)
    assert result.text == "Hello streaming world"
    assert result.status == "done"
    body = llm.requests[0].body
    if style == "openai":
        assert list(body) == ["model", "messages", "stream", "stream_options"]
        assert body["stream_options"] == {"include_usage": True}
        assert result.messages[-1] == {"role": "assistant", "content": "Hello streaming world"}
    else:
        assert list(body) == ["model", "max_tokens", "system", "messages", "stream"]
        assert result.messages[-1] == {
            "role": "assistant",
            "content": [{"type": "text", "text": "Hello streaming world"}],
        }
    assert body["stream"] is True


@pytest.mark.parametrize("style", STYLES)
async def test_tool_stream_events_and_transcript(llm, make_client, style):
    llm.push(
        tools(
            call("add", {"a": 2, "b": 3}, id="c1"),
            call("add", {"a": 1, "b": 1}, id="c2"),
            text="Adding.",
        ),
        text("5 and 2"),
    )
    toolkit = kit(add_tool())
    events = await collect(make_client(style).stream("x", toolkit))
    kinds = [e["type"] for e in events]
    first_call = kinds.index("tool_call")
    assert kinds[:first_call] == ["text"] * kinds[:first_call].count("text")
    assert kinds[first_call : first_call + 4] == [
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
    ]
    assert events[first_call] == {
        "type": "tool_call",
        "id": "c1",
        "name": "add",
        "args": {"a": 2, "b": 3},
    }
    assert events[first_call + 2] == {
        "type": "tool_result",
        "id": "c1",
        "name": "add",
        "output": "5",
        "is_error": False,
    }
    assert kinds[-2:] == ["usage", "done"]
    assert events[-2]["usage"]["total_tokens"] == 30
    result = events[-1]["result"]
    assert result.text == "5 and 2"
    assert "".join(e["delta"] for e in events if e["type"] == "text") == "Adding.5 and 2"
    assistant = result.messages[-4] if style == "openai" else result.messages[-3]
    if style == "openai":
        assert assistant == {
            "role": "assistant",
            "content": "Adding.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":2,"b":3}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":1,"b":1}'},
                },
            ],
        }
    else:
        assert assistant == {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Adding."},
                {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 2, "b": 3}},
                {"type": "tool_use", "id": "c2", "name": "add", "input": {"a": 1, "b": 1}},
            ],
        }
    assert llm.requests[1].body["messages"][: len(result.messages) - 1] == result.messages[:-1]


async def test_openai_tool_calls_assembled_by_index_when_interleaved(llm, make_client):
    def chunk(delta, finish=None):
        return "data: " + json.dumps(
            {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        )

    sse = [
        chunk(
            {
                "tool_calls": [
                    {"index": 1, "id": "b", "function": {"name": "ad", "arguments": '{"a":'}}
                ]
            }
        ),
        chunk(
            {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "add", "arguments": ""}}]}
        ),
        chunk({"tool_calls": [{"index": 1, "function": {"name": "d", "arguments": '1,"b":1}'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":2,"b":2}'}}]}),
        chunk({}, "tool_calls"),
        "data: [DONE]",
    ]
    llm.push(Reply(sse=sse), text("ok"))
    result = await make_client("openai").ask("x", kit(add_tool()), on_text=lambda d: None)
    assert [(c["args"], c["output"]) for c in result.tool_calls] == [
        ({"a": 2, "b": 2}, "4"),
        ({"a": 1, "b": 1}, "2"),
    ]
    assert [c["id"] for c in result.messages[1]["tool_calls"]] == ["a", "b"]


async def test_anthropic_thinking_blocks_streamed_and_kept(llm, make_client):
    thinking = [
        {"type": "thinking", "thinking": "Let me think about it.", "signature": "c2lnbmF0dXJl"},
        {"type": "redacted_thinking", "data": "EncryptedStuff"},
    ]
    llm.push(tools(call("add", {"a": 1, "b": 2}, id="t1"), thinking=thinking), text("3"))
    events = await collect(make_client("anthropic").stream("x", kit(add_tool())))
    result = events[-1]["result"]
    assert result.messages[1]["content"] == [
        *thinking,
        {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}},
    ]
    assert llm.requests[1].body["messages"][1]["content"][:2] == thinking
    assert not any(e["type"] == "text" and "think" in e["delta"] for e in events)


@pytest.mark.parametrize("style", STYLES)
async def test_slow_consumer_loses_nothing(llm, make_client, style):
    big = "".join(chr(ord("a") + i % 26) for i in range(5000))
    llm.push(text(big, chunk_size=1))
    deltas = []
    async for event in make_client(style).stream("x"):
        if event["type"] == "text":
            deltas.append(event["delta"])
            if len(deltas) % 500 == 0:
                await asyncio.sleep(0.01)  # a consumer slower than the producer
            else:
                await asyncio.sleep(0)
    assert len(deltas) == 5000
    assert "".join(deltas) == big


@pytest.mark.parametrize("style", STYLES)
async def test_stalled_stream_ends_by_read_timeout(llm, make_client, style):
    llm.push(text("abcdef", chunk_size=1, stall_after=3))
    seen = []
    with pytest.raises(ProviderConnectionError) as raised:
        async for event in make_client(style, read_timeout_ms=100).stream("x"):
            seen.append(event)
    assert isinstance(raised.value.__cause__, httpx2.ReadTimeout)
    assert seen and all(e["type"] == "text" for e in seen)
    await llm.until(lambda: llm.disconnects >= 1)


async def test_stalled_stream_ends_by_deadline(llm, make_client):
    llm.push(text("abcdef", chunk_size=1, stall_after=3))
    with pytest.raises(RunTimeout):
        await collect(make_client("anthropic", timeout_ms=400).stream("x"))
    await llm.until(lambda: llm.disconnects >= 1)


async def test_cancel_between_stream_events(llm, make_client):
    llm.push(text("abcdef", chunk_size=1))
    cancel = asyncio.Event()
    seen = []
    with pytest.raises(RunCancelled):
        async for event in make_client("openai").stream("x", cancel=cancel):
            seen.append(event)
            cancel.set()
    assert len(seen) == 1


async def test_consumer_closing_early_closes_the_response(llm, make_client):
    metrics = []
    llm.push(text("abcdef", chunk_size=1, stall_after=3))
    stream = make_client("openai", on_metric=metrics.append).stream("x")
    async for event in stream:
        assert event["type"] == "text"
        break
    await stream.aclose()
    await llm.until(lambda: llm.disconnects >= 1)
    assert metrics[-1]["event"] == "run" and metrics[-1]["error"] == "stream closed before done"


@pytest.mark.parametrize("style", STYLES)
async def test_no_usage_event_without_usage(llm, make_client, style):
    llm.push(text("hi", usage=None, chunk_size=2))
    events = await collect(make_client(style).stream("x"))
    assert [e["type"] for e in events] == ["text", "done"]


async def test_stream_retries_before_the_body_and_reports_errors(llm, make_client):
    llm.push(error(429, headers={"Retry-After": "0"}), text("ok"))
    events = await collect(make_client("openai").stream("x"))
    assert events[-1]["result"].text == "ok"
    llm.push(error(400, "bad stream"))
    with pytest.raises(ProviderError, match=r"^LLM 400: bad stream$"):
        await collect(make_client("anthropic").stream("x"))


async def test_error_events_inside_a_stream(llm, make_client):
    anthropic_error = (
        "event: error\n"
        'data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    )
    llm.push(Reply(sse=[anthropic_error]))
    with pytest.raises(ProviderError, match=r"^LLM 200: Overloaded$"):
        await collect(make_client("anthropic").stream("x"))
    llm.push(Reply(sse=['data: {"error":{"message":"upstream died"}}']))
    with pytest.raises(ProviderError, match=r"^LLM 200: upstream died$"):
        await collect(make_client("openai").stream("x"))
    llm.push(Reply(sse=["data: {broken"]))
    with pytest.raises(ProviderError, match="malformed stream event"):
        await collect(make_client("openai").stream("x"))


@pytest.mark.parametrize("style", STYLES)
async def test_ask_on_text_sync_and_async(llm, make_client, style):
    llm.push(text("one two three", chunk_size=4), text("four", chunk_size=2))
    client = make_client(style)
    got = []
    result = await client.ask("x", on_text=got.append)
    assert "".join(got) == "one two three" and len(got) == 4
    assert result.text == "one two three"

    got_async = []

    async def on_text(delta):
        await asyncio.sleep(0)
        got_async.append(delta)

    result = await client.ask("y", on_text=on_text)
    assert got_async == ["fo", "ur"]
    assert llm.requests[1].body["stream"] is True


async def test_after_llm_sees_streamed_usage(llm, make_client):
    seen = []
    llm.push(tools(call("add", {"a": 1, "b": 1})), text("2"))
    hooks = {"after_llm": lambda info: seen.append(info["response"])}
    await collect(make_client("anthropic", hooks=hooks).stream("x", kit(add_tool())))
    assert seen == [
        {
            "streamed": True,
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
        {
            "streamed": True,
            "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
        },
    ]


@pytest.mark.parametrize("style", STYLES)
async def test_stream_max_turns_incomplete(llm, make_client, style):
    llm.push(tools(call("add", {"a": 1, "b": 1})))
    events = await collect(make_client(style, max_turns=1).stream("x", kit(add_tool())))
    result = events[-1]["result"]
    assert (result.status, result.limit) == ("incomplete", "maxTurns")
    assert events[-2]["type"] == "usage"


async def test_stream_malformed_tool_json(llm, make_client):
    llm.push(tools(call("add", '{"a": 1,', id="t")), text("sorry"))
    events = await collect(make_client("anthropic").stream("x", kit(add_tool())))
    result = events[-1]["result"]
    assert result.tool_calls[0]["is_error"]
    assert "not valid JSON" in result.tool_calls[0]["output"]
    assert result.messages[1]["content"][0]["input"] == {}


@pytest.mark.parametrize("style", STYLES)
async def test_a_cut_stream_is_an_error_not_a_short_answer(llm, make_client, style):
    if style == "openai":
        sse = ['data: {"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}']
    else:
        sse = [
            'event: message_start\ndata: {"type":"message_start","message":{"usage":{}}}',
            'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
            '"content_block":{"type":"text","text":""}}',
            'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            '"delta":{"type":"text_delta","text":"Hel"}}',
        ]
    llm.push(Reply(sse=sse))
    with pytest.raises(ProviderError, match="stream ended before the response was complete"):
        await collect(make_client(style).stream("x"))


async def test_openai_stream_without_done_but_with_finish_reason_is_complete(llm, make_client):
    sse = [
        'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}',
        'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
    ]
    llm.push(Reply(sse=sse))
    events = await collect(make_client("openai").stream("x"))
    assert events[-1]["result"].text == "Hi"


@pytest.mark.parametrize("style", STYLES)
async def test_provider_ignoring_stream_true_still_works(llm, make_client, style):
    """A gateway that answers a streaming request with one JSON document."""
    llm.push(text("whole answer", ignore_stream=True))
    events = await collect(make_client(style).stream("x"))
    assert [e["type"] for e in events] == ["text", "usage", "done"]
    assert events[0]["delta"] == "whole answer"
    assert events[-1]["result"].text == "whole answer"


@pytest.mark.parametrize("style", STYLES)
async def test_every_usage_object_of_a_stream_counts(llm, make_client, style):
    # openai: each usage object is added; anthropic: `message_delta.usage` fields are running
    # totals that replace `message_start`'s (client.md §6).
    if style == "openai":
        sse = [
            'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],'
            '"usage":null}',
            'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
            '"usage":{"prompt_tokens":4,"completion_tokens":1}}',
            'data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,'
            '"total_tokens":13}}',
            "data: [DONE]",
        ]
        expected = {"prompt_tokens": 14, "completion_tokens": 4, "total_tokens": 18}
    else:
        sse = [
            'event: message_start\ndata: {"type":"message_start","message":'
            '{"usage":{"input_tokens":12,"output_tokens":1}}}',
            'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
            '"content_block":{"type":"text","text":""}}',
            'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            '"delta":{"type":"text_delta","text":"Hi"}}',
            'event: message_delta\ndata: {"type":"message_delta",'
            '"delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":6}}',
            'event: message_stop\ndata: {"type":"message_stop"}',
        ]
        expected = {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}
    llm.push(Reply(sse=sse))
    events = await collect(make_client(style).stream("x"))
    assert events[-2] == {"type": "usage", "usage": expected}
    assert events[-1]["result"].usage == expected


async def test_streamed_turns_reuse_one_connection(llm, make_client):
    llm.push(tools(call("add", {"a": 1, "b": 1})), text("2"), text("again"))
    client = make_client("anthropic")
    await collect(client.stream("x", kit(add_tool())))
    await collect(client.stream("y"))
    assert len(llm.requests) == 3
    assert llm.connections == 1


async def test_a_body_left_open_after_done_does_not_hold_the_run(llm, make_client):
    sse = [
        'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}',
        "data: [DONE]",
        ": the server never ends the body",
    ]
    llm.push(Reply(sse=sse, stall_after=2))
    events = await collect(make_client("openai").stream("x"))
    assert events[-1]["result"].text == "Hi"
    await llm.until(lambda: llm.disconnects >= 1)


async def test_anthropic_tool_use_blocks_count_only_with_stop_reason_tool_use(llm, make_client):
    ran = []

    async def add(args, ctx):
        ran.append(args)
        return "2"

    llm.push(tools(call("add", {"a": 1, "b": 1}, id="t1"), stop_reason="end_turn"))
    events = await collect(
        make_client("anthropic").stream("x", kit(Tool("add", "", None, "native", add)))
    )
    result = events[-1]["result"]
    assert ran == [] and result.tool_calls == [] and result.status == "done"
    assert result.messages[-1]["content"] == [
        {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 1}}
    ]
