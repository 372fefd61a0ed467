"""Host calls to the DBOS system database, each bounded in time.

DBOS's `*_async` host calls query the database on the event loop or on the loop's default
executor, so a database that stops answering (a paused server, a dead network path) would hold
the caller, or the whole loop, and even the process's exit. Each call here runs DBOS's
synchronous form on a daemon thread of its own and is given up after `timeout_s`: the caller
gets `StoreError` then, the loop keeps serving, and the abandoned thread ends whenever the
database answers. These calls are few (a host reading a pending request, answering, cancelling),
so a thread each costs nothing that matters.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

from toolnexus.errors import StoreError

__all__ = ["DEFAULT_DB_TIMEOUT_S", "bounded"]

DEFAULT_DB_TIMEOUT_S = 30.0
"""How long a host call to the DBOS system database may take before it fails."""

T = TypeVar("T")


async def bounded(call: Callable[[], T], workflow_id: str, timeout_s: float) -> T:
    """`call()` (a synchronous DBOS call) on a thread of its own; `StoreError` naming the run
    when it takes longer than `timeout_s`. Its own errors are raised as they are."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if done.done():
            return  # given up on already
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        try:
            result, error = call(), None
        except BaseException as exc:  # handed to the caller, whatever it is
            result, error = None, exc
        # A loop closed meanwhile raises RuntimeError: nobody waits for this answer then.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name="toolnexus-dbos-call", daemon=True).start()
    try:
        async with asyncio.timeout(timeout_s):
            return await done
    except TimeoutError:
        raise StoreError(
            f"the DBOS system database did not answer within {timeout_s:g} s "
            f"(durable run {workflow_id!r})"
        ) from None
