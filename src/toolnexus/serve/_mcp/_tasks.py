"""MCP Tasks served: the `io.modelcontextprotocol/tasks` extension (SEP-2663) on the MCP profile.

A served tool that declares task support (`Tool.metadata["taskSupport"]`: `"optional"` or
`"required"`) runs as a task for a client that declared the extension on its `tools/call`: the
call is answered at once with a task handle (`resultType: "task"`), and the client follows the
task with `tasks/get`, answers its input requests with `tasks/update` and may `tasks/cancel` it.
A `"required"` tool called by a client without the extension is refused (-32021); an
`"optional"` one then runs as a plain call.

The tasks are the A2A profile's: kept by the same `A2AEndpoint` (its store: memory, file,
PostgreSQL or Redis; its run registry; its owner checks), in the A2A 1.0 form. So an MCP task
and an A2A task are two views of one task: an A2A `GetTask`/`CancelTask` reads or cancels a task
an MCP call started, and `tasks/get`/`tasks/cancel` read or cancel a task an A2A message
started. A tool's wire result rides along in its artifact's metadata (`mcpResult`, as JSON text), so
the MCP view returns exactly what a plain call would have.

The gateway relays upstream tasks: a tool of the toolkit's MCP servers (`source == "mcp"`)
called by a caller that declared the extension runs as a gateway task exactly when its upstream
server answers the call with a task (the toolkit's client records the upstream task in the
call's `TaskLedger`, `toolnexus._task_ledger`, which is the signal); an upstream that answers at
once gets the plain answer relayed as ever. The gateway's task is its own (its id, its store,
owned by its caller) and follows the upstream one: the toolkit's client goes on polling the
upstream task inside the gateway task's run, so each upstream `statusMessage` becomes the
gateway task's, its input requests become the gateway task's (`tasks/update` resumes the run,
which sends the answer on with the upstream's `tasks/update`), `tasks/cancel` stops the run,
which cancels the upstream task, and the upstream result is the gateway task's result. The
upstream reference is kept in the task's metadata (`mcp.upstream`).

A task's call is observed as a plain call is: when its run ends (completed, with or without a
tool error, or cancelled, once the tool has stopped; not when it waits for input), the server's
`on_call` gets
`{"name", "source", "ms", "is_error"}` plus `"task"` (its id) and `"status"` (`"completed"` or
`"cancelled"`), `ms` counted from the task's creation.

The released `mcp` SDK (2.3) has the extension framework but not Tasks; this module is the whole
of the served side, written as an SDK `Extension` (its methods and its `tools/call` interceptor)
so that it can give way to the SDK's own Tasks server once one ships.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types
from mcp.server.extension import Extension, MethodBinding, compose_tool_call_handler
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict

from toolnexus._aio import call_maybe_async
from toolnexus._json import compact_json
from toolnexus._log import logger, warn
from toolnexus._task_ledger import ledger
from toolnexus.a2a import _wire as wire
from toolnexus.serve._a2a._rpc import TASK_NOT_FOUND, _RpcError
from toolnexus.serve._auth import caller_identity
from toolnexus.serve._mcp._asking import _elicitation, answer_of
from toolnexus.types import Request, Tool, ToolContext, ToolResult, error_message, pending_of

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from toolnexus.serve._a2a._endpoint import A2AEndpoint, TaskRun

__all__ = ["TASKS", "McpTasks", "runs_as_task", "task_support"]

TASKS = "io.modelcontextprotocol/tasks"
DEFAULT_POLL_MS = 500
"""The `pollIntervalMs` the served tasks suggest."""
_SUPPORT = ("optional", "required")

Execute = Callable[[Tool, dict[str, Any], ToolContext], Awaitable[ToolResult]]
Render = Callable[[Tool, ToolResult], dict[str, Any]]
Conclude = Callable[[Any, Tool, dict[str, Any], ToolResult, float], Awaitable[Any]]
Progress = Callable[[dict[str, Any]], Awaitable[None]]
OnEnd = Callable[[dict[str, Any]], "Awaitable[None] | None"]
_Relay = tuple[asyncio.Event, "asyncio.Future[ToolResult]", Progress]


def task_support(tool: Tool) -> str | None:
    """`"optional"` or `"required"` when `tool` declares it runs as a task, else `None`."""
    support = (tool.metadata or {}).get("taskSupport")
    return support if support in _SUPPORT else None


def _relayed(tool: Tool) -> bool:
    """Whether `tool` is an upstream MCP server's, which that server may run as a task."""
    return tool.source == "mcp" and task_support(tool) is None


