"""The pooled `httpx2.AsyncClient` shared by HTTP tools, webfetch, OpenAPI fetches and A2A.

One client per event loop (a client is bound to the loop that opened its connections). A toolkit
closes it on `close()`; the next use on that loop opens a fresh one.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx2

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def shared_client() -> httpx2.AsyncClient:
    """The pooled client of the running event loop, created on first use."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        import httpx2

        client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(30.0),
            limits=httpx2.Limits(max_connections=100, max_keepalive_connections=20),
            follow_redirects=True,
        )
        _clients[loop] = client
    return client


async def close_shared_client() -> None:
    """Close the running loop's pooled client, if one is open."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    client = _clients.pop(loop, None)
    if client is not None and not client.is_closed:
        await client.aclose()
