"""Bounded fuzzing of the served endpoints (MCP `/mcp`, A2A `POST /`): JSON-RPC envelopes with
odd ids (NaN, Infinity, huge numbers, lone surrogates), odd methods and params, deep nesting,
batches and raw bytes. Wanted for every request: no 5xx, no traceback text, and the server
still answering afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.serve_hardening import ServedInThread

FUZZ = settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
ROUTES = ["/mcp", "/"]
MCP_METHODS = ["initialize", "tools/list", "tools/call", "ping", "resources/list",
               "notifications/initialized", "prompts/get", "logging/setLevel"]  # fmt: skip
A2A_METHODS = ["SendMessage", "GetTask", "CancelTask", "message/send", "tasks/get",
               "tasks/cancel", "ListTasks", "SendStreamingMessage"]  # fmt: skip

# Text with lone surrogates, controls and astral characters (json.dumps escapes them).
TEXT = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.characters(max_codepoint=0x7F),
        st.characters(min_codepoint=0x10000, max_codepoint=0x1F9FF),
    ),
    max_size=20,
)
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e308, -0.0]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)


def envelope(method: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    message = st.fixed_dictionaries(
        {"jsonrpc": st.sampled_from(["2.0", "2.0", "1.0", 2])},
        optional={
            "id": st.one_of(SCALARS, st.lists(SCALARS, max_size=2)),
            "method": st.one_of(method, TEXT),
            "params": JSON,
        },
    )
    return message


def a2a_message() -> st.SearchStrategy[dict[str, Any]]:
    part = st.fixed_dictionaries({"kind": st.sampled_from(["text", "file", "data"]), "text": TEXT})
    msg = st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "agent", "ROLE_USER", 3]),
            "parts": st.lists(part, max_size=2),
            "messageId": TEXT,
        },
        optional={"contextId": TEXT, "taskId": TEXT},
    )
    return st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "id": SCALARS,
            "method": st.sampled_from(A2A_METHODS),
            "params": st.one_of(
                st.fixed_dictionaries({"message": msg}), st.fixed_dictionaries({"id": TEXT})
            ),
        }
    )


def nested(depth: int, kind: str) -> str:
    inner = "[" * depth + "]" * depth if kind == "list" else '{"a":' * depth + "1" + "}" * depth
    return '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":' + inner + "}"


@pytest.fixture(scope="module")
def served() -> Iterator[ServedInThread]:
    server = ServedInThread()
    yield server
    server.close()


@pytest.fixture(scope="module")
def http() -> Iterator[httpx2.Client]:
    with httpx2.Client(timeout=30) as client:
        yield client


def check(http: httpx2.Client, url: str, path: str, body: bytes) -> None:
    response = http.post(url + path, content=body, headers=HEADERS)
    assert response.status_code < 500, (response.status_code, body[:200], response.text[:300])
    assert "Traceback" not in response.text, response.text[:300]
    if response.headers.get("content-type", "").startswith("application/json") and response.text:
        json.loads(response.text, parse_constant=_no_constant)


def _no_constant(token: str) -> Any:
    raise AssertionError(f"{token} in the output")


def alive(http: httpx2.Client, url: str) -> None:
    listing = http.post(
        url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers=HEADERS,
    )
    assert listing.status_code == 200 and "echo" in listing.text
    assert http.get(url + "/.well-known/agent-card.json").status_code == 200


def dump(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


@pytest.mark.parametrize("path", ROUTES)
def test_envelopes(served: ServedInThread, http: httpx2.Client, path: str) -> None:
    methods = st.sampled_from(MCP_METHODS if path == "/mcp" else A2A_METHODS)

    @FUZZ
    @given(envelope(methods))
    def run(message: dict[str, Any]) -> None:
        check(http, served.url, path, dump(message))

    run()
    alive(http, served.url)


@pytest.mark.parametrize("path", ROUTES)
def test_batches(served: ServedInThread, http: httpx2.Client, path: str) -> None:
    methods = st.sampled_from(MCP_METHODS if path == "/mcp" else A2A_METHODS)

    @FUZZ
    @given(st.lists(envelope(methods), max_size=5))
    def run(batch: list[dict[str, Any]]) -> None:
        check(http, served.url, path, dump(batch))

    run()
    alive(http, served.url)


def test_a2a_messages(served: ServedInThread, http: httpx2.Client) -> None:
    @FUZZ
    @given(a2a_message())
    def run(message: dict[str, Any]) -> None:
        check(http, served.url, "/", dump(message))

    run()
    alive(http, served.url)


@pytest.mark.parametrize("path", ROUTES)
def test_raw_bodies(served: ServedInThread, http: httpx2.Client, path: str) -> None:
    @FUZZ
    @given(
        st.one_of(st.binary(max_size=200), TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")))
    )
    def run(body: bytes) -> None:
        check(http, served.url, path, body)

    run()
    alive(http, served.url)


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize("kind", ["list", "object"])
@pytest.mark.parametrize("depth", [100, 5_000, 200_000])
def test_deep_nesting(
    served: ServedInThread, http: httpx2.Client, path: str, kind: str, depth: int
) -> None:
    check(http, served.url, path, nested(depth, kind).encode())
    alive(http, served.url)
