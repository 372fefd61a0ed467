"""Remote A2A agents as tools (one tool per advertised skill), in A2A 1.0, 0.3 or legacy form."""

from typing import Any, TypeAlias

from toolnexus._config import AgentConfig, AgentsConfig, is_enabled
from toolnexus.a2a._discovery import (
    DEFAULT_POLL_EVERY_MS,
    DEFAULT_TIMEOUT_MS,
    Agent,
    agent,
    parse_agents_config,
)
from toolnexus.a2a._outbound import TASK_INPUT_SCHEMA, A2AError, agent_tools
from toolnexus.a2a._wire import TERMINAL_STATES

__all__ = [
    "DEFAULT_POLL_EVERY_MS",
    "DEFAULT_TIMEOUT_MS",
    "TASK_INPUT_SCHEMA",
    "A2AError",
    "Agent",
    "AgentConfig",
    "AgentsConfig",
    "agent",
    "agent_tools",
    "is_enabled",
    "parse_agents_config",
]

# The published package's names for the same things (wire objects are plain JSON dicts).
DEFAULT_TIMEOUT = DEFAULT_TIMEOUT_MS
DEFAULT_POLL_EVERY = DEFAULT_POLL_EVERY_MS
TERMINAL = TERMINAL_STATES
AgentCard: TypeAlias = dict[str, Any]
A2ASkill: TypeAlias = dict[str, Any]
A2APart: TypeAlias = dict[str, Any]
A2AMessage: TypeAlias = dict[str, Any]
A2AArtifact: TypeAlias = dict[str, Any]
A2ATaskStatus: TypeAlias = dict[str, Any]
A2ATask: TypeAlias = dict[str, Any]
A2ATaskState: TypeAlias = str
__all__ += [
    "DEFAULT_POLL_EVERY",
    "DEFAULT_TIMEOUT",
    "TERMINAL",
    "A2AArtifact",
    "A2AMessage",
    "A2APart",
    "A2ASkill",
    "A2ATask",
    "A2ATaskState",
    "A2ATaskStatus",
    "AgentCard",
]
