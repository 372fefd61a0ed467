"""The shapes of what a run hands out as it goes: stream events, hook arguments, metric events.

They are plain dicts at run time, described here as `TypedDict`s so a type checker knows every
key. Each stream event has a literal `type` and `StreamEvent` is their union, so

    async for event in client.stream(prompt, toolkit):
        match event["type"]:
            case "text":
                print(event["delta"], end="")
            case "done":
                result = event["result"]

narrows `event` in each branch. Metric events are told apart the same way by their `event` key.
"""

from collections.abc import Callable
from typing import Any, Generic, Literal, NotRequired, TypeAlias, Union

from typing_extensions import TypedDict, TypeVar

from toolnexus.client._results import RunResult
from toolnexus.types import Request, Tool, ToolResult

__all__ = [
    "AfterLlmInfo",
    "AfterToolInfo",
    "AfterToolReply",
    "BeforeLlmInfo",
    "BeforeLlmReply",
    "BeforeToolInfo",
    "BeforeToolReply",
    "DoneEvent",
    "LlmEvent",
    "MetricEvent",
    "OnMetric",
    "OutputEvent",
    "PendingEvent",
    "ProgressEvent",
    "ProgressInfo",
    "ReasoningEvent",
    "RefusalEvent",
    "RunEvent",
    "StreamEvent",
    "TextEvent",
    "ToolCallEvent",
    "ToolEvent",
    "ToolResultEvent",
    "UiEvent",
    "UsageEvent",
]

OutputT = TypeVar("OutputT", default=Any)

# -- stream events ------------------------------------------------------------------------------


class TextEvent(TypedDict):
    """A piece of the answer's text, as the model streamed it."""

    type: Literal["text"]
    delta: str


class ReasoningEvent(TypedDict):
    """A piece of the model's reasoning, as it streamed; with `redacted`, a marker that the
    provider sent reasoning only encrypted or redacted (`delta` is then `""`)."""

    type: Literal["reasoning"]
    delta: str
    redacted: NotRequired[bool]


class ToolCallEvent(TypedDict):
    """A tool call the model asked for, before it runs (every call of a turn comes first)."""

    type: Literal["tool_call"]
    id: str  # the provider's call id
    name: str
    args: dict[str, Any]


class UiEvent(TypedDict):
    """A tool call whose tool has an MCP App (`_meta.ui.resourceUri`), right after its
    `tool_call`: the `ui://` resource for the host to render for the call `id`
    (`Toolkit.read_mcp_resource(resource_uri, server=server)` reads it)."""

    type: Literal["ui"]
    id: str  # the provider's call id, as in `tool_call`
    name: str
    resource_uri: str
    server: str | None  # the MCP server of the tool (`None` for a tool of another source)


class ProgressEvent(TypedDict):
    """Progress a running tool reported, between its `tool_call` and its `tool_result`."""

    type: Literal["progress"]
    id: str
    name: str
    progress: float
    total: float | None
    message: str | None


class ToolResultEvent(TypedDict):
    """A tool call's result, as the model is given it."""

    type: Literal["tool_result"]
    id: str
    name: str
    output: str
    is_error: bool
    parts: NotRequired[list[dict[str, Any]]]  # the result's content parts, when it has any


class PendingEvent(TypedDict):
    """A tool suspended on a request for the host (emitted before `wait_for` is asked)."""

    type: Literal["pending"]
    request: Request


class RefusalEvent(TypedDict):
    """The model declined to answer; the run ends `refused`."""

    type: Literal["refusal"]
    refusal: str


class OutputEvent(TypedDict, Generic[OutputT]):
    """The run's validated final value (runs with an `output_type`), right before `done`."""

    type: Literal["output"]
    output: OutputT


class UsageEvent(TypedDict):
    """The run's cumulative token usage, once, before `done`, when any was reported."""

    type: Literal["usage"]
    usage: dict[str, int]


