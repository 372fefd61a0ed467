"""The blocking face of a client: runs its coroutines on an event loop in another thread.

A sync call runs where the toolkit's sessions live: on the toolkit's own loop when it has a
running one (`create_toolkit_sync`, a host loop in another thread), else on a loop this runner
starts once and keeps, so connections opened by one call are reused by the next. The calling
thread only waits, so the call works from code with no loop and from a running loop's worker
thread; Ctrl-C cancels the run (which unwinds, closing what it opened) and is re-raised.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

from toolnexus._aio import LoopThread
from toolnexus.errors import EventLoopError
from toolnexus.toolkit import Toolkit

__all__ = ["SyncRunner"]

T = TypeVar("T")

_UNWIND_SECONDS = 5.0
_WAKE_SECONDS = 0.2  # how long a cancelled run may take to close what it opened


class SyncRunner:
    """One client's loop thread (started on first use) and the toolkits that ran on it."""

    def __init__(self) -> None:
        self._thread: LoopThread | None = None
        self._lock = threading.Lock()
        self._toolkits: list[Toolkit] = []  # their resources were opened on our loop

    def loop_for(self, toolkit: Any) -> asyncio.AbstractEventLoop:
        """The loop a run with `toolkit` must use."""
        if isinstance(toolkit, Toolkit):
            home = toolkit.home_loop
            if home is not None and home.is_running() and not home.is_closed():
                return home
        loop = self._own_loop()
        if isinstance(toolkit, Toolkit) and all(t is not toolkit for t in self._toolkits):
            self._toolkits.append(toolkit)
        return loop

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._thread is None:
                self._thread = LoopThread()
            return self._thread.loop

    def call(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on `loop` and wait for it; Ctrl-C cancels it, then propagates."""
        _refuse_running_loop(coro)
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            # Waking now and then lets a Ctrl-C that did not interrupt the wait be seen.
            while not concurrent.futures.wait([future], timeout=_WAKE_SECONDS)[0]:
                pass
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            concurrent.futures.wait([future], timeout=_UNWIND_SECONDS)
            raise

    def iterate(
        self, loop: asyncio.AbstractEventLoop, events: AsyncGenerator[T, None]
    ) -> Iterator[T]:
        """`events` as a plain iterator; leaving it early closes the run."""
        try:
            while True:
                try:
                    item = self.call(loop, _anext(events))
                except StopAsyncIteration:
                    return
                yield item
        finally:
            self.call(loop, events.aclose())

    def close(self, aclose: Callable[[], Awaitable[None]]) -> None:
        """Run the client's `aclose`, close the toolkits that used our loop, stop the loop."""
        thread, self._thread = self._thread, None
        toolkits, self._toolkits = self._toolkits, []
        if thread is None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(_close_all(aclose, toolkits))
                return
            raise EventLoopError("close() was called inside a running event loop; await aclose()")
        try:
            self.call(thread.loop, _close_all(aclose, toolkits))
        finally:
            thread.stop()


async def _anext(events: AsyncGenerator[T, None]) -> T:
    return await events.__anext__()


async def _close_all(aclose: Callable[[], Awaitable[None]], toolkits: list[Toolkit]) -> None:
    try:
        for toolkit in toolkits:
            await toolkit.close()
    finally:
        await aclose()


def _refuse_running_loop(coro: Coroutine[Any, Any, Any]) -> None:
    """Blocking a thread that runs an event loop would stall everything on that loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    coro.close()
    raise EventLoopError(
        "a *_sync method was called inside a running event loop; await the async method "
        "there (or call it from a worker thread)"
    )
