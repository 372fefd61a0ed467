"""Sub-agents: agents as tools, a runtime of agent handles with budgets, personas read from a
folder, context compaction and a completion-gated harness loop.

```python
from toolnexus.agents import agent

explore = agent("explore", does="read-only research", uses={"tools": [lookup]})
coder = agent("coder", does="fixes bugs", soul="You are the CODER.", team=[explore])
result = await coder.run("fix the failing test", client=client)
```

This package is not imported by `import toolnexus`; `toolnexus.Agent` stays the remote A2A
agent descriptor.
"""

from toolnexus._current_agent import AgentIdentity, current_agent
from toolnexus.agents._agent import Agent, agent
from toolnexus.agents._clock import AsyncioClock, Clock
from toolnexus.agents._constants import (
    LIMIT_COMPLETION,
    LIMIT_MAX_CHILDREN,
    LIMIT_MAX_CONCURRENT,
    LIMIT_MAX_DEPTH,
    LIMIT_MAX_TOKENS,
    LIMIT_MAX_TOOL_CALLS,
    LIMIT_MAX_TURNS,
    LIMIT_MAX_WALL_MS,
    LIMIT_TIMEOUT,
    LIMITS,
    TASK_STATUS_CLOSED,
    TASK_STATUS_DONE,
    TASK_STATUS_ERROR,
    TASK_STATUS_INCOMPLETE,
    TASK_STATUS_INTERRUPTED,
    TASK_STATUS_PENDING,
    TASK_STATUS_TIMEOUT,
    TASK_STATUSES,
)
from toolnexus.agents._defs import AgentDef, Budget
from toolnexus.agents._handle import Handle
from toolnexus.agents._harness import (
    Completion,
    Verdict,
    all_todos_done,
    guarded_hooks,
    harness,
    loop_unsupported,
    run_gated,
)
from toolnexus.agents._loop import Loop, Outcome
from toolnexus.agents._persona import (
    BOOTSTRAP_ORDER,
    HEARTBEAT_OK,
    StartedAgent,
    agent_from_dir,
    compose_soul,
    memory_tool,
    start_agent,
)
from toolnexus.agents._results import HandleView, InboxItem, PostResult, SpawnError, TaskResult
from toolnexus.agents._runtime import AgentRuntime
from toolnexus.agents.compaction import compactor, estimate_tokens

__all__ = [
    "BOOTSTRAP_ORDER",
    "HEARTBEAT_OK",
    "LIMITS",
    "LIMIT_COMPLETION",
    "LIMIT_MAX_CHILDREN",
    "LIMIT_MAX_CONCURRENT",
    "LIMIT_MAX_DEPTH",
    "LIMIT_MAX_TOKENS",
    "LIMIT_MAX_TOOL_CALLS",
    "LIMIT_MAX_TURNS",
    "LIMIT_MAX_WALL_MS",
    "LIMIT_TIMEOUT",
    "TASK_STATUSES",
    "TASK_STATUS_CLOSED",
    "TASK_STATUS_DONE",
    "TASK_STATUS_ERROR",
    "TASK_STATUS_INCOMPLETE",
    "TASK_STATUS_INTERRUPTED",
    "TASK_STATUS_PENDING",
    "TASK_STATUS_TIMEOUT",
    "Agent",
    "AgentDef",
    "AgentIdentity",
    "AgentRuntime",
    "AsyncioClock",
    "Budget",
    "Clock",
    "Completion",
    "Handle",
    "HandleView",
    "InboxItem",
    "Loop",
    "Outcome",
    "PostResult",
    "SpawnError",
    "StartedAgent",
    "TaskResult",
    "Verdict",
    "agent",
    "agent_from_dir",
    "all_todos_done",
    "compactor",
    "compose_soul",
    "current_agent",
    "estimate_tokens",
    "guarded_hooks",
    "harness",
    "loop_unsupported",
    "memory_tool",
    "run_gated",
    "start_agent",
]
