"""The one bound on every response body the library reads: its size once decoded, counted
while it is read.

`limit_body` takes over a response's body before anything reads it: the content coding
(gzip, deflate, br, zstd) is undone here, in httpx2's own decoders (which inflate in pieces of
at most 1 MiB), and the decoded bytes are counted as they arrive. Past the limit the read
fails with `BodyTooLarge`: a small compressed answer that would inflate to gigabytes stops at
the limit, never after inflating. The response then carries no `Content-Encoding` (its body
is already decoded), so httpx2 reads it as it is.

For an event stream (`text/event-stream`) `per_event=True` bounds each event (the bytes since
the last blank line) instead of the whole stream, for streams meant to stay open (MCP's).

`bounding_hook` installs it on an `httpx2.AsyncClient` as a response hook; a caller that sends
prepared requests on a hot path calls `limit_body` itself.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

import httpx2

from toolnexus.errors import ConfigError, ToolnexusError

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "MAX_RESPONSE_BYTES_ENV",
    "BodyTooLarge",
    "EventTooLarge",
    "bounding_hook",
    "limit_body",
    "tool_body_limit",
]

DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
MAX_RESPONSE_BYTES_ENV = "TOOLNEXUS_MAX_RESPONSE_BYTES"
_EVENT_ENDS = (b"\n\n", b"\r\r", b"\r\n\r\n")


class BodyTooLarge(ToolnexusError, httpx2.DecodingError):
    """A response body (or one event of an event stream) grew past its limit while read (an
    `httpx2.DecodingError` too, so code reading through httpx2 stops as for a bad body)."""


class EventTooLarge(BodyTooLarge, httpx2.SSEError):
    """One event of an event stream grew past its limit (an `SSEError` too, as the event
    stream readers built on httpx2 expect of a stream that cannot go on)."""


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


def tool_body_limit() -> int:
    """The limit for the toolkit's own reads (HTTP tools, OpenAPI specs, A2A, webfetch):
    `$TOOLNEXUS_MAX_RESPONSE_BYTES` when set, else 64 MiB."""
    value = os.environ.get(MAX_RESPONSE_BYTES_ENV, "").strip()
    if not value:
        return DEFAULT_MAX_RESPONSE_BYTES
    try:
        limit = int(value)
    except ValueError:
        limit = 0
    if limit < 1024:
        raise ConfigError(f"{MAX_RESPONSE_BYTES_ENV} must be a whole number >= 1024, not {value!r}")
    return limit


class _LimitedBody(httpx2.AsyncByteStream):
    __slots__ = ("_limit", "_message", "_per_event", "_raw", "_source")

    def __init__(
        self,
        raw: httpx2.AsyncByteStream,
        decoded: AsyncGenerator[bytes, None] | None,
        limit: int,
        per_event: bool,
        message: str,
    ) -> None:
        self._raw = raw
        self._source = decoded
        self._limit = limit
        self._per_event = per_event
        self._message = message

    async def __aiter__(self) -> AsyncIterator[bytes]:
        source = self._source if self._source is not None else self._raw.__aiter__()
        limit = self._limit
        count = 0
        tail = b""
        async for chunk in source:
            if self._per_event:
                data = tail + chunk
                end = -1
                for mark in _EVENT_ENDS:
                    at = data.rfind(mark)
                    if at >= 0:
                        end = max(end, at + len(mark))
                count = count + len(chunk) if end < 0 else len(data) - end
                tail = data[-3:]
            else:
                count += len(chunk)
            if count > limit:
                raise (EventTooLarge if self._per_event else BodyTooLarge)(self._message)
            yield chunk

    async def aclose(self) -> None:
        if self._source is not None:
            await self._source.aclose()  # closes the raw body in turn
        await self._raw.aclose()


def limit_body(
    response: httpx2.Response, limit: int, hint: str, *, per_event: bool = False
) -> None:
    """Bound `response`'s body (not yet read) to `limit` decoded bytes; `hint` says how to
    raise the limit, for the error. `per_event` bounds each event of an event stream instead."""
    raw = response.stream
    if not isinstance(raw, httpx2.AsyncByteStream):
        return  # a sync or already-read body: nothing streams in through us
    per_event = per_event and "text/event-stream" in response.headers.get("content-type", "")
    what = "an event of the response stream" if per_event else "the response body"
    message = f"{what} is larger than the {_size(limit)} limit; {hint}"
    decoded: AsyncGenerator[bytes, None] | None = None
    headers = response.headers
    if "content-encoding" in headers:
        # Decode here with httpx2's decoders, through a response of our own over the raw body.
        coded = httpx2.Response(
            response.status_code, headers=headers.copy(), stream=raw, request=response.request
        )
        decoded = coded.aiter_bytes()
        del headers["content-encoding"]
        headers.pop("content-length", None)
    response.stream = _LimitedBody(raw, decoded, limit, per_event, message)


def bounding_hook(
    limit: int, hint: str, *, per_event: bool = False
) -> Callable[[httpx2.Response], Awaitable[None]]:
    """A response hook for `httpx2.AsyncClient(event_hooks={"response": [...]})` that bounds
    every response's body as `limit_body` does."""

    async def bound(response: httpx2.Response) -> None:
        limit_body(response, limit, hint, per_event=per_event)

    return bound
