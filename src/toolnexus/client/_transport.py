"""How an LLM request leaves the process: one pooled `httpx2.AsyncClient` per `Client`."""

from __future__ import annotations

import asyncio
import functools
import json
import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import httpx2

from toolnexus._json import compact_json
from toolnexus.client._errors import ProviderConnectionError, ProviderError
from toolnexus.client._wire import CREDENTIAL_HEADERS

if TYPE_CHECKING:
    import httpcore2

    from toolnexus.client._pool import OwnedPool

__all__ = ["HttpTransport", "StreamBody", "Transport"]


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


class _HttpStream:
    """A streaming body: an httpx2 response's, or the pool's own (`body` of `OwnedPool`)."""

    __slots__ = ("_chunks", "_response", "_url", "is_json", "status")

    def __init__(
        self,
        response: httpx2.Response | httpx2.AsyncByteStream,
        status: int,
        content_type: str,
        url: str,
    ) -> None:
        self._response = response
        self._url = url
        # A body can be iterated only once.
        self._chunks = self._read(
            response.aiter_bytes()
            if isinstance(response, httpx2.Response)
            else aiter(response)  # the pool's body, sent without a content coding
        )
        self.status = status
        self.is_json = "json" in content_type

    async def _read(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        try:
            async for chunk in chunks:
                yield chunk
        except httpx2.TransportError as exc:
            raise unreachable(self._url, exc) from exc

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
        except (TimeoutError, httpx2.HTTPError, ProviderConnectionError):
            pass
        await self._response.aclose()

    async def aclose(self) -> None:
        await self._response.aclose()


@functools.cache
def _ssl_context() -> Any:
    """One verified TLS context per process: building one costs tens of milliseconds."""
    return httpx2.create_ssl_context()


_LIMITS = httpx2.Limits(max_connections=100, max_keepalive_connections=20)
# `httpx2.AsyncClient`'s default headers, but answers are asked for uncompressed: they are small,
# and undoing a coding costs more CPU than it saves (one a server applies anyway is undone).
_DEFAULT_HEADERS = {
    "Accept": "*/*",
    "Accept-Encoding": "identity",
    "Connection": "keep-alive",
    "User-Agent": f"python-httpx2/{httpx2.__version__}",
}
# Framing headers the pool path sets itself (Content-Length of the body it sends).
_FRAMING = frozenset({b"content-length", b"transfer-encoding"})


def _failure(
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
    except ValueError as exc:
        text = raw.decode("utf-8", "replace")
        raise ProviderError(status, text, f"response is not JSON ({exc})") from None


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str:
    """The first value of header `name` (lower-case) in a raw header list, `""` without one."""
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def _content_coded(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a response body carries a content coding (gzip, ...) to undo."""
    for name, value in headers:
        if name.lower() == b"content-encoding" and value.strip().lower() not in (b"", b"identity"):
            return True
    return False


def _env_proxy_set() -> bool:
    """Whether the environment names an HTTP proxy (what `httpx2.AsyncClient` would use)."""
    proxies = urllib.request.getproxies()
    return any(proxies.get(scheme) for scheme in ("http", "https", "all"))


class HttpTransport:
    """HTTP/1.1 keep-alive to the provider; every request of every run reuses the pool.

    Our own requests go straight to httpcore2's pool (`OwnedPool`), with URL and headers
    prepared once per endpoint: `AsyncClient.send` would add auth and redirect flows, cookie
    extraction, a log record and three header copies per request, none of which an LLM call
    uses. A caller-given client, or an environment that names a proxy, goes through
    `httpx2.AsyncClient` so its settings (auth, proxies, `NO_PROXY`) apply as usual.

    `read_timeout_s` is an idle read timeout: a long generation that keeps sending is never cut,
    a connection that goes silent ends with `httpx2.ReadTimeout`.
    """

    # A failure to reach the provider (refused, DNS, TLS, a broken or silent connection) is
    # raised as `ProviderConnectionError` naming the URL; httpx2's own error is its cause.
    transport_errors: tuple[type[BaseException], ...] = (ProviderConnectionError,)
    can_stream = True

    def __init__(self, client: httpx2.AsyncClient | None, read_timeout_s: float) -> None:
        self._given = client
        self.unwinds_promptly = client is None  # a caller's client may carry hooks of its own
        # What we own, bound to the loop it was made on: a client's connections belong to one
        # event loop, so a new loop gets a new pool.
        self._owned_client: httpx2.AsyncClient | None = None
        self._pool: OwnedPool | None = None
        self._owned_loop: asyncio.AbstractEventLoop | None = None
        self._timeout: httpx2.Timeout | None = None
        self._urls: dict[str, httpx2.URL] = {}
        self._headers: dict[tuple[tuple[str, str], ...], httpx2.Headers] = {}
        # (url, headers) → the pool's URL and raw headers (Host first, no Content-Length)
        self._prepared: dict[tuple[str, tuple[tuple[str, str], ...]], _Prepared] = {}
        self._own_timeout = httpx2.Timeout(30.0, read=read_timeout_s)
        self._extensions: dict[str, Any] = {"timeout": self._own_timeout.as_dict()}
        if client is not None:
            base = client.timeout
            self._timeout = httpx2.Timeout(
                connect=base.connect, read=read_timeout_s, write=base.write, pool=base.pool
            )

    def _sender(self) -> httpx2.AsyncClient | OwnedPool:
        """The caller's client, else our pool (or our own client when a proxy is configured)."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        if self._owned_loop is loop:
            if self._pool is not None:
                return self._pool
            if self._owned_client is not None and not self._owned_client.is_closed:
                return self._owned_client
        self._owned_loop = loop
        self._headers.clear()  # merged with the previous sender's default headers
        if _env_proxy_set():
            self._pool = None
            self._owned_client = httpx2.AsyncClient(
                verify=_ssl_context(), timeout=self._own_timeout, limits=_LIMITS
            )
            return self._owned_client
        from toolnexus.client._pool import OwnedPool  # httpcore2: on the first request

        self._owned_client = None
        self._prepared.clear()
        self._pool = OwnedPool(_ssl_context(), _LIMITS)
        return self._pool

    def _pool_request(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> httpcore2.Request:
        """The pool's request: URL and headers prepared once per endpoint, then the body."""
        import httpcore2

        key = (url, tuple(headers.items()))
        prepared = self._prepared.get(key)
        if prepared is None:
            if len(self._prepared) > 32:
                self._prepared.clear()
            prepared = self._prepared[key] = _prepare(url, headers)
        content = compact_json(body).encode()
        return httpcore2.Request(
            b"POST",
            prepared.url,
            headers=[*prepared.headers, (b"Content-Length", b"%d" % len(content))],
            content=content,
            extensions=self._extensions,
        )

    def _client_request(
        self, client: httpx2.AsyncClient, url: str, headers: Mapping[str, str], body: Any
    ) -> httpx2.Request:
        content = compact_json(body).encode()
        parsed = self._urls.get(url)
        if parsed is None:
            parsed = self._urls[url] = httpx2.URL(url)
        if client is self._given:
            # The caller's client may carry its own headers, cookies or auth: let it merge them.
            return client.build_request(
                "POST", parsed, content=content, headers=headers, timeout=self._timeout
            )
        # Our proxy client has nothing to merge but its default headers, done once per header
        # set: `build_request` would re-parse and re-merge everything on every call.
        key = tuple(headers.items())
        merged = self._headers.get(key)
        if merged is None:
            if len(self._headers) > 32:
                self._headers.clear()
            merged = self._headers[key] = httpx2.Headers(client.headers)
            merged.update(headers)
        return httpx2.Request(
            "POST", parsed, content=content, headers=merged, extensions=self._extensions
        )

    async def post(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> tuple[int, Any, bytes]:
        try:
            return await self._post(url, headers, body)
        except httpx2.TransportError as exc:
            raise unreachable(url, exc) from exc

    async def open_stream(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> StreamBody:
        try:
            return await self._open_stream(url, headers, body)
        except httpx2.TransportError as exc:
            raise unreachable(url, exc) from exc

    async def _post(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> tuple[int, Any, bytes]:
        sender = self._sender()
        if not isinstance(sender, httpx2.AsyncClient):
            answer = await sender.send(self._pool_request(url, headers, body))
            raw = await sender.read(answer)
            status = answer.status
            if _content_coded(answer.headers):  # compressed although we asked it not to be
                coded = httpx2.Response(
                    status, headers=answer.headers, stream=httpx2.ByteStream(raw)
                )
                raw = await coded.aread()  # httpx2's decoders undo it
            if not 200 <= status < 300:
                raise _failure(status, raw, headers, httpx2.Headers(answer.headers))
            return status, _decode(status, raw), raw
        response = await sender.send(self._client_request(sender, url, headers, body), stream=True)
        try:
            raw = await response.aread()
        finally:
            await response.aclose()
        status = response.status_code
        if not 200 <= status < 300:
            raise _failure(status, raw, headers, response.headers)
        return status, _decode(status, raw), raw

    async def _open_stream(
        self, url: str, headers: Mapping[str, str], body: dict[str, Any]
    ) -> StreamBody:
        sender = self._sender()
        if isinstance(sender, httpx2.AsyncClient):
            request = self._client_request(sender, url, headers, body)
            response = await sender.send(request, stream=True)
        else:
            answer = await sender.send(self._pool_request(url, headers, body))
            if 200 <= answer.status < 300 and not _content_coded(answer.headers):
                content_type = _header(answer.headers, b"content-type")
                return _HttpStream(sender.body(answer), answer.status, content_type, url)
            response = sender.as_httpx(answer)
        status = response.status_code
        if not 200 <= status < 300:
            try:
                raw = await response.aread()
            finally:
                await response.aclose()
            raise _failure(status, raw, headers, response.headers)
        return _HttpStream(response, status, response.headers.get("content-type", ""), url)

    async def aclose(self) -> None:
        pool, client = self._pool, self._owned_client
        self._pool = self._owned_client = None
        self._owned_loop = None
        if pool is not None:
            await pool.aclose()
        if client is not None and not client.is_closed:
            await client.aclose()


class _Prepared:
    """What every request to one endpoint with one header set shares."""

    __slots__ = ("headers", "url")

    def __init__(self, url: httpcore2.URL, headers: list[tuple[bytes, bytes]]) -> None:
        self.url = url
        self.headers = headers


def _prepare(url: str, headers: Mapping[str, str]) -> _Prepared:
    """The pool's URL and headers: `Host` (unless given), the defaults, then `headers`.

    httpx2 parses and normalises them, as for any request it sends.
    """
    import httpcore2

    parsed = httpx2.URL(url)
    merged = httpx2.Headers(_DEFAULT_HEADERS)
    merged.update(headers)
    raw = [(name, value) for name, value in merged.raw if name.lower() not in _FRAMING]
    if "host" not in merged:
        raw.insert(0, (b"Host", parsed.netloc))
    target = httpcore2.URL(
        scheme=parsed.raw_scheme, host=parsed.raw_host, port=parsed.port, target=parsed.raw_path
    )
    return _Prepared(target, raw)
