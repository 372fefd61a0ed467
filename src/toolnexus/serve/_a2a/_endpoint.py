"""The A2A profile's endpoint: `POST /` in the A2A 1.0, 0.3 and legacy dialects (`_rpc.py`), and
the lifecycle of its tasks.

Tasks are fulfilled in background asyncio tasks through the client's `ask`, kept in a
`TaskStore` in the 1.0 form and rendered in each request's dialect on the way out.

Every task belongs to the identity that created it (`caller_identity`, recorded as the task's
`"owner"`; a task without one belongs to `""`, the unauthenticated or static-token caller):
any other identity is answered as if the task did not exist, and its conversation is kept
under a key of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from starlette.requests import Request as StarletteRequest
from starlette.responses import Response, StreamingResponse

from toolnexus import content
from toolnexus._aio import call_maybe_async
from toolnexus._log import warn
from toolnexus.a2a import _wire as wire
from toolnexus.a2a._wire import Dialect
from toolnexus.errors import ConfigError
from toolnexus.serve._a2a._rpc import (
    EXTENDED_CARD_NOT_CONFIGURED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    PUSH_NOT_SUPPORTED,
    TASK_NOT_CANCELABLE,
    UNSUPPORTED_OPERATION,
    VERSION_NOT_SUPPORTED,
    Reply,
    _RpcError,
    answer_body,
    dialect_of,
    error_body,
    history_length,
    params_of,
    sse_chunk,
    task_id_of,
    task_not_found,
)
from toolnexus.serve._a2a._tasks import DEFAULT_PAGE_SIZE, TaskStore, task_owner
from toolnexus.serve._auth import caller_identity
from toolnexus.types import Request, Tool, error_message

if TYPE_CHECKING:
    from toolnexus._served import Served
    from toolnexus.serve._auth import PerScopeSet

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "A2AConfig", "A2AEndpoint"]

DEFAULT_MAX_IN_FLIGHT = 32
PING_EVERY_S = 15.0

RESTARTED = "the server restarted before the task finished"
STOPPED = "the server stopped before the task finished"


class A2AConfig(TypedDict, total=False):
    """The A2A profile: card identity, advertised skills, task store, public URL, task cap."""

    name: str
    description: str
    version: str
    provider: dict[str, Any]
    skills: list[str]
    store: Any
    url: str
    maxInFlight: int


# -- stored tasks -------------------------------------------------------------------------------


def _read_stored(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A stored task in the 1.0 form, keeping its owner (which is never rendered)."""
    task = wire.read_task(stored)
    owner = task_owner(dict(stored))
    if owner:
        task["owner"] = owner
    return task


def conversation_id(task: Mapping[str, Any]) -> str:
    """The conversation store key of a task's context: its `contextId`, made distinct per
    owner (one caller's contextId never reaches another caller's transcript)."""
    owner = task_owner(dict(task))
    if not owner:
        return str(task["contextId"])
    digest = hashlib.sha256(owner.encode("utf-8")).hexdigest()[:32]
    return f"{task['contextId']}~{digest}"


# -- what the run receives ----------------------------------------------------------------------


def _content_part(part: Mapping[str, Any]) -> dict[str, Any]:
    """A 1.0 file or data part as a content part dict (a data part becomes its compact JSON)."""
    if "data" in part:
        return content.to_dict(content.text(wire.dumps(part["data"]).decode("utf-8")))
    name = part.get("filename")
    made = content.incoming_part(
        data=part.get("raw"),
        url=part.get("url") if "raw" not in part else None,
        mime_type=part.get("mediaType") or None,
        name=name if isinstance(name, str) else None,
    )
    return content.to_dict(made)


def prompt_of(message: Mapping[str, Any]) -> str | list[dict[str, Any]]:
    """The run's prompt from a 1.0 message: its texts concatenated when it holds text only, else
    its parts as content parts in message order. `_RpcError` when nothing usable is in it."""
    parts = message.get("parts") or []
    if all("text" in p for p in parts):
        text = "".join(p["text"] for p in parts)
        if not text:
            raise _RpcError(
                INVALID_PARAMS, "Invalid params: the message has no text, file or data part"
            )
        return text
    try:
        return [
            content.to_dict(content.text(p["text"])) if "text" in p else _content_part(p)
            for p in parts
        ]
    except content.ContentPartError as exc:
        raise _RpcError(INVALID_PARAMS, f"Invalid params: {exc}") from None


