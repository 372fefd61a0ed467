"""The model turn of a run: one request to the model, streamed or whole or through a durable
step, and what its answer adds to the run.

`ModelCaller.prepare` lays out a turn's request (the `before_llm` hook, the body, the tool
declarations a local tool search keeps current); `request` asks for the answer whole, `stream`
for its pieces (`delta` turns each into a stream event); `took` adds the answer to the
transcript and the tally and says whether it ended the run.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolnexus.client._endpoint import ModelRequest
from toolnexus.client._events import AfterLlmInfo, ReasoningEvent, StreamEvent
from toolnexus.client._hooks import AfterLlmHook, before_llm, call_hook
from toolnexus.client._results import ModelTurn, add_usage
from toolnexus.client._run_state import AGAIN, Next, RunEnd
from toolnexus.client._wire import ReasoningDelta, Turn
from toolnexus.toolkit import Toolkit

if TYPE_CHECKING:
    from toolnexus.adapters import ToolCall
    from toolnexus.client._run_state import RunState
    from toolnexus.client._scope import RunScope
    from toolnexus.client._settings import RunSettings
    from toolnexus.client._steps import RunSteps
    from toolnexus.client._tool_search import LocalSearch
    from toolnexus.types import ToolResult

__all__ = ["ModelCaller"]

# A turn that ended without its whole answer: the run ends `incomplete` with this `limit`.
_CUT_SHORT = {"length": "maxTokens", "content_filter": "contentFilter"}

_Piece = str | ReasoningDelta | Turn  # what a streamed answer yields


class ModelCaller:
    """The model turns of one run, over the transcript (`messages`) they grow.

    `sink` is a streamed run's list of events for the loop to yield (`None` when the run does
    not stream); `steps` a durable engine that runs each model call as a step.
    """

    __slots__ = (
        "knobs",
        "local",
        "messages",
        "own_tools",
        "refusal",
        "scope",
        "settings",
        "sink",
        "span",
        "state",
        "steps",
        "streamed",
        "strict",
        "system",
        "text",
        "tools",
        "wire",
    )

    def __init__(
        self,
        settings: RunSettings,
        state: RunState,
        steps: RunSteps | None,
        sink: list[StreamEvent] | None,
        scope: RunScope,
        span: Any,
        system: str,
        messages: list[dict[str, Any]],
        toolkit: Toolkit | None,
        local: LocalSearch | None,
        defer: bool,
    ) -> None:
        self.settings = settings
        self.state = state
        self.steps = steps
        self.sink = sink
        self.scope = scope
        self.span = span
        self.system = system
        self.messages = messages
        self.local = local
        wire = self.wire = settings.endpoint.dialect
        knobs = self.knobs = settings.model_settings
        strict = self.strict = bool(knobs is not None and knobs.strict_tools)
        if local is not None:
            tools = wire.declarations(local.declared(), strict)
        elif toolkit is not None:
            tools = wire.declarations(toolkit, strict, defer=defer)
        else:
            tools = []
        self.own_tools = len(tools)  # the toolkit's, before any `final_result`
        out = settings.output
        if out is not None and out.mode == "tool":
            tools = tools + wire.declarations(
                Toolkit(builtins=False, extra_tools=[out.tool()]), strict
            )
        self.tools = tools
        self.text = ""  # the last answer's text
        self.refusal: str | None = None  # the refusal that ended the run
        self.streamed: Turn | None = None  # the last streamed answer, whole

    async def prepare(self, index: int) -> ModelRequest:
        """The request of turn `index`, after the `before_llm` hook."""
        settings, wire, local = self.settings, self.wire, self.local
        if local is not None and local.changed():  # a search named deferred tools
            declared = wire.declarations(local.declared(), self.strict)
            self.tools, self.own_tools = declared + self.tools[self.own_tools :], len(declared)
        model = settings.model
        hooks = settings.hooks
        if hooks is not None and hooks.before_llm is not None:
            self.messages, self.tools, model = await before_llm(
                hooks.before_llm, self.messages, self.tools, model, index, settings.deps
            )
        seen: list[dict[str, Any]] = []  # the summaries of the parts sent
        body = wire.body(
            model,
            self.system,
            self.messages,
            self.tools,
            self.sink is not None,
            parts=settings.parts,
            seen=seen,
            settings=self.knobs,
        )
        out = settings.output
        if out is not None and out.mode == "native":
            body.update(wire.output_keys(out))
        self.state.model = model
        return ModelRequest(model, body, seen, self.span)

    def request(self, request: ModelRequest) -> Awaitable[Turn]:
        """The answer whole (a run that does not stream), to await."""
        if self.steps is not None:
            return self.steps.model_call(self._call(request))
        return self.settings.endpoint.complete(request, self.scope, self.settings.emit)

    def stream(self, request: ModelRequest) -> AsyncGenerator[_Piece, None]:
        """The answer's text and reasoning deltas, then its `Turn` (a streamed run)."""
        self.streamed = None
        if self.steps is None:
            return self.settings.endpoint.stream(request, self.scope, self.settings.emit)
        return self._stepped(request)

    def delta(self, piece: _Piece) -> StreamEvent | None:
        """The stream event of one piece of `stream`; the `Turn` is kept as `streamed`."""
        if isinstance(piece, str):
            return {"type": "text", "delta": piece}
        if isinstance(piece, ReasoningDelta):
            return _reasoning_event(piece)
        self.streamed = piece
        return None

    async def took(self, turn: Turn, index: int) -> Next:
        """Add the answer of turn `index` to the tally and the transcript; the run's end when it
        ended the run (a refusal, an answer cut short), `AGAIN` when it asks to go on."""
        state = self.state
        state.turns += 1
        finish = turn.finish
        state.model_turns.append(
            ModelTurn(finish, turn.finish_reason, turn.reasoning, turn.reasoning_redacted)
        )
        if turn.usage is not None:
            add_usage(state.usage, turn.usage)
            state.usage_seen = True
        hooks = self.settings.hooks
        if hooks is not None and hooks.after_llm is not None:
            await self._after_llm(hooks.after_llm, turn, index)
        self.messages.extend(turn.entries())
        self.text = turn.text
        if turn.calls:
            if self.knobs is not None:  # a forced tool choice was met: the model is free now
                self.knobs = self.knobs.released()
            return None
        if turn.refusal is not None:
            self.refusal = turn.refusal
            if self.sink is not None:
                self.sink.append({"type": "refusal", "refusal": turn.refusal})
            return RunEnd("refused", None, turn.text)
        if finish == "pause":
            # Anthropic paused a long turn: its content goes back as it is and the model is
            # called again to continue it (no new user message).
            return AGAIN
        cut = _CUT_SHORT.get(finish)
        return RunEnd("incomplete", cut, turn.text) if cut is not None else None

    def answered(self, answered: list[tuple[ToolCall, ToolResult]]) -> None:
        """Put a tool turn's results into the transcript, in call order."""
        self.messages.extend(self.wire.tool_results(answered))

    async def _after_llm(self, hook: AfterLlmHook, turn: Turn, index: int) -> None:
        streaming = self.sink is not None
        response = {"streamed": True, "usage": dict(self.state.usage)} if streaming else turn.raw
        info: AfterLlmInfo = {"response": response, "model": self.state.model, "turn": index}
        if self.settings.deps is not None:
            info["deps"] = self.settings.deps
        await call_hook(hook, info)

    def _call(self, request: ModelRequest) -> Callable[[], Awaitable[Turn]]:
        """One model call as a function a step can run (a stream is read whole)."""
        endpoint, scope, emit = self.settings.endpoint, self.scope, self.settings.emit
        if self.sink is None:
            return lambda: endpoint.complete(request, scope, emit)

        async def streamed() -> Turn:
            deltas = endpoint.stream(request, scope, emit)
            turn: Turn | None = None
            try:
                async for item in deltas:
                    if isinstance(item, Turn):
                        turn = item
                        break
            finally:
                await deltas.aclose()
            assert turn is not None  # a stream's last piece is its turn
            return turn

        return streamed

    async def _stepped(self, request: ModelRequest) -> AsyncGenerator[_Piece, None]:
        """A streamed run's answer through a step: the step answers whole, then its reasoning
        and text go out as single deltas."""
        assert self.steps is not None
        turn = await self.steps.model_call(self._call(request))
        for thought in turn.reasoning_deltas():
            yield thought
        if turn.text:
            yield turn.text
        yield turn


def _reasoning_event(piece: ReasoningDelta) -> ReasoningEvent:
    if piece.redacted:
        return {"type": "reasoning", "delta": "", "redacted": True}
    return {"type": "reasoning", "delta": piece.text}
