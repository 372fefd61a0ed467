"""Following the task a `tools/call` was answered with, to the call's outcome (see `_tasks`).

`follow` polls the task (`tasks/get` every `pollIntervalMs`) within the call's hard time cap
and its signal (either sends `tasks/cancel`), reports each new `statusMessage` as progress,
answers `inputRequests` like an input round (`tasks/update`) or suspends the call for the host,
and records the task in the call's `TaskLedger` so another process can take over (`recalled`).
Imported with the SDK.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from typing import Any, Protocol

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolnexus._aio import Signalled, call_maybe_async, cancelled_by
from toolnexus._log import logger
from toolnexus._task_ledger import current_ledger
from toolnexus.mcp_source import _input
from toolnexus.mcp_source._budget import CallBudget
from toolnexus.mcp_source._connection import Connection
from toolnexus.mcp_source._errors import CallCancelled, CallTimedOut
from toolnexus.mcp_source._results import map_call_result
from toolnexus.mcp_source._tasks import TaskHandle, cancel_task, get_task, update_task
from toolnexus.types import Request, ToolContext, ToolResult, error_message

__all__ = ["TaskCall", "follow", "recalled", "resume", "task_of"]

DEFAULT_POLL_S = 1.0
"""How long to wait between two `tasks/get` when the server suggests nothing."""
_MIN_POLL_S = 0.01  # a server suggesting 0 ms is not polled in a busy loop


class TaskCall(Protocol):
    """What of a `tools/call` exchange (`_rounds.Call`) following its task needs."""

    name: str
    tool: str
    args: dict[str, Any]
    conn: Connection
    ctx: ToolContext
    budget: CallBudget
    task_id: str | None

    async def answer_round(
        self, asked: Mapping[str, Mapping[str, Any]], gathered: dict[str, Any]
    ) -> str | None: ...

    def suspend(
        self,
        asked: Mapping[str, Mapping[str, Any]],
        key: str,
        responses: Mapping[str, Any],
        state: str | None,
    ) -> Any: ...

    def error(self, text: str) -> ToolResult: ...


# -- following a task -------------------------------------------------------------------------


async def recalled(call: TaskCall) -> ToolResult | None:
    """The outcome of the task an earlier attempt of this very call started (its reference in
    the call's ledger: a durable run recovered in a new process), or `None` when there is none
    and the tool is to be called."""
    book = current_ledger()
    if book is None:
        return None
    reference = await book.recall()
    if (
        reference is None
        or reference.get("server") != call.name
        or reference.get("tool") != call.tool
        or not isinstance(reference.get("taskId"), str)
    ):
        return None
    call.task_id = reference["taskId"]
    return await _follow(call, None)


async def follow(call: TaskCall, handle: TaskHandle) -> ToolResult:
    """The outcome of the task `handle` names, followed to its end (recorded in the ledger
    first, so a process that takes over resumes it)."""
    call.task_id = handle.task_id
    book = current_ledger()
    if book is not None:
        await book.record({"server": call.name, "tool": call.tool, "taskId": handle.task_id})
    seed = handle.model_dump(by_alias=True, mode="json", exclude_none=True)
    return await _follow(call, seed if seed.get("status") in ("working", None) else None)


async def resume(call: TaskCall, responses: Mapping[str, Any], task_id: str) -> ToolResult:
    """Go on with the task `task_id` after the host answered its input request: `responses`
    go to the server (`tasks/update`), then the task is followed again."""
    call.task_id = task_id
    try:
        await update_task(_session(call.conn), task_id, responses)
    except MCPError as exc:
        return call.error(_unknown_task(call, task_id, exc))
    return await _follow(call, None)


async def _follow(call: TaskCall, seed: dict[str, Any] | None) -> ToolResult:
    """`tasks/get` until the task ends, within the call's hard cap and its signal."""
    task_id = call.task_id
    assert task_id is not None
    conn, budget, signal = call.conn, call.budget, call.ctx.signal
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(0.0, budget.hard - budget.spent)
    answered: set[str] = set()
    message: str | None = None
    changes = 0
    status = seed
    try:
        while True:
            if status is None:
                status = await _bounded(get_task(_session(conn), task_id), budget, deadline, signal)
            state = status.get("status")
            text = status.get("statusMessage")
            if isinstance(text, str) and text != message:
                message, changes = text, changes + 1
                await _progress(call.ctx, changes, text)
            if state == "completed":
                outcome = status.get("result")
                return map_call_result(
                    types.CallToolResult.model_validate(outcome or {"content": []}), call.name
                )
            if state == "failed":
                error = status.get("error")
                reason = error.get("message") if isinstance(error, Mapping) else None
                return call.error(
                    f"MCP tool {call.tool} failed: {reason or message or 'the task failed'}"
                )
            if state == "cancelled":
                return call.error(f"MCP tool {call.tool} was cancelled by the server")
            if state == "input_required":
                requests = status.get("inputRequests")
                asked = {
                    key: entry
                    for key, entry in _input.wire_requests(
                        requests if isinstance(requests, Mapping) else {}
                    ).items()
                    if key not in answered  # each key is asked once over the task's life
                }
                if asked:
                    outcome = await _answer(call, asked, answered)
                    if outcome is not None:
                        return outcome
            left = deadline - loop.time()
            if left <= 0:
                raise CallTimedOut
            await _pause(min(_interval(status.get("pollIntervalMs")), left), signal)
            status = None
    except CallCancelled:
        await cancel_task(_session(conn), task_id)
        raise
    except CallTimedOut:
        budget.ran_out = budget.hard
        await cancel_task(_session(conn), task_id)
        raise
    except MCPError as exc:
        if exc.code == types.INVALID_PARAMS:
            return call.error(_unknown_task(call, task_id, exc))
        raise


async def _answer(
    call: TaskCall, asked: dict[str, dict[str, Any]], answered: set[str]
) -> ToolResult | None:
    """Answer a task's input requests: what toolnexus and `wait_for` answer goes to the server
    (`tasks/update`); a question left for the host suspends the call (the outcome); `None`: go
    on polling."""
    task_id = call.task_id
    assert task_id is not None
    gathered: dict[str, Any] = {}
    with call.budget.paused():
        problem = await call.answer_round(asked, gathered)
    if problem is not None:
        await cancel_task(_session(call.conn), task_id)
        return call.error(problem)
    waiting = _input.next_host_key(asked, gathered)
    if waiting is not None:  # no wait_for: the host answers later, then `resume`
        suspended: ToolResult = call.suspend(asked, waiting, gathered, None)
        return suspended
    await update_task(_session(call.conn), task_id, gathered)
    answered.update(gathered)
    return None


async def _bounded(work: Any, budget: CallBudget, deadline: float, signal: Any) -> Any:
    """`work` within the idle budget and the call's `deadline`, cancelled by `signal`."""
    loop = asyncio.get_running_loop()
    left = deadline - loop.time()
    if left <= 0:
        work.close()
        raise CallTimedOut
    try:
        async with asyncio.timeout(min(budget.idle, left)):
            if signal is None:
                return await work
            return await cancelled_by(work, signal)
    except Signalled:
        raise CallCancelled from None
    except TimeoutError:
        raise CallTimedOut from None


async def _pause(seconds: float, signal: Any) -> None:
    """Wait `seconds` between two polls, unless `signal` is set meanwhile."""
    try:
        if signal is None:
            await asyncio.sleep(seconds)
        else:
            await cancelled_by(asyncio.sleep(seconds), signal)
    except Signalled:
        raise CallCancelled from None


def _interval(suggested: Any) -> float:
    valid = isinstance(suggested, int | float) and not isinstance(suggested, bool)
    if valid and math.isfinite(suggested) and suggested >= 0:
        return max(_MIN_POLL_S, float(suggested) / 1000)
    return DEFAULT_POLL_S


async def _progress(ctx: ToolContext, changes: int, text: str) -> None:
    callback = ctx.on_progress
    if callback is None:
        return
    try:
        await call_maybe_async(callback, {"progress": changes, "total": None, "message": text})
    except Exception as exc:
        logger.debug("[toolnexus] on_progress raised; ignored: %s", error_message(exc))


def _unknown_task(call: TaskCall, task_id: str, exc: MCPError) -> str:
    return f'MCP server "{call.name}" no longer has task {task_id}: {exc.error.message}'


def _session(conn: Connection) -> Any:
    session = conn.session
    if session is None:
        raise MCPError(types.INTERNAL_ERROR, "not connected")
    return session


def task_of(request: Request) -> str | None:
    """The task a suspension waits in, when it is one of a task's input requests."""
    task_id = ((request.data or {}).get("mcp") or {}).get("taskId")
    return task_id if isinstance(task_id, str) else None
