"""MCP Tasks as a client: the `io.modelcontextprotocol/tasks` extension (SEP-2663).

A server that negotiated the extension may answer `tools/call` with a task handle
(`resultType: "task"`) instead of the result. toolnexus declares the extension on every request
(unless the server's `"tasks": "avoid"`), reads the handle through the SDK's extension framework
(a `ResultClaim` on `tools/call`), and follows the task to its end inside the same tool call:
`tasks/get` every `pollIntervalMs`, bounded by the call's time cap and its cancellation signal
(either sends `tasks/cancel`), each new `statusMessage` reported as progress, `inputRequests`
answered like a 2026-07-28 input round (roots here, elicitations through `wait_for`, else the
call suspends and `tasks/update` carries the host's answer when it resumes). The task's
reference goes into the call's `TaskLedger` (`toolnexus._task_ledger`), so a durable run
recovered in another process resumes polling the same task instead of calling again.

The released `mcp` SDK (2.3) has the extension framework but not Tasks itself; this module is
the whole of toolnexus's client side of it, written so that it can hand over to the SDK's own
Tasks client once one ships: `session_options` (what the session declares and claims) and the
three wire calls (`_get`, `_update`, `_cancel`) are what would be replaced. Imported with the SDK.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal

import mcp_types as types
from mcp.client.extension import ClaimContext, ResultClaim
from mcp.client.session import ClientSession
from pydantic import ConfigDict

from toolnexus._log import logger
from toolnexus._otel import mcp_request
from toolnexus.mcp_source._config import ServerSpec
from toolnexus.types import error_message

__all__ = ["TASKS", "TaskHandle", "cancel_task", "get_task", "session_options", "update_task"]

TASKS = "io.modelcontextprotocol/tasks"
"""The extension's identifier (in capabilities, per request)."""

_CANCEL_WITHIN_S = 5.0  # how long a `tasks/cancel` sent while giving up may take


class TaskHandle(types.Result):
    """`CreateTaskResult`: the task a `tools/call` was answered with."""

    result_type: Literal["task"]
    task_id: str
    status: str = "working"
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class _Reply(types.Result):
    """Any result, its fields kept as sent."""

    model_config = ConfigDict(extra="allow")


class _TaskRequest(types.Request[dict[str, Any], str]):
    """`tasks/get`, `tasks/update`, `tasks/cancel`: their `taskId` is the `Mcp-Name` header."""

    name_param = "taskId"


async def _unresolved(handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
    # toolnexus calls with `allow_claimed=True` and follows the task itself (`follow`).
    raise AssertionError("unreachable: toolnexus follows MCP tasks itself")


_CLAIM: ResultClaim[TaskHandle] = ResultClaim(
    result_type="task", model=TaskHandle, resolve=_unresolved
)


def session_options(spec: ServerSpec) -> dict[str, Any]:
    """What the server's `ClientSession` declares and claims: the extension, unless the server
    is configured `"tasks": "avoid"` (then a task-only tool answers -32021, an error result)."""
    if spec.tasks == "avoid":
        return {}
    return {"extensions": {TASKS: {}}, "result_claims": {TASKS: [_CLAIM]}}


# -- the wire ---------------------------------------------------------------------------------


async def _send(session: ClientSession, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One `tasks/*` request, traced as any MCP request is (a span and the client operation
    duration metric, about the task id); a `tasks/get` that finds the task failed, cancelled
    or completed with a tool error marks its span failed, as a `tools/call` error result does."""
    peer = getattr(session, "peer", None)
    with mcp_request(method, str(params.get("taskId")), peer) as traced:
        reply = await session.send_request(_TaskRequest(method=method, params=params), _Reply)
        found = reply.model_dump(by_alias=True, mode="json", exclude_none=True)
        if method == "tasks/get" and _ended_badly(found):
            traced.result(types.CallToolResult(content=[], is_error=True))
    return found


def _ended_badly(task: Mapping[str, Any]) -> bool:
    status = task.get("status")
    result = task.get("result")
    errored = isinstance(result, Mapping) and result.get("isError") is True
    return status in ("failed", "cancelled") or (status == "completed" and errored)


async def get_task(session: ClientSession, task_id: str) -> dict[str, Any]:
    """`tasks/get`: the task as the server has it now (a `DetailedTask`)."""
    return await _send(session, "tasks/get", {"taskId": task_id})


async def update_task(session: ClientSession, task_id: str, responses: Mapping[str, Any]) -> None:
    """`tasks/update`: answers to the task's outstanding input requests."""
    await _send(session, "tasks/update", {"taskId": task_id, "inputResponses": dict(responses)})


async def cancel_task(session: ClientSession, task_id: str) -> None:
    """`tasks/cancel`, sent while giving up on the task: bounded, and never raising."""
    try:
        async with asyncio.timeout(_CANCEL_WITHIN_S):
            await _send(session, "tasks/cancel", {"taskId": task_id})
    except Exception as exc:  # the call ends anyway; the server's TTL reclaims the task
        logger.debug("[toolnexus] tasks/cancel of %s failed: %s", task_id, error_message(exc))