def runs_as_task(tool: Tool) -> bool:
    """Whether a call of `tool` may be answered with a task (its own, or its upstream's)."""
    return task_support(tool) is not None or _relayed(tool)


class _Announced:
    """The `TaskLedger` of a relayed call: the upstream answering with a task is the moment the
    gateway's task is announced; its reference joins the task's metadata."""

    def __init__(self, run: TaskRun) -> None:
        self.run = run
        self.event = asyncio.Event()

    async def recall(self) -> Mapping[str, Any] | None:
        return None  # a relayed call is always a first call

    async def record(self, reference: Mapping[str, Any] | None) -> None:
        if reference is None or self.event.is_set():
            return
        metadata = self.run.task["metadata"]
        metadata["mcp"] = {**metadata["mcp"], "upstream": compact_json(dict(reference))}
        self.event.set()


class _TaskParams(types.RequestParams):
    model_config = ConfigDict(extra="allow")
    task_id: str


class _Reply(types.Result):
    model_config = ConfigDict(extra="allow")
    result_type: str = "complete"


def _missing_capability() -> MCPError:
    return MCPError(
        types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        {"requiredCapabilities": {"extensions": {TASKS: {}}}},
    )


def _declared(ctx: Any) -> bool:
    capabilities = ctx.session.client_capabilities
    return TASKS in (getattr(capabilities, "extensions", None) or {})


