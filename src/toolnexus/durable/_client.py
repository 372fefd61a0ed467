"""`DurableClient`: `run`/`ask` as DBOS workflows that survive the process they started in."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from dbos import (
    DBOS,
    DBOSClient,
    DBOSConfig,
    SetEnqueueOptions,
    SetWorkflowID,
    WorkflowHandleAsync,
)

from toolnexus.client import Client, ConversationStore, RunResult, StreamEvent
from toolnexus.client._inprocess import STREAM_UNSUPPORTED
from toolnexus.client._loop import RunLoop
from toolnexus.client._parts import Prompt
from toolnexus.client._steps import journal
from toolnexus.client.memory import KeyedLock, claim_conversation
from toolnexus.durable._db import DEFAULT_DB_TIMEOUT_S, bounded
from toolnexus.durable._errors import dbos_errors
from toolnexus.durable._steps import PENDING_EVENT, DbosSteps, answer_topic
from toolnexus.durable._stream import (
    EVENTS_STREAM,
    POLL_S,
    event_data,
    handle_of,
    stream_events,
)
from toolnexus.errors import ConfigError, ConfigTypeError, StoreError, StreamingUnsupported
from toolnexus.toolkit import Toolkit
from toolnexus.types import Answer, Request, Tool

__all__ = ["DurableClient", "DurableRun", "cancel_run", "pending_request", "send_answer"]

FOREVER_S = 100 * 365 * 24 * 3600.0
"""How long a suspended run waits for its answer when no `answer_timeout_s` is given."""

_LOAD_STEP = "toolnexus.conversation.load"
_SAVE_STEP = "toolnexus.conversation.save"

_names: set[str] = set()  # the workflow names registered by this process


class DurableRun:
    """A durable run started in the background: its `workflow_id` reaches it from anywhere."""

    __slots__ = ("_db_timeout_s", "_handle", "workflow_id")

    def __init__(
        self,
        workflow_id: str,
        handle: WorkflowHandleAsync[RunResult[Any]] | None = None,
        *,
        db_timeout_s: float = DEFAULT_DB_TIMEOUT_S,
    ) -> None:
        self.workflow_id = workflow_id
        self._handle = handle
        self._db_timeout_s = db_timeout_s

    async def result(self) -> RunResult[Any]:
        """Wait for the run to finish (through any suspension) and return its result."""
        if self._handle is None:
            self._handle = await handle_of(self.workflow_id)
        with dbos_errors(self.workflow_id):
            result: RunResult[Any] = await self._handle.get_result(polling_interval_sec=POLL_S)
        return result

    def stream(self, *, offset: int = 0) -> AsyncIterator[StreamEvent[Any]]:
        """The run's events from the `offset`-th on, as they come, ending with `done` (see
        `stream_events`): the run must have been started streaming."""
        return stream_events(self.workflow_id, offset=offset)

    async def pending(self) -> Request | None:
        """The request the run is suspended on, or `None` when it is not waiting."""
        return await pending_request(self.workflow_id, timeout_s=self._db_timeout_s)

    async def answer(self, answer: Answer | Mapping[str, Any]) -> None:
        """Send the answer to the request the run is (or will be) suspended on."""
        await send_answer(self.workflow_id, answer, timeout_s=self._db_timeout_s)

    async def cancel(self) -> None:
        """Cancel the run (see `cancel_run`)."""
        await cancel_run(self.workflow_id, timeout_s=self._db_timeout_s)

    def __repr__(self) -> str:
        return f"<DurableRun {self.workflow_id!r}>"


class DurableClient:
    """Runs a client's `run` and `ask` as DBOS workflows: every model call and every tool call is
    a step, so a run killed mid-way resumes from its last completed step when a process with the
    same DBOS system database launches (`DBOS.launch()`).

    Create it before `DBOS.launch()` (DBOS recovers only the workflows registered by then), in
    every process that may run or resume its runs, with the same `name`. `dbos` is the DBOS
    configuration to create the instance with, or `None` for the one the host already made.
    A suspension (a tool answering `pending`, an MCP input request, an A2A `input-required`)
    waits durably for `answer(workflow_id, answer)`, sent from any process, for up to
    `answer_timeout_s` (default: no limit), then counts as declined. With `queue`, runs are
    enqueued on that DBOS queue (see `DBOS.register_queue`), which bounds how many run at once;
    with `queue_per_model` as well, each run is in the queue's partition named by the client's
    model, so a partitioned queue's limits apply per model. A host call that reads or writes
    the system database outside a run (`start`, `pending`, `answer`, `cancel`) fails with
    `StoreError` when the database does not answer within `db_timeout_s`.
    """

    def __init__(
        self,
        client: Client,
        toolkit: Toolkit | Tool | Iterable[Tool] | None = None,
        *,
        dbos: DBOS | DBOSConfig | None = None,
        name: str = "toolnexus",
        store: ConversationStore | None = None,
        queue: str | None = None,
        queue_per_model: bool = False,
        answer_timeout_s: float | None = None,
        deps: Any = None,
        db_timeout_s: float = DEFAULT_DB_TIMEOUT_S,
    ) -> None:
        if not isinstance(client, Client):
            raise ConfigTypeError(
                f"DurableClient needs a toolnexus Client, not {type(client).__name__}"
            )
        if not isinstance(name, str) or not name:
            raise ConfigError("name must be a non-empty string (it names the DBOS workflow)")
        if queue_per_model and queue is None:
            raise ConfigError("queue_per_model needs a queue= (a partitioned DBOS queue)")
        if answer_timeout_s is not None and answer_timeout_s <= 0:
            raise ConfigError(f"answer_timeout_s must be > 0 or None, not {answer_timeout_s!r}")
        _check_timeout(db_timeout_s)
        workflow_name = f"toolnexus.run:{name}"
        if workflow_name in _names:
            raise ConfigError(
                f"a DurableClient named {name!r} already exists in this process: give each "
                "one its own name= (the name must be the same in every process of a run)"
            )
        if isinstance(dbos, Mapping):
            DBOS(config=dbos)
        self.client = client
        self.toolkit = toolkit
        self.name = name
        self.store = store if store is not None else client.conversation_store
        self.queue = queue
        self.queue_per_model = queue_per_model
        self.deps = deps
        self.db_timeout_s = db_timeout_s
        self._locks = KeyedLock()
        self._answer_timeout_s = answer_timeout_s if answer_timeout_s is not None else FOREVER_S

        async def workflow(
            prompt: Prompt,
            history: list[dict[str, Any]] | None,
            conversation_id: str | None,
            output_type: Any,
            streaming: bool = False,
        ) -> RunResult[Any]:
            return await self._execute(prompt, history, conversation_id, output_type, streaming)

        self._workflow = DBOS.workflow(name=workflow_name)(workflow)
        _names.add(workflow_name)

    async def start(
        self,
        prompt: Prompt,
        *,
        workflow_id: str | None = None,
        history: list[dict[str, Any]] | None = None,
        id: str | None = None,
        output_type: Any = None,
        stream: bool = False,
    ) -> DurableRun:
        """Start a run in the background and return its handle at once.

        With `id`, the run continues and saves that conversation (as `ask` does). With
        `stream`, the run records its events for `DurableRun.stream()`. Starting a
        `workflow_id` that exists attaches to that run: it is never run twice.
        """
        if history is not None and id is not None:
            raise ConfigError("pass history or id, not both")
        if stream and not self.client.can_stream:
            raise StreamingUnsupported(STREAM_UNSUPPORTED)
        args = (prompt, history, id, output_type, bool(stream))
        started = SetWorkflowID(workflow_id) if workflow_id is not None else None
        with dbos_errors(workflow_id), started or contextlib.nullcontext():
            # DBOS records the start on a worker thread and then runs the workflow on this loop,
            # so the wait is bounded here rather than moved to a thread of its own (`bounded`).
            # Given up on, the start may still be recorded: starting the same `workflow_id`
            # again attaches to it, and DBOS recovery runs it if this process dies meanwhile.
            try:
                async with asyncio.timeout(self.db_timeout_s):
                    if self.queue is not None:
                        partition = self.client.model if self.queue_per_model else None
                        with SetEnqueueOptions(queue_partition_key=partition):
                            handle = await DBOS.enqueue_workflow_async(
                                self.queue, self._workflow, *args
                            )
                    else:
                        handle = await DBOS.start_workflow_async(self._workflow, *args)
            except TimeoutError:
                run = f"durable run {workflow_id!r}" if workflow_id else "a new durable run"
                raise StoreError(
                    f"the DBOS system database did not answer within {self.db_timeout_s:g} s "
                    f"(starting {run})"
                ) from None
        return DurableRun(handle.get_workflow_id(), handle, db_timeout_s=self.db_timeout_s)

    async def stream(
        self,
        prompt: Prompt,
        *,
        workflow_id: str | None = None,
        history: list[dict[str, Any]] | None = None,
        id: str | None = None,
        output_type: Any = None,
    ) -> AsyncIterator[StreamEvent[Any]]:
        """`Client.stream` as a durable workflow: the run's events as they come, the last one
        `done`. Takes the options of `start`, but for `stream`.

        The events are those of `Client.stream` but for `progress`, and each model call's text
        comes whole, in one `text` event, when the call's step completes. Streaming a
        `workflow_id` that exists attaches to that run and yields all its events from the
        first: those recorded before (by this process or one that died) at once, each once,
        then the rest as they come. Leaving early stops the reading, not the run.
        """
        run = await self.start(
            prompt,
            workflow_id=workflow_id,
            history=history,
            id=id,
            output_type=output_type,
            stream=True,
        )
        async for event in run.stream():
            yield event

    async def run(
        self,
        prompt: Prompt,
        *,
        workflow_id: str | None = None,
        history: list[dict[str, Any]] | None = None,
        output_type: Any = None,
    ) -> RunResult[Any]:
        """`Client.run` as a durable workflow; returns when the run ends.

        Running a `workflow_id` that already finished returns its recorded result.
        """
        run = await self.start(
            prompt, workflow_id=workflow_id, history=history, output_type=output_type
        )
        return await run.result()

    async def ask(
        self,
        prompt: Prompt,
        *,
        id: str | None = None,
        workflow_id: str | None = None,
        output_type: Any = None,
    ) -> RunResult[Any]:
        """`Client.ask` as a durable workflow: with `id`, continue and save that conversation."""
        run = await self.start(prompt, workflow_id=workflow_id, id=id, output_type=output_type)
        return await run.result()

    def run_of(self, workflow_id: str) -> DurableRun:
        """The handle of a run by its workflow id (one started earlier, here or elsewhere)."""
        return DurableRun(workflow_id)

    async def result(self, workflow_id: str) -> RunResult[Any]:
        """Wait for the run `workflow_id` to finish and return its result."""
        return await DurableRun(workflow_id).result()

    async def pending(self, workflow_id: str) -> Request | None:
        """The request the run `workflow_id` is suspended on, or `None`."""
        return await pending_request(workflow_id)

    async def answer(self, workflow_id: str, answer: Answer | Mapping[str, Any]) -> None:
        """Send `answer` to the run `workflow_id` (see `send_answer`)."""
        await send_answer(workflow_id, answer)

    async def cancel(self, workflow_id: str) -> None:
        """Cancel the run `workflow_id` (see `cancel_run`)."""
        await cancel_run(workflow_id)

    async def _execute(
        self,
        prompt: Prompt,
        history: list[dict[str, Any]] | None,
        conversation_id: str | None,
        output_type: Any,
        streaming: bool,
    ) -> RunResult[Any]:
        """The workflow's body: the client's loop, with its calls journaled as steps (and its
        events written to the run's stream when it streams)."""
        if conversation_id is not None:
            history = await DBOS.run_step_async({"name": _LOAD_STEP}, self._load, conversation_id)
        typed: dict[str, Any] = {} if output_type is None else {"output_type": output_type}
        with journal(DbosSteps(self._answer_timeout_s)):
            if streaming:
                result = await self._streamed(prompt, history, typed)
            else:
                result = await self.client.run(
                    prompt, self.toolkit, history, deps=self.deps, **typed
                )
        if conversation_id is not None:
            await DBOS.run_step_async(
                {"name": _SAVE_STEP}, self._save, conversation_id, history or [], result.messages
            )
        return result

    async def _streamed(
        self, prompt: Prompt, history: list[dict[str, Any]] | None, typed: dict[str, Any]
    ) -> RunResult[Any]:
        """Run the loop streaming, writing each event to the run's stream as it comes."""
        settings = self.client._settings(options={"deps": self.deps}, **typed)
        loop = RunLoop(settings, prompt, self.toolkit, history, None, streaming=True)
        events = loop.events()
        result: RunResult[Any] | None = None
        try:
            async for event in events:
                if event["type"] == "done":
                    result = event["result"]
                data = event_data(event)
                if data is not None:
                    await DBOS.write_stream_async(EVENTS_STREAM, data)
        finally:
            await events.aclose()
        await DBOS.close_stream_async(EVENTS_STREAM)
        assert result is not None  # the loop's last event is `done`
        return result

    async def _load(self, conversation_id: str) -> list[dict[str, Any]]:
        return await self.store.get(conversation_id) or []

    async def _save(
        self, conversation_id: str, loaded: list[dict[str, Any]], messages: list[dict[str, Any]]
    ) -> None:
        """Save the run's transcript; if the conversation moved on meanwhile (another run on the
        id finished while this one ran or waited), append this run's turn after it instead."""
        new = messages[len(loaded) :]
        async with claim_conversation(self.store, self._locks, conversation_id) as lease:
            current = await lease.get() or []
            if current == loaded:
                await lease.save(messages)
            elif not new or current[-len(new) :] != new:
                await lease.save(current + new)
            # else: saved already, by the attempt a crash interrupted

    def __repr__(self) -> str:
        return f"<DurableClient {self.name!r} over {self.client!r}>"


def _check_timeout(timeout_s: float) -> None:
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s <= 0:
        raise ConfigError(f"the DBOS database timeout must be a number > 0, not {timeout_s!r}")


async def pending_request(
    workflow_id: str,
    *,
    client: DBOSClient | None = None,
    timeout_s: float = DEFAULT_DB_TIMEOUT_S,
) -> Request | None:
    """The request the durable run `workflow_id` is suspended on, or `None` when it is not.

    From a process without a launched DBOS, pass a `DBOSClient` on the same system database.
    A database that does not answer within `timeout_s` raises `StoreError`.
    """
    _check_timeout(timeout_s)
    source = client if client is not None else DBOS
    with dbos_errors(workflow_id):
        data = await bounded(
            lambda: source.get_event(workflow_id, PENDING_EVENT, timeout_seconds=0),
            workflow_id,
            timeout_s,
        )
    return Request.from_dict(data) if data else None


async def _known(workflow_id: str, client: DBOSClient | None, timeout_s: float) -> None:
    """`WorkflowNotFound` unless the system database has the run `workflow_id`."""
    source = client if client is not None else DBOS
    with dbos_errors(workflow_id):
        await bounded(lambda: source.retrieve_workflow(workflow_id), workflow_id, timeout_s)


async def send_answer(
    workflow_id: str,
    answer: Answer | Mapping[str, Any],
    *,
    client: DBOSClient | None = None,
    timeout_s: float = DEFAULT_DB_TIMEOUT_S,
) -> None:
    """Send `answer` to the durable run `workflow_id`, from any process, at any time.

    The answer goes to the request with the same id: sent before the run suspends, it waits for
    it; sent twice, it is delivered once. From a process without a launched DBOS, pass a
    `DBOSClient` on the same system database. An unknown workflow raises `WorkflowNotFound`; an
    answer whose id is not the pending request's raises `ConfigError`; a database that does not
    answer within `timeout_s` (each call) raises `StoreError`.
    """
    given = Answer.coerce(answer)
    if given is None:
        raise ConfigTypeError(
            f"answer must be an Answer or its dict form, not {type(answer).__name__}"
        )
    await _known(workflow_id, client, timeout_s)
    waiting = await pending_request(workflow_id, client=client, timeout_s=timeout_s)
    if waiting is not None and waiting.id != given.id:
        raise ConfigError(
            f"answer id {given.id!r} does not match the request workflow {workflow_id!r} "
            f"waits on ({waiting.id!r})"
        )
    await _deliver(workflow_id, given, f"{workflow_id}/{given.id}", client, timeout_s)


async def cancel_run(
    workflow_id: str,
    *,
    client: DBOSClient | None = None,
    timeout_s: float = DEFAULT_DB_TIMEOUT_S,
) -> None:
    """Cancel the durable run `workflow_id`, from any process: it stops at its next step, and
    waiting for its result (or reading its stream) raises `RunCancelled`.

    A run suspended on a request is woken to stop now (DBOS alone would stop it only once an
    answer came). The step in flight, if any, finishes first. From a process without a
    launched DBOS, pass a `DBOSClient` on the same system database. A database that does not
    answer within `timeout_s` (each call) raises `StoreError`.
    """
    _check_timeout(timeout_s)
    await _known(workflow_id, client, timeout_s)
    source = client if client is not None else DBOS
    with dbos_errors(workflow_id):
        await bounded(lambda: source.cancel_workflow(workflow_id), workflow_id, timeout_s)
    waiting = await pending_request(workflow_id, client=client, timeout_s=timeout_s)
    if waiting is not None:  # its wait ends; the run's next step then sees it is cancelled
        woken = Answer(waiting.id, False, reason="cancelled")
        key = f"{workflow_id}/{waiting.id}/cancel"
        await _deliver(workflow_id, woken, key, client, timeout_s)


async def _deliver(
    workflow_id: str, answer: Answer, key: str, client: DBOSClient | None, timeout_s: float
) -> None:
    """Send `answer` to the wait of run `workflow_id` for its request (once per `key`)."""
    topic = answer_topic(answer.id)
    data = answer.to_dict()
    with dbos_errors(workflow_id):
        if client is not None:
            dbos_client = client
            await bounded(
                lambda: dbos_client.send(workflow_id, data, topic, key), workflow_id, timeout_s
            )
        else:
            await bounded(
                lambda: DBOS.send(workflow_id, data, topic, idempotency_key=key),
                workflow_id,
                timeout_s,
            )
