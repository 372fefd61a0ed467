"""The library's async plumbing, one version of each: calling sync-or-async code, waiting on a
signal, bounding work by a signal and a deadline, and the background loop of the sync API."""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from toolnexus.errors import ToolnexusError

T = TypeVar("T")

__all__ = [
    "CancelSignal",
    "Expired",
    "LoopThread",
    "Signalled",
    "as_async",
    "bounded",
    "call_in_thread_maybe_async",
    "call_maybe_async",
    "cancelled_by",
    "is_async_callable",
    "mark_seen",
    "run_in_thread",
    "run_together",
    "until_signalled",
    "wait_signal",
]

# -- calling sync-or-async code ----------------------------------------------------------------


def is_async_callable(fn: Any) -> bool:
    """A coroutine function, or an object whose `__call__` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )


def as_async(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """`fn` as a coroutine function: an async one as it is, a sync one run in a worker thread
    (it may block), its result awaited when it is awaitable. Decide once, call many times."""
    if is_async_callable(fn):
        return fn
    return functools.partial(run_in_thread, fn)


async def run_in_thread(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Call sync `fn` in a worker thread (it may block); await its result if awaitable."""
    result = await asyncio.to_thread(fn, *args, **kwargs)
    if inspect.isawaitable(result):
        return await result
    return result


async def call_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    """Call `fn(*args)`; await the result when it is awaitable. Sync callables run inline
    (for quick callbacks such as hooks, where a thread hop would cost more than the call)."""
    result = fn(*args)
    if inspect.isawaitable(result):
        return await result
    return result


async def call_in_thread_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    """Like `call_maybe_async`, but a sync callable runs in a worker thread (it may block)."""
    return await as_async(fn)(*args)


# -- signals and deadlines ---------------------------------------------------------------------


class Signalled(ToolnexusError):
    """The awaited work was abandoned because its cancellation signal was set."""


class Expired(ToolnexusError, TimeoutError):
    """The awaited work was abandoned because its time budget ran out."""


_SIGNAL_POLL_SECONDS = 0.01


class CancelSignal(asyncio.Event):
    """An `asyncio.Event` that also calls back when set, so that work can be bounded by it in
    the caller's own task (`cancelled_by`) instead of a watcher task."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []

    def set(self) -> None:
        if self.is_set():
            return
        super().set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_set(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback()` once when the signal is set (now, if it is); returns its remover."""
        if self.is_set():
            callback()
            return _nothing
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove


def _nothing() -> None:
    return None


async def cancelled_by(work: Awaitable[T], signal: Any, *, unwind_s: float | None = None) -> T:
    """Await `work` until it finishes or `signal` is set (then `Signalled`).

    With a `CancelSignal` the work runs in the caller's task and setting the signal cancels it
    there, as a deadline would: for work that unwinds promptly when cancelled. Any other signal
    is watched beside the work (`bounded`, which waits `unwind_s` at most for it to unwind)."""
    if not isinstance(signal, CancelSignal):
        return await bounded(work, signal=signal, unwind_s=unwind_s)
    if signal.is_set():
        if inspect.iscoroutine(work):
            work.close()  # never started
        raise Signalled("cancelled")
    task = asyncio.current_task()
    assert task is not None
    fired = False

    def fire() -> None:
        nonlocal fired
        fired = True
        task.cancel()

    remove = signal.on_set(fire)
    try:
        result = await work
    except asyncio.CancelledError:
        if fired and task.uncancel() == 0:
            raise Signalled("cancelled") from None
        raise
    finally:
        remove()
    if fired:  # the work absorbed the cancellation: take it back, and it is cancelled all the same
        task.uncancel()
        raise Signalled("cancelled")
    return result


async def wait_signal(signal: Any) -> None:
    """Return once `signal.is_set()`: an `asyncio.Event` is awaited, anything else is polled."""
    if isinstance(signal, asyncio.Event):
        await signal.wait()
        return
    while not signal.is_set():  # noqa: ASYNC110 - e.g. a threading.Event offers nothing to await
        await asyncio.sleep(_SIGNAL_POLL_SECONDS)


