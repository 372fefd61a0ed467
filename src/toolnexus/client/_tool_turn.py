"""The tool turn of a run: its calls run (hooks, concurrency, progress), its suspensions settled.

`ToolRunner.turn` runs the calls of one model answer, at most `tool_concurrency` at once, and
puts their results in call order; a call that suspends is settled through `wait_for` or ends
the run `pending`. A streamed run also gets the turn's events (`tool_call`, `ui`, `progress`,
`pending`, `tool_result`) as they happen; a run that does not stream gets none.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from toolnexus import _otel
from toolnexus._aio import call_in_thread_maybe_async, run_together
from toolnexus._apps import for_the_model, ui_resource_uri
from toolnexus._log import logger
from toolnexus.client._events import (
    AfterToolInfo,
    BeforeToolInfo,
    ProgressEvent,
    ProgressInfo,
    StreamEvent,
    ToolEvent,
    ToolResultEvent,
    UiEvent,
)
from toolnexus.client._hooks import AfterToolHook, call_hook
from toolnexus.client._metrics import elapsed_ms
from toolnexus.client._run_state import RunEnd
from toolnexus.errors import ConfigTypeError
from toolnexus.types import (
    Answer,
    Request,
    Tool,
    ToolContext,
    ToolResult,
    error_message,
    pending_of,
)

if TYPE_CHECKING:
    from toolnexus.adapters import ToolCall
    from toolnexus.client._run_state import RunState
    from toolnexus.client._scope import RunScope
    from toolnexus.client._settings import RunSettings
    from toolnexus.client._steps import RunSteps, ToolStep
    from toolnexus.toolkit import Toolkit

__all__ = ["ToolRunner"]

# The hook arguments that carry the run's `deps` when it has some.
_HookInfo = TypeVar("_HookInfo", BeforeToolInfo, AfterToolInfo, ProgressInfo)


@dataclass(slots=True)
class _Outcome:
    """One tool call after execution (and hooks), before suspension handling."""

    call: ToolCall
    args: dict[str, Any]  # after any `before_tool` rewrite
    result: ToolResult
    suspended: bool


class ToolRunner:
    """The tool turns of one run.

    `progress` is a streamed run's queue of `progress` events (`None` when the run does not
    stream: the turn then yields nothing); `steps` a durable engine journaling the calls.
    """

    __slots__ = (
        "observers",
        "over",
        "pending",
        "progress",
        "settings",
        "state",
        "steps",
        "toolkit",
        "wait_for",
    )

    def __init__(
        self,
        settings: RunSettings,
        toolkit: Toolkit | None,
        steps: RunSteps | None,
        progress: asyncio.Queue[ProgressEvent] | None,
        state: RunState,
    ) -> None:
        self.settings = settings
        self.toolkit = toolkit
        self.steps = steps
        self.progress = progress
        self.state = state
        self.observers: set[asyncio.Future[None]] = set()  # async `on_progress` hooks running
        steps_wait = steps.wait_for if steps is not None else None
        self.wait_for = steps_wait if steps_wait is not None else settings.wait_for
        self.over: str | None = None  # the usage limit that stopped a turn's calls
        self.pending: Request | None = None  # the suspension that ended the run

    def end(self, text: str) -> RunEnd | None:
        """The run's end after a turn: a usage limit or a suspension, else `None` (go on)."""
        if self.over is not None:
            return RunEnd("incomplete", self.over, text)
        if self.pending is not None:
            return RunEnd("pending", None, self.pending.prompt)
        return None

    async def turn(
        self,
        calls: list[ToolCall],
        answered: list[tuple[ToolCall, ToolResult]],
        index: int,
        scope: RunScope,
        span: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Run `calls` (turn `index`) into `answered`, after any answers already there; yield
        the turn's events when the run streams. `end()` then says whether the run is over."""
        over = self.state.over_limit(self.settings.usage_limits, len(calls))
        if over is not None:  # the calls are answered, not run: the transcript stays valid
            skipped = ToolResult(f"Not run: the run's {over} limit was reached.", True)
            answered += [(call, skipped) for call in calls]
            self.over = over
            return
        progress = self.progress
        if progress is not None:
            for call in calls:
                yield {"type": "tool_call", "id": call.id, "name": call.name, "args": call.args}
                app = self._app_event(call)
                if app is not None:
                    yield app
        running: asyncio.Future[list[_Outcome]] | None = None
        with _otel.active(span):
            if not calls:
                outcomes = []
            elif progress is None:
                outcomes = await self._execute_all(calls, index, scope)
            else:  # a task, so progress can be yielded while the calls run
                running = asyncio.ensure_future(self._execute_all(calls, index, scope))
        if running is not None:
            async for note in self._reporting(running):
                yield note
            outcomes = running.result()
        for outcome in outcomes:  # in call order
            result = outcome.result
            asked = pending_of(result) if outcome.suspended else None
            if asked is not None:
                if progress is not None:
                    yield {"type": "pending", "request": asked}
                if self.wait_for is None:
                    # Surface the first suspension; later calls are not recorded.
                    self.pending = asked
                    result = ToolResult(asked.prompt, True)
                    self._record(outcome, result)
                    answered.append((outcome.call, result))
                    return
                if progress is None:
                    result = await self._resolve(outcome, asked, index, scope)
                else:
                    resolving = asyncio.ensure_future(self._resolve(outcome, asked, index, scope))
                    async for note in self._reporting(resolving):
                        yield note
                    result = resolving.result()
            self._record(outcome, result)
            answered.append((outcome.call, result))
            if progress is not None:
                event: ToolResultEvent = {
                    "type": "tool_result",
                    "id": outcome.call.id,
                    "name": outcome.call.name,
                    "output": result.output,
                    "is_error": result.is_error,
                }
                if result.parts:
                    event["parts"] = result.parts
                yield event

    async def _reporting(self, work: asyncio.Future[Any]) -> AsyncGenerator[ProgressEvent, None]:
        """Yield the `progress` events of the tools `work` runs until it is done (streaming).

        Stopping early (the consumer closed the stream, the run was cancelled) cancels `work`."""
        queue = self.progress
        assert queue is not None
        try:
            while not work.done():
                getter = asyncio.ensure_future(queue.get())
                try:
                    await asyncio.wait((work, getter), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not getter.done():
                        getter.cancel()  # an item it never took stays in the queue
                if getter.done() and not getter.cancelled():
                    yield getter.result()
            while not queue.empty():
                yield queue.get_nowait()
        finally:
            if not work.done():
                work.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait((work,))

    def _progressed(
        self, reporter: _Reporter, event: Mapping[str, Any]
    ) -> asyncio.Future[None] | None:
        """One progress report of a running call, to the stream and the `on_progress` hook;
        an async hook's awaitable is returned (awaiting the report awaits the hook)."""
        call = reporter.call
        progress = event.get("progress", 0.0)
        total, message = event.get("total"), event.get("message")
        if self.progress is not None:
            self.progress.put_nowait(
                {
                    "type": "progress",
                    "id": call.id,
                    "name": call.name,
                    "progress": progress,
                    "total": total,
                    "message": message,
                }
            )
        hooks = self.settings.hooks
        if hooks is None or hooks.on_progress is None:
            return None
        info: ProgressInfo = {
            "name": call.name,
            "id": call.id,
            "turn": reporter.turn,
            "progress": progress,
            "total": total,
            "message": message,
        }
        observer: Callable[..., Any] = hooks.on_progress
        try:
            reply = observer(self._with_deps(info))
        except Exception as exc:  # observe-only: a failing observer never fails the call
            logger.debug("[toolnexus] on_progress hook raised; ignored: %s", error_message(exc))
            return None
        if not inspect.isawaitable(reply):
            return None
        observed = asyncio.ensure_future(_observed(reply))
        self.observers.add(observed)
        observed.add_done_callback(self.observers.discard)
        return observed

    def _record(self, outcome: _Outcome, result: ToolResult) -> None:
        record = {
            "name": outcome.call.name,
            "args": outcome.args,
            "output": result.output,
            "is_error": result.is_error,
            "metadata": result.metadata,
        }
        if result.parts:
            record["parts"] = result.parts
        self.state.records.append(record)

    def _with_deps(self, payload: _HookInfo) -> _HookInfo:
        """A hook's argument, with the run's `deps` when it has some."""
        if self.settings.deps is not None:
            payload["deps"] = self.settings.deps
        return payload

    async def _execute_all(
        self, calls: list[ToolCall], turn: int, scope: RunScope
    ) -> list[_Outcome]:
        """Run every call of a turn at once (at most `tool_concurrency`); results in call order."""
        # Journal steps are drawn here, in call order, however the calls then interleave.
        steps = self.steps
        drawn = [steps.tool_call(call.name) if steps else None for call in calls]
        if len(calls) == 1:
            return [await scope.race(self._execute_one(calls[0], turn, scope, drawn[0]))]
        limit = self.settings.tool_concurrency
        if len(calls) <= limit:
            runs = [self._execute_one(c, turn, scope, s) for c, s in zip(calls, drawn, strict=True)]
        else:
            semaphore = asyncio.Semaphore(limit)

            async def bounded(call: ToolCall, step: ToolStep | None) -> _Outcome:
                async with semaphore:
                    return await self._execute_one(call, turn, scope, step)

            runs = [bounded(call, step) for call, step in zip(calls, drawn, strict=True)]
        # A hook that raises aborts the run: the other calls are cancelled.
        together = run_together(runs)
        return await scope.race(together)

    async def _run_reported(
        self,
        call: ToolCall,
        args: dict[str, Any],
        ctx: ToolContext,
        turn: int,
        step: ToolStep | None = None,
    ) -> ToolResult:
        """Run the call with `ctx.on_progress` reporting to the run; later reports are dropped."""
        toolkit = self.toolkit
        if toolkit is None:
            return ToolResult(f"Unknown tool: {call.name}. Available tools: none", True)
        tool = toolkit.get(call.name)
        if tool is not None and not for_the_model(tool.metadata):  # never offered to it
            return ToolResult(f"Tool {call.name} is for its MCP App only, not the model", True)
        reporter = ctx.on_progress = _Reporter(self, call, turn)
        try:
            with _otel.model_call(call.id):
                if step is None:
                    return await toolkit.execute(call.name, args, ctx)
                return await step(lambda: toolkit.execute(call.name, args, ctx))
        finally:
            reporter.open = False

    def _tool(self, name: str) -> Tool | None:
        return self.toolkit.get(name) if self.toolkit is not None else None

    def _app_event(self, call: ToolCall) -> UiEvent | None:
        """The `ui` event of a call whose tool names an MCP App, else `None`."""
        tool = self._tool(call.name)
        uri = ui_resource_uri(tool.metadata) if tool is not None else None
        if tool is None or uri is None or not for_the_model(tool.metadata):
            return None  # no App, or a call refused (`_run_reported`)
        server = (tool.metadata or {}).get("server") if tool.source == "mcp" else None
        return {
            "type": "ui",
            "id": call.id,
            "name": call.name,
            "resource_uri": uri,
            "server": server if isinstance(server, str) else None,
        }

    def _tool_event(self, name: str, result: ToolResult, started: float, suspended: bool) -> None:
        if self.state.finished:
            return  # a tool that outlived its aborted run: the `run` event stays last
        tool = self._tool(name)
        event: ToolEvent = {
            "event": "tool",
            "tool": name,
            "source": tool.source if tool is not None else "custom",
            "is_error": False if suspended else result.is_error,
            "ms": elapsed_ms(started),
        }
        if suspended:
            event["pending"] = True
        if tool is None:
            event["unknown"] = True
        self.settings.emit(event)

    def _short_circuited(self, call: ToolCall, result: ToolResult) -> None:
        """Trace a call that `before_tool` answered (a guardrail's denial, say) like one that
        ran, so spans and OpenTelemetry counts match the `tool` metric events."""
        tool = self._tool(call.name)
        with _otel.model_call(call.id), _otel.tool_call(call.name, tool) as traced:
            traced.result(result)

    async def _execute_one(
        self, call: ToolCall, turn: int, scope: RunScope, step: ToolStep | None = None
    ) -> _Outcome:
        if call.error is not None:  # the model sent unusable arguments: nothing runs
            message = f"Invalid arguments for tool {call.name}: {call.error}"
            return _Outcome(call, call.args, ToolResult(message, True), False)
        hooks = self.settings.hooks
        args = call.args
        started = time.perf_counter()
        if hooks is not None and hooks.before_tool is not None:
            info: BeforeToolInfo = {
                "name": call.name,
                "args": args,
                "id": call.id,
                "turn": turn,
                "tool": self._tool(call.name),
            }
            reply = await call_hook(hooks.before_tool, self._with_deps(info))
            if reply:
                if reply.get("result") is not None:
                    result = _as_result(reply["result"], "before_tool")
                    self._short_circuited(call, result)
                    suspended = pending_of(result) is not None
                    self._tool_event(call.name, result, started, suspended)
                    return _Outcome(call, args, result, suspended)
                if reply.get("args") is not None:
                    args = reply["args"]
        ctx = scope.tool_context(deps=self.settings.deps)
        result = await self._run_reported(call, args, ctx, turn, step)
        if pending_of(result) is not None:
            self._tool_event(call.name, result, started, True)
            return _Outcome(call, args, result, True)  # after_tool never sees a suspension
        self._tool_event(call.name, result, started, False)
        if hooks is not None and hooks.after_tool is not None:
            result = await self._after_tool(hooks.after_tool, call, args, result, turn)
        return _Outcome(call, args, result, False)

    async def _after_tool(
        self,
        hook: AfterToolHook,
        call: ToolCall,
        args: dict[str, Any],
        result: ToolResult,
        turn: int,
    ) -> ToolResult:
        info: AfterToolInfo = {
            "name": call.name,
            "args": args,
            "result": result,
            "id": call.id,
            "turn": turn,
            "tool": self._tool(call.name),
        }
        reply = await call_hook(hook, self._with_deps(info))
        if reply and reply.get("result") is not None:
            return _as_result(reply["result"], "after_tool")
        return result

    async def _resolve(
        self, outcome: _Outcome, request: Request, turn: int, scope: RunScope
    ) -> ToolResult:
        """Settle one suspension through `wait_for`."""
        wait_for = self.wait_for
        assert wait_for is not None
        answer = Answer.coerce(await scope.race(call_in_thread_maybe_async(wait_for, request)))
        if answer is None or not answer.ok:
            return ToolResult("declined/expired: " + request.prompt, True)
        started = time.perf_counter()
        name, args = outcome.call.name, outcome.args
        step = self.steps.tool_call(name) if self.steps is not None else None
        result = await scope.race(
            self._run_reported(
                outcome.call, args, scope.tool_context(answer, self.settings.deps), turn, step
            )
        )
        if pending_of(result) is not None:
            self._tool_event(name, result, started, True)
            return ToolResult("unresolved: " + request.prompt, True)  # never a second wait
        self._tool_event(name, result, started, False)
        hooks = self.settings.hooks
        if hooks is None or hooks.after_tool is None:
            return result
        return await self._after_tool(hooks.after_tool, outcome.call, args, result, turn)


class _Reporter:
    """`ctx.on_progress` of one call, for its tool to call with `{"progress", "total",
    "message"}`: from the tool's task (awaiting the result or not) or from a sync tool's worker
    thread. Reports after the call ended are dropped."""

    __slots__ = ("call", "loop", "open", "runner", "turn")

    def __init__(self, runner: ToolRunner, call: ToolCall, turn: int) -> None:
        self.runner = runner
        self.call = call
        self.turn = turn
        self.open = True
        self.loop = asyncio.get_running_loop()

    def __call__(self, event: Mapping[str, Any]) -> Awaitable[None] | None:
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if current is not self.loop:  # a worker thread: nothing there would await the report
            self.loop.call_soon_threadsafe(self._report, event)
            return None
        observed = self._report(event)
        if observed is None:  # still awaitable, and no warning when it is not awaited
            observed = self.loop.create_future()
            observed.set_result(None)
        return observed

    def _report(self, event: Mapping[str, Any]) -> asyncio.Future[None] | None:
        if not self.open or self.runner.state.finished or not isinstance(event, Mapping):
            return None
        return self.runner._progressed(self, event)


async def _observed(reply: Awaitable[Any]) -> None:
    try:
        await reply
    except Exception as exc:
        logger.debug("[toolnexus] on_progress hook raised; ignored: %s", error_message(exc))


def _as_result(value: Any, hook: str) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    raise ConfigTypeError(f"{hook} hook: 'result' must be a ToolResult, not {type(value).__name__}")
