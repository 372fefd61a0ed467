"""One run's deadline and cancellation: what aborts in-flight work and what tools observe."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable
from typing import Any, TypeVar

from toolnexus._aio import CancelSignal, mark_seen
from toolnexus.client._errors import RunCancelled, RunTimeout
from toolnexus.types import ToolContext

__all__ = ["RunScope"]

T = TypeVar("T")

# How long an aborted operation gets to unwind (close its HTTP connection, cancel its tool)
# before the run raises anyway. Bounded so a task that swallows cancellation cannot hang us.
_UNWIND_S = 1.0


class RunScope:
    """The `timeout_ms` deadline and `cancel` event of one run.

    `signal` is set when either fires; tools get it through their `Context` (a run with neither
    gives tools no signal: nothing could set it, and a tool that watches one would pay for a
    watcher on every call). `race()` runs an awaitable in a task of its own and aborts it
    (cancelling that task, hence its HTTP request or tool) when either fires; `inline()` does the
    same in the caller's task, for work that unwinds at once.
    """

    __slots__ = (
        "_abort",
        "_kind",
        "_timer",
        "_watch",
        "cancel",
        "deadline",
        "signal",
        "timeout_ms",
    )

    def __init__(self, timeout_ms: float | None, cancel: asyncio.Event | None) -> None:
        loop = asyncio.get_running_loop()
        self.timeout_ms = timeout_ms
        self.cancel = cancel
        self.deadline = loop.time() + timeout_ms / 1000 if timeout_ms is not None else None
        self.signal: asyncio.Event | None = None  # only a run that can be aborted has one
        self._kind: str | None = None
        self._abort: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._watch: asyncio.Task[None] | None = None
        if self.deadline is None and cancel is None:
            return
        # A CancelSignal lets an MCP call be bounded in its own task (no watcher task per call).
        self.signal = CancelSignal()
        self._abort = loop.create_future()
        if self.deadline is not None:
            self._timer = loop.call_at(self.deadline, self._fire, "timeout")
        if cancel is not None:
            if cancel.is_set():
                self._fire("cancel")
            else:
                self._watch = loop.create_task(self._watch_cancel(cancel))

    async def _watch_cancel(self, cancel: asyncio.Event) -> None:
        await cancel.wait()
        self._fire("cancel")

    def _fire(self, kind: str) -> None:
        if self._kind is None:
            self._kind = kind
            if self.signal is not None:
                self.signal.set()
            if self._abort is not None and not self._abort.done():
                self._abort.set_result(None)

    def error(self) -> Exception:
        """The exception the run raises for the abort that fired."""
        if self._kind == "timeout":
            return RunTimeout(self.timeout_ms or 0)
        return RunCancelled()

    @property
    def aborted(self) -> bool:
        if self._kind is None and self.cancel is not None and self.cancel.is_set():
            self._fire("cancel")
        return self._kind is not None

    def check(self) -> None:
        """Raise `RunTimeout`/`RunCancelled` when the run is already aborted."""
        if self.aborted:
            raise self.error()

    def time_left(self) -> float | None:
        """Seconds left before the deadline (never negative), `None` without one."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - asyncio.get_running_loop().time())

    def tool_context(self, answer: Any = None, deps: Any = None) -> ToolContext:
        timeout = self.time_left() if self.deadline is not None else None
        return ToolContext(signal=self.signal, timeout=timeout, answer=answer, deps=deps)

    def _refuse_if_aborted(self, awaitable: Awaitable[Any]) -> None:
        """Raise the run's error when it is aborted already; `awaitable` is closed unstarted
        rather than leaked un-awaited."""
        if self.aborted:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            raise self.error()

    def race(self, awaitable: Awaitable[T]) -> Awaitable[T]:
        """`awaitable`, aborted when the deadline passes or `cancel` is set (it runs in a task
        of its own). Given back as it is when nothing can abort the run: no wrapper to await."""
        abort = self._abort
        if abort is None:  # no deadline and no `cancel`: the run cannot be aborted at all
            return awaitable
        self._refuse_if_aborted(awaitable)
        return self._race(awaitable, abort)

    def inline(self, awaitable: Awaitable[T]) -> Awaitable[T]:
        """`race` without a task: `awaitable` runs in the caller's task, which the abort cancels.

        For work that unwinds as soon as it is cancelled (the client's own HTTP I/O, a sleep):
        it saves a task and a wait per call, but nothing bounds an awaitable that ignores its
        cancellation, so user code (tools, `wait_for`, a caller's HTTP client) goes to `race`.
        """
        abort = self._abort
        if abort is None:
            return awaitable
        self._refuse_if_aborted(awaitable)
        return self._inline(awaitable, abort)

    async def _race(self, awaitable: Awaitable[T], abort: asyncio.Future[None]) -> T:
        task = asyncio.ensure_future(awaitable)
        try:
            await asyncio.wait((task, abort), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait((task,), timeout=_UNWIND_S)
        if not task.done():
            task.add_done_callback(mark_seen)
        raise self.error()

    async def _inline(self, awaitable: Awaitable[T], abort: asyncio.Future[None]) -> T:
        task = asyncio.current_task()
        assert task is not None
        state = [True, False]  # [still awaiting, abort delivered]

        def on_abort(_: asyncio.Future[None]) -> None:
            # A callback already scheduled when the await ends must not cancel what follows.
            if state[0]:
                state[1] = True
                task.cancel()

        abort.add_done_callback(on_abort)
        try:
            result = await awaitable
        except asyncio.CancelledError:
            if state[1] and task.uncancel() == 0:  # ours alone, not the caller's cancellation
                raise self.error() from None
            raise
        finally:
            state[0] = False
            abort.remove_done_callback(on_abort)
        if state[1]:  # the awaitable absorbed the cancellation: the run is aborted all the same
            task.uncancel()
            raise self.error()
        return result

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._watch is not None:
            self._watch.cancel()
