"""OpenTelemetry traces, metrics and trace context, on the GenAI semantic conventions.

Nothing here imports OpenTelemetry until the host has: while `opentelemetry.trace` is not
loaded, or no SDK tracer/meter provider is installed, `telemetry()` is `None` and every helper
returns a shared no-op (a `nullcontext`, the caller's own headers). Once a real provider is
seen, the tracer, the meter's instruments and the semantic-convention names are resolved once
and kept for the process.

Message contents are recorded only when the host opts in (read at each call) with
`TOOLNEXUS_OTEL_CAPTURE_CONTENT=true` (or the conventions' own
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`): they may hold personal data.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Mapping, MutableMapping
from contextvars import ContextVar, Token
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from toolnexus._current_agent import current_agent
from toolnexus._extras import extra_hint
from toolnexus._version import __version__

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "UNKNOWN_TOOL",
    "ChatCall",
    "ServerSpans",
    "ToolCallSpan",
    "TraceIds",
    "active",
    "agent_span",
    "chat",
    "end_span",
    "inject_headers",
    "request_hooks",
    "telemetry",
    "tool_call",
]

_NULL: contextlib.nullcontext[None] = contextlib.nullcontext()
# The metric label of every tool name the toolkit does not have (a model can invent any number
# of names; each must not become a series). Not a valid tool name, so never a real tool's.
UNKNOWN_TOOL = "(unknown)"
_SCOPE = "toolnexus"
_CONTENT_ENV = (
    "TOOLNEXUS_OTEL_CAPTURE_CONTENT",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
)


class Telemetry:
    """The resolved tracer and instruments (`None` for the half with no provider)."""

    def __init__(self, tracer: Tracer | None, meter_set: bool) -> None:
        from opentelemetry import metrics
        from opentelemetry.semconv._incubating.metrics import gen_ai_metrics, mcp_metrics

        self.tracer = tracer
        self.operation_duration: Histogram | None = None
        self.token_usage: Histogram | None = None
        self.tool_calls: Counter | None = None
        self.tool_duration: Histogram | None = None
        self.mcp_duration: Histogram | None = None
        if meter_set:
            meter = metrics.get_meter(_SCOPE)
            self.operation_duration = gen_ai_metrics.create_gen_ai_client_operation_duration(meter)
            self.token_usage = gen_ai_metrics.create_gen_ai_client_token_usage(meter)
            self.tool_calls = meter.create_counter(
                "toolnexus.tool.calls", unit="{call}", description="Tool executions."
            )
            self.tool_duration = meter.create_histogram(
                "toolnexus.tool.duration", unit="s", description="Duration of tool executions."
            )
            self.mcp_duration = mcp_metrics.create_mcp_client_operation_duration(meter)

    @property
    def capture_content(self) -> bool:
        """Whether the host opted into message contents (read per call: it may change)."""
        return any(
            os.environ.get(env, "").strip().lower() in ("1", "true", "yes") for env in _CONTENT_ENV
        )


_resolved: Telemetry | None = None
# The API modules whose provider globals decide "off" (two attribute reads per check), once
# seen: `opentelemetry.trace`, and `opentelemetry.metrics._internal` or `None` while nobody
# imported the metrics API (so nobody can have set a meter provider).
_api: tuple[Any, Any] | None = None
_METRICS = "opentelemetry.metrics._internal"
_TRACE = "opentelemetry.trace"


def telemetry() -> Telemetry | None:
    """The live telemetry, or `None` while no OpenTelemetry provider is installed.

    On the hot path of every model and tool call: while off it reads two module globals."""
    if _resolved is not None:
        return _resolved
    api = _api
    if api is None:
        if _TRACE not in sys.modules:
            return None  # nobody loaded OpenTelemetry, so nobody configured it
    elif api[0]._TRACER_PROVIDER is None:
        meters = api[1]
        if meters is None:
            if _METRICS not in sys.modules:
                return None
        elif meters._METER_PROVIDER is None:
            return None
    return _probe()


_ENV_PROVIDERS = any(
    name in os.environ for name in ("OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER")
)


def _probe() -> Telemetry | None:
    """The slow check: find the API modules, remember them, resolve a configured provider."""
    global _api
    trace_mod = sys.modules.get(_TRACE)
    if trace_mod is None:
        return None  # nobody loaded OpenTelemetry, so nobody configured it
    if _ENV_PROVIDERS:
        return _resolve(trace_mod)  # providers named by the environment load lazily
    meters = sys.modules.get(_METRICS)
    if hasattr(trace_mod, "_TRACER_PROVIDER") and (
        meters is None or hasattr(meters, "_METER_PROVIDER")
    ):
        _api = (trace_mod, meters)
        if trace_mod._TRACER_PROVIDER is None and (
            meters is None or meters._METER_PROVIDER is None
        ):
            return None
        return _resolve(trace_mod)
    # An API without those globals: ask it (microseconds, but only on such versions).
    return _resolve(trace_mod)


def _resolve(trace_mod: Any) -> Telemetry | None:
    global _resolved
    from opentelemetry import metrics

    provider = trace_mod.get_tracer_provider()
    tracing = not isinstance(provider, trace_mod.ProxyTracerProvider | trace_mod.NoOpTracerProvider)
    meter_provider = metrics.get_meter_provider()
    metering = not isinstance(
        meter_provider, metrics._internal._ProxyMeterProvider | metrics.NoOpMeterProvider
    )
    if not (tracing or metering):
        return None
    tracer = provider.get_tracer(_SCOPE, __version__) if tracing else None
    try:
        _resolved = Telemetry(tracer, metering)
    except ImportError:  # the `[otel]` extra brings the semantic conventions
        logging.getLogger("toolnexus").warning(
            "[toolnexus] OpenTelemetry is configured but opentelemetry-semantic-conventions "
            "is missing: %s",
            extra_hint("otel"),
        )
        return None
    return _resolved


def _error_type(exc: BaseException) -> str:
    return type(exc).__qualname__


def end_span(span: Span | None, error: BaseException | None = None) -> None:
    """End `span`, marking it failed with `error` when given."""
    if span is None:
        return
    if error is not None:
        _fail(span, error)
    span.end()


def _fail(span: Span, error: BaseException) -> None:
    from opentelemetry.trace import StatusCode

    span.set_attribute("error.type", _error_type(error))
    if isinstance(error, Exception):
        span.record_exception(error)
    span.set_status(StatusCode.ERROR, str(error) or None)


# -- spans -------------------------------------------------------------------------------------


def agent_span(model: str, provider: str) -> Span | None:
    """Start (not activate) the `invoke_agent` span of one run; `None` when not tracing."""
    t = telemetry()
    if t is None or t.tracer is None:
        return None
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga

    attrs: dict[str, Any] = {
        ga.GEN_AI_OPERATION_NAME: "invoke_agent",
        ga.GEN_AI_PROVIDER_NAME: provider,
        ga.GEN_AI_REQUEST_MODEL: model,
    }
    agent = _add_agent(attrs)
    name = "invoke_agent" if agent is None else f"invoke_agent {agent}"
    return t.tracer.start_span(name, attributes=attrs)


def _add_agent(attrs: dict[str, Any]) -> str | None:
    """Add the running agent turn's `gen_ai.agent.name`/`gen_ai.agent.id`; its name, if any."""
    agent = current_agent()
    if agent is None:
        return None
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga

    attrs[ga.GEN_AI_AGENT_NAME] = agent.name
    attrs[ga.GEN_AI_AGENT_ID] = agent.id
    return agent.name


