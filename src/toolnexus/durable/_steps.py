"""The DBOS side of the journaling seam: each model call and each tool call is a DBOS step.

A step's result is checkpointed as plain data (dicts, lists, strings), so it reads back under any
DBOS serializer and across toolnexus upgrades; a workflow replayed after a crash gets those
results back instead of calling the model or the tool again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from dbos import DBOS

from toolnexus._task_ledger import ledger
from toolnexus.adapters import ToolCall
from toolnexus.client._steps import ToolStep, journal
from toolnexus.client._wire import Turn
from toolnexus.types import Answer, Request, ToolResult, pending_of

__all__ = [
    "ANSWER_TOPIC_PREFIX",
    "LLM_STEP",
    "PENDING_EVENT",
    "TOOL_STEP_PREFIX",
    "DbosSteps",
    "answer_topic",
    "step_key",
]

LLM_STEP = "toolnexus.llm"
TOOL_STEP_PREFIX = "toolnexus.tool:"
PENDING_EVENT = "toolnexus.pending"
"""The workflow event holding the `Request` a suspended run waits on (`None` once answered)."""
ANSWER_TOPIC_PREFIX = "toolnexus.answer:"
TASK_EVENT_PREFIX = "toolnexus.task:"
"""The workflow event (one per tool step) holding the remote task the step waits on."""


def answer_topic(request_id: str) -> str:
    """The message topic the `Answer` to request `request_id` is sent on."""
    return ANSWER_TOPIC_PREFIX + request_id


class DbosSteps:
    """Journals one run inside a DBOS workflow (construct it in the workflow function)."""

    __slots__ = ("_answer_timeout_s",)

    def __init__(self, answer_timeout_s: float) -> None:
        self._answer_timeout_s = answer_timeout_s

    @property
    def wait_for(self) -> Callable[[Request], Awaitable[Answer | None]]:
        return self._wait

    async def model_call(self, call: Callable[[], Awaitable[Turn]]) -> Turn:
        async def step() -> dict[str, Any]:
            with journal(None):
                return turn_data(await call())

        return turn_of(await DBOS.run_step_async({"name": LLM_STEP}, step))

    def tool_call(self, name: str) -> ToolStep:
        reservation = DBOS.reserve_step()  # the step id, in call order

        async def run(call: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
            async def step() -> dict[str, Any]:
                with journal(None), ledger(_StepLedger()):
                    return result_data(await call())

            data = await reservation.run_async({"name": TOOL_STEP_PREFIX + name}, step)
            return result_of(data)

        return run

    async def _wait(self, request: Request) -> Answer | None:
        """Publish the request, then wait (durably, through restarts) for its answer."""
        await DBOS.set_event_async(PENDING_EVENT, request.to_dict())
        message = await DBOS.recv_async(
            answer_topic(request.id), timeout_seconds=self._answer_timeout_s
        )
        await DBOS.set_event_async(PENDING_EVENT, None)
        return Answer.coerce(message)  # none in time counts as declined/expired


class _StepLedger:
    """The remote task a tool step waits on, kept as an event of its workflow (keyed by the
    step): the process that recovers the step after a crash finds it and resumes waiting on
    that task instead of calling the tool again (see `toolnexus._task_ledger`)."""

    __slots__ = ("_key", "_workflow")

    def __init__(self) -> None:
        workflow, step = DBOS.workflow_id, DBOS.step_id
        assert workflow is not None and step is not None
        self._workflow = workflow
        self._key = f"{TASK_EVENT_PREFIX}{step}"

    async def recall(self) -> Mapping[str, Any] | None:
        found = await DBOS.get_event_async(self._workflow, self._key, timeout_seconds=0)
        return found if isinstance(found, Mapping) else None

    async def record(self, reference: Mapping[str, Any] | None) -> None:
        await DBOS.set_event_async(self._key, dict(reference) if reference is not None else None)


def turn_data(turn: Turn) -> dict[str, Any]:
    return {
        "message": turn.message,
        "text": turn.text,
        "calls": [
            {"id": c.id, "name": c.name, "args": c.args, "error": c.error} for c in turn.calls
        ],
        "usage": turn.usage,
        "finish_reason": turn.finish_reason,
        "raw": turn.raw,
        "refusal": turn.refusal,
        "reasoning": turn.reasoning,
        "reasoning_redacted": turn.reasoning_redacted,
    }


def turn_of(data: dict[str, Any]) -> Turn:
    return Turn(
        message=data["message"],
        text=data["text"],
        calls=[ToolCall(c["id"], c["name"], c["args"], c["error"]) for c in data["calls"]],
        usage=data["usage"],
        finish_reason=data["finish_reason"],
        raw=data["raw"],
        refusal=data["refusal"],
        reasoning=data.get("reasoning"),
        reasoning_redacted=bool(data.get("reasoning_redacted")),
    )


def result_data(result: ToolResult) -> dict[str, Any]:
    metadata = result.metadata
    asked = pending_of(result)
    if asked is not None and metadata is not None:
        metadata = {k: v for k, v in metadata.items() if k != "pending"}
    return {
        "output": result.output,
        "is_error": result.is_error,
        "metadata": metadata,
        "pending": asked.to_dict() if asked is not None else None,
        "parts": result.parts,
    }


def result_of(data: dict[str, Any]) -> ToolResult:
    metadata = data["metadata"]
    if data["pending"] is not None:
        metadata = {**(metadata or {}), "pending": Request.from_dict(data["pending"])}
    return ToolResult(data["output"], data["is_error"], metadata, data["parts"])


def step_key() -> str | None:
    """The idempotency key of the step running now: `"<workflow id>/<step id>"`, the same on
    every attempt of the step (also after a crash), or `None` outside a durable step.

    A tool with side effects passes it to the service it calls (an `Idempotency-Key` header, a
    unique column) so the attempt a crash interrupted and its retry count once.
    """
    workflow, step = DBOS.workflow_id, DBOS.step_id
    if workflow is None or step is None:
        return None
    return f"{workflow}/{step}"