class McpTasks(Extension):
    """The served Tasks extension over `book`, the endpoint that keeps the tasks."""

    identifier = TASKS

    def __init__(
        self,
        book: A2AEndpoint,
        tools: Sequence[Tool],
        execute: Execute,
        render: Render,
        *,
        poll_ms: int = DEFAULT_POLL_MS,
        conclude: Conclude | None = None,
        on_call: OnEnd | None = None,
    ) -> None:
        """`execute` runs one call of a tool; `render` makes its result the wire result;
        `conclude` answers a relayed call its upstream answered at once (as a plain
        `tools/call` would: input requests, `on_call`); without it no call is relayed.
        `on_call` is told of each task's end (the server's `on_call`)."""
        self._on_call = on_call
        self._book = book
        relay = conclude is not None
        self._tools = {t.name: t for t in tools if task_support(t) or (relay and _relayed(t))}
        self._execute = execute
        self._render = render
        self._poll_ms = poll_ms
        self._conclude = conclude

    def install(self, server: Server[Any], call_tool: Any) -> None:
        """Serve the extension on `server` (a lowlevel one, which applies no `Extension`
        itself, as `MCPServer` would): its methods, its capability, and `call_tool` (the
        server's `tools/call` handler) wrapped by the interceptor."""
        for method in self.methods():
            server.add_request_handler(method.method, method.params_type, method.handler)
        server.extensions[self.identifier] = self.settings()
        wrapped = compose_tool_call_handler([self], call_tool)
        server.add_request_handler("tools/call", types.CallToolRequestParams, wrapped)

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", _TaskParams, self._get),
            MethodBinding("tasks/update", _TaskParams, self._update),
            MethodBinding("tasks/cancel", _TaskParams, self._cancel),
        ]

    # -- tools/call -----------------------------------------------------------------------------

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        tool = self._tools.get(params.name)
        if tool is None:
            return await call_next(ctx)
        if not _declared(ctx):
            if task_support(tool) == "required":
                raise _missing_capability()
            return await call_next(ctx)
        if _relayed(tool):
            return await self._relay(ctx, tool, dict(params.arguments or {}), call_next)
        args = dict(params.arguments or {})
        run = await self._reserve(tool, args)
        self._start(run, tool, args, None)
        return _Reply(**self._view(run.task), result_type="task")

    def _new_task(self, tool: Tool, args: dict[str, Any]) -> dict[str, Any]:
        task: dict[str, Any] = {
            "id": wire.new_id(),
            "status": {"state": wire.proto_state("working"), "timestamp": wire.now()},
            "history": [],
            # JSON text, not values: A2A peers read metadata as protobuf Structs, whose numbers
            # are all floats, and the arguments must come back as they were sent
            "metadata": {
                "mcp": {"tool": tool.name, "arguments": compact_json(args), "createdAt": wire.now()}
            },
        }
        task["contextId"] = task["id"]
        owner = caller_identity()
        if owner:
            task["owner"] = owner
        return task

    def _reserved(self, task: dict[str, Any]) -> TaskRun:
        try:
            return self._book.reserve(task)
        except _RpcError as exc:  # too many tasks in flight, or the server is stopping
            raise MCPError(types.INTERNAL_ERROR, exc.message) from None

    async def _reserve(self, tool: Tool, args: dict[str, Any]) -> TaskRun:
        run = self._reserved(self._new_task(tool, args))
        try:
            await self._book.store.save(run.task)  # durably created before the handle is answered
        except BaseException:
            self._book.release(run)
            raise
        return run

    async def _relay(self, ctx: Any, tool: Tool, args: dict[str, Any], call_next: Any) -> Any:
        """A call of an upstream tool: a task once the upstream answers with one (announced),
        else the upstream's answer, relayed as a plain call's. With no room for another task
        (`maxInFlight`), the call is a plain one: the gateway follows any upstream task itself."""
        assert self._conclude is not None
        started = time.perf_counter()
        try:
            run = self._book.reserve(self._new_task(tool, args))
        except _RpcError:
            return await call_next(ctx)
        announced = _Announced(run)
        session = ctx.session
        outcome: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()

        async def progress(event: dict[str, Any]) -> None:  # the caller's, until announced
            await session.report_progress(
                event.get("progress", 0), event.get("total"), event.get("message")
            )

        with ledger(announced):
            self._start(run, tool, args, None, relay=(announced.event, outcome, progress))
        assert run.job is not None
        waiter = asyncio.ensure_future(announced.event.wait())
        try:
            pending: set[asyncio.Future[Any]] = {outcome, waiter, run.job}
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the caller gave up before any task was announced
            run.cancel.set()
            if run.job is not None:
                run.job.cancel()
            raise
        finally:
            waiter.cancel()
        if not announced.event.is_set():
            if not outcome.done():  # its run was stopped (the server is stopping)
                raise MCPError(types.INTERNAL_ERROR, f"the call of {tool.name} was stopped")
            return await self._conclude(ctx, tool, args, outcome.result(), started)
        book = self._book
        async with book.lock(run.task["id"]):
            await book.store.save(run.task)  # its latest version: the run may have moved on
            self._book.watch_cancels(run)
            return _Reply(**self._view(run.task), result_type="task")

    def _start(
        self,
        run: TaskRun,
        tool: Tool,
        args: dict[str, Any],
        resume: Any,
        *,
        relay: _Relay | None = None,
    ) -> None:
        run.job = asyncio.get_running_loop().create_task(self._run(run, tool, args, resume, relay))
        if relay is None:  # a relayed call is watched once it is a task
            self._book.watch_cancels(run)

    async def _run(
        self,
        run: TaskRun,
        tool: Tool,
        args: dict[str, Any],
        resume: tuple[Request, Any] | None,
        relay: _Relay | None = None,
    ) -> None:
        """One run of the task's tool (the first, or after an input request was answered).
        A relayed call's run (`relay`: announced, outcome, the caller's progress) is a task only
        once announced; until then its progress is the caller's and its result the outcome."""
        book = self._book

        def a_task() -> bool:
            return relay is None or relay[0].is_set()

        async def progress(event: dict[str, Any]) -> None:
            if relay is not None and not a_task():
                await relay[2](event)
                return
            message = event.get("message")
            if isinstance(message, str) and message:
                await book.commit(run, book.with_status(run.task, "working", message))

        request, answer = resume if resume is not None else (None, None)
        context = ToolContext(signal=run.cancel, answer=answer, request=request)
        context.on_progress = progress
        try:
            try:
                result = await self._execute(tool, args, context)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the server never crashes on a tool
                result = ToolResult(error_message(exc), True)
            if a_task():
                await book.commit(run, self._final(run.task, tool, result))
                if run.canceled:  # cancelled (by either protocol); the tool has now stopped
                    await self._ended(run.task, tool, "cancelled", True)
                elif pending_of(result) is None:  # not waiting for input: the call ended
                    await self._ended(run.task, tool, "completed", result.is_error)
            elif relay is not None:
                relay[1].set_result(result)
        except asyncio.CancelledError:
            run.cancel.set()
            if a_task():
                if not run.canceled:
                    run.canceled = True
                    run.task = book.with_status(run.task, "canceled")
                    with contextlib.suppress(Exception):
                        await asyncio.shield(book.store.save(run.task))
                await asyncio.shield(self._ended(run.task, tool, "cancelled", True))
            raise
        except Exception as exc:
            warn(f"MCP task {run.task['id']}: {error_message(exc)}")
        finally:
            book.release(run)

    async def _ended(self, task: Mapping[str, Any], tool: Tool, status: str, failed: bool) -> None:
        """Tell `on_call` that the task's call ended (its exceptions are ignored)."""
        if self._on_call is None:
            return
        event = {
            "name": tool.name,
            "source": tool.source,
            "ms": _age_ms(task),
            "is_error": failed,
            "task": task["id"],
            "status": status,
        }
        try:
            await call_maybe_async(self._on_call, event)
        except Exception:
            logger.debug("[toolnexus] on_call raised; ignored", exc_info=True)

    def _final(self, task: dict[str, Any], tool: Tool, result: ToolResult) -> dict[str, Any]:
        book = self._book
        asked = pending_of(result)
        if asked is not None:
            state = "auth-required" if asked.kind == "authorization" else "input-required"
            return book.with_status(
                task, state, asked.prompt, metadata={"toolnexusRequest": asked.to_dict()}
            )
        final = book.with_status(task, "completed")
        final["artifacts"] = [
            {
                "artifactId": wire.new_id(),
                "name": "result",
                "parts": [{"text": result.output}],
                "metadata": {"mcpResult": compact_json(self._render(tool, result))},
            }
        ]
        return final

    # -- tasks/* --------------------------------------------------------------------------------

    async def _load(self, ctx: Any, params: _TaskParams) -> dict[str, Any]:
        if not _declared(ctx):
            raise _missing_capability()
        try:
            return await self._book.load(params.task_id)
        except _RpcError as exc:
            if exc.code == TASK_NOT_FOUND:  # or another caller's: never told apart
                raise MCPError(
                    types.INVALID_PARAMS, "Failed to retrieve task: Task not found"
                ) from None
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None

    async def _get(self, ctx: Any, params: _TaskParams) -> _Reply:
        return _Reply(**self._view(await self._load(ctx, params)))

    async def _cancel(self, ctx: Any, params: _TaskParams) -> _Reply:
        task = await self._load(ctx, params)
        if not wire.is_terminal(task["status"]["state"]):
            with contextlib.suppress(Exception):  # finished meanwhile: acknowledged all the same
                await self._book.cancel(params.task_id)
        return _Reply()

    async def _update(self, ctx: Any, params: _TaskParams) -> _Reply:
        task = await self._load(ctx, params)
        responses = (params.model_extra or {}).get("inputResponses")
        asked = _asked(task)
        mcp = (task.get("metadata") or {}).get("mcp")
        if asked is None or not isinstance(responses, Mapping) or asked.id not in responses:
            return _Reply()  # nothing outstanding answered: ignored, as the spec asks
        if not isinstance(mcp, Mapping) or mcp.get("tool") not in self._tools:
            raise MCPError(types.INVALID_PARAMS, "this task takes its answer as an A2A message")
        tool = self._tools[str(mcp["tool"])]
        book = self._book
        async with book.lock(params.task_id):
            if book.is_running(params.task_id):
                return _Reply()  # answered already: its run is going on
            working = book.with_status(task, "working")
            try:
                run = book.reserve(working)
            except _RpcError as exc:
                raise MCPError(types.INTERNAL_ERROR, exc.message) from None
            try:
                await book.store.save(working)
            except BaseException:
                book.release(run)
                raise
        answer = answer_of(asked, responses[asked.id])
        self._start(run, tool, _json_object(mcp.get("arguments")), (asked, answer))
        return _Reply()

    # -- the MCP view of a task -----------------------------------------------------------------

    def _view(self, task: Mapping[str, Any]) -> dict[str, Any]:
        """The task as a `DetailedTask`, whichever protocol created it."""
        status = task.get("status") or {}
        state = wire.state_name(status.get("state"))
        stamp = status.get("timestamp") or wire.now()
        mcp = (task.get("metadata") or {}).get("mcp") or {}
        view: dict[str, Any] = {
            "taskId": task["id"],
            "status": _STATUS.get(state, "working"),
            "createdAt": mcp.get("createdAt") or stamp,
            "lastUpdatedAt": stamp,
            "ttlMs": None,
            "pollIntervalMs": self._poll_ms,
        }
        text = _text(status.get("message"))
        if text:
            view["statusMessage"] = text
        if view["status"] == "completed":
            view["result"] = _result(task)
        elif view["status"] == "failed":
            view["error"] = {"code": types.INTERNAL_ERROR, "message": text or "the task failed"}
        elif view["status"] == "input_required":
            asked = _asked(task)
            if asked is not None:
                entry = _elicitation(asked)
                view["inputRequests"] = {
                    asked.id: entry.model_dump(by_alias=True, mode="json", exclude_none=True)
                }
        return view