def active(span: Span | None) -> contextlib.AbstractContextManager[Any]:
    """Make `span` the current span for a block (a no-op for `None`); it is not ended here."""
    if span is None:
        return _NULL
    from opentelemetry.trace import use_span

    return use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False)


@lru_cache(maxsize=64)
def _server(url: str) -> tuple[str, int] | None:
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


class ChatCall:
    """The `chat {model}` span of one model call, and its duration and token metrics."""

    __slots__ = ("_attrs", "_span", "_started", "_t")

    def __init__(self, t: Telemetry, provider: str, model: str, url: str, parent: Any) -> None:
        from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga
        from opentelemetry.trace import SpanKind, set_span_in_context

        self._t = t
        attrs: dict[str, Any] = {
            ga.GEN_AI_OPERATION_NAME: "chat",
            ga.GEN_AI_PROVIDER_NAME: provider,
            ga.GEN_AI_REQUEST_MODEL: model,
        }
        server = _server(url) if url else None
        if server is not None:
            attrs["server.address"], attrs["server.port"] = server
        self._attrs = attrs
        self._span: Span | None = None
        if t.tracer is not None:
            context = set_span_in_context(parent) if parent is not None else None
            span_attrs = dict(attrs)
            _add_agent(span_attrs)  # on the span only: an id would explode metric cardinality
            self._span = t.tracer.start_span(
                f"chat {model}", context=context, kind=SpanKind.CLIENT, attributes=span_attrs
            )
        self._started = time.perf_counter()

    def start(self, headers: dict[str, str], body: Mapping[str, Any]) -> dict[str, str]:
        """This call's request headers, with its trace context; records the request's
        messages when the host opted into contents."""
        span = self._span
        if span is None:
            return inject_headers(headers)
        if self._t.capture_content:
            messages = body.get("messages")
            if messages is not None:
                span.set_attribute("gen_ai.input.messages", _dump(messages))
        from opentelemetry.propagate import inject
        from opentelemetry.trace import set_span_in_context

        carrier = dict(headers)
        inject(carrier, context=set_span_in_context(span))
        return carrier

    def end(self, turn: Any, error: BaseException | None = None) -> None:
        """Record what the model answered (`turn` is the dialect's `Turn`) or how it failed."""
        from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga

        t, span, attrs = self._t, self._span, self._attrs
        if error is not None:
            attrs = {**attrs, "error.type": _error_type(error)}
        if t.operation_duration is not None:
            t.operation_duration.record(time.perf_counter() - self._started, attrs)
        if turn is None:
            end_span(span, error)
            return
        usage: Mapping[str, int] = turn.usage or {}
        raw = turn.raw if isinstance(turn.raw, dict) else {}
        response_model = raw.get("model")
        if span is not None:
            if isinstance(response_model, str):
                span.set_attribute(ga.GEN_AI_RESPONSE_MODEL, response_model)
            if isinstance(raw.get("id"), str):
                span.set_attribute(ga.GEN_AI_RESPONSE_ID, raw["id"])
            if turn.finish_reason is not None:
                span.set_attribute(ga.GEN_AI_RESPONSE_FINISH_REASONS, (turn.finish_reason,))
            if "prompt_tokens" in usage:
                span.set_attribute(ga.GEN_AI_USAGE_INPUT_TOKENS, usage["prompt_tokens"])
            if "completion_tokens" in usage:
                span.set_attribute(ga.GEN_AI_USAGE_OUTPUT_TOKENS, usage["completion_tokens"])
            if t.capture_content:
                span.set_attribute("gen_ai.output.messages", _dump([turn.message]))
            span.end()
        if t.token_usage is not None:
            if isinstance(response_model, str):
                attrs = {**attrs, ga.GEN_AI_RESPONSE_MODEL: response_model}
            for key, kind in (("prompt_tokens", "input"), ("completion_tokens", "output")):
                if key in usage:
                    t.token_usage.record(usage[key], {**attrs, ga.GEN_AI_TOKEN_TYPE: kind})


