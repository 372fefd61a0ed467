"""`/healthz` and `/readyz`: what a load balancer or orchestrator asks a replica.

`/healthz` answers 200 while the process serves requests. `/readyz` answers 200 when every
store the replica depends on (the A2A task store and the conversation store) answers a ping
within `READY_TIMEOUT_S`, else 503 naming the store that did not (never its password). Both
are plain GETs without the bearer token, so probes need no credential; they reveal nothing
but that state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from toolnexus.errors import ToolnexusError

__all__ = ["PROBE_PATHS", "READY_TIMEOUT_S", "health_routes", "store_ready"]

PROBE_PATHS = frozenset({"/healthz", "/readyz"})
READY_TIMEOUT_S = 2.0


async def store_ready(store: Any) -> str | None:
    """`None` when `store` answers (or has nothing to ask), else why it did not."""
    ping = getattr(store, "ping", None)
    if not callable(ping):
        return None
    try:
        async with asyncio.timeout(READY_TIMEOUT_S):
            await ping()
    except TimeoutError:
        name = getattr(store, "name", type(store).__name__)
        return f"{name}: no answer within {READY_TIMEOUT_S:g} s"
    except ToolnexusError as exc:  # our messages name the store without its password
        return str(exc)
    except Exception as exc:
        name = getattr(store, "name", type(store).__name__)
        return f"{name}: {type(exc).__name__}"
    return None


def health_routes(stores: Sequence[Any]) -> list[BaseRoute]:
    """The two probe routes, `/readyz` checking `stores` concurrently."""

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        reasons = [r for r in await asyncio.gather(*(store_ready(s) for s in stores)) if r]
        if reasons:
            return JSONResponse({"status": "unavailable", "reasons": reasons}, status_code=503)
        return JSONResponse({"status": "ready"})

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
    ]
