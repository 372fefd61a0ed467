"""`toolnexus`: the scenario through `create_toolkit` + `create_client(...).run`.

Run with the repo's interpreter it measures this repo (`toolnexus`, or `toolnexus_skill` with
`--skill`: a skill folder and a native tool join the MCP server). Run with the peer virtualenv's
interpreter and `--name toolnexus_pypi` it measures the published package, which has the same
core API. Built-ins are off so every framework declares the same three MCP tools.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c

SKILL_MD = """---
name: weather-report
description: How to write a short weather report for a city.
---
Call the weather tool, then answer in one sentence.
"""


def _write_skill(root: str) -> str:
    folder = Path(root) / "weather-report"
    folder.mkdir()
    (folder / "SKILL.md").write_text(SKILL_MD)
    return root


def parse_args() -> argparse.Namespace:
    parser = c.runner_parser(__doc__ or "")
    parser.add_argument("--name", default=None, help="row name (default toolnexus[_skill])")
    parser.add_argument("--skill", action="store_true", help="add a skill and a native tool")
    parser.add_argument(
        "--mcp-protocol",
        choices=("legacy", "2026-07-28"),
        help="pin the MCP server's era (default: negotiated, 2026-07-28 with this SDK; the"
        " floor's bare ClientSession speaks legacy)",
    )
    args = parser.parse_args()
    args.name = args.name or ("toolnexus_skill" if args.skill else "toolnexus")
    return args


async def main(args: argparse.Namespace) -> dict[str, Any]:
    name = args.name

    import toolnexus
    from toolnexus import create_client, create_toolkit

    extra: dict[str, Any] = {}
    if args.skill:
        from toolnexus import define_tool

        def shout(text: str) -> str:
            """Upper-case the text."""
            return text.upper()

        skills = tempfile.TemporaryDirectory(prefix="bench-skills-")
        extra = {"skills_dir": _write_skill(skills.name), "extra_tools": [define_tool(shout)]}

    config = c.mcp_config()
    if args.mcp_protocol:
        for server in config["mcpServers"].values():
            server["protocol"] = args.mcp_protocol
    with c.mock_llm(args.base_url) as base_url:
        toolkit = await create_toolkit(config, builtins=False, **extra)
        try:
            client = create_client(base_url=base_url, style="openai", model="mock", api_key="bench")
            init_ms = c.since_start_ms()
            status = toolkit.mcp_status()
            if status.get(c.SERVER_NAME) != "connected":
                return c.failed_row(name, f"MCP server not connected: {status}")

            async def request() -> str:
                result = await client.run(c.PROMPT, toolkit)
                return str(result.text)

            measured = await c.measure_requests(request, n=args.n, warmup=args.warmup)
        finally:
            await toolkit.close()
    return c.request_row(
        name,
        init_ms,
        measured,
        version=getattr(toolnexus, "__version__", None) or c.distribution_version("toolnexus"),
        tools=len(toolkit.tools()),
        mcp_protocol=_protocol(toolkit),
    )


def _protocol(toolkit: Any) -> str | None:
    """The MCP era the toolkit negotiated; the published package has no `mcp_servers()` and
    speaks what its mcp 1.x SDK offers first (`LATEST_PROTOCOL_VERSION`)."""
    servers = getattr(toolkit, "mcp_servers", None)
    if servers is not None:
        return str(servers()[c.SERVER_NAME].protocol)
    try:
        from mcp.types import LATEST_PROTOCOL_VERSION
    except ImportError:
        return None
    return str(LATEST_PROTOCOL_VERSION)


if __name__ == "__main__":
    ARGS = parse_args()
    c.guarded(ARGS.name, lambda: main(ARGS))
