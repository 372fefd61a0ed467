"""The library's own `httpx2.AsyncClient`s: how they are made, and the pooled ones of HTTP
tools, webfetch, OpenAPI fetches and A2A calls.

Each toolkit owns its clients (`HttpClients`, one per event loop: a client's connections
belong to the loop that opened them) and closes only those. A tool finds the client of the
toolkit it runs in through `shared_client()`; outside any toolkit it gets a process-wide one
that no toolkit closes. The LLM client keeps clients of its own (`client/_transport.py`).
Every one of them is made by `new_client`.
"""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from typing import TYPE_CHECKING, Any

from toolnexus._otel import request_hooks
from toolnexus._tls import ssl_context

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "HttpClients",
    "call_owner",
    "new_client",
    "shared_client",
]


def _env_proxy_set() -> bool:
    """Whether the environment names an HTTP proxy (what `httpx2.AsyncClient` would use)."""
    import urllib.request

    proxies = urllib.request.getproxies()
    return any(proxies.get(scheme) for scheme in ("http", "https", "all"))


def new_client(
    *, timeout: httpx2.Timeout, limits: httpx2.Limits, **options: Any
) -> tuple[httpx2.AsyncClient, bool]:
    """An `httpx2.AsyncClient` of ours (`options` as `AsyncClient` takes them), and whether it
    runs on `Http1Transport`, which frames a request body sent whole by itself (a request built
    by hand may leave out its Content-Length).

    It runs on `Http1Transport`, our HTTP/1.1 pool on asyncio; with a proxy named in the
    environment, on httpx2's own transport instead (only it applies `HTTP(S)_PROXY` and
    `NO_PROXY`). TLS uses the process's context, built on the first `https` request.
    """
    import httpx2

    if _env_proxy_set():
        client = httpx2.AsyncClient(verify=ssl_context(), timeout=timeout, limits=limits, **options)
        return client, False
    from toolnexus._http1 import Http1Transport

    transport = Http1Transport(ssl_context, limits)
    return httpx2.AsyncClient(transport=transport, timeout=timeout, limits=limits, **options), True


class HttpClients:
    """The HTTP clients one owner made, one per event loop; `aclose` closes only those."""

    __slots__ = ("__weakref__", "_clients")

    def __init__(self) -> None:
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> httpx2.AsyncClient:
        """The running loop's client, created on first use (and again after `aclose`)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            import httpx2

            from toolnexus._body_limit import MAX_RESPONSE_BYTES_ENV, bounding_hook, tool_body_limit

            hooks = request_hooks()
            # Every body these clients read is bounded once decoded (a decompression bomb stops
            # at the limit): HTTP tools, OpenAPI specs, A2A cards and answers, webfetch.
            hint = f"raise it with the environment variable {MAX_RESPONSE_BYTES_ENV}"
            hooks["response"] = [bounding_hook(tool_body_limit(), hint)]
            client, _ = new_client(
                timeout=httpx2.Timeout(30.0),
                limits=httpx2.Limits(max_connections=100, max_keepalive_connections=20),
                follow_redirects=True,
                event_hooks=hooks,
            )
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close the running loop's client, if one is open (another loop's closes with it)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        client = self._clients.pop(loop, None)
        if client is not None and not client.is_closed:
            await client.aclose()


call_owner: contextvars.ContextVar[HttpClients | None] = contextvars.ContextVar(
    "toolnexus_http_owner", default=None
)
"""The HTTP clients of the toolkit whose tool call is running (set by `Toolkit.execute`). They
also stand for that toolkit where a tool must know it: `bash` files what it leaves running under
them, for `Toolkit.close` to end."""

_unowned = HttpClients()


def shared_client() -> httpx2.AsyncClient:
    """The pooled client for the running tool: its toolkit's, else the process-wide one."""
    owner = call_owner.get()
    return (owner if owner is not None else _unowned).get()
