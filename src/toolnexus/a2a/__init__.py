"""Remote A2A agents as tools (one tool per advertised skill), in A2A 1.0, 0.3 or legacy form."""

from toolnexus.a2a._outbound import (
    DEFAULT_POLL_EVERY_MS,
    DEFAULT_TIMEOUT_MS,
    TASK_INPUT_SCHEMA,
    A2AError,
    Agent,
    agent,
    agent_tools,
    parse_agents_config,
)

__all__ = [
    "DEFAULT_POLL_EVERY_MS",
    "DEFAULT_TIMEOUT_MS",
    "TASK_INPUT_SCHEMA",
    "A2AError",
    "Agent",
    "agent",
    "agent_tools",
    "parse_agents_config",
]
