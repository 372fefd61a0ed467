"""The agent runtime (the published `toolnexus.agents.runtime` path): handles, budgets,
results and the constants they use."""

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
from toolnexus.agents._defs import (
    DEFAULT_MAX_CONCURRENT,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_TURNS,
    AgentDef,
    Budget,
)
from toolnexus.agents._handle import Handle
from toolnexus.agents._results import HandleView, InboxItem, PostResult, SpawnError, TaskResult
from toolnexus.agents._runtime import AgentRuntime

__all__ = [
    "DEFAULT_MAX_CONCURRENT",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_TURNS",
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
    "AgentDef",
    "AgentRuntime",
    "AsyncioClock",
    "Budget",
    "Clock",
    "Handle",
    "HandleView",
    "InboxItem",
    "PostResult",
    "SpawnError",
    "TaskResult",
]
