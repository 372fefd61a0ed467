"""How an LLM request leaves the process: one pooled `httpx2.AsyncClient` per `Client`.

`Transport` is what the model seam (`_endpoint.py`) sends one attempt through; `HttpxTransport`
is the HTTP one. Every LLM request goes through an `httpx2.AsyncClient`: the caller's, or one
of our own (`toolnexus._http.new_client`: on `Http1Transport`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol, cast

import httpx2

from toolnexus._body_limit import DEFAULT_MAX_RESPONSE_BYTES, BodyTooLarge, limit_body
from toolnexus._http import new_client
from toolnexus._json import request_json
from toolnexus.client._errors import ProviderConnectionError, ProviderError
from toolnexus.client._wire import CREDENTIAL_HEADERS
from toolnexus.errors import WireFormatError

__all__ = ["HttpxTransport", "StreamBody", "Transport", "status_failure"]


class StreamBody(Protocol):
    """An open streaming response whose status was 2xx."""

    status: int
    is_json: bool  # the provider ignored `stream: true` and sent one JSON document

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def finish(self) -> None:
        """Close after the stream's end marker was read (keeps the connection when it can)."""
        ...

    async def aclose(self) -> None: ...


class Transport(Protocol):
    """Sends one assembled body; a non-2xx answer raises `ProviderError`."""

    transport_errors: tuple[type[BaseException], ...]
    can_stream: bool
    # Cancelling a request ends it at once (no caller-supplied code runs inside it), so a run's
    # deadline may cancel it in the run's own task (`RunScope.inline`).
    unwinds_promptly: bool

    async def post(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> tuple[int, Any, bytes]: ...

    async def open_stream(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> StreamBody: ...

    async def aclose(self) -> None: ...


# How long the rest of a body may take after the stream's end marker before it is cut off.
_DRAIN_S = 0.25


def unreachable(url: str, exc: BaseException) -> ProviderConnectionError:
    """The error for a transport failure on `url` (its cause is `exc`)."""
    return ProviderConnectionError(url, str(exc) or type(exc).__name__)


def too_large(status: int, exc: BodyTooLarge) -> ProviderError:
    """The error for a reply past `max_response_bytes` (read no further)."""
    return ProviderError(status, "", provider_message=str(exc))


def _raw(response: httpx2.Response) -> httpx2.AsyncByteStream:
    """The body as received: no decoder and no chunker between the pool and us."""
    return cast(httpx2.AsyncByteStream, response.stream)


class _HttpStream:
    """The body of a 2xx streaming response."""

    __slots__ = ("_chunks", "_response", "_url", "is_json", "status")

    def __init__(self, response: httpx2.Response, status: int, content_type: str, url: str) -> None:
        self._response = response
        self._url = url
        # A body can be iterated only once; `limit_body` decoded any content coding already.
        chunks = aiter(_raw(response))
        self._chunks = self._read(chunks)
        self.status = status
        self.is_json = "json" in content_type

    async def _read(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        try:
            async for chunk in chunks:
                yield chunk
        except httpx2.TransportError as exc:
            raise unreachable(self._url, exc) from exc
        except BodyTooLarge as exc:
            raise too_large(self.status, exc) from None

    def chunks(self) -> AsyncIterator[bytes]:
        return self._chunks

    async def finish(self) -> None:
        # Read what follows `[DONE]`/`message_stop` (normally just the end of the chunked body):
        # a response closed unread also closes its connection, and the next turn would pay for
        # a new one. A server that goes on sending or stalls is cut off instead.
        try:
            async with asyncio.timeout(_DRAIN_S):
                async for _ in self._chunks:
                    pass
        except (TimeoutError, httpx2.HTTPError, ProviderConnectionError, ProviderError):
            pass  # the reply is complete: what follows it is not read, whatever it is
        await self._response.aclose()

    async def aclose(self) -> None:
        await self._response.aclose()


_NO_AUTH = httpx2.Auth()  # what `AsyncClient` uses when neither it nor the URL has credentials
_LIMITS = httpx2.Limits(max_connections=100, max_keepalive_connections=20)
# `httpx2.AsyncClient`'s default headers, but answers are asked for uncompressed: they are small,
# and undoing a coding costs more CPU than it saves (one a server applies anyway is undone).
_DEFAULT_HEADERS = {
    "Accept": "*/*",
    "Accept-Encoding": "identity",
    "Connection": "keep-alive",
    "User-Agent": f"python-httpx2/{httpx2.__version__}",
}


def status_failure(
    status: int, raw: bytes, sent: Mapping[str, str], received: Mapping[str, str]
) -> ProviderError:
    """The error for a non-2xx answer; a credential the provider echoed back is blanked out."""
    text = raw.decode("utf-8", "replace")
    for name, value in sent.items():
        if name.lower() in CREDENTIAL_HEADERS:
            secret = value[7:] if value[:7].lower() == "bearer " else value
            if len(secret) >= 8:  # shorter is no secret, and blanking it would garble the text
                text = text.replace(secret, "[redacted]")
    return ProviderError(status, text, headers=received)


def _decode(status: int, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except RecursionError:
        text = raw.decode("utf-8", "replace")[:2000]
        raise ProviderError(
            status, text, provider_message="response is nested too deeply to decode"
        ) from None
    except ValueError as exc:
        text = raw.decode("utf-8", "replace")
        raise ProviderError(
            status, text, provider_message=f"response is not JSON ({exc})"
        ) from None


class HttpxTransport:
    """HTTP/1.1 keep-alive to the provider through one `httpx2.AsyncClient` (not
    `toolnexus.HttpTransport`, the published blocking seam in `_blocking.py`).

    The client is the caller's `http_client` (never closed here) or one of our own, made per
    event loop (a client's connections belong to the loop that opened them) on
    `Http1Transport` and closed by `aclose`. Requests are built once per endpoint and header
    set, then sent with the body: `AsyncClient.build_request` would re-parse and re-merge the
    URL and headers on every call.

    `read_timeout_s` is an idle read timeout: a long generation that keeps sending is never cut,
    a connection that goes silent fails with `ProviderConnectionError` (cause `ReadTimeout`).
    A reply, whole or streamed, longer than `max_response_bytes` once decoded fails with
    `ProviderError` as soon as it grows past that.
    """

    # A failure to reach the provider (refused, DNS, TLS, a broken or silent connection) is
    # raised as `ProviderConnectionError` naming the URL; httpx2's own error is its cause.
    transport_errors: tuple[type[BaseException], ...] = (ProviderConnectionError,)
    can_stream = True

    def __init__(
        self,
        client: httpx2.AsyncClient | None,
        read_timeout_s: float,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self._given = client
        self._max_bytes = max_response_bytes
        self.unwinds_promptly = client is None  # a caller's client may carry hooks of its own
        self._read_timeout_s = read_timeout_s
        self._owned: httpx2.AsyncClient | None = None
        self._owned_frames = False  # the owned client adds a body's Content-Length itself
        self._owned_loop: asyncio.AbstractEventLoop | None = None
        self._urls: dict[str, tuple[httpx2.URL, httpx2.Auth]] = {}
        self._headers: dict[tuple[tuple[str, str], ...], httpx2.Headers] = {}
        timeout = client.timeout if client is not None else httpx2.Timeout(30.0)
        self._extensions: dict[str, Any] = {
            "timeout": httpx2.Timeout(
                connect=timeout.connect, read=read_timeout_s, write=timeout.write, pool=timeout.pool
            ).as_dict()
        }

    def _client(self) -> httpx2.AsyncClient:
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        owned = self._owned
        if owned is None or self._owned_loop is not loop or owned.is_closed:
            # A client left on another loop cannot be closed from this one; its loop's end
            # releases its sockets.
            timeout = httpx2.Timeout(30.0, read=self._read_timeout_s)
            owned, self._owned_frames = new_client(timeout=timeout, limits=_LIMITS)
            self._owned = owned
            self._owned_loop = loop
            self._headers.clear()  # merged with that client's default headers
        return owned

    def _target(self, url: str) -> tuple[httpx2.URL, httpx2.Auth]:
        """The parsed `url` and the auth `AsyncClient` would derive from it (Basic auth from
        its userinfo, else none), both worked out once rather than per request."""
        known = self._urls.get(url)
        if known is None:
            if len(self._urls) > 32:
                self._urls.clear()
            parsed = httpx2.URL(url)
            username, password = parsed.username, parsed.password
            auth = httpx2.BasicAuth(username, password) if username or password else _NO_AUTH
            known = self._urls[url] = (parsed, auth)
        return known

    async def _send(
        self, client: httpx2.AsyncClient, url: str, headers: Mapping[str, str], body: Any
    ) -> httpx2.Response:
        try:
            content = request_json(body).encode()
        except ValueError as exc:  # NaN/Infinity (in a schema, request_params, ...), a cycle
            raise WireFormatError(f"the request body cannot be sent as JSON: {exc}") from None
        parsed, auth = self._target(url)
        if client is self._given:
            # The caller's client may carry its own headers, cookies or auth: let it merge them.
            request = client.build_request(
                "POST", parsed, content=content, headers=headers, extensions=self._extensions
            )
            return self._bounded(await client.send(request, stream=True))
        key = tuple(headers.items())
        merged = self._headers.get(key)
        if merged is None:
            if len(self._headers) > 32:
                self._headers.clear()
            merged = httpx2.Headers({"Host": parsed.netloc.decode("ascii")})
            merged.update(_DEFAULT_HEADERS)
            merged.update(headers)
            self._headers[key] = merged
        # A prepared request: `content=` would re-derive Host and the framing headers per call.
        request = httpx2.Request(
            "POST",
            parsed,
            headers=merged,
            stream=httpx2.ByteStream(content),
            extensions=self._extensions,
        )
        if not self._owned_frames:  # with the same headers every time, our transport's checked
            request.headers["Content-Length"] = str(len(content))  # head is reused as it is
        return self._bounded(await client.send(request, stream=True, auth=auth))

    def _bounded(self, response: httpx2.Response) -> httpx2.Response:
        limit_body(response, self._max_bytes, "raise it with create_client(max_response_bytes=...)")
        return response

    async def post(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> tuple[int, Any, bytes]:
        client = self._client()
        try:
            response = await self._send(client, url, headers, body)
            try:
                # The body as bounded and decoded (`limit_body`): no other decoder or chunker
                # between the pool and us.
                parts = [part async for part in _raw(response)]
                raw = parts[0] if len(parts) == 1 else b"".join(parts)
            finally:
                await response.aclose()
        except httpx2.TransportError as exc:
            raise unreachable(url, exc) from exc
        except BodyTooLarge as exc:
            raise too_large(response.status_code, exc) from None
        status = response.status_code
        if not 200 <= status < 300:
            raise status_failure(status, raw, headers, response.headers)
        return status, _decode(status, raw), raw

    async def open_stream(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> StreamBody:
        client = self._client()
        try:
            response = await self._send(client, url, headers, body)
            status = response.status_code
            if not 200 <= status < 300:
                try:
                    raw = await response.aread()
                finally:
                    await response.aclose()
                raise status_failure(status, raw, headers, response.headers)
        except httpx2.TransportError as exc:
            raise unreachable(url, exc) from exc
        except BodyTooLarge as exc:
            raise too_large(response.status_code, exc) from None
        return _HttpStream(response, status, response.headers.get("content-type", ""), url)

    async def aclose(self) -> None:
        owned, self._owned, self._owned_loop = self._owned, None, None
        if owned is not None and not owned.is_closed:
            await owned.aclose()
