"""Capture the `tools/list` of real MCP servers from npm into the tool-search fixture.

    npm install --prefix /tmp/mcpcap --ignore-scripts <the packages in SERVERS>
    python bench/tool_search_capture.py /tmp/mcpcap > tests/fixtures/tool_search/mcp_tools.json

Each server is started over stdio from that `node_modules` and asked `tools/list` (placeholder
credentials where a server refuses to start without one: listing tools calls no
remote API) and its tools are written as listed (`name`, `title`, `description`,
`inputSchema`, `annotations`), with the package and version they came from. The fixture is
committed; this script is only needed to refresh it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# package -> (the server's name in an mcp.json, extra arguments, environment it needs to start)
SERVERS: dict[str, tuple[str, list[str], dict[str, str]]] = {
    "@modelcontextprotocol/server-everything": ("everything", ["stdio"], {}),
    "@modelcontextprotocol/server-filesystem": ("filesystem", ["/tmp"], {}),
    "@modelcontextprotocol/server-memory": (
        "memory",
        [],
        {"MEMORY_FILE_PATH": "/tmp/mcpcap-memory.json"},
    ),
    "@modelcontextprotocol/server-sequential-thinking": ("thinking", [], {}),
    "@modelcontextprotocol/server-github": (
        "github",
        [],
        {"GITHUB_PERSONAL_ACCESS_TOKEN": "placeholder"},
    ),
    "@modelcontextprotocol/server-gitlab": (
        "gitlab",
        [],
        {"GITLAB_PERSONAL_ACCESS_TOKEN": "placeholder"},
    ),
    "@modelcontextprotocol/server-slack": (
        "slack",
        [],
        {"SLACK_BOT_TOKEN": "placeholder", "SLACK_TEAM_ID": "placeholder"},
    ),
    "@modelcontextprotocol/server-google-maps": ("maps", [], {"GOOGLE_MAPS_API_KEY": "x"}),
    "@modelcontextprotocol/server-brave-search": ("brave", [], {"BRAVE_API_KEY": "placeholder"}),
    # it lists its tools only once connected: `redis-server --port 6391` first
    "@modelcontextprotocol/server-redis": ("redis", ["redis://127.0.0.1:6391"], {}),
    "@modelcontextprotocol/server-puppeteer": ("puppeteer", [], {}),
    "@playwright/mcp": ("playwright", [], {}),
    "@notionhq/notion-mcp-server": ("notion", [], {"NOTION_TOKEN": "placeholder"}),
    "mcp-server-kubernetes": ("kubernetes", [], {}),
    "@wonderwhy-er/desktop-commander": ("desktop", [], {}),
    "@cyanheads/git-mcp-server": ("git", [], {}),
    "firecrawl-mcp": ("firecrawl", [], {"FIRECRAWL_API_KEY": "fc-placeholder"}),
    "tavily-mcp": ("tavily", [], {"TAVILY_API_KEY": "placeholder"}),
    "@upstash/context7-mcp": ("context7", [], {}),
    "@executeautomation/playwright-mcp-server": ("browser", [], {}),
    "@sentry/mcp-server": ("sentry", [], {"SENTRY_ACCESS_TOKEN": "placeholder"}),
}
KEPT = ("name", "title", "description", "inputSchema", "annotations")


def _bin(root: Path, package: str) -> Path:
    meta = json.loads((root / "node_modules" / package / "package.json").read_text())
    found = meta.get("bin")
    script = found if isinstance(found, str) else next(iter(found.values()))
    return root / "node_modules" / package / script


async def _capture(root: Path, package: str) -> dict[str, Any]:
    # Plain JSON-RPC lines over the child's stdio rather than the SDK client: the SDK's client
    # rejects some real servers' lists (an `inputSchema` without `"type"`), and the fixture
    # must hold them as the servers send them.
    server, extra, env = SERVERS[package]
    meta = json.loads((root / "node_modules" / package / "package.json").read_text())
    child = await asyncio.create_subprocess_exec(
        "node",
        str(_bin(root, package)),
        *extra,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", **env},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=2**24,
    )
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    async def ask(ident: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
        stdin.write(json.dumps(message).encode() + b"\n")
        while True:
            line = await stdout.readline()
            if not line:
                raise RuntimeError(f"{package} closed its stdout")
            try:
                answer = json.loads(line)
            except ValueError:
                continue  # a log line on stdout
            if answer.get("id") == ident:
                if "error" in answer:
                    raise RuntimeError(f"{package}: {answer['error']}")
                return answer["result"]  # type: ignore[no-any-return]

    try:
        client = {"name": "toolnexus-capture", "version": "1"}
        await ask(
            1,
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client},
        )
        stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for page in range(2, 50):
            listed = await ask(page, "tools/list", {"cursor": cursor} if cursor else {})
            tools += [{k: t[k] for k in KEPT if k in t} for t in listed["tools"]]
            cursor = listed.get("nextCursor")
            if not cursor:
                break
    finally:
        if child.returncode is None:
            child.kill()
        await child.wait()
    return {"server": server, "package": package, "version": meta["version"], "tools": tools}


async def main() -> None:
    root = Path(sys.argv[1])
    servers = []
    for package in SERVERS:
        try:
            servers.append(await asyncio.wait_for(_capture(root, package), 60))
        except Exception as exc:  # report and go on: one server's failure is not the fixture's
            print(f"{package}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        print(f"{package}: {len(servers[-1]['tools'])} tools", file=sys.stderr)
    fixture = {
        "about": "tools/list of real MCP servers from npm (bench/tool_search_capture.py)",
        "captured": datetime.now(UTC).strftime("%Y-%m-%d"),
        "servers": servers,
    }
    json.dump(fixture, sys.stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    asyncio.run(main())
