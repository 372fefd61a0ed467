"""A scriptable fake LLM: a real HTTP/1.1 server on 127.0.0.1 speaking both wire styles.

It runs on its own thread and event loop, so sync tests, async tests and subprocesses (a CLI
pointed at `server.url`) can all use it. Script it per test with queued replies; each reply is
rendered in the style the request used (`…/chat/completions` ⇒ OpenAI, `…/messages` ⇒
Anthropic, `…/responses` ⇒ OpenAI responses; the library's own renderers, shared with
`toolnexus.testing`) and streamed as SSE when the request body has `"stream": true`::

    from support.fake_llm import FakeLLM, call, text, tools, error

    with FakeLLM() as llm:                          # or a session-scoped fixture
        llm.push(tools(call("add", {"a": 1, "b": 2})), text("3"))
        client = create_client(base_url=llm.url + "/v1", style="openai", model="m", api_key="k")
        ...
        assert llm.requests[0].body["model"] == "m"

Every request is recorded (`method`, `path`, lower-cased `headers`, decoded JSON `body`).
Transport behaviour per reply: `status`/`headers`/`body` for error answers, `delay` seconds
before answering, `hang` (never answer; wait for the client to go away), `stall_after` (stream N
events, then hang). `disconnects` counts connections the client closed while the server waited.
A request with nothing queued gets a 500 error body saying so. `close_after` closes the
connection after a (non-streamed) answer without announcing it, as a server dropping an idle
keep-alive connection does (`server_closes` counts them). `FakeLLM(ssl=context)` serves HTTPS.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import itertools
import json
import ssl as ssl_module
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from toolnexus.testing._replies import ReplyCall, ReplySpec, render_events, render_json

__all__ = [
    "Call",
    "FakeLLM",
    "RecordedRequest",
    "Reply",
    "call",
    "error",
    "raw",
    "text",
    "tools",
]


@dataclass
class Call:
    """A scripted tool call. `args` as a dict is JSON-encoded; a str is sent verbatim."""

    name: str
    args: Any = field(default_factory=dict)
    id: str | None = None


@dataclass
class Reply:
    """One scripted answer. Content fields render in the request's style; the rest shape HTTP."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)
    refusal: str = ""  # the model declines, saying this (each wire's refusal shape)
    # Anthropic blocks placed before the text, e.g. {"type": "thinking", "thinking": "…",
    # "signature": "…"} or {"type": "redacted_thinking", "data": "…"}; ignored for OpenAI.
    thinking: list[dict[str, Any]] = field(default_factory=list)
    # Responses reasoning items placed first, verbatim, e.g. {"type": "reasoning", "id": "rs_1",
    # "summary": [], "encrypted_content": "…"}; ignored by the other wires.
    reasoning: list[dict[str, Any]] = field(default_factory=list)
    # (prompt, completion) tokens, or a raw provider usage dict sent as is, or None (no usage).
    usage: tuple[int, int] | dict[str, Any] | None = (10, 5)
    stop_reason: str | None = None  # overrides finish_reason / stop_reason
    chunk_size: int = 0  # streaming: characters per text delta (0 ⇒ about three deltas)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # raw body: dict/list ⇒ JSON, str/bytes ⇒ as is (overrides content)
    sse: list[str] | None = None  # raw SSE event blocks (each without the final blank line)
    delay: float = 0.0  # seconds to wait before answering
    hang: bool = False  # never answer; wait until the client disconnects
    stall_after: int | None = None  # streaming: send this many events, then hang
    ignore_stream: bool = False  # answer a streaming request with one JSON document anyway
    close_after: bool = False  # close the connection after answering (no `Connection: close`)


def text(content: str, **kw: Any) -> Reply:
    """A final answer."""
    return Reply(text=content, **kw)


def call(name: str, args: Any = None, id: str | None = None) -> Call:
    return Call(name=name, args={} if args is None else args, id=id)


def tools(*calls: Call, **kw: Any) -> Reply:
    """A turn asking for tool calls (optionally with `text=` alongside)."""
    return Reply(calls=list(calls), **kw)


