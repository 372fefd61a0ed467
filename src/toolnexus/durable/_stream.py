"""The event stream of a durable run: written by the workflow, read by any process.

A streamed run writes its events, as plain data, to a DBOS stream of its workflow. Each write is
a workflow operation of its own, so a run replayed after a crash skips the writes it made
before (its readers never see an event twice) and carries on writing after them. `progress`
events are left out: they come while a tool step runs, in no replayable order, and a replayed
step reports none. The `output` and `done` events are filled in from the run's recorded result
when they are read, so the stream itself holds only plain data.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

from dbos import DBOS, DBOSClient, WorkflowHandleAsync

from toolnexus.client import RunResult, StreamEvent
from toolnexus.durable._errors import dbos_errors
from toolnexus.errors import ConfigError
from toolnexus.types import Request

__all__ = [
    "EVENTS_STREAM",
    "POLL_S",
    "event_data",
    "handle_of",
    "stream_events",
]

EVENTS_STREAM = "toolnexus.events"
"""The key of a streamed run's DBOS stream of events."""

POLL_S = 0.05
"""How often a host waiting on a run that executes elsewhere (recovered, queued, another
process) checks for its next event or its end; a run in this process wakes it sooner."""


def event_data(event: StreamEvent[Any]) -> dict[str, Any] | None:
    """What of a run's event its stream records, as plain data (`None`: nothing)."""
    if event["type"] == "progress" or event["type"] == "done":
        return None
    if event["type"] == "pending":
        return {"type": "pending", "request": event["request"].to_dict()}
    if event["type"] == "output":
        return {"type": "output"}  # the value is read back from the run's result
    return dict(event)


async def handle_of(
    workflow_id: str, client: DBOSClient | None = None
) -> WorkflowHandleAsync[RunResult[Any]]:
    """The DBOS handle of the run `workflow_id`; `WorkflowNotFound` when there is none."""
    with dbos_errors(workflow_id):
        if client is not None:
            return await client.retrieve_workflow_async(workflow_id)
        return await DBOS.retrieve_workflow_async(workflow_id)


async def stream_events(
    workflow_id: str, *, offset: int = 0, client: DBOSClient | None = None
) -> AsyncIterator[StreamEvent[Any]]:
    """The events of the streamed durable run `workflow_id`, from its `offset`-th on, as they
    come; the last is `{"type": "done", "result": ...}` (an error the run ended with is raised
    instead, as `Client.stream` raises it).

    Events written before (by an earlier process of the run, or before this reader came) are
    read back first, each once. A run that was not started streaming has no events: its
    stream yields only `done`. Leaving early stops the reading, not the run. From a process
    without a launched DBOS, pass a `DBOSClient` on the same system database.
    """
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise ConfigError(f"offset must be an int >= 0, not {offset!r}")
    handle = await handle_of(workflow_id, client)
    reader = client.read_stream_async if client is not None else DBOS.read_stream_async
    values = reader(workflow_id, EVENTS_STREAM, offset=offset, polling_interval_sec=POLL_S)
    result: RunResult[Any] | None = None
    with dbos_errors(workflow_id):
        try:
            async for data in values:
                kind = data["type"]
                if kind == "pending":
                    yield {"type": "pending", "request": Request.from_dict(data["request"])}
                elif kind == "output":
                    result = await handle.get_result(polling_interval_sec=POLL_S)
                    yield {"type": "output", "output": result.value}
                else:
                    yield cast("StreamEvent[Any]", dict(data))
        finally:
            await values.aclose()
        if result is None:
            result = await handle.get_result(polling_interval_sec=POLL_S)
    yield {"type": "done", "result": result}