_STATUS: dict[str, Literal["working", "input_required", "completed", "failed", "cancelled"]] = {
    "submitted": "working",
    "working": "working",
    "input-required": "input_required",
    "auth-required": "input_required",
    "completed": "completed",
    "failed": "failed",
    "rejected": "failed",
    "canceled": "cancelled",
}


def _age_ms(task: Mapping[str, Any]) -> int:
    """Milliseconds since the task was created (its `mcp.createdAt`), 0 when unknown."""
    created = ((task.get("metadata") or {}).get("mcp") or {}).get("createdAt")
    try:
        since = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
    except ValueError:
        return 0
    return max(0, round((datetime.now(UTC) - since).total_seconds() * 1000))


def _text(message: Any) -> str:
    parts = message.get("parts") if isinstance(message, Mapping) else None
    texts = (p.get("text") for p in parts or () if isinstance(p, Mapping))
    return "".join(t for t in texts if isinstance(t, str))


def _asked(task: Mapping[str, Any]) -> Request | None:
    """The question an interrupted task waits on."""
    message = (task.get("status") or {}).get("message")
    metadata = message.get("metadata") if isinstance(message, Mapping) else None
    asked = metadata.get("toolnexusRequest") if isinstance(metadata, Mapping) else None
    return Request.from_dict(asked) if isinstance(asked, Mapping) else None


def _result(task: Mapping[str, Any]) -> dict[str, Any]:
    """A finished task's `CallToolResult`: the tool's own, else its artifacts' text."""
    artifacts = [a for a in task.get("artifacts") or () if isinstance(a, Mapping)]
    for artifact in artifacts:
        result = _json_object((artifact.get("metadata") or {}).get("mcpResult"))
        if result:
            return result
    text = "\n".join(filter(None, (_text(a) for a in artifacts)))
    return {"content": [{"type": "text", "text": text}], "isError": False}


def _json_object(text: Any) -> dict[str, Any]:
    """The JSON object `text` holds (`{}` when it holds none)."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
