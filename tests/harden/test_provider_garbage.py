"""Malformed provider responses, each one forced: every run ends in a `ProviderError` naming what
was wrong, or the model gets an `is_error` result it can act on — never a bare Python error.
Also the stream reader's cap on one event."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from support.serve_hardening import QuietHandler, threaded_http
from toolnexus.client import create_client
from toolnexus.errors import ProviderError
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool

DEEP = "[" * 100_000 + "]" * 100_000


def chat(message: dict[str, Any]) -> bytes:
    return json.dumps({"choices": [{"message": message, "finish_reason": "stop"}]}).encode()


def sse(*events: Any) -> bytes:
    out = b""
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        out += f"data: {data}\n\n".encode()
    return out


def delta(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": fields}]}


# name -> (wire, streamed, body). Each body is what a broken provider answers.
CASES: dict[str, tuple[str, bool, bytes]] = {
    "tool_calls-not-a-list": ("openai", False, chat({"role": "assistant", "tool_calls": {"a": 1}})),
    "tool_call-not-an-object": ("openai", False, chat({"role": "assistant", "tool_calls": [1]})),
    "function-not-an-object": (
        "openai", False, chat({"role": "assistant", "tool_calls": [{"id": "c", "function": 3}]})
    ),
    "name-not-a-string": (
        "openai", False,
        chat({"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": ["t"]}}]}),
    ),
    "body-nested-too-deep": ("openai", False, ('{"choices":' + DEEP + "}").encode()),
    "choices-not-a-list": ("openai", False, b'{"choices": "nope"}'),
    "content-parts-odd": (
        "openai", False, chat({"role": "assistant", "content": [{"type": "text", "text": 5}]})
    ),
    "stream-arguments-object": (
        "openai", True,
        sse(delta(tool_calls=[{"index": 0, "id": "c", "function": {"name": "t", "arguments": {}}}]),
            "[DONE]"),
    ),
    "stream-index-list": (
        "openai", True,
        sse(delta(tool_calls=[{"index": [0], "function": {"name": "t"}}]), "[DONE]"),
    ),
    "stream-tool_calls-string": ("openai", True, sse(delta(tool_calls="t"), "[DONE]")),
    "stream-event-nested-too-deep": ("openai", True, sse('{"choices":' + DEEP + "}", "[DONE]")),
    "anthropic-content-not-a-list": ("anthropic", False, b'{"content": {"type": "text"}}'),
    "anthropic-text-not-a-string": (
        "anthropic", False,
        b'{"content": [{"type": "text", "text": {"x": 1}}], "stop_reason": "end_turn"}',
    ),
    "anthropic-stream-index-list": (
        "anthropic", True,
        sse({"type": "content_block_start", "index": [1], "content_block": {"type": "text"}},
            {"type": "message_stop"}),
    ),
    "anthropic-stream-json-not-a-string": (
        "anthropic", True,
        sse({"type": "content_block_start", "index": 0,
             "content_block": {"type": "tool_use", "id": "c", "name": "t", "input": {}}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "input_json_delta", "partial_json": {"a": 1}}},
            {"type": "message_stop"}),
    ),
}  # fmt: skip


CALLS: dict[str, int] = {}  # requests seen per case


class _Garbage(QuietHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        case = self.path.split("/")[1]
        turn = CALLS[case] = CALLS.get(case, 0) + 1
        if case == "deep-arguments":
            body = (
                chat({"role": "assistant", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "t", "arguments": DEEP}}
                ]})
                if turn == 1
                else chat({"role": "assistant", "content": "recovered"})
            )  # fmt: skip
            kind = "application/json"
        elif case == "huge-line":
            body = b"data: " + b"x" * (20 << 20)
            kind = "text/event-stream"
        else:
            _, streamed, body = CASES[case]
            kind = "text/event-stream" if streamed else "application/json"
        self.reply(200, kind, body)


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    with threaded_http(_Garbage) as port:
        yield f"http://127.0.0.1:{port}"


def toolkit() -> Toolkit:
    return Toolkit(extra_tools=[Tool("t", "a tool", None, "native", lambda a, c: "ran")])


@pytest.mark.parametrize("case", list(CASES))
async def test_a_malformed_response_is_a_provider_error(provider: str, case: str) -> None:
    wire, streamed, _ = CASES[case]
    base = f"{provider}/{case}" + ("/v1" if wire == "anthropic" else "")
    client = create_client(base_url=base, style=wire, model="m", api_key="k" * 12, retries=0)
    with pytest.raises(ProviderError) as info:
        if streamed:
            async for _ in client.stream("hi", toolkit()):
                pass
        else:
            await client.run("hi", toolkit())
    assert info.value.provider_message, str(info.value)  # it says what was wrong


async def test_arguments_nested_too_deep_reach_the_model_as_an_error(provider: str) -> None:
    client = create_client(
        base_url=f"{provider}/deep-arguments", style="openai", model="m", api_key="k" * 12
    )
    result = await client.run("hi", toolkit())
    assert result.text == "recovered"
    tool_messages = [m for m in result.messages if m.get("role") == "tool"]
    assert "nested too deeply" in str(tool_messages[0]["content"])


async def test_a_stream_line_over_the_cap_is_refused(provider: str) -> None:
    client = create_client(
        base_url=f"{provider}/huge-line", style="openai", model="m", api_key="k" * 12, retries=0
    )
    with pytest.raises(ProviderError) as info:
        async for _ in client.stream("hi"):
            pass
    assert "over" in str(info.value)