class _NoCall:
    """The model call's telemetry while it is off: passes the headers through, records nothing."""

    __slots__ = ()

    def start(self, headers: dict[str, str], body: Mapping[str, Any]) -> dict[str, str]:
        return headers

    def end(self, turn: Any, error: BaseException | None = None) -> None:
        return None


_NO_CALL = _NoCall()


def chat(provider: str, request: Any, url: str) -> ChatCall | _NoCall:
    """The telemetry of one model call (`request` is the endpoint's `ModelRequest`)."""
    t = telemetry()
    if t is None:
        return _NO_CALL
    return ChatCall(t, provider, request.model, url, request.parent)


_TOOL_TYPES = {"mcp": "extension", "a2a": "extension"}

# The model's id for the tool call about to run, handed from the loop to `Toolkit.execute`
# (which owns the span); consumed by that span so a nested direct execute does not reuse it.
_CALL_ID: ContextVar[str | None] = ContextVar("toolnexus_tool_call_id", default=None)


class _CallId:
    __slots__ = ("_id", "_token")

    def __init__(self, call_id: str | None) -> None:
        self._id = call_id
        self._token: Token[str | None] | None = None

    def __enter__(self) -> None:
        self._token = _CALL_ID.set(self._id)

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        _CALL_ID.reset(self._token)


def model_call(call_id: str | None) -> contextlib.AbstractContextManager[Any]:
    """A block in which a tool executed through `Toolkit.execute` answers the model's call
    `call_id` (its span records the id); a no-op while telemetry is off."""
    if telemetry() is None:
        return _NULL
    return _CallId(call_id)


