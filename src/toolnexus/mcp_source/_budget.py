"""`CallBudget`: the time budgets of one MCP tool call, kept apart from the SDK.

A call has an idle budget, restarted by each progress notification, and a hard cap; time a
person spends answering an input request counts against neither. The budget of the call a
request is sent for is `_CALL_BUDGET`, so an OAuth sign-in made for it can pause it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from toolnexus._aio import Signalled, call_maybe_async, cancelled_by
from toolnexus._log import logger
from toolnexus._numbers import format_number
from toolnexus.mcp_source._errors import CallCancelled, CallTimedOut
from toolnexus.types import Signal, error_message

T = TypeVar("T")

_CANCEL_SETTLE = 1.0  # how long an abandoned call may take to send its courtesy cancel
# The budget of the tool call a request is sent for. The SDK's HTTP transports send each request
# in its sender's context, so an OAuth sign-in made for a call's request can find it and stop it.
_CALL_BUDGET: ContextVar[CallBudget | None] = ContextVar("toolnexus_mcp_call_budget", default=None)


class CallBudget:
    """The two time budgets of one tool call: `idle` (seconds), restarted by each progress
    notification, and the `hard` cap, which nothing extends. Time between rounds (a host
    answering an input request) counts against neither."""

    def __init__(
        self, idle: float, hard: float, on_progress: Callable[[dict[str, Any]], Any] | None
    ) -> None:
        self.idle = idle
        self.hard = hard
        self.spent = 0.0
        self.ran_out = idle  # the budget that ended the call, for the message
        self._on_progress = on_progress
        self._hard_end = math.inf
        self._held = 0.0  # seconds of this round a person was being asked (not spent)
        self._bound: asyncio.Timeout | None = None

    def _deadline(self, now: float) -> float:
        idle_end = now + self.idle
        if self._hard_end <= idle_end:
            self.ran_out = self.hard
            return self._hard_end
        self.ran_out = self.idle
        return idle_end

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The SDK's progress callback: extend the idle budget, tell the host."""
        bound = self._bound
        if bound is None:
            return  # the round already ended
        bound.reschedule(self._deadline(asyncio.get_running_loop().time()))
        callback = self._on_progress
        if callback is not None:
            event = {"progress": progress, "total": total, "message": message}
            try:
                await call_maybe_async(callback, event)
            except Exception as exc:
                logger.debug("[toolnexus] on_progress raised; ignored: %s", error_message(exc))

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Neither budget runs inside this block (a person is being asked)."""
        bound = self._bound
        if bound is None:
            yield
            return
        loop = asyncio.get_running_loop()
        began = loop.time()
        when = bound.when()
        left = math.inf if when is None else when - began
        bound.reschedule(None)
        try:
            yield
        finally:
            held = loop.time() - began
            self._hard_end += held
            self._held += held
            if self._bound is bound and left != math.inf:
                bound.reschedule(loop.time() + left)

    async def run(self, call: Awaitable[T], signal: Signal | None) -> T:
        """Await one round of the call within what is left of the budgets.

        Timing out or `signal` cancels the round, which makes the SDK send the server
        `notifications/cancelled`."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        self._hard_end = started + max(0.0, self.hard - self.spent)
        bound = asyncio.timeout_at(self._deadline(started))
        self._bound = bound
        self._held = 0.0
        token = _CALL_BUDGET.set(self)
        try:
            async with bound:
                if signal is None:
                    return await call
                return await _until_signal(call, signal)
        except TimeoutError:
            if bound.expired():
                raise CallTimedOut from None
            raise
        finally:
            _CALL_BUDGET.reset(token)
            self._bound = None
            self.spent += loop.time() - started - self._held


async def _until_signal(call: Awaitable[T], signal: Signal) -> T:
    try:
        return await cancelled_by(call, signal, unwind_s=_CANCEL_SETTLE)
    except Signalled:
        raise CallCancelled from None


def format_ms(seconds: float) -> str:
    """Seconds as milliseconds (`0.3` ⇒ `300`)."""
    return format_number(seconds * 1000)
