"""How fast `Toolkit.search_tools` is: building the BM25 index over 2,000 tools, then a query.

    python bench/tool_search.py            # 2,000 tools, 7 rounds, median figures
    python bench/tool_search.py -n 500 --rounds 3

The tools are varied (40 verbs x 50 nouns, a described parameter each), like a large MCP
toolkit. The first search of a process also imports `bm25s` and numpy: reported apart. Goals:
build <= 50 ms, query <= 1 ms. Also reported: the bytes of the tool declarations of a run's
first request over 300 tools of which 2 are eager, `tool_search="local"` against declaring
every tool (chat completions; with "native" every definition is still sent, the provider
keeps the deferred ones out of the model's context).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from toolnexus import Toolkit
from toolnexus.types import Tool, ToolContext

VERBS = [
    "get",
    "list",
    "create",
    "update",
    "delete",
    "search",
    "read",
    "write",
    "send",
    "fetch",
    "sync",
    "archive",
    "restore",
    "export",
    "import",
    "move",
    "copy",
    "rename",
    "share",
    "lock",
    "unlock",
    "approve",
    "reject",
    "merge",
    "close",
    "open",
    "start",
    "stop",
    "schedule",
    "cancel",
    "publish",
    "tag",
    "untag",
    "assign",
    "watch",
    "summarize",
    "translate",
    "convert",
    "scan",
    "index",
]
NOUNS = [
    "file",
    "folder",
    "issue",
    "ticket",
    "email",
    "message",
    "calendar",
    "event",
    "contact",
    "invoice",
    "payment",
    "order",
    "customer",
    "user",
    "group",
    "role",
    "permission",
    "repository",
    "branch",
    "commit",
    "release",
    "deployment",
    "server",
    "container",
    "volume",
    "secret",
    "token",
    "report",
    "dashboard",
    "chart",
    "table",
    "row",
    "column",
    "document",
    "page",
    "comment",
    "note",
    "task",
    "project",
    "sprint",
    "label",
    "alert",
    "incident",
    "metric",
    "log",
    "trace",
]
QUERIES = ["send an email to a customer", "restore an archived invoice", "weather in Paris"]


async def _run(args: dict[str, Any], ctx: ToolContext) -> str:
    return "ok"


def tools(count: int) -> list[Tool]:
    made = []
    for i in range(count):
        verb, noun = VERBS[i % len(VERBS)], NOUNS[(i // len(VERBS)) % len(NOUNS)]
        schema = {
            "type": "object",
            "properties": {f"{noun}_id": {"type": "string", "description": f"Which {noun}"}},
        }
        made.append(
            Tool(
                f"srv{i // 400}_{verb}_{noun}",
                f"{verb.capitalize()} a {noun} in workspace {i % 13}.",
                schema,
                execute=_run,
                defer_loading=True,
            )
        )
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="tools in the toolkit")
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    made = tools(options.n)
    started = time.perf_counter()
    Toolkit(builtins=False, extra_tools=made).search_tools("warm up")
    first = time.perf_counter() - started
    builds, build_cpu, queries = [], [], []
    for _ in range(options.rounds):
        toolkit = Toolkit(builtins=False, extra_tools=made)
        started, cpu = time.perf_counter(), time.process_time()
        toolkit.search_tools("")  # builds the index
        builds.append(time.perf_counter() - started)
        build_cpu.append(time.process_time() - cpu)
        for query in QUERIES * 10:
            started = time.perf_counter()
            toolkit.search_tools(query)
            queries.append(time.perf_counter() - started)
    print(f"tools: {options.n}")
    print(f"first search (imports bm25s + numpy, builds): {first * 1000:.1f} ms")
    print(
        f"build, median of {options.rounds}: {statistics.median(builds) * 1000:.1f} ms "
        f"(CPU {statistics.median(build_cpu) * 1000:.1f} ms)"
    )
    print(f"query, median of {len(queries)}: {statistics.median(queries) * 1000:.3f} ms")
    print_bytes()


def print_bytes() -> None:
    from toolnexus.client._tool_search import LocalSearch

    made = tools(300)
    for eager in made[:2]:
        eager.defer_loading = False
    toolkit = Toolkit(builtins=False, extra_tools=made)
    every = len(json.dumps(toolkit.to_openai()))
    local = len(json.dumps(LocalSearch(toolkit, None).declared().to_openai()))
    print(f"first request, 300 tools (2 eager): every tool {every} bytes, local search {local}")
    print(f"  ratio {local / every:.1%}")


if __name__ == "__main__":
    main()
