"""The unified LLM client: the tool-calling loop, streaming, memory and metrics.

```python
from toolnexus.client import create_client

client = create_client(base_url="https://api.openai.com/v1", style="openai", model="gpt-4o-mini")
result = await client.run("What is 2 + 3?", toolkit)
```
"""

from toolnexus.client._client import (
    Client,
    Conversation,
    create_client,
    create_in_process_client,
)
from toolnexus.client._errors import ProviderError, RunCancelled, RunTimeout
from toolnexus.client._hooks import Hooks
from toolnexus.client._results import RunResult, TranslatedToolCall, TranslateResult
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
    "AtomicConversationStore",
    "Client",
    "Conversation",
    "ConversationLease",
    "ConversationStore",
    "Hooks",
    "InMemoryConversationStore",
    "PostgresConversationStore",
    "ProviderError",
    "RedisConversationStore",
    "RunCancelled",
    "RunResult",
    "RunTimeout",
    "SQLiteConversationStore",
    "StoreConfigError",
    "StoreError",
    "TranslateResult",
    "TranslatedToolCall",
    "create_client",
    "create_in_process_client",
]
