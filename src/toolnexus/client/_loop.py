"""The tool-calling loop shared by `run`, `ask` and `stream`: the sequence of a run's steps.

One `RunLoop` is one run: start (claim the conversation, compose the first request), then
each turn a model turn (`_model_turn`), the output check of a typed run (`_output_turn`) and a
tool turn (`_tool_turn`: the calls run concurrently, their results in call order, suspensions
resolved), up to `max_turns`; then finish (the `RunResult`, the transcript saved). It is
written as an async generator of events so streaming gets back-pressure for free: nothing is
read from the provider until the consumer asks for the next event. A run that does not stream
takes the same steps with their event sink off.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from toolnexus import _otel
from toolnexus._log import warn
from toolnexus._secrets import redact
from toolnexus.client._events import ProgressEvent, RunEvent, StreamEvent
from toolnexus.client._metrics import elapsed_ms
from toolnexus.client._model_turn import ModelCaller
from toolnexus.client._output_turn import OutputCheck
from toolnexus.client._parts import Prompt, prompt_content
from toolnexus.client._results import RunResult
from toolnexus.client._run_state import AGAIN, Next, RunEnd, RunState
from toolnexus.client._scope import RunScope
from toolnexus.client._steps import current_steps
from toolnexus.client._tool_search import LocalSearch, search_mode
from toolnexus.client._tool_turn import ToolRunner
from toolnexus.client.memory import ConversationLease, claim_conversation
from toolnexus.errors import UsageLimitExceeded
from toolnexus.toolkit import Toolkit, as_toolkit
from toolnexus.types import Tool, error_message

if TYPE_CHECKING:
    from toolnexus.adapters import ToolCall
    from toolnexus.client._settings import RunSettings
    from toolnexus.types import ToolResult

__all__ = ["RunLoop", "compose_system"]


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

    __slots__ = (
        "cancel",
        "conversation_id",
        "history",
        "prompt",
        "settings",
        "sink",
        "state",
        "steps",
        "streaming",
        "toolkit",
    )

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
        # The events the steps leave for the loop to yield; `None` (off) when not streaming.
        self.sink: list[StreamEvent] | None = [] if streaming else None
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
        settings, sink = self.settings, self.sink
        started = time.perf_counter()
        scope = RunScope(settings.timeout_ms, self.cancel)
        span = _otel.agent_span(settings.model, settings.endpoint.dialect.provider)
        try:
            # The stack holds a conversation's claim; a run without one needs none.
            stack = contextlib.AsyncExitStack() if self.conversation_id is not None else _NO_STACK
            async with stack as memory:
                lease, model, output, tools = await self._start(memory, scope, span)
                end: Next = None
                for index in range(settings.max_turns):
                    request = await model.prepare(index)
                    if sink is None:
                        turn = await model.request(request)
                    else:  # the answer's text and reasoning go out as they come
                        deltas = model.stream(request)
                        try:
                            async for piece in deltas:
                                if (delta := model.delta(piece)) is not None:
                                    yield delta
                        finally:
                            await deltas.aclose()  # a consumer that stops early closes the body
                        assert model.streamed is not None  # a stream's last piece is its turn
                        turn = model.streamed
                    end = await model.took(turn, index)
                    if end is None and output is not None:
                        end = output.check(turn, model.messages)
                    if end is None and not turn.calls:
                        end = RunEnd("done", None, turn.text)
                    if end is None:
                        answered: list[tuple[ToolCall, ToolResult]] = []
                        calls = (
                            turn.calls if output is None else output.set_aside(turn.calls, answered)
                        )
                        async for event in tools.turn(calls, answered, index, scope, span):
                            yield event
                        model.answered(answered)
                        end = tools.end(turn.text)
                    if end is AGAIN:  # the model is asked again, unless a usage limit is passed
                        over = self.state.over_limit(settings.usage_limits, 0)
                        end = None if over is None else RunEnd("incomplete", over, turn.text)
                    if end is not None:
                        break
                if not isinstance(end, RunEnd):  # every turn went on: `max_turns` ends the run
                    end = RunEnd("incomplete", "maxTurns", model.text)
                for event in sink or ():  # the refusal or typed output that ended the run
                    yield event
                final = await self._finish(end, lease, scope, model, output, tools)
        except BaseException as exc:
            self._close(started, scope, span, exc)
            raise
        self._close(started, scope, span, None)
        if sink is not None and self.state.usage_seen:
            yield {"type": "usage", "usage": dict(self.state.usage)}
        yield {"type": "done", "result": final}

    async def _start(
        self, memory: contextlib.AsyncExitStack | None, scope: RunScope, span: Any
    ) -> tuple[ConversationLease | None, ModelCaller, OutputCheck | None, ToolRunner]:
        """The start: claim the conversation, compose the first request, set up the steps."""
        settings = self.settings
        wire = settings.endpoint.dialect
        history, lease = self.history, None
        if self.conversation_id is not None:
            # Queued behind another run on this id: the deadline and `cancel` still count.
            claim = claim_conversation(settings.store, settings.locks, self.conversation_id)
            assert memory is not None
            lease = await scope.race(memory.enter_async_context(claim))
            history = await scope.race(lease.get()) or []
        scope.check()
        out = settings.output
        system = compose_system(settings.system_prompt, self.toolkit)
        if out is not None and out.mode == "prompted":
            system = "\n\n".join(p for p in (system, out.instructions()) if p)
        messages = wire.start_messages(system, history, self.prompt)
        searching = search_mode(settings.tool_search, wire, self.toolkit)
        local = None
        if searching == "local" and self.toolkit is not None:
            local = LocalSearch(self.toolkit, history)
            self.toolkit = local.toolkit  # `search_tools` runs as the toolkit's tools do
        sink, state, steps = self.sink, self.state, self.steps
        # Positional: a keyword call costs more, on every run.
        model = ModelCaller(
            settings,
            state,
            steps,
            sink,
            scope,
            span,
            system,
            messages,
            self.toolkit,
            local,
            searching == "native",
        )
        # A streamed run's `progress` events of the running tools, yielded while they run.
        progress: asyncio.Queue[ProgressEvent] | None = None
        if sink is not None:
            progress = asyncio.Queue()
        tools = ToolRunner(settings, self.toolkit, steps, progress, state)
        output = None
        if out is not None:
            output = OutputCheck(out, settings.output_retries, wire, sink)
        return lease, model, output, tools

    async def _finish(
        self,
        end: RunEnd,
        lease: ConversationLease | None,
        scope: RunScope,
        model: ModelCaller,
        output: OutputCheck | None,
        tools: ToolRunner,
    ) -> RunResult:
        """The finish: the run's result, its transcript saved, a limit reached warned of (or
        raised, with `raise_on_limit`)."""
        state = self.state
        status, limit = end.status, end.limit
        final = RunResult(
            text=end.text,
            messages=model.messages,
            tool_calls=state.records,
            tool_call_count=len(state.records),
            turns=state.turns,
            usage=state.usage,
            model=state.model,
            status=status,
            limit=limit,
            pending=tools.pending,
            refusal=model.refusal,
            output_errors=output.errors if output is not None and status != "done" else None,
            model_turns=state.model_turns,
        )
        if output is not None and status == "done":
            final.value = output.value
        if lease is not None:
            await scope.race(lease.save(model.messages))
        if limit is not None:
            warn(f"run ended incomplete: {limit} limit reached after {state.turns} turns")
            if self.settings.raise_on_limit:
                raise UsageLimitExceeded(limit, final)
        return final

    def _close(self, started: float, scope: RunScope, span: Any, exc: BaseException | None) -> None:
        """End the run's scope and span and emit its `run` event: always its last one, with
        `error` when it raised (`exc`)."""
        scope.close()
        state = self.state
        event: RunEvent = {
            "event": "run",
            "model": state.model,
            "turns": state.turns,
            "tool_calls": len(state.records),
            "total_tokens": state.usage["total_tokens"],
            "ms": elapsed_ms(started),
        }
        if exc is not None:
            closed = isinstance(exc, GeneratorExit)
            event["error"] = redact("stream closed before done" if closed else error_message(exc))
        state.finished = True
        self.settings.emit(event)
        _otel.end_span(span, exc)


_NO_STACK: contextlib.nullcontext[None] = contextlib.nullcontext()
