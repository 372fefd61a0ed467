"""Run under FastMCP 4.2 (the `.venv-fastmcp` virtualenv): a FastMCP server serving one skill
natively (`SkillCatalogProvider`, Skills extension) over streamable HTTP on 127.0.0.1.

Prints its MCP URL on the first line, then serves until killed.
"""

from __future__ import annotations

import socket
import sys

from fastmcp import FastMCP, Skill
from fastmcp.skills.provider import SkillCatalogProvider

RELEASE_NOTES = Skill(
    name="release-notes",
    description="Write release notes from merged pull requests.",
    instructions="# Release notes\n\nGroup changes by theme; follow template.md.\n",
    files={"template.md": "## Highlights\n\n## Fixes\n"},
)


def main() -> None:
    mcp = FastMCP("team-skills")
    mcp.add_provider(SkillCatalogProvider([RELEASE_NOTES]))

    @mcp.tool
    def ping() -> str:
        """Answers pong."""
        return "pong"

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    print(f"http://127.0.0.1:{port}/mcp", flush=True)
    mcp.run(transport="http", host="127.0.0.1", port=port, show_banner=False, log_level="WARNING")


if __name__ == "__main__":
    sys.exit(main())
