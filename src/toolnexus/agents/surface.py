"""Defining and starting agents (the published `toolnexus.agents.surface` path): `agent`,
personas read from a folder, and long-lived agents with a heartbeat."""

from toolnexus.agents._agent import Agent, agent
from toolnexus.agents._constants import TASK_STATUS_ERROR
from toolnexus.agents._persona import (
    BOOTSTRAP_ORDER,
    HEARTBEAT_OK,
    HEARTBEAT_PROMPT,
    MAX_BOOTSTRAP_FILE_BYTES,
    StartedAgent,
    agent_from_dir,
    compose_soul,
    memory_tool,
    start_agent,
)

__all__ = [
    "BOOTSTRAP_ORDER",
    "HEARTBEAT_OK",
    "HEARTBEAT_PROMPT",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "TASK_STATUS_ERROR",
    "Agent",
    "StartedAgent",
    "agent",
    "agent_from_dir",
    "compose_soul",
    "memory_tool",
    "start_agent",
]
