"""MCP servers as a tool source: config parsing, loading, execute, inventory.

Importing this package is light; the MCP SDK loads when the first server connects.
"""

from __future__ import annotations

from toolnexus._config import McpConfig, ServerConfig
from toolnexus._env import expand_env_headers
from toolnexus.mcp_source._config import DEFAULT_TIMEOUT, is_enabled, is_remote
from toolnexus.mcp_source._elicitation import answer_to_elicit_result, elicitation_to_request
from toolnexus.mcp_source._load import (
    list_mcp_tools,
    load_mcp,
    load_mcp_with_context,
    parse_mcp_config,
)
from toolnexus.mcp_source._server import apply_tools_filter
from toolnexus.mcp_source._source import McpSource
from toolnexus.mcp_source._state import (
    McpInventory,
    McpPrompt,
    McpPromptResult,
    McpResource,
    McpResourceTemplate,
    McpServerState,
    ToolInfo,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "McpConfig",
    "McpInventory",
    "McpPrompt",
    "McpPromptResult",
    "McpResource",
    "McpResourceTemplate",
    "McpServerState",
    "McpSource",
    "ServerConfig",
    "ToolInfo",
    "answer_to_elicit_result",
    "apply_tools_filter",
    "elicitation_to_request",
    "expand_env_headers",
    "is_enabled",
    "is_remote",
    "list_mcp_tools",
    "load_mcp",
    "load_mcp_with_context",
    "parse_mcp_config",
]
