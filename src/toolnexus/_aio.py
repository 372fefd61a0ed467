"""Small async helpers: call sync-or-async callbacks, run blocking work off the event loop."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from toolnexus.errors import ToolnexusError

T = TypeVar("T")


async def call_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    """Call `fn(*args)`; await the result when it is awaitable. Sync callables run inline."""
    result = fn(*args)
    if inspect.isawaitable(result):
        return await result
    return result


async def call_in_thread_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    """Like `call_maybe_async`, but a sync callable runs in a worker thread (it may block)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    result = await asyncio.to_thread(fn, *args)
    if inspect.isawaitable(result):
        return await result
    return result


class Signalled(ToolnexusError):
    """The awaited work was abandoned because its cancellation signal was set."""


_SIGNAL_POLL_SECONDS = 0.01


async def wait_signal(signal: Any) -> None:
    """Return once `signal.is_set()`: an `asyncio.Event` is awaited, anything else is polled."""
    if isinstance(signal, asyncio.Event):
        await signal.wait()
        return
    while not signal.is_set():  # noqa: ASYNC110 - e.g. a threading.Event offers nothing to await
        await asyncio.sleep(_SIGNAL_POLL_SECONDS)


async def until_signalled(work: Awaitable[T], signal: Any) -> T:
    """Await `work`; if `signal` is set first, cancel it and raise `Signalled`.

    `signal=None` just awaits. The work is always finished (or cancelled and awaited) on return.
    """
    if signal is None:
        return await work
    task = asyncio.ensure_future(work)
    if signal.is_set():
        task.cancel()
    watcher = asyncio.ensure_future(wait_signal(signal))
    try:
        await asyncio.wait((task, watcher), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait((task,))  # let the work unwind (close its connection)
    if task.cancelled() and signal.is_set():
        raise Signalled("cancelled")
    return task.result()
