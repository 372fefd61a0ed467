"""The tool-calling loop shared by `run`, `ask` and `stream`.

One `RunLoop` is one run: call the model, execute the tools it asked for (concurrently, in
call order into the transcript), resolve suspensions, repeat up to `max_turns`. It is written
as an async generator of events so streaming gets back-pressure for free: nothing is read from
the provider until the consumer asks for the next event.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from toolnexus import _otel
from toolnexus._log import warn
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
)
from toolnexus.client._hooks import AfterLlmHook, before_llm, call_hook
from toolnexus.client._metrics import elapsed_ms
from toolnexus.client._output_turn import OutputCheck
from toolnexus.client._parts import Prompt, prompt_content
from toolnexus.client._results import ModelTurn, RunResult, add_usage
from toolnexus.client._run_state import AGAIN, RunState
from toolnexus.client._scope import RunScope
from toolnexus.client._steps import current_steps
from toolnexus.client._tool_search import LocalSearch, search_mode
from toolnexus.client._tool_turn import ToolRunner
from toolnexus.client._wire import ReasoningDelta, Turn
from toolnexus.client.memory import ConversationLease, claim_conversation
from toolnexus.errors import UsageLimitExceeded
from toolnexus.toolkit import Toolkit, as_toolkit
from toolnexus.types import (
    Tool,
    ToolResult,
    error_message,
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
        self.state = RunState(settings.model)
        # Streaming: the `progress` events of the running tools, yielded while they run.
        self.progress: asyncio.Queue[ProgressEvent] | None = None
        self.steps = current_steps()  # a durable engine journaling the run's calls, if any

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
                tools_run = ToolRunner(c, self.toolkit, self.steps, self.progress, self.state)
                output = None
                if out is not None:
                    output = OutputCheck(
                        out, c.output_retries, wire, [] if self.streaming else None
                    )
                status, text = "incomplete", ""
                limit: str | None = "maxTurns"
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
                    self.state.model = model
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
                    self.state.turns += 1
                    self.state.model_turns.append(
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
                        over = self.state.over_limit(c.usage_limits, 0)
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
                            over = self.state.over_limit(c.usage_limits, 0)
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
                    async for event in tools_run.turn(calls, answered, turn_index, scope, run):
                        yield event
                    messages.extend(wire.tool_results(answered))
                    end = tools_run.end(text)
                    if end is not None:
                        status, limit, text = end.status, end.limit, end.text
                        break
                final = RunResult(
                    text=text,
                    messages=messages,
                    tool_calls=self.state.records,
                    tool_call_count=len(self.state.records),
                    turns=self.state.turns,
                    usage=self.state.usage,
                    model=self.state.model,
                    status=status,
                    limit=limit,
                    pending=tools_run.pending,
                    refusal=refusal,
                    output_errors=output.errors
                    if output is not None and status != "done"
                    else None,
                    model_turns=self.state.model_turns,
                )
                if output is not None and status == "done":
                    final.value = output.value
                if lease is not None:
                    await scope.race(lease.save(messages))
                if limit is not None:
                    turns = self.state.turns
                    warn(f"run ended incomplete: {limit} limit reached after {turns} turns")
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
        if self.streaming and self.state.usage_seen:
            yield {"type": "usage", "usage": dict(self.state.usage)}
        yield {"type": "done", "result": final}

    def _finish(self, started: float, error: str | None) -> None:
        """Emit the run's `run` event: always its last one, with `error` when it raised."""
        event: RunEvent = {
            "event": "run",
            "model": self.state.model,
            "turns": self.state.turns,
            "tool_calls": len(self.state.records),
            "total_tokens": self.state.usage["total_tokens"],
            "ms": elapsed_ms(started),
        }
        if error is not None:
            event["error"] = redact(error)
        self.state.finished = True
        self.settings.emit(event)

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
            add_usage(self.state.usage, usage)
            self.state.usage_seen = True

    async def _after_llm(self, hook: AfterLlmHook, turn: Turn, model: str, turn_index: int) -> None:
        response = (
            {"streamed": True, "usage": dict(self.state.usage)} if self.streaming else turn.raw
        )
        info: AfterLlmInfo = {"response": response, "model": model, "turn": turn_index}
        if self.settings.deps is not None:
            info["deps"] = self.settings.deps
        await call_hook(hook, info)


_NO_STACK: contextlib.nullcontext[None] = contextlib.nullcontext()

# A turn that ended without its whole answer: the run ends `incomplete` with this `limit`.
_CUT_SHORT = {"length": "maxTokens", "content_filter": "contentFilter"}


def _reasoning_event(piece: ReasoningDelta) -> ReasoningEvent:
    if piece.redacted:
        return {"type": "reasoning", "delta": "", "redacted": True}
    return {"type": "reasoning", "delta": piece.text}