def error(status: int, message: str = "boom", *, headers: dict[str, str] | None = None) -> Reply:
    """An error answer with an error-shaped JSON body (both styles understand it)."""
    body = {"type": "error", "error": {"type": "api_error", "message": message}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


def raw(status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
    """Any status with any body."""
    return Reply(status=status, body=body, headers=dict(headers or {}))


@dataclass
class RecordedRequest:
    method: str
    path: str  # the request target, query string included
    headers: dict[str, str]  # lower-cased names
    raw: bytes
    body: Any  # decoded JSON, or None

    @property
    def style(self) -> str:
        path = self.path.split("?")[0]
        if path.endswith("/messages"):
            return "anthropic"
        return "openai-responses" if path.endswith("/responses") else "openai"


Handler = Callable[[RecordedRequest], Reply]


def _spec(reply: Reply, request: RecordedRequest, seq: int) -> ReplySpec:
    """The answer `reply` gives `request`, for the library's wire renderers."""
    body = request.body if isinstance(request.body, dict) else {}
    prefix = "toolu" if request.style == "anthropic" else "call"
    return ReplySpec(
        text=reply.text,
        calls=[
            ReplyCall(c.id or f"{prefix}_{seq}_{i}", c.name, c.args)
            for i, c in enumerate(reply.calls)
        ],
        refusal=reply.refusal,
        thinking=reply.thinking,
        reasoning=reply.reasoning,
        usage=reply.usage,
        stop_reason=reply.stop_reason,
        chunk_size=reply.chunk_size,
        model=str(body.get("model", "fake-model")),
        seq=seq,
        include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
    )


LIVE: weakref.WeakSet[FakeLLM] = weakref.WeakSet()
"""Every fake server of this process: `tests/conftest.py` checks each body they receive against
the official SDKs' request types after each test."""


class FakeLLM:
    """The server. Start with `start()` or `with FakeLLM() as llm:`; stop with `stop()`."""

    def __init__(self, ssl: ssl_module.SSLContext | None = None) -> None:
        self._ssl = ssl
        self._lock = threading.Lock()
        self._queue: deque[Reply | Handler] = deque()
        self._requests: list[RecordedRequest] = []
        self._unchecked: list[RecordedRequest] = []  # not yet checked against the SDK types
        LIVE.add(self)
        self._seq = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._conn_tasks: set[asyncio.Task[None]] = set()
        self.port = 0
        self.connections = 0  # TCP connections accepted (keep-alive reuse keeps this low)
        self.disconnects = 0  # clients that went away while the server was waiting/stalled
        self.server_closes = 0  # connections closed after a `close_after` reply

    # -- life cycle ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>` (`https` with `ssl`); add `/v1` for an OpenAI base URL."""
        scheme = "https" if self._ssl is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def start(self) -> FakeLLM:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._on_connect, "127.0.0.1", 0, ssl=self._ssl)
                )
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:  # surface bind errors to start()
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-llm", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._conn_tasks):
                task.cancel()
            await asyncio.gather(*self._conn_tasks, return_exceptions=True)
            loop.stop()

        asyncio.run_coroutine_threadsafe(shutdown(), loop)
        thread.join(timeout=10)
        self._loop = self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting -----------------------------------------------------------------------------

    def push(self, *replies: Reply | Handler) -> FakeLLM:
        """Queue replies (or callables `request -> Reply`), answered in order."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def reset(self) -> None:
        """Forget queued replies and recorded requests (counters too)."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self.disconnects = 0
            self.connections = 0
            self.server_closes = 0

    def take_unchecked(self) -> list[RecordedRequest]:
        """The requests received since the last call (each handed out once)."""
        with self._lock:
            taken, self._unchecked = self._unchecked, []
        return taken

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """Replies still queued."""
        with self._lock:
            return len(self._queue)

    def wait_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until at least `count` requests arrived (polling; raises on timeout)."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"fake LLM got {len(self.requests)} of {count} requests")
            time.sleep(0.005)
        return self.requests

    async def until_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """`wait_requests` for async tests (does not block the event loop)."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"fake LLM got {len(self.requests)} of {count} requests")
            await asyncio.sleep(0.005)
        return self.requests

    async def until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        """Poll `predicate` until true (e.g. `lambda: llm.disconnects >= 1`)."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError("fake LLM condition not reached")
            await asyncio.sleep(0.005)

    # -- the server ----------------------------------------------------------------------------

    def _next(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
            self._unchecked.append(request)
            item = self._queue.popleft() if self._queue else None
        if item is None:
            return error(500, "fake LLM: no scripted reply")
        if isinstance(item, Reply):
            return item
        return item(request)

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conn_tasks.add(task)
        with self._lock:
            self.connections += 1
        try:
            while await self._one_exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._conn_tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> RecordedRequest | None:
        line = await reader.readline()
        if not line:
            return None
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            h = await reader.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            name, _, value = h.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        data = b""
        if "content-length" in headers:
            data = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await reader.readline()
                    break
                parts.append(await reader.readexactly(size))
                await reader.readline()
            data = b"".join(parts)
        try:
            body = json.loads(data) if data else None
        except ValueError:
            body = None
        return RecordedRequest(method, target, headers, data, body)

    async def _until_closed(self, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(ConnectionError):  # a reset is a close too
            while await reader.read(65536):
                pass
        with self._lock:
            self.disconnects += 1

    async def _one_exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        request = await self._read_request(reader)
        if request is None:
            return False
        reply = self._next(request)
        seq = next(self._seq)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.hang:
            await self._until_closed(reader)
            return False
        spec = _spec(reply, request, seq)
        streaming = (
            isinstance(request.body, dict)
            and request.body.get("stream") is True
            and reply.body is None
            and reply.status == 200
            and not reply.ignore_stream
        )
        if not streaming:
            payload = reply.body if reply.body is not None else render_json(request.style, spec)
            if isinstance(payload, bytes):
                data = payload
            elif isinstance(payload, str):
                data = payload.encode()
            else:
                data = json.dumps(payload).encode()
            head = self._head(reply, "application/json", {"Content-Length": str(len(data))})
            writer.write(head + data)
            await writer.drain()
            if reply.close_after:
                writer.close()
                await writer.wait_closed()
                with self._lock:
                    self.server_closes += 1
                return False
            return True
        events = reply.sse if reply.sse is not None else render_events(request.style, spec)
        writer.write(self._head(reply, "text/event-stream", {"Transfer-Encoding": "chunked"}))
        try:
            for n, event in enumerate(events):
                if reply.stall_after is not None and n >= reply.stall_after:
                    await writer.drain()
                    await self._until_closed(reader)
                    return False
                data = (event + "\n\n").encode()
                writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                await writer.drain()
        except ConnectionError:
            # The client went away before the stall point (it stopped reading early): the
            # same observable close, reached sooner.
            with self._lock:
                self.disconnects += 1
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    @staticmethod
    def _head(reply: Reply, content_type: str, extra: dict[str, str]) -> bytes:
        try:
            phrase = http.HTTPStatus(reply.status).phrase
        except ValueError:
            phrase = "Status"
        lines = [f"HTTP/1.1 {reply.status} {phrase}", f"Content-Type: {content_type}"]
        lines += [f"{k}: {v}" for k, v in extra.items()]
        lines += [f"{k}: {v}" for k, v in reply.headers.items()]
        head = "\r\n".join(lines) + "\r\n\r\n"
        try:
            return head.encode("latin-1")
        except UnicodeEncodeError:  # a test sending a non-Latin-1 header value, e.g. "٢"
            return head.encode("utf-8")


@contextlib.contextmanager
def running() -> Iterator[FakeLLM]:
    """`with running() as llm:` — a started server, stopped on exit."""
    server = FakeLLM().start()
    try:
        yield server
    finally:
        server.stop()