class ToolCallSpan:
    """The `execute_tool {name}` span of one tool execution (current while it runs), and the
    tool call count and duration."""

    __slots__ = ("_attrs", "_ctx", "_span", "_started", "_t", "_token")

    def __init__(self, t: Telemetry, name: str, tool: Any) -> None:
        from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga

        self._t = t
        source = tool.source if tool is not None else "custom"
        self._attrs: dict[str, Any] = {
            ga.GEN_AI_OPERATION_NAME: "execute_tool",
            # The metrics' label: a name the model invented is one series, however many.
            ga.GEN_AI_TOOL_NAME: name if tool is not None else UNKNOWN_TOOL,
            ga.GEN_AI_TOOL_TYPE: _TOOL_TYPES.get(source, "function"),
            "toolnexus.tool.source": source,
        }
        self._span: Span | None = None
        self._ctx: contextlib.AbstractContextManager[Any] = _NULL
        self._token: Token[str | None] | None = None
        if t.tracer is not None:
            attrs = {**self._attrs, ga.GEN_AI_TOOL_NAME: name}  # the span names what was asked
            call_id = _CALL_ID.get()
            if call_id:
                attrs[ga.GEN_AI_TOOL_CALL_ID] = call_id
            _add_agent(attrs)
            self._span = t.tracer.start_span(f"execute_tool {name}", attributes=attrs)
            self._ctx = active(self._span)
        self._started = time.perf_counter()

    def __enter__(self) -> ToolCallSpan:
        self._token = _CALL_ID.set(None)
        self._ctx.__enter__()
        return self

    def result(self, result: Any) -> None:
        """Record the tool's `ToolResult`: an error result marks the span failed."""
        if self._span is not None and self._t.capture_content:
            self._span.set_attribute("gen_ai.tool.call.result", str(result.output))
        if not result.is_error:
            return
        self._attrs["error.type"] = "tool_error"
        if self._span is not None:
            from opentelemetry.trace import StatusCode

            self._span.set_attribute("error.type", "tool_error")
            self._span.set_status(StatusCode.ERROR, str(result.output)[:200] or None)

    def __exit__(self, kind: object, error: BaseException | None, tb: object) -> None:
        self._ctx.__exit__(None, None, None)
        if self._token is not None:
            _CALL_ID.reset(self._token)
        attrs = self._attrs if error is None else {**self._attrs, "error.type": _error_type(error)}
        if self._t.tool_calls is not None:
            self._t.tool_calls.add(1, attrs)
        elapsed = time.perf_counter() - self._started
        if self._t.tool_duration is not None:
            self._t.tool_duration.record(elapsed, attrs)
        end_span(self._span, error)


class _NoTool:
    """A tool execution's telemetry while it is off."""

    __slots__ = ()

    def __enter__(self) -> _NoTool:
        return self

    def __exit__(self, kind: object, error: BaseException | None, tb: object) -> None:
        return None

    def result(self, result: Any) -> None:
        return None


_NO_TOOL = _NoTool()


def tool_call(name: str, tool: Any) -> ToolCallSpan | _NoTool:
    """The telemetry of one execution of the tool `name` (`tool`: the `Tool`, `None` when
    unknown), whether the loop or the host asked for it."""
    t = telemetry()
    return _NO_TOOL if t is None else ToolCallSpan(t, name, tool)


class McpCall:
    """The CLIENT span `{method} {target}` of one MCP request (the MCP SDK's own request span is
    its child), and `mcp.client.operation.duration`.

    `peer` is the connection the request goes out on: its `protocol` (the negotiated version),
    `transport` (`stdio`, `streamable-http`, `sse`) and `session_id` (the HTTP session's
    `Mcp-Session-Id`, when the server gave one)."""

    __slots__ = ("_attrs", "_ctx", "_span", "_started", "_t")

    def __init__(self, t: Telemetry, method: str, target: str | None, peer: Any) -> None:
        from opentelemetry.semconv._incubating.attributes import mcp_attributes as mcp
        from opentelemetry.trace import SpanKind

        self._t = t
        protocol = getattr(peer, "protocol", None)
        transport = getattr(peer, "transport", None)
        self._attrs: dict[str, Any] = {
            mcp.MCP_METHOD_NAME: method,
            "network.transport": "pipe" if transport == "stdio" else "tcp",
        }
        if protocol:
            self._attrs[mcp.MCP_PROTOCOL_VERSION] = protocol
        if method == "tools/call" and target is not None:
            self._attrs["gen_ai.operation.name"] = "execute_tool"
            self._attrs["gen_ai.tool.name"] = target
        self._span: Span | None = None
        self._ctx: contextlib.AbstractContextManager[Any] = _NULL
        if t.tracer is not None:
            attrs = dict(self._attrs)  # the span's own: ids and URIs stay out of the metric
            session_id = getattr(peer, "session_id", None)
            if session_id:
                attrs[mcp.MCP_SESSION_ID] = session_id
            if method == "resources/read" and target is not None:
                attrs[mcp.MCP_RESOURCE_URI] = target
            elif method == "prompts/get" and target is not None:
                attrs["gen_ai.prompt.name"] = target
            name = method if target is None else f"{method} {target}"
            self._span = t.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attrs)
            self._ctx = active(self._span)
        self._started = time.perf_counter()

    def __enter__(self) -> McpCall:
        self._ctx.__enter__()
        return self

    def result(self, result: Any) -> None:
        """Record the call's result: a `CallToolResult` with `isError` marks the span failed."""
        if getattr(result, "is_error", False) is True:
            self._attrs["error.type"] = "tool_error"
            if self._span is not None:
                from opentelemetry.trace import StatusCode

                self._span.set_attribute("error.type", "tool_error")
                self._span.set_status(StatusCode.ERROR)

    def __exit__(self, kind: object, error: BaseException | None, tb: object) -> None:
        self._ctx.__exit__(None, None, None)
        attrs = self._attrs if error is None else {**self._attrs, "error.type": _error_type(error)}
        if self._t.mcp_duration is not None:
            self._t.mcp_duration.record(time.perf_counter() - self._started, attrs)
        end_span(self._span, error)


