"""The MCP server profile under the module name the published package uses
(`toolnexus.mcp_serve`). The code lives in `toolnexus.serve`; this module hands out the same
objects. Importing it loads the MCP SDK.
"""

from __future__ import annotations

from mcp_types import INVALID_PARAMS

from toolnexus.serve._mcp._profile import (
    DEFAULT_NAME,
    DEFAULT_VERSION,
    MCPServeConfig,
    OnCall,
    build_mcp_server,
    exposed_mcp_tools,
)

__all__ = [
    "DEFAULT_NAME",
    "DEFAULT_VERSION",
    "INVALID_PARAMS",
    "MCPServeConfig",
    "OnCall",
    "build_mcp_server",
    "exposed_mcp_tools",
]
