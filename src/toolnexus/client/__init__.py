"""The unified LLM client: the tool-calling loop, streaming, memory and metrics.

```python
from toolnexus.client import create_client

client = create_client(base_url="https://api.openai.com/v1", style="openai", model="gpt-4o-mini")
result = await client.run("What is 2 + 3?", toolkit)
```
"""

from toolnexus._error_body import (
    MAX_ERROR_BODY,
    REDACTED,
    capped_error_body,
    redact_identifiers,
    safe_error_body,
)
from toolnexus.client._aliases import (
    LIMIT_COMPLETION,
    LIMIT_MAX_TURNS,
    LIMIT_TIMEOUT,
    RUN_STATUS_DONE,
    RUN_STATUS_INCOMPLETE,
    RUN_STATUS_PENDING,
    RUN_STATUSES,
    ClientStyle,
    ErrorClassifier,
    ErrorInfo,
    ErrorTier,
    OnMetric,
    WaitFor,
)
from toolnexus.client._client import (
    Client,
    Conversation,
    create_client,
    create_in_process_client,
)
from toolnexus.client._errors import ProviderError, RunCancelled, RunTimeout
from toolnexus.client._events import (
    AfterLlmInfo,
    AfterToolInfo,
    AfterToolReply,
    BeforeLlmInfo,
    BeforeLlmReply,
    BeforeToolInfo,
    BeforeToolReply,
    DoneEvent,
    LlmEvent,
    MetricEvent,
    OutputEvent,
    PendingEvent,
    ProgressEvent,
    ProgressInfo,
    ReasoningEvent,
    RefusalEvent,
    RunEvent,
    StreamEvent,
    TextEvent,
    ToolCallEvent,
    ToolEvent,
    ToolResultEvent,
    UiEvent,
    UsageEvent,
)
from toolnexus.client._hooks import Hooks
from toolnexus.client._metrics import Metrics as MetricsRegistry
from toolnexus.client._model_settings import ModelSettings
from toolnexus.client._results import (
    ModelTurn,
    RunResult,
    TranslatedToolCall,
    TranslateResult,
    UsageLimits,
)
from toolnexus.client.memory import (
    AtomicConversationStore,
    ConversationLease,
    ConversationStore,
    InMemoryConversationStore,
    StoreConfigError,
    StoreError,
)

TYPE_CHECKING = False  # no `typing` import just for this
if TYPE_CHECKING:
    from toolnexus.client._blocking import HttpTransport, InProcessTransport, UrllibTransport
    from toolnexus.client.memory import (
        PostgresConversationStore,
        RedisConversationStore,
        SQLiteConversationStore,
    )


def _blocking_seam() -> object:
    from toolnexus.client import _blocking

    return _blocking


def _memory() -> object:
    from toolnexus.client import memory

    return memory


# Loaded on first use: the shared stores (SQLite's driver, the Postgres and Redis plumbing) and
# the blocking transports, which a client over HTTP with memory in-process never touches.
_LAZY = {
    "HttpTransport": _blocking_seam,
    "InProcessTransport": _blocking_seam,
    "UrllibTransport": _blocking_seam,
    "PostgresConversationStore": _memory,
    "RedisConversationStore": _memory,
    "SQLiteConversationStore": _memory,
}


def __getattr__(name: str) -> object:
    load = _LAZY.get(name)
    if load is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(load(), name)
    globals()[name] = value
    return value


__all__ = [
    "LIMIT_COMPLETION",
    "LIMIT_MAX_TURNS",
    "LIMIT_TIMEOUT",
    "MAX_ERROR_BODY",
    "REDACTED",
    "RUN_STATUSES",
    "RUN_STATUS_DONE",
    "RUN_STATUS_INCOMPLETE",
    "RUN_STATUS_PENDING",
    "AfterLlmInfo",
    "AfterToolInfo",
    "AfterToolReply",
    "AtomicConversationStore",
    "BeforeLlmInfo",
    "BeforeLlmReply",
    "BeforeToolInfo",
    "BeforeToolReply",
    "Client",
    "ClientStyle",
    "Conversation",
    "ConversationLease",
    "ConversationStore",
    "DoneEvent",
    "ErrorClassifier",
    "ErrorInfo",
    "ErrorTier",
    "Hooks",
    "HttpTransport",
    "InMemoryConversationStore",
    "InProcessTransport",
    "LlmEvent",
    "MetricEvent",
    "MetricsRegistry",
    "ModelSettings",
    "ModelTurn",
    "OnMetric",
    "OutputEvent",
    "PendingEvent",
    "PostgresConversationStore",
    "ProgressEvent",
    "ProgressInfo",
    "ProviderError",
    "ReasoningEvent",
    "RedisConversationStore",
    "RefusalEvent",
    "RunCancelled",
    "RunEvent",
    "RunResult",
    "RunTimeout",
    "SQLiteConversationStore",
    "StoreConfigError",
    "StoreError",
    "StreamEvent",
    "TextEvent",
    "ToolCallEvent",
    "ToolEvent",
    "ToolResultEvent",
    "TranslateResult",
    "TranslatedToolCall",
    "UiEvent",
    "UrllibTransport",
    "UsageEvent",
    "UsageLimits",
    "WaitFor",
    "capped_error_body",
    "create_client",
    "create_in_process_client",
    "redact_identifiers",
    "safe_error_body",
]
