"""`toolnexus tools`: every resolved tool with its source, and each MCP server's status."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from typing import TYPE_CHECKING, Any

from toolnexus.cli._common import (
    CliError,
    add_toolkit_flags,
    config_path,
    failed_servers,
    open_toolkit,
    run_async,
    server_failure_lines,
)

if TYPE_CHECKING:
    from toolnexus.toolkit import Toolkit

__all__ = ["add_parser", "run_tools"]

DESCRIPTION = """\
List every tool the toolkit resolves (MCP servers from --config or ./mcp.json, skills from
--skills, the built-ins unless --no-builtins) with its source, then each MCP server's status
and, for a failed one, the reason.
Exits 2 when an MCP server failed (after printing everything)."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "tools",
        help="list the resolved tools and the MCP servers' status",
        description=DESCRIPTION,
    )
    add_toolkit_flags(parser, skip_failed=False)
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of a table"
    )
    parser.set_defaults(handler=run_tools)
    return parser


def run_tools(args: argparse.Namespace) -> int:
    args.config = config_path(args)
    return run_async(_tools(args))


async def _tools(args: argparse.Namespace) -> int:
    toolkit = await open_toolkit(config=args.config, skills=args.skills, builtins=args.builtins)
    async with toolkit:
        if args.json:
            print(json.dumps(_as_json(toolkit), ensure_ascii=False, indent=2))
        else:
            _print_table(toolkit)
        failed = failed_servers(toolkit)
    if failed:
        raise CliError("; ".join(server_failure_lines(failed)))
    return 0


def _as_json(toolkit: Toolkit) -> dict[str, Any]:
    skills = toolkit.skill_source
    return {
        "tools": [
            {
                "name": t.name,
                "source": t.source,
                "description": t.description,
                "input_schema": t.input_schema,
            }
            for t in toolkit.tools()
        ],
        "mcp_servers": {
            name: {
                "status": state.status,
                "error": state.error,
                "transport": state.transport,
                "tool_count": state.tool_count,
            }
            for name, state in toolkit.mcp_servers().items()
        },
        "skills": [
            {"name": info.name, "description": info.description, "location": info.location}
            for info in (skills.skills.values() if skills is not None else ())
        ],
        "skipped_skills": [
            {"location": skip.location, "reason": skip.reason, "detail": skip.detail}
            for skip in (skills.skipped if skills is not None else ())
        ],
    }


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _print_table(toolkit: Toolkit) -> None:
    width = shutil.get_terminal_size((100, 24)).columns if sys.stdout.isatty() else 10_000
    tools = toolkit.tools()
    print(f"Tools ({len(tools)}):")
    if tools:
        name_w = max(len("NAME"), *(len(t.name) for t in tools))
        source_w = max(len("SOURCE"), *(len(t.source) for t in tools))
        print(f"  {'NAME':<{name_w}}  {'SOURCE':<{source_w}}  DESCRIPTION")
        room = width - name_w - source_w - 6
        for t in tools:
            line = f"  {t.name:<{name_w}}  {t.source:<{source_w}}  "
            print(line + _cut(_first_line(t.description), max(room, 20)))
    servers = toolkit.mcp_servers()
    if servers:
        print(f"\nMCP servers ({len(servers)}):")
        name_w = max(len(n) for n in servers)
        for name, state in servers.items():
            transport = state.transport or "-"
            if state.status == "connected":
                detail = f"{state.tool_count} tool{'s' if state.tool_count != 1 else ''}"
            elif state.status == "failed":
                detail = " ".join((state.error or "failed").split())
            elif state.status == "needs_auth":
                detail = f"sign in with: toolnexus auth {name}"
            else:
                detail = ""
            print(f"  {name:<{name_w}}  {state.status:<9}  {transport:<15}  {detail}".rstrip())
    skills = toolkit.skill_source
    if skills is not None:
        names = ", ".join(sorted(skills.skills)) or "none"
        print(f"\nSkills ({len(skills.skills)}): {names}")
        for skip in skills.skipped:
            print(f"  skipped {skip.location}: {skip.reason} {skip.detail}".rstrip())