async def bounded(
    work: Awaitable[T],
    *,
    signal: Any = None,
    timeout: float | None = None,
    unwind_s: float | None = None,
) -> T:
    """Await `work` until it finishes, `signal` is set (`Signalled`) or `timeout` seconds pass
    (`Expired`).

    Work that is cut short, or whose caller is cancelled, is cancelled in turn and waited for
    while it unwinds (close its connection, tell its server): at most `unwind_s` seconds, or as
    long as it takes with `None`. Without a signal the work runs in the caller's task.
    """
    if signal is None:
        if timeout is None:
            return await work
        scope = asyncio.timeout(timeout)
        try:
            async with scope:
                return await work
        except TimeoutError:
            if scope.expired():
                raise Expired(f"timed out after {timeout:g}s") from None
            raise
    task = asyncio.ensure_future(work)
    if signal.is_set():
        task.cancel()
    watcher = asyncio.ensure_future(wait_signal(signal))
    try:
        done, _ = await asyncio.wait(
            (task, watcher), timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
    except BaseException:
        await _abandon(task, unwind_s)
        raise
    finally:
        watcher.cancel()
    if task in done and not (task.cancelled() and signal.is_set()):
        return task.result()
    await _abandon(task, unwind_s)
    if signal.is_set():
        raise Signalled("cancelled")
    raise Expired(f"timed out after {timeout:g}s")


async def _abandon(task: asyncio.Future[Any], unwind_s: float | None) -> None:
    if task.done():
        return
    task.cancel()
    task.add_done_callback(mark_seen)
    await asyncio.wait((task,), timeout=unwind_s)


def mark_seen(future: asyncio.Future[Any]) -> None:
    """A done callback that marks a future's exception as seen, so asyncio never logs it as
    unretrieved: for a task nobody awaits any more, whose failure is reported elsewhere or
    superseded."""
    if not future.cancelled():
        future.exception()


async def until_signalled(work: Awaitable[T], signal: Any) -> T:
    """Await `work`; if `signal` is set first, cancel it and raise `Signalled`.

    `signal=None` just awaits. The work is always finished (or cancelled and awaited) on return.
    """
    return await bounded(work, signal=signal)


# -- running coroutines together -----------------------------------------------------------------


class _Together:
    """What `run_together`'s task callbacks share with it."""

    __slots__ = ("failure", "interrupted", "parent", "waiting")

    def __init__(self, parent: asyncio.Task[Any]) -> None:
        self.parent = parent
        self.waiting = True  # the caller is awaiting one of the coroutines: interrupt it
        self.failure: BaseException | None = None  # the first failure of a spawned coroutine
        self.interrupted = False  # the caller was cancelled for that failure

    def done(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or self.failure is not None:
            return
        failure = task.exception()
        if failure is None:
            return
        self.failure = failure
        if self.waiting:
            self.interrupted = True
            self.parent.cancel()


async def run_together(coros: list[Coroutine[Any, Any, T]]) -> list[T]:
    """Run `coros` concurrently; their results in order. As with a `TaskGroup`, the first
    failure cancels the others (each is awaited while it unwinds) and is raised, and cancelling
    the caller cancels them all.

    The first coroutine runs in the caller's task and the others in tasks of their own, started
    in order once it first waits: n coroutines cost n - 1 tasks. (Kept over a `TaskGroup` by
    measurement: the group costs about 2% more instructions per benchmark request.)"""
    if len(coros) <= 1:
        return [await coro for coro in coros]
    parent = asyncio.current_task()
    assert parent is not None
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(coro) for coro in coros[1:]]
    state = _Together(parent)
    for task in tasks:
        task.add_done_callback(state.done)
    try:
        first = await coros[0]
        for task in tasks:
            await task
    except BaseException as exc:
        state.waiting = False
        failure: BaseException = exc
        if state.interrupted and parent.uncancel() == 0 and state.failure is not None:
            failure = state.failure  # a spawned coroutine failed first: it is the error
        if await _unwind(tasks) and not isinstance(failure, asyncio.CancelledError):
            raise asyncio.CancelledError from None  # the caller was cancelled meanwhile
        if failure is exc:
            raise
        raise failure from None
    state.waiting = False
    return [first, *(task.result() for task in tasks)]


async def _unwind(tasks: list[asyncio.Task[Any]]) -> bool:
    """Cancel `tasks` and wait until each has finished; whether the caller was cancelled
    meanwhile (it still waits for them all, as a `TaskGroup` does)."""
    for task in tasks:
        task.cancel()
    cancelled = False
    while pending := [task for task in tasks if not task.done()]:
        try:
            await asyncio.wait(pending)
        except asyncio.CancelledError:
            cancelled = True
    for task in tasks:
        mark_seen(task)  # their failure is ours to report, or superseded
    return cancelled


# -- the background loop of the synchronous API ------------------------------------------------


class LoopThread:
    """A daemon thread running an event loop, for hosts that have none (`create_toolkit_sync`,
    `execute_sync` after the loop that built a toolkit is gone)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(started.set)
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, name="toolnexus-loop", daemon=True)
        self.thread.start()
        started.wait()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the loop and wait for its result (from another thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.loop.is_running():
            self.loop.close()