class DoneEvent(TypedDict, Generic[OutputT]):
    """The end of the run: always the last event."""

    type: Literal["done"]
    result: RunResult[OutputT]


StreamEvent: TypeAlias = Union[  # noqa: UP007 - a generic alias with a default needs `Union`
    TextEvent,
    ReasoningEvent,
    ToolCallEvent,
    UiEvent,
    ProgressEvent,
    ToolResultEvent,
    PendingEvent,
    RefusalEvent,
    OutputEvent[OutputT],
    UsageEvent,
    DoneEvent[OutputT],
]
"""Any event of `client.stream(...)`; `event["type"]` tells which."""

# -- hook arguments and replies -----------------------------------------------------------------


class BeforeLlmInfo(TypedDict):
    """What `before_llm` is given before each model call."""

    messages: list[dict[str, Any]]  # the working transcript
    tools: list[dict[str, Any]]  # the tool declarations, in the wire's shape
    model: str
    turn: int  # 0-based
    deps: NotRequired[Any]  # the run's `deps`, when it has some


class BeforeLlmReply(TypedDict, total=False):
    """What `before_llm` may return: replacements for this turn (and, but `model`, later ones)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    model: str


class AfterLlmInfo(TypedDict):
    """What `after_llm` is given after each model call (observe only)."""

    response: Any  # the provider's decoded answer; streamed: `{"streamed": True, "usage": ...}`
    model: str
    turn: int
    deps: NotRequired[Any]


class BeforeToolInfo(TypedDict):
    """What `before_tool` is given before each tool call."""

    name: str
    args: dict[str, Any]
    id: str
    turn: int
    tool: NotRequired[Tool | None]  # the tool about to run (`None` for an unknown name)
    deps: NotRequired[Any]


class BeforeToolReply(TypedDict, total=False):
    """What `before_tool` may return: a result instead of running the tool, or new arguments."""

    result: ToolResult
    args: dict[str, Any]


class AfterToolInfo(TypedDict):
    """What `after_tool` is given after each tool call (not a suspension)."""

    name: str
    args: dict[str, Any]
    result: ToolResult
    id: str
    turn: int
    tool: NotRequired[Tool | None]
    deps: NotRequired[Any]


class AfterToolReply(TypedDict, total=False):
    """What `after_tool` may return: a result that replaces the tool's."""

    result: ToolResult


class ProgressInfo(TypedDict):
    """What `on_progress` is given for each progress report of a running tool (observe only)."""

    name: str
    id: str
    turn: int
    progress: float
    total: float | None
    message: str | None
    deps: NotRequired[Any]


# -- metric events ------------------------------------------------------------------------------


class LlmEvent(TypedDict):
    """One model call, its retries included (tokens of this call only; 0 on error)."""

    event: Literal["llm"]
    model: str
    status: Literal["ok", "error"]
    ms: float
    prompt_tokens: int
    completion_tokens: int
    parts: NotRequired[list[dict[str, Any]]]  # summaries of the request's non-text parts


class ToolEvent(TypedDict):
    """One tool execution (a short-circuit and a re-run after `wait_for` included)."""

    event: Literal["tool"]
    tool: str
    source: str  # `custom` for an unknown tool
    is_error: bool
    ms: float
    pending: NotRequired[Literal[True]]  # the call suspended (never counted as an error)
    unknown: NotRequired[Literal[True]]  # no such tool: `metrics()` counts it as `(unknown)`


class RunEvent(TypedDict):
    """One run; always the last metric event of it."""

    event: Literal["run"]
    model: str
    turns: int
    tool_calls: int
    total_tokens: int
    ms: float
    error: NotRequired[str]  # why the run raised


MetricEvent: TypeAlias = LlmEvent | ToolEvent | RunEvent
"""One `on_metric` event; `event["event"]` tells which."""

OnMetric: TypeAlias = Callable[[MetricEvent], object]
"""`create_client(on_metric=...)`: called with every metric event (sync or async)."""
