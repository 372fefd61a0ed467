"""What `toolnexus demo` runs on: files shipped inside the package, so it works offline anywhere.

- `skills/hello-world/`: a copy of the example skill (SKILL.md + scripts/greet.sh),
- `server.py`: a small MCP server written with the official SDK, started over stdio,
- `model.py`: the scripted in-process model and the demo's native tool.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SKILLS_DIR = HERE / "skills"
SERVER_SCRIPT = HERE / "server.py"
SERVER_NAME = "demo"


def mcp_config() -> dict[str, Any]:
    """The demo's `mcp.json` content: its own server, run by this very interpreter."""
    return {"mcpServers": {SERVER_NAME: {"command": sys.executable, "args": [str(SERVER_SCRIPT)]}}}
