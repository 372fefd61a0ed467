"""The tool-calling loop shared by `run`, `ask` and `stream`.

One `RunLoop` is one run: call the model, execute the tools it asked for (concurrently, in
call order into the transcript), resolve suspensions, repeat up to `max_turns`. It is written
as an async generator of events so streaming gets back-pressure for free: nothing is read from
the provider until the consumer asks for the next event.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from toolnexus import _otel
from toolnexus._aio import call_in_thread_maybe_async, run_together
from toolnexus._apps import for_the_model, ui_resource_uri
from toolnexus._log import logger, warn
from toolnexus._secrets import redact
from toolnexus.adapters import ToolCall
from toolnexus.client._endpoint import ModelRequest
from toolnexus.client._events import (
    AfterLlmInfo,
    AfterToolInfo,
    BeforeToolInfo,
    ProgressEvent,
    ProgressInfo,
    ReasoningEvent,
    RunEvent,
    StreamEvent,
    ToolEvent,
    ToolResultEvent,
    UiEvent,
)
from toolnexus.client._hooks import AfterLlmHook, AfterToolHook, before_llm, call_hook
from toolnexus.client._metrics import elapsed_ms
from toolnexus.client._output_turn import OutputCheck
from toolnexus.client._parts import Prompt, prompt_content
from toolnexus.client._results import ModelTurn, RunResult, add_usage, empty_usage
from toolnexus.client._run_state import AGAIN
from toolnexus.client._scope import RunScope
from toolnexus.client._steps import ToolStep, current_steps
from toolnexus.client._tool_search import LocalSearch, search_mode
from toolnexus.client._wire import ReasoningDelta, Turn
from toolnexus.client.memory import ConversationLease, claim_conversation
from toolnexus.errors import ConfigTypeError, UsageLimitExceeded
from toolnexus.toolkit import Toolkit, as_toolkit
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
    from toolnexus.client._settings import RunSettings

__all__ = ["RunLoop", "compose_system"]

# The hook arguments that carry the run's `deps` when it has some.
_HookInfo = TypeVar("_HookInfo", AfterLlmInfo, BeforeToolInfo, AfterToolInfo, ProgressInfo)


def compose_system(system_prompt: str | None, toolkit: Toolkit | None) -> str:
    """The non-empty of `system_prompt`, the toolkit's skill catalog and its opted-in MCP
    servers' instructions, joined by a blank line."""
    parts = [system_prompt or ""]
    if toolkit is not None:
        parts += [toolkit.skills_prompt(), toolkit.mcp_instructions_prompt()]
    return "\n\n".join(p for p in parts if p)


@dataclass(slots=True)
class _Outcome:
    """One tool call after execution (and hooks), before suspension handling."""

    call: ToolCall
    args: dict[str, Any]  # after any `before_tool` rewrite
    result: ToolResult
    suspended: bool