def _request_of(result: Any) -> Request | None:
    request = getattr(result, "pending", None)
    return request if isinstance(request, Request) else None


def _history_messages(task: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A transcript rebuilt from a task's history (text parts only), for a resume after the
    conversation store lost it."""
    messages = []
    for message in task.get("history") or []:
        text = wire.message_text(message, "")
        if text:
            role = "assistant" if wire.role_name(message.get("role")) == "agent" else "user"
            messages.append({"role": role, "content": text})
    return messages


# -- replies ------------------------------------------------------------------------------------


def _takes_owner(lister: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(lister).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "owner" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


# -- running tasks ------------------------------------------------------------------------------


@dataclass(eq=False)
class TaskRun:
    """A task whose run is in progress: its cancel event, latest version and listeners."""

    task: dict[str, Any]
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    listeners: list[asyncio.Queue[dict[str, Any] | None]] = field(default_factory=list)
    canceled: bool = False
    job: asyncio.Task[None] | None = None
    toolkit: Served | None = None  # the tools this run's caller may use, when not all
    # Follows the store for a cancel saved by another replica (shared stores only).
    watcher: asyncio.Task[None] | None = None
    changes: Any = None

    def publish(self, event: dict[str, Any] | None) -> None:
        for queue in self.listeners:
            queue.put_nowait(event)


class A2AEndpoint:
    """Answers A2A JSON-RPC requests; fulfils tasks through `client.ask` in the background.

    Its methods without an underscore are also the served MCP tasks' (`serve/_mcp/_tasks.py`),
    which the endpoint keeps too: one task, two views."""

    def __init__(
        self,
        toolkit: Served,
        client: Any,
        store: TaskStore,
        on_task: Callable[[dict[str, Any]], Any] | None = None,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        owns_store: bool = False,
        tool_scopes: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """`tool_scopes` (tool name → scopes) leaves out of a task's run the tools its caller's
        OAuth access token lacks the scopes for: its model never sees them."""
        if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int):
            raise ConfigError(f"maxInFlight must be a positive integer, not {max_in_flight!r}")
        if max_in_flight < 1:
            raise ConfigError(f"maxInFlight must be a positive integer, not {max_in_flight!r}")
        self.toolkit = toolkit
        self.client = client
        self.store = store
        self.on_task = on_task
        self.max_in_flight = max_in_flight
        self.owns_store = owns_store  # opened from a config string: closed with the endpoint
        self.tool_scopes = dict(tool_scopes or {})
        # The toolkit view of each set of granted scopes, and the tools the views were made of.
        self._views: PerScopeSet[Served | None] | None = None
        self._viewed: list[Tool] = []
        if self.tool_scopes:
            from toolnexus.serve._auth import PerScopeSet

            self._views = PerScopeSet(self._view)
        self._runs: dict[str, TaskRun] = {}
        # Streams subscribed to an interrupted task, waiting for the reply that resumes it.
        self._watchers: dict[str, list[asyncio.Queue[dict[str, Any] | None]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closing = False
        lister = getattr(store, "list", None)
        # Listing by owner needs a store whose `list` filters by it (see `TaskStore`).
        self._lists_by_owner = lister is not None and _takes_owner(lister)

    @property
    def in_flight(self) -> int:
        """How many tasks have a run in progress right now."""
        return len(self._runs)

    def is_running(self, task_id: str) -> bool:
        """Whether a run of the task is in progress in this process."""
        return task_id in self._runs

    # -- JSON-RPC -------------------------------------------------------------------------------

    async def route(self, request: StarletteRequest) -> Response:
        """The Starlette endpoint of `POST /`: always HTTP 200, JSON or an event stream."""
        reply = await self.handle(await request.body(), request.headers.get("a2a-version"))
        if reply.stream is not None:
            return StreamingResponse(
                reply.stream,
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        return Response(reply.body, media_type="application/json")

    async def handle(self, body: bytes, version: str | None = None) -> Reply:
        """The answer to one request body; `version` is the `A2A-Version` header, if any."""
        rid: Any = None
        dialect: Dialect = "0.3"
        try:
            try:
                request = wire.loads(body)
            except wire.WireError:
                raise _RpcError(PARSE_ERROR, "Parse error") from None
            if not isinstance(request, dict):
                raise _RpcError(INVALID_REQUEST, "Invalid Request: expected a JSON-RPC object")
            raw_id = request.get("id")
            if raw_id is None or isinstance(raw_id, str) or type(raw_id) is int:
                rid = raw_id
            else:
                raise _RpcError(INVALID_REQUEST, "Invalid Request: id must be a string or integer")
            if request.get("jsonrpc") != "2.0":
                raise _RpcError(INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"')
            method = request.get("method")
            if not isinstance(method, str) or not method:
                raise _RpcError(INVALID_REQUEST, "Invalid Request: method must be a string")
            try:
                dialect, operation = dialect_of(method, version)
            except _RpcError as exc:
                if exc.code == VERSION_NOT_SUPPORTED:
                    dialect = "1.0"
                raise
            params = params_of(request.get("params"))
            if operation in ("stream", "subscribe"):
                events = await self._open_stream(operation, params, dialect)
                return Reply(stream=self._sse_stream(rid, events, dialect))
            result = await self._dispatch(operation, params, dialect)
            return Reply(body=answer_body(rid, result))
        except _RpcError as exc:
            return Reply(body=error_body(rid, exc, dialect))
        except Exception as exc:  # e.g. the task store failed: an answer, never a crash
            failure = _RpcError(INTERNAL_ERROR, f"Internal error: {error_message(exc)}")
            return Reply(body=error_body(rid, failure, dialect))

    async def _dispatch(self, operation: str, params: dict[str, Any], dialect: Dialect) -> Any:
        if operation == "send":
            return await self._send(params, dialect)
        if operation == "get":
            length = history_length(params)
            task = await self.load(task_id_of(params))
            return wire.render_task(task, dialect, history_length=length)
        if operation == "list":
            return await self._list(params)
        if operation == "cancel":
            task = await self.cancel(task_id_of(params))
            return wire.render_task(task, dialect)
        if operation == "push":
            raise _RpcError(PUSH_NOT_SUPPORTED, "Push Notification is not supported")
        raise _RpcError(
            EXTENDED_CARD_NOT_CONFIGURED, "Authenticated Extended Card is not configured"
        )

    # -- reading tasks --------------------------------------------------------------------------

    async def load(self, task_id: str) -> dict[str, Any]:
        """The task in the 1.0 form; one left unfinished by an earlier process reads failed."""
        run = self._runs.get(task_id)
        if run is not None:
            return self._owned(run.task)
        task = await self._stored(task_id)
        if await self._orphaned(task):
            async with self.lock(task_id):
                return await self._load_locked(task_id)
        return task

    @staticmethod
    def _owned(task: dict[str, Any]) -> dict[str, Any]:
        """`task` when the current caller owns it; else the answer for an unknown task."""
        if task_owner(task) != caller_identity():
            raise task_not_found(task["id"])
        return task

    async def _stored(self, task_id: str) -> dict[str, Any]:
        """The stored task, when it exists and the current caller owns it."""
        stored = await self.store.get(task_id)
        if stored is None:
            raise task_not_found(task_id)
        return self._owned(_read_stored(stored))

    async def _orphaned(self, task: dict[str, Any]) -> bool:
        state = wire.state_name(task["status"]["state"])
        if state not in ("submitted", "working") or task["id"] in self._runs:
            return False
        # A store shared by replicas knows whether another live replica runs the task.
        elsewhere = getattr(self.store, "running_elsewhere", None)
        return elsewhere is None or not await elsewhere(task["id"])

    async def _load_locked(self, task_id: str) -> dict[str, Any]:
        """`_load` for a caller holding the task's lock."""
        run = self._runs.get(task_id)
        if run is not None:
            return self._owned(run.task)
        task = await self._stored(task_id)
        if await self._orphaned(task):
            task = self.with_status(task, "failed", RESTARTED)
            await self.store.save(task)
        return task

    async def _list(self, params: dict[str, Any]) -> dict[str, Any]:
        lister = getattr(self.store, "list", None)
        if lister is None or not self._lists_by_owner:
            raise _RpcError(UNSUPPORTED_OPERATION, "ListTasks is not supported by this task store")
        size = params.get("pageSize")
        if size is None:
            size = DEFAULT_PAGE_SIZE
        if isinstance(size, bool) or not isinstance(size, int):
            raise _RpcError(INVALID_PARAMS, "Invalid params: pageSize must be an integer")
        if size < 1:
            raise _RpcError(INVALID_PARAMS, "minimum page size is 1")
        if size > 100:
            raise _RpcError(INVALID_PARAMS, "maximum page size is 100")
        length = history_length(params)
        token = params.get("pageToken")
        context_id = params.get("contextId")
        status = params.get("status")
        after = params.get("statusTimestampAfter")
        for name, value in (("pageToken", token), ("contextId", context_id), ("status", status)):
            if value is not None and not isinstance(value, str):
                raise _RpcError(INVALID_PARAMS, f"Invalid params: {name} must be a string")
        if after is not None and not isinstance(after, str):
            raise _RpcError(INVALID_PARAMS, "Invalid params: statusTimestampAfter must be a string")
        # A state this server does not know (a client's "UNRECOGNIZED" or unspecified enum
        # value) is no filter.
        state: str | None = wire.state_name(status)
        if state == "unknown":
            state = None
        caller = caller_identity()
        try:
            tasks, next_token, total = await lister(
                context_id=context_id or None,
                state=state,
                updated_after=after or None,
                page_size=size,
                page_token=token or None,
                owner=caller,
            )
        except ValueError as exc:
            raise _RpcError(INVALID_PARAMS, f"Invalid params: {error_message(exc)}") from None
        rendered = []
        for stored in tasks:
            task = _read_stored(stored)
            if task_owner(task) != caller:
                continue  # a store that ignored `owner`: its page still shows nobody else's
            if await self._orphaned(task):
                task = await self.load(task["id"])
            rendered.append(
                wire.render_task(
                    task,
                    "1.0",
                    history_length=length,
                    artifacts=params.get("includeArtifacts") is True,
                )
            )
        return {
            "tasks": rendered,
            "nextPageToken": next_token or "",
            "pageSize": size,
            "totalSize": total,
        }

    # -- writing tasks --------------------------------------------------------------------------

    def lock(self, task_id: str) -> asyncio.Lock:
        """The lock of one task: held across a read and the save that depends on it."""
        lock = self._locks.get(task_id)
        if lock is None:
            lock = self._locks[task_id] = asyncio.Lock()
        return lock

    def _forget_lock(self, task_id: str) -> None:
        lock = self._locks.get(task_id)
        if lock is not None and not lock.locked() and task_id not in self._runs:
            del self._locks[task_id]

    @staticmethod
    def with_status(
        task: dict[str, Any],
        state: str,
        text: str | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """`task` in a new state (a copy); a status message with `text` joins the history."""
        status: dict[str, Any] = {"state": wire.proto_state(state), "timestamp": wire.now()}
        updated = {**task, "status": status}
        if text is not None:
            message = wire.agent_message(
                text, context_id=task["contextId"], task_id=task["id"], metadata=metadata
            )
            status["message"] = message
            updated["history"] = [*(task.get("history") or []), message]
        return updated

    def reserve(self, task: dict[str, Any]) -> TaskRun:
        """Register a run of `task` (not yet saved nor started); `_RpcError` when the server is
        stopping or `max_in_flight` runs are in progress. Every reserved run is `release`d."""
        if self._closing:
            raise _RpcError(INTERNAL_ERROR, "Internal error: the server is stopping")
        if len(self._runs) >= self.max_in_flight:
            raise _RpcError(
                INTERNAL_ERROR,
                f"Too many tasks in flight (limit {self.max_in_flight}); retry later",
                reason="RESOURCE_EXHAUSTED",
            )
        run = TaskRun(task=task)
        run.listeners.extend(self._watchers.pop(task["id"], []))
        self._runs[task["id"]] = run
        return run

    def release(self, run: TaskRun) -> None:
        """End `run`'s registration: its watcher stops and its listeners get the end of stream."""
        if self._runs.get(run.task["id"]) is run:
            del self._runs[run.task["id"]]
        if run.watcher is not None:
            run.watcher.cancel()
            run.changes.close()
        run.settled.set()
        run.publish(None)
        self._forget_lock(run.task["id"])

    async def _send(self, params: dict[str, Any], dialect: Dialect) -> Any:
        run = await self._accept(params)
        config = params.get("configuration")
        config = config if isinstance(config, dict) else {}
        length = history_length(config)
        if dialect == "legacy":
            immediate = True
        elif dialect == "1.0":
            immediate = config.get("returnImmediately") is True or config.get("blocking") is False
        else:
            immediate = config.get("blocking") is False
        if not immediate:
            await run.settled.wait()
        task = wire.render_task(run.task, dialect, history_length=length)
        return {"task": task} if dialect == "1.0" else task

    async def _accept(self, params: dict[str, Any]) -> TaskRun:
        """Read the message, create or resume its task, save it and start its run."""
        message = params.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            raise _RpcError(INVALID_PARAMS, "Invalid params: params.message needs a parts list")
        if not message["parts"]:
            raise _RpcError(INVALID_PARAMS, "Invalid params: params.message needs a parts list")
        config = params.get("configuration")
        if isinstance(config, dict) and (
            config.get("taskPushNotificationConfig") or config.get("pushNotificationConfig")
        ):
            raise _RpcError(PUSH_NOT_SUPPORTED, "Push Notification is not supported")
        if isinstance(config, dict):
            history_length(config)
        read = wire.read_message(message)
        read["role"] = "ROLE_USER"
        read.pop("metadata", None)
        prompt = prompt_of(read)
        task_id = read.get("taskId")
        if task_id is not None:
            return await self._resume(task_id, read, prompt)
        context_id = read.get("contextId") or wire.new_id()
        task_id = wire.new_id()
        read["contextId"] = context_id
        read["taskId"] = task_id
        task: dict[str, Any] = {
            "id": task_id,
            "contextId": context_id,
            "status": {"state": "TASK_STATE_SUBMITTED", "timestamp": wire.now()},
            "history": [read],
        }
        owner = caller_identity()
        if owner:
            task["owner"] = owner
        run = self.reserve(task)
        try:
            await self.store.save(task)
        except BaseException:
            self.release(run)
            raise
        self._start(run, prompt, resumed=False)
        return run

    async def _resume(
        self, task_id: str, message: dict[str, Any], prompt: str | list[dict[str, Any]]
    ) -> TaskRun:
        async with self.lock(task_id):
            if task_id in self._runs:
                state = wire.state_name(self._owned(self._runs[task_id].task)["status"]["state"])
                raise _RpcError(
                    UNSUPPORTED_OPERATION,
                    f"Task {task_id} is {state}; only an input-required or auth-required task "
                    "accepts a message",
                )
            task = await self._load_locked(task_id)
            given = message.get("contextId")
            if given is not None and given != task["contextId"]:
                raise _RpcError(
                    INVALID_PARAMS,
                    f"Context {given} does not match context {task['contextId']} of task {task_id}",
                )
            state = wire.state_name(task["status"]["state"])
            if state in wire.TERMINAL_STATES:
                raise _RpcError(
                    UNSUPPORTED_OPERATION, f"Task {task_id} is in terminal state: {state}"
                )
            if state not in wire.INTERRUPTED_STATES:
                raise _RpcError(
                    UNSUPPORTED_OPERATION,
                    f"Task {task_id} is {state}; only an input-required or auth-required task "
                    "accepts a message",
                )
            message["contextId"] = task["contextId"]
            message["taskId"] = task_id
            working = self.with_status(task, "working")
            working["history"] = [*(task.get("history") or []), message]
            run = self.reserve(working)
            try:
                await self.store.save(working)
            except BaseException:
                self.release(run)
                raise
        await self._restore_transcript(task)
        self._start(run, prompt, resumed=True)
        return run

    async def _restore_transcript(self, task: dict[str, Any]) -> None:
        store = getattr(self.client, "conversation_store", None)
        if store is None:
            return
        key = conversation_id(task)
        try:
            if not await store.get(key):
                rebuilt = _history_messages(task)
                if rebuilt:
                    await store.save(key, rebuilt)
        except Exception as exc:
            warn(f"A2A task {task['id']}: could not restore its conversation: {error_message(exc)}")

    def _scoped_toolkit(self) -> Served | None:
        """The toolkit less the tools the current caller's scopes do not allow (`None`: it may
        use all). A view is made once per set of scopes, and again after the tool set changed
        (a registration, an MCP server's new list): it follows no later change by itself."""
        from toolnexus.serve._auth import granted_scopes

        granted = granted_scopes()
        if granted is None or self._views is None:
            return None
        tools = self.toolkit.tools()
        if tools != self._viewed:
            self._views.clear()
            self._viewed = tools
        return self._views.get(granted)

    def _view(self, granted: frozenset[str]) -> Served | None:
        from toolnexus._served import without_tools
        from toolnexus.serve._auth import visible_tools

        names = [t.name for t in self._viewed]
        hidden = set(names).difference(visible_tools(self.tool_scopes, granted, names))
        return without_tools(self.toolkit, hidden) if hidden else None

    def _start(self, run: TaskRun, prompt: str | list[dict[str, Any]], *, resumed: bool) -> None:
        if self.tool_scopes:
            # The caller of this request (a resume is run with the resuming caller's scopes).
            run.toolkit = self._scoped_toolkit()
        loop = asyncio.get_running_loop()
        run.job = loop.create_task(self._fulfil(run, prompt, resumed))
        self.watch_cancels(run)

    def watch_cancels(self, run: TaskRun) -> None:
        """With a store shared by replicas, stop `run` (while it runs here) when another replica
        saves its task canceled."""
        watch = getattr(self.store, "watch", None)
        if callable(watch) and run.task["id"] in self._runs:
            # Watching from now on (not from when the watcher first runs): nothing is missed.
            run.changes = watch(run.task["id"])
            run.watcher = asyncio.get_running_loop().create_task(
                self._heed_cancel_elsewhere(run, run.changes)
            )

    async def _heed_cancel_elsewhere(self, run: TaskRun, changes: Any) -> None:
        """Stop `run` when another replica saves its task canceled (a shared store's
        announcements; the store keeps a finished state, so that save is the last word)."""
        task_id = run.task["id"]
        try:
            async with changes:
                look = changes.missed
                while not run.settled.is_set():
                    if look:
                        stored = await self.store.get(task_id)
                        state = wire.state_name((stored or {}).get("status", {}).get("state"))
                        if stored is not None and state == "canceled":
                            async with self.lock(task_id):
                                if not run.canceled and not run.settled.is_set():
                                    self._stop_run(run, _read_stored(stored))
                            return
                    look = await changes.wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the run goes on; a cancel elsewhere then only shows in the store
            warn(f"A2A task {task_id}: cannot follow the task store: {error_message(exc)}")

    # -- fulfilment -----------------------------------------------------------------------------

    async def commit(self, run: TaskRun, task: dict[str, Any]) -> bool:
        """Save a new version of a running task unless it was canceled meanwhile."""
        async with self.lock(task["id"]):
            if run.canceled:
                return False
            run.task = task
            try:
                await self.store.save(task)
            except Exception as exc:  # a store failure never crashes the server
                warn(f"A2A task store failed to save task {task['id']}: {error_message(exc)}")
            return True

    def _status_event(self, task: dict[str, Any]) -> dict[str, Any]:
        return {
            "statusUpdate": {
                "taskId": task["id"],
                "contextId": task["contextId"],
                "status": task["status"],
            }
        }

    async def _fulfil(
        self, run: TaskRun, prompt: str | list[dict[str, Any]], resumed: bool
    ) -> None:
        task = run.task
        result: Any = None
        final: dict[str, Any] | None = None
        try:
            if not resumed:
                working = self.with_status(task, "working")
                if await self.commit(run, working):
                    run.publish(self._status_event(working))
            else:
                run.publish(self._status_event(run.task))
            try:
                toolkit = run.toolkit if run.toolkit is not None else self.toolkit
                result = await self.client.ask(
                    prompt, toolkit, id=conversation_id(task), cancel=run.cancel
                )
                final = self._final(run.task, result)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failed run fails its task, nothing else
                final = self.with_status(run.task, "failed", error_message(exc))
            if await self.commit(run, final):
                for artifact in final.get("artifacts") or []:
                    run.publish(
                        {
                            "artifactUpdate": {
                                "taskId": final["id"],
                                "contextId": final["contextId"],
                                "artifact": artifact,
                                "lastChunk": True,
                            }
                        }
                    )
                run.publish(self._status_event(final))
            else:
                final = run.task
        except asyncio.CancelledError:
            run.cancel.set()  # tools still running in threads see the signal
            if not run.canceled:
                stopped = self.with_status(run.task, "canceled", STOPPED)
                run.canceled = True
                run.task = stopped
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.store.save(stopped))
            raise
        finally:
            self.release(run)
        await self._notify(final, result if not run.canceled else None)

    def _final(self, task: dict[str, Any], result: Any) -> dict[str, Any]:
        request = _request_of(result) if getattr(result, "status", None) == "pending" else None
        if request is not None:
            text = request.prompt or str(getattr(result, "text", "") or "")
            if request.url:
                text = f"{text}\n{request.url}"
            state = "auth-required" if request.kind == "authorization" else "input-required"
            return self.with_status(
                task, state, text, metadata={"toolnexusRequest": request.to_dict()}
            )
        final = self.with_status(task, "completed")
        answer = str(getattr(result, "text", "") or "")
        final["artifacts"] = [
            {"artifactId": wire.new_id(), "name": "answer", "parts": [{"text": answer}]}
        ]
        return final

    async def _notify(self, final: dict[str, Any], result: Any) -> None:
        if self.on_task is None:
            return
        state = wire.state_name(final["status"]["state"])
        event = {"id": final["id"], "task": final, "result": result, "state": state}
        try:
            await call_maybe_async(self.on_task, event)
        except Exception as exc:
            warn(f"on_task raised for A2A task {final['id']}: {error_message(exc)}")

    # -- cancel ---------------------------------------------------------------------------------

    async def cancel(self, task_id: str) -> dict[str, Any]:
        """Save the task canceled and stop its run here; `_RpcError` for a finished task."""
        async with self.lock(task_id):
            run = self._runs.get(task_id)
            if run is not None and not wire.is_terminal(self._owned(run.task)["status"]["state"]):
                # Still running (a run canceled or finished but not yet unwound is terminal).
                canceled = self.with_status(run.task, "canceled")
                await self.store.save(canceled)
                self._stop_run(run, canceled)
                return canceled
            task = await self._load_locked(task_id)
            state = wire.state_name(task["status"]["state"])
            if state in wire.TERMINAL_STATES:
                raise _RpcError(
                    TASK_NOT_CANCELABLE, f"Task {task_id} is {state} and cannot be canceled"
                )
            canceled = self.with_status(task, "canceled")
            await self.store.save(canceled)
        self._wake_watchers(task_id, self._status_event(canceled))
        self._forget_lock(task_id)
        return canceled

    def _stop_run(self, run: TaskRun, canceled: dict[str, Any]) -> None:
        """Mark `run` canceled (its task now `canceled`, already saved) and stop it; the caller
        holds the task's lock."""
        run.canceled = True
        run.task = canceled
        run.cancel.set()
        run.publish(self._status_event(canceled))
        run.publish(None)
        run.settled.set()

    # -- streams --------------------------------------------------------------------------------

    async def _open_stream(
        self, operation: str, params: dict[str, Any], dialect: Dialect
    ) -> AsyncIterator[dict[str, Any]]:
        """Validate and start the stream; errors found here are answered as plain JSON."""
        if operation == "stream":
            run = await self._accept(params)
        else:
            task_id = task_id_of(params)
            task = await self.load(task_id)
            state = wire.state_name(task["status"]["state"])
            if state in wire.TERMINAL_STATES:
                raise _RpcError(
                    UNSUPPORTED_OPERATION, f"Task {task_id} is in terminal state: {state}"
                )
            found = self._runs.get(task_id)
            if found is None:
                # Interrupted here (its updates start with the reply that resumes it), or run
                # by another replica sharing the store (its saves are the updates).
                queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
                self._watchers.setdefault(task_id, []).append(queue)
                return self._follow(task_id, queue, {"task": task}, known=task)
            run = found
        queue = asyncio.Queue()
        run.listeners.append(queue)
        first = {"task": run.task}
        if run.settled.is_set():
            queue.put_nowait(None)
        return self._follow(run.task["id"], queue, first)

    def _wake_watchers(self, task_id: str, event: dict[str, Any] | None) -> None:
        for queue in self._watchers.pop(task_id, []):
            if event is not None:
                queue.put_nowait(event)
            queue.put_nowait(None)

    async def _follow(
        self,
        task_id: str,
        queue: asyncio.Queue[dict[str, Any] | None],
        first: dict[str, Any],
        *,
        known: dict[str, Any] | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """`first`, then what arrives on `queue`; with `known` (a task not run here) and a
        shared store, also the updates other replicas save."""
        watch = getattr(self.store, "watch", None)
        pump = None
        if known is not None and callable(watch):
            feed = self._updates_from_store(task_id, known, watch(task_id), queue)
            pump = asyncio.get_running_loop().create_task(feed)
        try:
            yield first
            while True:
                event = await queue.get()
                if event is None:
                    return
                yield event
        finally:
            if pump is not None:
                pump.cancel()
            run = self._runs.get(task_id)
            if run is not None and queue in run.listeners:
                run.listeners.remove(queue)
            waiting = self._watchers.get(task_id)
            if waiting is not None and queue in waiting:
                waiting.remove(queue)
                if not waiting:
                    del self._watchers[task_id]

    async def _updates_from_store(
        self,
        task_id: str,
        known: dict[str, Any],
        changes: Any,
        queue: asyncio.Queue[dict[str, Any] | None],
    ) -> None:
        """Put on `queue` the updates of a task that another replica saves, until one is final;
        a task whose replica died reads failed (`_load`) within a lease."""
        lease_s = float(getattr(self.store, "lease_ms", 15_000)) / 1000
        try:
            async with changes:
                look = True  # what changed before the watch began is seen by a first read
                while task_id not in self._runs:  # resumed here: the run's listeners carry it
                    running = wire.state_name(known["status"]["state"]) in ("submitted", "working")
                    if look or running:
                        current = await self.load(task_id)
                        if task_id in self._runs:
                            return
                        events = self._events_between(known, current)
                        for event in events:
                            queue.put_nowait(event)
                        known = current
                        state = current["status"]["state"]
                        if events and (wire.is_terminal(state) or wire.is_interrupted(state)):
                            return  # the stream ends with that event
                    look = await changes.wait(lease_s if running else None)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the stream ends with the error event; the task goes on
            queue.put_nowait(None)
            warn(f"A2A task {task_id}: cannot follow the task store: {error_message(exc)}")

    def _events_between(self, old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
        """The stream events that take a subscriber from version `old` of a task to `new`."""
        seen = {a.get("artifactId") for a in old.get("artifacts") or []}
        events: list[dict[str, Any]] = [
            {
                "artifactUpdate": {
                    "taskId": new["id"],
                    "contextId": new["contextId"],
                    "artifact": artifact,
                    "lastChunk": True,
                }
            }
            for artifact in new.get("artifacts") or []
            if artifact.get("artifactId") not in seen
        ]
        if new["status"] != old["status"]:
            events.append(self._status_event(new))
        return events

    async def _sse_stream(
        self, rid: Any, events: AsyncIterator[dict[str, Any]], dialect: Dialect
    ) -> AsyncIterator[bytes]:
        """The SSE chunks of a stream; `: ping` comments while nothing happens."""
        pending: asyncio.Future[dict[str, Any]] | None = None
        iterator = aiter(events)
        try:
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(anext(iterator))
                done, _ = await asyncio.wait({pending}, timeout=PING_EVERY_S)
                if not done:
                    yield b": ping\n\n"
                    continue
                try:
                    event = pending.result()
                except StopAsyncIteration:
                    return
                finally:
                    pending = None
                final = "statusUpdate" in event and (
                    wire.is_terminal(event["statusUpdate"]["status"]["state"])
                    or wire.is_interrupted(event["statusUpdate"]["status"]["state"])
                )
                yield sse_chunk(answer_body(rid, wire.render_event(event, dialect, final=final)))
                if final:
                    return
        except Exception as exc:
            failure = _RpcError(INTERNAL_ERROR, f"Internal error: {error_message(exc)}")
            yield sse_chunk(error_body(rid, failure, dialect), error=dialect == "1.0")
        finally:
            if pending is not None:
                pending.cancel()
            closer = getattr(events, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer()

    # -- shutdown -------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop every running task (each is saved `canceled`) and wait for them to end."""
        self._closing = True
        for task_id in list(self._watchers):
            self._wake_watchers(task_id, None)
        jobs = []
        for run in list(self._runs.values()):
            if run.job is not None:
                run.job.cancel()
                jobs.append(run.job)
        if jobs:
            await asyncio.gather(*jobs, return_exceptions=True)
        closer = getattr(self.store, "aclose", None)
        if self.owns_store and callable(closer):
            try:
                await closer()
            except Exception as exc:
                warn(f"A2A task store failed to close: {error_message(exc)}")
