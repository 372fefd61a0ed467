"""`toolnexus demo`: every tool source working through the real loop, offline, in a few seconds."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from toolnexus.cli._common import (
    CliError,
    failed_servers,
    open_toolkit,
    run_async,
    server_failure_lines,
)
from toolnexus.cli._render import Printer

if TYPE_CHECKING:
    from toolnexus.toolkit import Toolkit

__all__ = ["add_parser", "run_demo"]

DESCRIPTION = """\
Run a scripted model through the real tool-calling loop on embedded defaults: the bundled
hello-world skill, a small MCP server shipped in the package (started over stdio), a native
Python tool and the built-ins. Prints each step: the tool, its source, the arguments, the result
and the final answer. Needs no network and no API key."""

_SOURCE_NOTES = {
    "mcp": 'tools of the MCP server "{server}", a subprocess spoken to over stdio',
    "skill": "loads skills on demand: {skills}",
    "builtin": "the ten built-ins",
    "native": "plain Python functions",
}


def add_parser(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "demo",
        help="see every tool source work, offline, with a scripted model",
        description=DESCRIPTION,
    )
    parser.set_defaults(handler=run_demo)
    return parser


def run_demo(args: argparse.Namespace) -> int:
    return run_async(_demo())


async def _demo() -> int:
    from toolnexus import _demo as data
    from toolnexus._demo.model import PROMPT, ScriptedModel, word_count
    from toolnexus.client import create_in_process_client
    from toolnexus.native import define_tool

    started = time.perf_counter()
    printer = Printer(out=sys.stdout, err=sys.stdout, result_lines=4)
    printer.note(printer.bold("toolnexus demo") + ": one toolkit, every tool source, one loop.")
    printer.note(
        printer.dim("A scripted in-process model stands in for an LLM: no network, no key.\n")
    )

    toolkit = await open_toolkit(
        config=data.mcp_config(),
        skills=[str(data.SKILLS_DIR)],
        builtins=None,
        extra_tools=[define_tool(word_count)],
    )
    async with toolkit:
        failed = failed_servers(toolkit)
        if failed:
            raise CliError("; ".join(server_failure_lines(failed)))
        _print_toolkit(printer, toolkit, data.SERVER_NAME)

        failures: list[str] = []

        def before_llm(info: dict[str, Any]) -> None:
            printer.note(printer.dim(f"model turn {info['turn'] + 1}"))

        def before_tool(info: dict[str, Any]) -> None:
            found = toolkit.get(info["name"])
            printer.tool_call(info["name"], found.source if found else None, info["args"])

        def after_tool(info: dict[str, Any]) -> None:
            result = info["result"]
            printer.tool_result(info["name"], result.output, result.is_error)
            if result.is_error:
                failures.append(info["name"])

        client = create_in_process_client(
            model="demo",
            generate=ScriptedModel(mcp_prefix=f"{data.SERVER_NAME}_"),
            hooks={"before_llm": before_llm, "before_tool": before_tool, "after_tool": after_tool},
        )
        printer.note(f"{printer.bold('User:')} {PROMPT}")
        result = await client.run(PROMPT, toolkit)
        printer.note(f"\n{printer.bold('Answer:')} {result.text}")
        sources = sorted(
            {
                t.source
                for t in toolkit.tools()
                if any(c["name"] == t.name for c in result.tool_calls)
            }
        )
    elapsed = time.perf_counter() - started
    printer.note(
        printer.dim(
            f"\n{result.tool_call_count} tool calls from {len(sources)} sources "
            f"({', '.join(sources)}) in {result.turns} model turns, {elapsed:.1f} s; "
            "the MCP server has been shut down."
        )
    )
    if failures or result.status != "done":
        what = ", ".join(failures) if failures else f"the run ended {result.status}"
        printer.note(f"toolnexus: demo: a step failed: {what}")
        return 1
    printer.note(
        printer.dim(
            "Next: `toolnexus tools --config mcp.json --skills DIR` lists your own tools; "
            "`toolnexus run --help` talks to a real model."
        )
    )
    return 0


def _print_toolkit(printer: Printer, toolkit: Toolkit, server: str) -> None:
    by_source: dict[str, list[str]] = {}
    for t in toolkit.tools():
        by_source.setdefault(t.source, []).append(t.name)
    skills = toolkit.skill_source
    skill_names = ", ".join(sorted(skills.skills)) if skills is not None else "none"
    printer.note(
        f"{printer.bold('Toolkit:')} {len(toolkit.tools())} tools from {len(by_source)} sources"
    )
    width = max(len(s) for s in by_source)
    for source, names in by_source.items():
        note = _SOURCE_NOTES.get(source, "").format(server=server, skills=skill_names)
        printer.note(
            f"  {source:<{width}}  {', '.join(names)}"
            + (printer.dim(f"  ({note})") if note else "")
        )
    printer.note("")
