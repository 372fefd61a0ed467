"""The published package's synchronous `http_transport` seam runs our whole client loop.

Two kinds of transport, as hosts and test suites written against that seam have them: one
scripted in memory (canned JSON bodies and canned SSE bytes, no network), and our
`UrllibTransport` talking to the fake LLM server on loopback. Both wire styles, plain and
streamed, with tools, errors, retries and cancellation.
"""

from __future__ import annotations

import asyncio
import io
import json
import threading
import time
import urllib.error
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from support.client_helpers import STYLES, add_tool, base_url, kit
from support.fake_llm import FakeLLM, call, error, running, text, tools
from toolnexus import create_client
from toolnexus.client import (
    HttpTransport,
    InProcessTransport,
    ProviderError,
    RunTimeout,
    UrllibTransport,
)


@pytest.fixture(scope="module")
def llm_server() -> Iterator[FakeLLM]:
    with running() as server:
        yield server


@pytest.fixture
def llm(llm_server: FakeLLM) -> FakeLLM:
    llm_server.reset()
    return llm_server


# -- a scripted transport, as a host's test suite writes one ----------------------------------


def _openai_body(content: str | None, calls: list[tuple[str, dict[str, Any]]] = ()) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(calls)
        ]
    return {
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


def _anthropic_body(content: str | None, calls: list[tuple[str, dict[str, Any]]] = ()) -> dict:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
    blocks += [
        {"type": "tool_use", "id": f"c{i}", "name": n, "input": a} for i, (n, a) in enumerate(calls)
    ]
    return {
        "type": "message",
        "role": "assistant",
        "content": blocks,
        "stop_reason": "tool_use" if calls else "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }


def _openai_sse(content: str) -> bytes:
    events = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": piece}}]}
        for piece in (content[: len(content) // 2], content[len(content) // 2 :])
    ]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + (
        b"data: [DONE]\n\n"
    )


def _anthropic_sse(content: str) -> bytes:
    def ev(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    return b"".join(
        [
            ev("message_start", {"type": "message_start", "message": {"usage": {}}}),
            ev(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
            ),
            ev(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": content},
                },
            ),
            ev("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ev(
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
            ),
            ev("message_stop", {"type": "message_stop"}),
        ]
    )


class _LiveResponse(io.BytesIO):
    """What `open` returns: a response with `read1`/`read` and `close`."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.closed_by_client = False

    def read1(self, n: int = -1) -> bytes:  # small pieces, as a socket gives them
        return super().read1(min(n, 7) if n and n > 0 else 7)

    def close(self) -> None:
        self.closed_by_client = True
        super().close()


class HttpFailure(Exception):
    """An HTTP error the way the published seam describes one."""

    def __init__(self, status: int, body: str, retry_after: str | None = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.text = body
        self.retry_after = retry_after


class ScriptedTransport:
    """Blocking `post`/`open` answering from a script; records every call."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[str, str, dict[str, str], dict[str, Any], float]] = []
        self.threads: set[str] = set()
        self.opened: list[_LiveResponse] = []

    def _next(self, kind: str, url: str, headers: Any, payload: Any, timeout: float) -> Any:
        self.threads.add(threading.current_thread().name)
        self.calls.append((kind, url, headers, json.loads(json.dumps(payload)), timeout))
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        return self._next("post", url, headers, payload, timeout)

    def open(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> Any:
        response = _LiveResponse(self._next("open", url, headers, payload, timeout))
        self.opened.append(response)
        return response


BODY = {"openai": _openai_body, "anthropic": _anthropic_body}
SSE = {"openai": _openai_sse, "anthropic": _anthropic_sse}
URL = {"openai": "https://llm.example/v1", "anthropic": "https://llm.example"}


def _client(style: str, transport: Any, **options: Any) -> Any:
    options.setdefault("retry_base_ms", 1)
    return create_client(
        base_url=URL[style],
        style=style,
        model="m",
        api_key="sk-secret-key-123",
        http_transport=transport,
        **options,
    )


def test_the_protocol_is_the_published_one() -> None:
    assert isinstance(ScriptedTransport(), HttpTransport)
    assert isinstance(UrllibTransport(), HttpTransport)


@pytest.mark.parametrize("style", STYLES)
async def test_a_scripted_conversation_with_a_tool_call(style: str) -> None:
    transport = ScriptedTransport(
        BODY[style](None, [("add", {"a": 2, "b": 3})]), BODY[style]("The sum is 5.")
    )
    async with _client(style, transport) as client:
        result = await client.run("What is 2 + 3?", kit(add_tool()))
    assert result.text == "The sum is 5."
    assert [c["output"] for c in result.tool_calls] == ["5"]
    assert result.turns == 2 and result.status == "done"
    (kind, url, headers, first, timeout), second = transport.calls[0], transport.calls[1]
    assert kind == "post"
    assert url.endswith("/chat/completions" if style == "openai" else "/messages")
    assert "sk-secret-key-123" in json.dumps(headers)  # the key goes to the transport...
    assert first["model"] == "m" and "tools" in first
    assert timeout == 600.0  # seconds: read_timeout_ms' default
    # ...the second request carries the tool result back
    assert "5" in json.dumps(second[3]["messages"][-1])
    assert all(name.startswith("toolnexus-http-transport") for name in transport.threads)


@pytest.mark.parametrize("style", STYLES)
async def test_streaming_through_open(style: str) -> None:
    transport = ScriptedTransport(SSE[style]("Hello there, streamer"))
    async with _client(style, transport) as client:
        events = [e async for e in client.stream("hi")]
    deltas = "".join(e.get("delta", "") for e in events if e.get("type") == "text")
    assert deltas == "Hello there, streamer"
    assert events[-1]["type"] == "done"
    assert transport.calls[0][0] == "open" and transport.calls[0][3]["stream"] is True
    assert transport.opened[0].closed_by_client


@pytest.mark.parametrize("style", STYLES)
async def test_ask_with_on_text_streams_too(style: str) -> None:
    transport = ScriptedTransport(SSE[style]("streamed answer"))
    seen: list[str] = []
    async with _client(style, transport) as client:
        result = await client.ask("hi", on_text=seen.append)
    assert result.text == "streamed answer" == "".join(seen)


async def test_an_http_error_is_a_provider_error_and_retried() -> None:
    transport = ScriptedTransport(
        HttpFailure(429, '{"error": {"message": "slow down"}}', retry_after="0"),
        _openai_body("after the retry"),
    )
    async with _client("openai", transport, retries=1) as client:
        assert (await client.run("hi")).text == "after the retry"
    assert len(transport.calls) == 2


async def test_a_final_http_error_names_the_status_and_hides_the_key() -> None:
    echoed = '{"error": {"message": "bad key sk-secret-key-123"}}'
    transport = ScriptedTransport(HttpFailure(401, echoed))
    async with _client("openai", transport) as client:
        with pytest.raises(ProviderError) as caught:
            await client.run("hi")
    assert caught.value.status == 401
    assert "sk-secret-key-123" not in str(caught.value)
    assert "sk-secret-key-123" not in caught.value.body
    assert caught.value.text == caught.value.body  # the published package's name too
    assert caught.value.retry_after is None


async def test_retry_after_reaches_the_error_as_sent() -> None:
    transport = ScriptedTransport(HttpFailure(503, "busy", retry_after="7"))
    async with _client("openai", transport, retries=0) as client:
        with pytest.raises(ProviderError) as caught:
            await client.run("hi")
    assert (caught.value.status, caught.value.retry_after) == (503, "7")


async def test_urllib_http_errors_carry_their_status(llm: FakeLLM) -> None:
    llm.push(error(400, "no such model"))
    client = create_client(
        base_url=base_url(llm, "openai"),
        style="openai",
        model="m",
        api_key="k",
        http_transport=UrllibTransport(),
        retries=0,
    )
    with pytest.raises(ProviderError, match="no such model") as caught:
        await client.run("hi")
    assert caught.value.status == 400


async def test_a_network_error_is_retried_then_raised() -> None:
    transport = ScriptedTransport(OSError("connection reset"), _openai_body("ok"))
    async with _client("openai", transport, retries=1) as client:
        assert (await client.run("hi")).text == "ok"
    failing = ScriptedTransport(OSError("connection reset"), OSError("connection reset"))
    async with _client("openai", failing, retries=1) as client:
        with pytest.raises(Exception, match="connection reset"):
            await client.run("hi")


class BlockingTransport:
    """`post`/`open` block until released; a late stream is recorded to see it closed."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.late: list[_LiveResponse] = []

    def post(self, url: str, headers: Any, payload: Any, timeout: float) -> dict[str, Any]:
        self.entered.set()
        self.release.wait(10)
        return _openai_body("too late")

    def open(self, url: str, headers: Any, payload: Any, timeout: float) -> Any:
        self.entered.set()
        self.release.wait(10)
        response = _LiveResponse(_openai_sse("too late"))
        self.late.append(response)
        return response


async def test_the_run_deadline_ends_a_blocked_post_at_once() -> None:
    transport = BlockingTransport()
    async with _client("openai", transport, timeout_ms=200, retries=0) as client:
        started = time.monotonic()
        with pytest.raises(RunTimeout):
            await client.run("hi")
        assert time.monotonic() - started < 5  # generous: the thread still blocks
    transport.release.set()


async def test_cancel_ends_a_blocked_stream_and_closes_the_late_response() -> None:
    transport = BlockingTransport()
    cancel = asyncio.Event()
    async with _client("openai", transport, retries=0) as client:

        async def consume() -> list[dict[str, Any]]:
            return [e async for e in client.stream("hi", cancel=cancel)]

        task = asyncio.create_task(consume())
        await asyncio.to_thread(transport.entered.wait, 10)
        cancel.set()
        with pytest.raises(Exception) as caught:
            await asyncio.wait_for(task, 5)
        assert "cancel" in type(caught.value).__name__.lower()
    transport.release.set()
    deadline = time.monotonic() + 5
    while not (transport.late and transport.late[0].closed_by_client):
        assert time.monotonic() < deadline, "the late response was never closed"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("style", STYLES)
async def test_urllib_transport_end_to_end(llm: FakeLLM, style: str) -> None:
    llm.push(tools(call("add", {"a": 2, "b": 3})), text("5 it is"), text("streamed 5"))
    client = create_client(
        base_url=base_url(llm, style),
        style=style,
        model="m",
        api_key="k",
        http_transport=UrllibTransport(),
    )
    async with client:
        result = await client.run("2+3?", kit(add_tool()))
        assert result.text == "5 it is"
        assert [c["output"] for c in result.tool_calls] == ["5"]
        streamed: AsyncIterator[dict[str, Any]] = client.stream("again")
        events = [e async for e in streamed]
    assert "".join(e.get("delta", "") for e in events if e["type"] == "text") == "streamed 5"
    assert [r.style for r in llm.requests] == [style] * 3
    assert llm.requests[2].body["stream"] is True


def test_in_process_transport_speaks_the_published_protocol() -> None:
    transport = InProcessTransport(lambda request: {"content": f"got {len(request['messages'])}"})
    body = transport.post(
        "u", {}, {"model": "m", "messages": [{"role": "user", "content": "x"}]}, 1
    )
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "got 1"}
    with pytest.raises(NotImplementedError, match="does not support streaming"):
        transport.open("u", {}, {"model": "m", "messages": []}, 1)
    with pytest.raises(TypeError, match="callable `generate`"):
        InProcessTransport(None)  # type: ignore[arg-type]


async def test_in_process_transport_under_a_client() -> None:
    async with _client("openai", InProcessTransport(lambda r: {"content": "local"})) as client:
        assert (await client.run("hi")).text == "local"


def test_misuse_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match="blocking post"):
        _client("openai", object())
    with pytest.raises(ValueError, match="not both"):
        create_client(
            base_url=URL["openai"],
            style="openai",
            model="m",
            http_transport=UrllibTransport(),
            http_client=object(),  # type: ignore[arg-type]
        )


def test_urllib_http_error_shape_is_understood() -> None:
    # urllib's HTTPError has `code`, `read()` and `headers`: the seam's HTTP error shape
    exc = urllib.error.HTTPError("u", 503, "busy", {"Retry-After": "2"}, io.BytesIO(b"busy"))  # type: ignore[arg-type]
    assert exc.code == 503 and exc.read() == b"busy"
