"""The unified LLM client: the tool-calling loop, streaming, memory and metrics.

```python
from toolnexus.client import create_client

client = create_client(base_url="https://api.openai.com/v1", style="openai", model="gpt-4o-mini")
result = await client.run("What is 2 + 3?", toolkit)
```
"""

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
    RefusalEvent,
    RunEvent,
    StreamEvent,
    TextEvent,
    ToolCallEvent,
    ToolEvent,
    ToolResultEvent,
    UsageEvent,
)
from toolnexus.client._hooks import Hooks
from toolnexus.client._metrics import Metrics as MetricsRegistry
from toolnexus.client._results import (
    RunResult,
    TranslatedToolCall,
    TranslateResult,
    UsageLimits,
)
from toolnexus.client._sync_transport import HttpTransport, InProcessTransport, UrllibTransport
from toolnexus.client.memory import (
    AtomicConversationStore,
    ConversationLease,
    ConversationStore,
    InMemoryConversationStore,
    PostgresConversationStore,
    RedisConversationStore,
    SQLiteConversationStore,
    StoreConfigError,
    StoreError,
)

__all__ = [
    "LIMIT_COMPLETION",
    "LIMIT_MAX_TURNS",
    "LIMIT_TIMEOUT",
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
    "OnMetric",
    "OutputEvent",
    "PendingEvent",
    "PostgresConversationStore",
    "ProgressEvent",
    "ProgressInfo",
    "ProviderError",
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
    "UrllibTransport",
    "UsageEvent",
    "UsageLimits",
    "WaitFor",
    "create_client",
    "create_in_process_client",
]
