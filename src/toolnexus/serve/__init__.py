"""Serving a toolkit: an MCP server (HTTP or stdio) and/or an A2A agent over one HTTP server.

`await toolkit.serve("127.0.0.1:8080", mcp={})` is the usual entry point; this module is the
face of the implementation (`_host.py`, `_mcp/`, `_a2a/`) and its building blocks
(`build_mcp_server`, `build_agent_card`, task stores).
"""

from __future__ import annotations

# Not in `__all__`, importable here as before: the served-toolkit shape, the client over
# `run_task` and `Tool`.
from toolnexus._served import Served as Served
from toolnexus._served import ToolList as ToolList
from toolnexus.serve._a2a._card import build_agent_card
from toolnexus.serve._a2a._endpoint import A2AConfig
from toolnexus.serve._a2a._run_task import RunTask
from toolnexus.serve._a2a._run_task import RunTaskClient as RunTaskClient
from toolnexus.serve._a2a._shared_tasks import PostgresTaskStore, RedisTaskStore
from toolnexus.serve._a2a._stores import resolve_store
from toolnexus.serve._a2a._tasks import FileTaskStore, InMemoryTaskStore, TaskStore
from toolnexus.serve._app import MAX_BODY_BYTES, ServeHandle, ServeLimits
from toolnexus.serve._auth import ResourceAuth
from toolnexus.serve._host import (
    CARD_PATH,
    OnTask,
    serve_toolkit,
    serve_toolkit_stdio,
    start_a2a_server,
)
from toolnexus.serve._mcp._profile import (
    DEFAULT_VERSION,
    MCPServeConfig,
    OnCall,
    build_mcp_server,
    exposed_mcp_tools,
)
from toolnexus.types import Tool as Tool

__all__ = [
    "CARD_PATH",
    "DEFAULT_VERSION",
    "MAX_BODY_BYTES",
    "A2AConfig",
    "FileTaskStore",
    "InMemoryTaskStore",
    "MCPServeConfig",
    "OnCall",
    "OnTask",
    "PostgresTaskStore",
    "RedisTaskStore",
    "ResourceAuth",
    "RunTask",
    "ServeHandle",
    "ServeLimits",
    "TaskStore",
    "build_agent_card",
    "build_mcp_server",
    "exposed_mcp_tools",
    "resolve_store",
    "serve_toolkit",
    "serve_toolkit_stdio",
    "start_a2a_server",
]