def mcp_request(method: str, target: str | None, peer: Any) -> McpCall | _NoTool:
    """The telemetry of one MCP request `method` (about `target`: a tool or prompt name, a
    resource URI) sent on the connection `peer`."""
    t = telemetry()
    return _NO_TOOL if t is None else McpCall(t, method, target, peer)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


# -- context propagation -----------------------------------------------------------------------


def inject_headers(headers: dict[str, str]) -> dict[str, str]:
    """`headers` plus the current W3C trace context and baggage (the same object when off)."""
    if telemetry() is None:
        return headers
    from opentelemetry.propagate import inject

    carrier = dict(headers)
    inject(carrier)
    return carrier


async def _inject_request(request: Any) -> None:
    if telemetry() is None:
        return
    from opentelemetry.propagate import inject

    carrier: MutableMapping[str, str] = request.headers
    inject(carrier)


def request_hooks() -> dict[str, list[Any]]:
    """`event_hooks` for an `httpx2.AsyncClient`: each request carries the trace context."""
    return {"request": [_inject_request]}


# -- logs --------------------------------------------------------------------------------------


class TraceIds(logging.Filter):
    """Adds `otelTraceID`/`otelSpanID` (hex) to records made while a span is active."""

    def filter(self, record: logging.LogRecord) -> bool:
        if telemetry() is None:
            return True
        from opentelemetry.trace import get_current_span

        span_context = get_current_span().get_span_context()
        if span_context.is_valid:
            record.otelTraceID = format(span_context.trace_id, "032x")
            record.otelSpanID = format(span_context.span_id, "016x")
        return True


# Every `toolnexus` log record made while a span is active carries its ids. Installed here, not by
# `_log`, so the logger the whole package uses does not load this module (the dependency points
# from telemetry to logging); every model, tool and MCP call loads `_otel` before it logs.
logging.getLogger("toolnexus").addFilter(TraceIds())


# -- serving -----------------------------------------------------------------------------------


class ServerSpans:
    """ASGI middleware: each HTTP request gets a SERVER span, a child of the caller's trace
    context (W3C `traceparent`/`tracestate`/`baggage`), current while the app handles it (and
    in the tasks it starts)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        t = telemetry()
        if t is None or t.tracer is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from opentelemetry.propagate import extract
        from opentelemetry.trace import SpanKind, StatusCode, use_span

        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        method, path = scope["method"], scope["path"]
        attributes = {"http.request.method": method, "url.path": path}
        session_id = headers.get("mcp-session-id")
        if session_id:  # a stateful MCP session's request
            attributes["mcp.session.id"] = session_id
        span = t.tracer.start_span(
            f"{method} {path}",
            context=extract(headers),
            kind=SpanKind.SERVER,
            attributes=attributes,
        )

        async def send_traced(message: Any) -> None:
            if message["type"] == "http.response.start":
                status = message["status"]
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_attribute("error.type", str(status))
                    span.set_status(StatusCode.ERROR)
            await send(message)

        try:
            with use_span(span, end_on_exit=False, record_exception=False):
                await self.app(scope, receive, send_traced)
        except BaseException as exc:
            end_span(span, exc)
            raise
        span.end()
