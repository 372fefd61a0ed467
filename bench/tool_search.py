"""Tool search, measured: index build and query time, search quality, and what deferring saves
on each wire.

    python bench/tool_search.py            # everything; 2,000 tools, 7 rounds, median figures
    python bench/tool_search.py -n 500 --rounds 3

1. Speed: building the BM25 index over `-n` varied tools (40 verbs x 50 nouns, a described
   parameter each, like a large MCP toolkit), then a query. The first search of a process also
   imports `bm25s` and numpy: reported apart. Goals: build <= 50 ms, query <= 1 ms.
2. Quality: recall@5 of `Toolkit.search_tools` over the 314 tools of 21 real MCP servers
   (`tests/fixtures/tool_search/mcp_tools.json`) for the 126 labelled requests beside it.
   Goal: >= 0.9.
3. Per wire (chat completions, Responses, Anthropic): those 314 tools deferred plus two eager
   native tools, a scripted model asked to open a GitHub issue and post it to Slack (two of the
   deferred tools). Reported per `tool_search` setting: model turns to finish, the bytes of the
   tool declarations in the first request (all of them, and those the model is shown: with
   "native" the provider keeps the deferred definitions out of the model's context) and the
   bytes of all the run's requests. Goals: declarations <= 10 % of eager, at most one more turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from toolnexus import Toolkit, define_tool
from toolnexus.testing import FunctionModel, ScriptedTurn, SeenRequest, text, tool_call, tools
from toolnexus.types import Tool, ToolContext, ToolResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.tool_search_fixture import labelled_requests, real_mcp_tools, recall_at_5

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


def varied_tools(count: int) -> list[Tool]:
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
    made = varied_tools(options.n)
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
        f"(CPU {statistics.median(build_cpu) * 1000:.1f} ms, least {min(build_cpu) * 1000:.1f} ms)"
    )
    print(f"query, median of {len(queries)}: {statistics.median(queries) * 1000:.3f} ms")
    print_recall()
    print_wires()


async def _answer(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return ToolResult(f"done: {json.dumps(args)}")


def real_tools() -> list[Tool]:
    return real_mcp_tools(_answer)


def print_recall() -> None:
    toolkit = Toolkit(builtins=False, extra_tools=real_tools())
    labelled = labelled_requests()
    print(
        f"recall@5 over {len(labelled)} labelled requests, {len(toolkit.tools())} real MCP "
        f"tools: {recall_at_5(toolkit, labelled):.3f}"
    )


NEEDED = {
    "github_create_issue": {"owner": "acme", "repo": "shop", "title": "Login fails"},
    "slack_slack_post_message": {"channel_id": "C042", "text": "Filed: Login fails"},
}
SEARCHES = ["create an issue in a GitHub repository", "post a message to a Slack channel"]
PROMPT = "Open a GitHub issue about the failing login and post it in our #dev Slack channel."
# What OpenAI Responses' hosted tool search puts in its output before calling the tools.
RESPONSES_SEARCH = [
    {
        "type": "tool_search_call",
        "id": "tsc_1",
        "call_id": None,
        "execution": "server",
        "arguments": {"query": " ".join(SEARCHES)},
        "status": "completed",
    },
    {
        "type": "tool_search_output",
        "id": "tso_1",
        "call_id": None,
        "execution": "server",
        "status": "completed",
        "tools": [{"type": "function", "name": name, "defer_loading": True} for name in NEEDED],
    },
]


def _declared(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(body.get("tools") or ())


def _name(declaration: dict[str, Any]) -> str:
    return str(declaration.get("function", declaration).get("name") or declaration["type"])


def _scripted(style: str, mode: str | None) -> FunctionModel:
    """Calls the two tools once declared, searches for them when `search_tools` is, then
    answers: the turns follow what the requests really declare."""

    def generate(request: SeenRequest) -> ScriptedTurn:
        sent, names = json.dumps(request.body), {_name(d) for d in _declared(request.body)}
        if sent.count("done: ") >= len(NEEDED):
            return text("Filed the issue and posted it to #dev.")
        if set(NEEDED) <= names:
            calls = [tool_call(name, args) for name, args in NEEDED.items()]
            native_responses = mode == "native" and style == "openai-responses"
            return tools(*calls, reasoning=RESPONSES_SEARCH if native_responses else ())
        if "Tools now callable" in sent:
            raise AssertionError(f"the searches did not find {sorted(set(NEEDED) - names)}")
        if "search_tools" in names:
            return tools(*[tool_call("search_tools", {"query": q}) for q in SEARCHES])
        raise AssertionError(f"neither the tools nor search_tools declared: {sorted(names)}")

    return FunctionModel(generate)


@define_tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@define_tool
def now() -> str:
    """The current date and time (UTC)."""
    return "2026-12-02T08:00:00Z"


async def _wire_row(style: str, mode: str | None) -> dict[str, Any]:
    model = _scripted(style, mode)
    toolkit = Toolkit(builtins=False, extra_tools=[add, now, *real_tools()])
    result = await model.client(style, tool_search=mode).run(PROMPT, toolkit)
    assert result.status == "done", result.status
    first = _declared(model.requests[0].body)
    shown = [d for d in first if not d.get("defer_loading")]
    return {
        "turns": len(model.requests),
        "declared": len(json.dumps(first)),
        "shown": len(json.dumps(shown)),
        "requests": sum(len(json.dumps(r.body)) for r in model.requests),
    }


def print_wires() -> None:
    print("per wire, 316 tools (314 real MCP tools deferred, 2 native eager), a model needing 2:")
    print(
        f"  {'wire':<17}{'tool_search':<12}{'turns':>6}{'declared':>10}{'shown':>9}"
        f"{'shown/eager':>12}{'all requests':>14}"
    )
    for style in ("openai", "openai-responses", "anthropic"):
        modes: list[str | None] = [None, "local"] + ([] if style == "openai" else ["native"])
        eager = 0
        for mode in modes:
            row = asyncio.run(_wire_row(style, mode))
            eager = eager or row["shown"]
            print(
                f"  {style:<17}{mode or 'None (eager)':<12}{row['turns']:>6}{row['declared']:>10}"
                f"{row['shown']:>9}{row['shown'] / eager:>12.1%}{row['requests']:>14}"
            )


if __name__ == "__main__":
    main()