class RunLoop:
    """One run of the loop. Iterate `events()`; the last event is `{"type": "done", ...}`.

    With `conversation_id`, the run holds a claim on that id from loading its transcript from the
    client's store to saving the new one, so concurrent runs on one id never lose a turn.
    """

    def __init__(
        self,
        settings: RunSettings,
        prompt: Prompt,
        toolkit: Toolkit | Tool | Iterable[Tool] | None,
        history: Sequence[dict[str, Any]] | None,
        cancel: asyncio.Event | None,
        *,
        streaming: bool = False,
        conversation_id: str | None = None,
    ) -> None:
        self.settings = settings
        self.prompt = prompt_content(prompt)  # a bad part raises here, before any request
        self.toolkit = as_toolkit(toolkit)  # a list of tools works as well as a Toolkit
        self.history = history
        self.cancel = cancel
        self.streaming = streaming
        self.conversation_id = conversation_id
        self.usage = empty_usage()
        self.usage_seen = False
        self.turns = 0
        self.model_turns: list[ModelTurn] = []  # why each model call ended, what it reasoned
        self.records: list[dict[str, Any]] = []
        self.model = settings.model  # the model last sent (a `before_llm` hook may change it)
        self.finished = False  # the `run` event is out: nothing may be reported after it
        # Streaming: the `progress` events of the running tools, yielded while they run.
        self.progress: asyncio.Queue[ProgressEvent] | None = None
        self.observers: set[asyncio.Future[None]] = set()  # async `on_progress` hooks running
        self.steps = current_steps()  # a durable engine journaling the run's calls, if any
        steps_wait = self.steps.wait_for if self.steps is not None else None
        self.wait_for = steps_wait if steps_wait is not None else settings.wait_for

    async def result(self) -> RunResult:
        """Run to the end without streaming and return the `RunResult`."""
        gen = self.events()
        try:
            async for event in gen:
                if event["type"] == "done":
                    result: RunResult = event["result"]
                    return result
        finally:
            await gen.aclose()
        raise RuntimeError("the run ended without a result")  # pragma: no cover

    async def events(self) -> AsyncGenerator[StreamEvent, None]:
        c = self.settings
        wire = c.endpoint.dialect
        started = time.perf_counter()
        scope = RunScope(c.timeout_ms, self.cancel)
        run = _otel.agent_span(c.model, wire.provider)
        if self.streaming:
            self.progress = asyncio.Queue()
        try:
            # The stack holds a conversation's claim; a run without one needs none.
            stack = contextlib.AsyncExitStack() if self.conversation_id is not None else _NO_STACK
            async with stack as memory:
                history = self.history
                lease: ConversationLease | None = None
                if self.conversation_id is not None:
                    # Queued behind another run on this id: the deadline and `cancel` still count.
                    claim = claim_conversation(c.store, c.locks, self.conversation_id)
                    assert memory is not None
                    lease = await scope.race(memory.enter_async_context(claim))
                    history = await scope.race(lease.get()) or []
                scope.check()
                out = c.output
                system = compose_system(c.system_prompt, self.toolkit)
                if out is not None and out.mode == "prompted":
                    system = "\n\n".join(p for p in (system, out.instructions()) if p)
                messages = wire.start_messages(system, history, self.prompt)
                knobs = c.model_settings
                strict = bool(knobs is not None and knobs.strict_tools)
                searching = search_mode(c.tool_search, wire, self.toolkit)
                local = None
                if searching == "local" and self.toolkit is not None:
                    local = LocalSearch(self.toolkit, history)
                    self.toolkit = local.toolkit  # `search_tools` runs as the toolkit's tools do
                    tools = wire.declarations(local.declared(), strict)
                elif self.toolkit is not None:
                    tools = wire.declarations(self.toolkit, strict, defer=searching == "native")
                else:
                    tools = []
                own_tools = len(tools)
                if out is not None and out.mode == "tool":
                    tools = tools + wire.declarations(
                        Toolkit(builtins=False, extra_tools=[out.tool()]), strict
                    )
                output = None
                if out is not None:
                    output = OutputCheck(
                        out, c.output_retries, wire, [] if self.streaming else None
                    )
                status, text = "incomplete", ""
                limit: str | None = "maxTurns"
                pending: Request | None = None
                refusal: str | None = None
                hooks = c.hooks
                model = c.model
                for turn_index in range(c.max_turns):
                    if local is not None and local.changed():  # a search named deferred tools
                        declared = wire.declarations(local.declared(), strict)
                        tools, own_tools = declared + tools[own_tools:], len(declared)
                    if hooks is not None and hooks.before_llm is not None:
                        messages, tools, model = await before_llm(
                            hooks.before_llm, messages, tools, c.model, turn_index, c.deps
                        )
                    seen: list[dict[str, Any]] = []  # the summaries of the parts sent
                    body = wire.body(
                        model,
                        system,
                        messages,
                        tools,
                        self.streaming,
                        parts=c.parts,
                        seen=seen,
                        settings=knobs,
                    )
                    if out is not None and out.mode == "native":
                        body.update(wire.output_keys(out))
                    request = ModelRequest(model, body, seen, run)
                    self.model = model
                    turn: Turn | None = None
                    if self.steps is not None:
                        turn = await self.steps.model_call(self._model_call(request, scope))
                        if self.streaming:  # a step answers whole
                            for thought in turn.reasoning_deltas():
                                yield _reasoning_event(thought)
                            if turn.text:
                                yield {"type": "text", "delta": turn.text}
                    elif self.streaming:
                        deltas = c.endpoint.stream(request, scope, c.emit)
                        try:
                            async for item in deltas:
                                if isinstance(item, str):
                                    yield {"type": "text", "delta": item}
                                elif isinstance(item, ReasoningDelta):
                                    yield _reasoning_event(item)
                                else:
                                    turn = item
                        finally:
                            await deltas.aclose()  # a consumer that stops early closes the body
                        assert turn is not None
                    else:
                        turn = await c.endpoint.complete(request, scope, c.emit)
                    self.turns += 1
                    self.model_turns.append(
                        ModelTurn(
                            turn.finish,
                            turn.finish_reason,
                            turn.reasoning,
                            turn.reasoning_redacted,
                        )
                    )
                    self._add_usage(turn.usage)
                    if hooks is not None and hooks.after_llm is not None:
                        await self._after_llm(hooks.after_llm, turn, model, turn_index)
                    messages.extend(turn.entries())
                    text = turn.text
                    if turn.refusal is not None and not turn.calls:
                        status, limit, refusal = "refused", None, turn.refusal
                        if self.streaming:
                            yield {"type": "refusal", "refusal": refusal}
                        break
                    if not turn.calls and turn.finish == "pause":
                        # Anthropic paused a long turn: its content goes back as it is and the
                        # model is called again to continue it (no new user message).
                        over = self._over_limit(0)
                        if over is not None:
                            status, limit = "incomplete", over
                            break
                        continue
                    if not turn.calls and turn.finish in _CUT_SHORT:
                        status, limit = "incomplete", _CUT_SHORT[turn.finish]
                        break
                    if output is not None:
                        end = output.check(turn, messages)
                        if end is AGAIN:
                            over = self._over_limit(0)
                            if over is not None:
                                status, limit = "incomplete", over
                                break
                            continue
                        if end is not None:
                            status, limit = end.status, end.limit
                            if self.streaming and output.sink:
                                yield output.sink.pop()
                            break
                    if not turn.calls:
                        status, limit = "done", None
                        break
                    calls = turn.calls
                    if knobs is not None:  # a forced tool choice was met: the model is free now
                        knobs = knobs.released()
                    answered: list[tuple[ToolCall, ToolResult]] = []
                    if output is not None:
                        calls = output.set_aside(calls, answered)
                    over = self._over_limit(len(calls))
                    if (
                        over is not None
                    ):  # the calls are answered, not run: the transcript stays valid
                        skipped = ToolResult(f"Not run: the run's {over} limit was reached.", True)
                        answered += [(call, skipped) for call in calls]
                        messages.extend(wire.tool_results(answered))
                        status, limit = "incomplete", over
                        break
                    if self.streaming:
                        for call in calls:
                            yield {
                                "type": "tool_call",
                                "id": call.id,
                                "name": call.name,
                                "args": call.args,
                            }
                            app = self._app_event(call)
                            if app is not None:
                                yield app
                    running: asyncio.Future[list[_Outcome]] | None = None
                    with _otel.active(run):
                        if not calls:
                            outcomes = []
                        elif self.progress is None:
                            outcomes = await self._execute_all(calls, turn_index, scope)
                        else:  # a task, so progress can be yielded while the calls run
                            running = asyncio.ensure_future(
                                self._execute_all(calls, turn_index, scope)
                            )
                    if running is not None:
                        async for note in self._reporting(running):
                            yield note
                        outcomes = running.result()
                    for outcome in outcomes:  # in call order
                        result = outcome.result
                        asked = pending_of(result) if outcome.suspended else None
                        if asked is not None:
                            if self.streaming:
                                yield {"type": "pending", "request": asked}
                            if self.wait_for is None:
                                # Surface the first suspension; later calls are not recorded.
                                pending = asked
                                result = ToolResult(asked.prompt, True)
                                self._record(outcome, result)
                                answered.append((outcome.call, result))
                                break
                            if self.progress is None:
                                result = await self._resolve(outcome, asked, turn_index, scope)
                            else:
                                resolving = asyncio.ensure_future(
                                    self._resolve(outcome, asked, turn_index, scope)
                                )
                                async for note in self._reporting(resolving):
                                    yield note
                                result = resolving.result()
                        self._record(outcome, result)
                        answered.append((outcome.call, result))
                        if self.streaming:
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
                    messages.extend(wire.tool_results(answered))
                    if pending is not None:
                        status, limit, text = "pending", None, pending.prompt
                        break
                final = RunResult(
                    text=text,
                    messages=messages,
                    tool_calls=self.records,
                    tool_call_count=len(self.records),
                    turns=self.turns,
                    usage=self.usage,
                    model=self.model,
                    status=status,
                    limit=limit,
                    pending=pending,
                    refusal=refusal,
                    output_errors=output.errors
                    if output is not None and status != "done"
                    else None,
                    model_turns=self.model_turns,
                )
                if output is not None and status == "done":
                    final.value = output.value
                if lease is not None:
                    await scope.race(lease.save(messages))
                if limit is not None:
                    warn(f"run ended incomplete: {limit} limit reached after {self.turns} turns")
                    if c.raise_on_limit:
                        raise UsageLimitExceeded(limit, final)
        except BaseException as exc:
            scope.close()
            reason = (
                "stream closed before done"
                if isinstance(exc, GeneratorExit)
                else error_message(exc)
            )
            self._finish(started, reason)
            _otel.end_span(run, exc)
            raise
        scope.close()
        self._finish(started, None)
        _otel.end_span(run)
        if self.streaming and self.usage_seen:
            yield {"type": "usage", "usage": dict(self.usage)}
        yield {"type": "done", "result": final}

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

    def _finish(self, started: float, error: str | None) -> None:
        """Emit the run's `run` event: always its last one, with `error` when it raised."""
        event: RunEvent = {
            "event": "run",
            "model": self.model,
            "turns": self.turns,
            "tool_calls": len(self.records),
            "total_tokens": self.usage["total_tokens"],
            "ms": elapsed_ms(started),
        }
        if error is not None:
            event["error"] = redact(error)
        self.finished = True
        self.settings.emit(event)

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
        self.records.append(record)

    def _with_deps(self, payload: _HookInfo) -> _HookInfo:
        """A hook's argument, with the run's `deps` when it has some."""
        if self.settings.deps is not None:
            payload["deps"] = self.settings.deps
        return payload

    def _over_limit(self, calls: int) -> str | None:
        """The usage limit the run would pass by going on (with `calls` more tool calls)."""
        limits = self.settings.usage_limits
        if limits is None:
            return None
        if limits.total_tokens is not None and self.usage["total_tokens"] > limits.total_tokens:
            return "total_tokens"
        if (
            limits.request_tokens is not None
            and self.usage["prompt_tokens"] > limits.request_tokens
        ):
            return "request_tokens"
        if limits.tool_calls is not None and len(self.records) + calls > limits.tool_calls:
            return "tool_calls"
        return None

    # -- the LLM call ---------------------------------------------------------------------------

    def _model_call(self, request: ModelRequest, scope: RunScope) -> Callable[[], Awaitable[Turn]]:
        """One model call as a function a step can run (a stream is read whole)."""
        endpoint, emit = self.settings.endpoint, self.settings.emit
        if not self.streaming:
            return lambda: endpoint.complete(request, scope, emit)

        async def streamed() -> Turn:
            deltas = endpoint.stream(request, scope, emit)
            try:
                async for item in deltas:
                    if isinstance(item, Turn):
                        return item
            finally:
                await deltas.aclose()
            raise RuntimeError("the stream ended without a turn")  # pragma: no cover

        return streamed

    def _add_usage(self, usage: dict[str, int] | None) -> None:
        if usage is not None:
            add_usage(self.usage, usage)
            self.usage_seen = True

    async def _after_llm(self, hook: AfterLlmHook, turn: Turn, model: str, turn_index: int) -> None:
        response = {"streamed": True, "usage": dict(self.usage)} if self.streaming else turn.raw
        info: AfterLlmInfo = {"response": response, "model": model, "turn": turn_index}
        await call_hook(hook, self._with_deps(info))

    # -- tools ----------------------------------------------------------------------------------

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
        if self.finished:
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

    __slots__ = ("call", "loop", "open", "run", "turn")

    def __init__(self, run: RunLoop, call: ToolCall, turn: int) -> None:
        self.run = run
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
        if not self.open or self.run.finished or not isinstance(event, Mapping):
            return None
        return self.run._progressed(self, event)


async def _observed(reply: Awaitable[Any]) -> None:
    try:
        await reply
    except Exception as exc:
        logger.debug("[toolnexus] on_progress hook raised; ignored: %s", error_message(exc))


_NO_STACK: contextlib.nullcontext[None] = contextlib.nullcontext()

# A turn that ended without its whole answer: the run ends `incomplete` with this `limit`.
_CUT_SHORT = {"length": "maxTokens", "content_filter": "contentFilter"}


def _reasoning_event(piece: ReasoningDelta) -> ReasoningEvent:
    if piece.redacted:
        return {"type": "reasoning", "delta": "", "redacted": True}
    return {"type": "reasoning", "delta": piece.text}


def _as_result(value: Any, hook: str) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    raise ConfigTypeError(f"{hook} hook: 'result' must be a ToolResult, not {type(value).__name__}")
