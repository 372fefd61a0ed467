"""The published package's synchronous HTTP seam, accepted under our async client.

A host written against that seam hands `create_client(http_transport=...)` an object with a
blocking `post` (JSON in, parsed JSON out) and a blocking `open` (a live streaming response).
`ThreadedTransport` runs each call in a worker thread so the event loop never blocks; a run that
is cancelled or times out stops waiting at once, and a reply that arrives after that is closed
and dropped. Retries, hooks, metrics and streaming work as over `http_client`, which stays the
recommended seam.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import inspect
import json
import threading
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

from toolnexus._aio import mark_seen
from toolnexus._json import compact_json
from toolnexus.client._inprocess import STREAM_UNSUPPORTED, generate_request, to_completion
from toolnexus.client._transport import StreamBody, status_failure
from toolnexus.errors import (
    ConfigTypeError,
    ProviderConnectionError,
    ProviderError,
    StreamingUnsupported,
    UnsupportedOperation,
)
from toolnexus.types import error_message

__all__ = [
    "HttpTransport",
    "InProcessTransport",
    "ThreadedTransport",
    "UrllibTransport",
]

T = TypeVar("T")

_READ_SIZE = 65536


@runtime_checkable
class HttpTransport(Protocol):
    """A blocking HTTP seam (the published package's `HttpTransport`); `timeout` in seconds.

    `post` returns the parsed JSON body. An HTTP error is an exception carrying the status as
    an integer `status` (or `code`) attribute and the body (its `read()`, or a `text`/`body`
    attribute), optionally a `retry_after` string; any other exception is a network failure.
    `open` starts a streaming POST and returns a live response with `read1(n)` and/or `read(n)`
    and `close()`, yielding the server-sent-event bytes.
    """

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]: ...

    def open(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> Any: ...


class UrllibTransport:
    """An `HttpTransport` on the standard library's `urllib` (blocking, one connection per call).

    For hosts that want the published seam without a dependency; our client's own HTTP path
    (pooled, async) is faster.
    """

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        with urllib.request.urlopen(_request(url, headers, payload), timeout=timeout) as response:
            data = json.loads(response.read())
        if not isinstance(data, dict):
            raise ValueError(f"the response is a JSON {type(data).__name__}, not an object")
        return data

    def open(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> Any:
        return urllib.request.urlopen(_request(url, headers, payload), timeout=timeout)


def _request(
    url: str, headers: Mapping[str, str], payload: dict[str, Any]
) -> urllib.request.Request:
    all_headers = {"Content-Type": "application/json", **headers}
    return urllib.request.Request(
        url, data=compact_json(payload).encode(), headers=all_headers, method="POST"
    )


class InProcessTransport:
    """An `HttpTransport` answered by `generate(request)` in this process: each reply (one
    assistant turn, `{"content": ...}` or `{"tool_calls": [...]}`) comes back as an OpenAI
    chat-completions body. It does not stream.

    `create_in_process_client` does the same without threads; this class is for code that
    composes transports itself.
    """

    def __init__(self, generate: Callable[[dict[str, Any]], Any]) -> None:
        if not callable(generate):
            raise ConfigTypeError("InProcessTransport needs a callable `generate`")
        self._generate = generate

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        reply = self._generate(generate_request(payload))
        if inspect.isawaitable(reply):  # an async generate, called from a worker thread
            reply = asyncio.run(_awaited(reply))
        return to_completion(reply, str(payload.get("model")))

    def open(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> Any:
        raise StreamingUnsupported(STREAM_UNSUPPORTED)


async def _awaited(value: Any) -> Any:
    return await value


# -- the adapter ------------------------------------------------------------------------------

_executor: concurrent.futures.ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = concurrent.futures.ThreadPoolExecutor(
                thread_name_prefix="toolnexus-http-transport"
            )
        return _executor


async def _in_thread(
    fn: Callable[..., T], *args: Any, discard: Callable[[T], None] | None = None
) -> T:
    """`fn(*args)` in a worker thread. Cancelling the wait returns at once; what the call
    produces after that is handed to `discard` (to close a response nobody will read)."""
    done = _pool().submit(fn, *args)
    waiting = asyncio.wrap_future(done)
    try:
        return await asyncio.shield(waiting)
    except asyncio.CancelledError:
        waiting.add_done_callback(mark_seen)
        if discard is not None:
            done.add_done_callback(functools.partial(_discard_late, discard))
        raise


def _discard_late(discard: Callable[[Any], None], future: concurrent.futures.Future[Any]) -> None:
    if future.cancelled() or future.exception() is not None:
        return
    with contextlib.suppress(Exception):  # closing an abandoned response is best effort
        discard(future.result())


def _close(response: Any) -> None:
    close = getattr(response, "close", None)
    if callable(close):
        close()


def _status_of(exc: BaseException) -> int | None:
    for name in ("status", "code"):
        value = getattr(exc, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def _body_of(exc: BaseException) -> bytes:
    read = getattr(exc, "read", None)
    body: Any = None
    if callable(read):
        try:
            body = read()
        except Exception:
            body = None
    if body is None:
        body = getattr(exc, "text", None) or getattr(exc, "body", None) or ""
    if isinstance(body, str):
        return body.encode("utf-8", "replace")
    return body if isinstance(body, bytes) else str(body).encode("utf-8", "replace")


def _received_headers(exc: BaseException) -> dict[str, str]:
    received: dict[str, str] = {}
    headers = getattr(exc, "headers", None)
    if headers is not None and callable(getattr(headers, "items", None)):
        received.update({str(k): str(v) for k, v in headers.items()})
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        received["Retry-After"] = str(retry_after)
    return received


def _mapped(exc: Exception, url: str, sent: Mapping[str, str]) -> Exception:
    """A transport's exception as ours: an HTTP status ⇒ `ProviderError` (credentials the
    provider echoed are blanked), anything else ⇒ `ProviderConnectionError` (retried)."""
    status = _status_of(exc)
    if status is not None:
        return status_failure(status, _body_of(exc), sent, _received_headers(exc))
    return ProviderConnectionError(url, f"http_transport: {error_message(exc)}")


class _ThreadedStream:
    """A live response of `open`, read in worker threads."""

    __slots__ = ("_response", "_url", "is_json", "status")

    def __init__(self, response: Any, url: str) -> None:
        self._response = response
        self._url = url
        self.status = 200
        headers = getattr(response, "headers", None)
        content_type = ""
        if headers is not None and callable(getattr(headers, "get", None)):
            content_type = str(headers.get("content-type") or headers.get("Content-Type") or "")
        self.is_json = "json" in content_type

    async def _read(self) -> bytes:
        reader = getattr(self._response, "read1", None) or self._response.read
        try:
            chunk = await _in_thread(reader, _READ_SIZE)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            reason = f"http_transport stream: {error_message(exc)}"
            raise ProviderConnectionError(self._url, reason) from exc
        if isinstance(chunk, str):
            return chunk.encode()
        return bytes(chunk or b"")

    async def _chunks(self) -> AsyncIterator[bytes]:
        while True:
            chunk = await self._read()
            if not chunk:
                return
            yield chunk

    def chunks(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def finish(self) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        response, self._response = self._response, None
        if response is not None:
            await asyncio.shield(_in_thread(_close, response))


class ThreadedTransport:
    """Our transport interface over a synchronous `HttpTransport`, one worker thread per call."""

    transport_errors: tuple[type[BaseException], ...] = (ProviderConnectionError,)
    # Cancelling stops our wait at once; the thread's late answer is dropped.
    unwinds_promptly = True

    def __init__(self, target: Any, timeout_s: float) -> None:
        if not callable(getattr(target, "post", None)):
            raise ConfigTypeError(
                "http_transport must have a blocking post(url, headers, payload, timeout) "
                f"(and open(...) to stream), not {type(target).__name__}"
            )
        self._target = target
        self._timeout = timeout_s
        self.can_stream = callable(getattr(target, "open", None))

    async def post(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> tuple[int, Any, bytes]:
        sent = dict(headers)
        try:
            data = await _in_thread(self._target.post, url, sent, body, self._timeout)
        except asyncio.CancelledError:
            raise
        except NotImplementedError as exc:  # not a network failure: retrying cannot help
            reason = str(exc) or "this http_transport does not implement post()"
            raise UnsupportedOperation(reason) from exc
        except Exception as exc:
            raise _mapped(exc, url, sent) from exc
        if not isinstance(data, dict):
            raise ProviderError(
                200,
                "",
                provider_message=f"http_transport.post returned {type(data).__name__}, not a dict",
            )
        return 200, data, compact_json(data).encode()

    async def open_stream(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> StreamBody:
        if not self.can_stream:
            raise StreamingUnsupported("this http_transport has no open(): it cannot stream")
        sent = dict(headers)
        try:
            response = await _in_thread(
                self._target.open, url, sent, body, self._timeout, discard=_close
            )
        except asyncio.CancelledError:
            raise
        except NotImplementedError as exc:  # the transport's own way of saying it
            raise StreamingUnsupported(str(exc) or "this http_transport cannot stream") from exc
        except Exception as exc:
            raise _mapped(exc, url, sent) from exc
        return _ThreadedStream(response, url)

    async def aclose(self) -> None:
        return None  # the transport is the caller's: closing it is theirs too
