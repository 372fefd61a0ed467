"""Profile the toolnexus request hot path: where this process's CPU goes, by package.

    python bench/hotpath.py [-n 300] [--top 25] [--filter src/toolnexus] [--dump FILE]
    python bench/hotpath.py --own [-n 3000]

Runs the `toolnexus` scenario (mock LLM in a child process, the stdio MCP server) under
cProfile with a CPU clock, then prints the self time summed per top-level package (toolnexus,
httpx2, httpcore2, h11, anyio, mcp, asyncio, ...) and the functions with the most self time.
Stdlib only on the harness side; no profiler to install.

`--own` measures toolnexus's own code alone: the same request (two model turns, two concurrent
tool calls) with the model answered in this process by a transport that returns the mock's two
replies ready-decoded, and the two tools as plain JSON-schema `Tool`s answering at once. No
HTTP, no MCP, no JSON: what is left is the loop, the endpoint, the dialect's body building and
reply parsing, hooks, events, metrics and dispatch. It prints the best of several rounds of CPU
per request (the minimum is the figure least disturbed by a shared machine), then the profile.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import _common as c


def package_of(filename: str) -> str:
    """`httpx2` for .../site-packages/httpx2/_client.py, `stdlib:asyncio` for the stdlib's;
    this repo's subpackages apart (`toolnexus.client`; its top-level modules are `toolnexus`)."""
    parts = Path(filename).parts
    for anchor in ("site-packages", "src"):
        if anchor in parts:
            rest = parts[parts.index(anchor) + 1 :]
            if len(rest) > 2 and rest[0] == "toolnexus":  # toolnexus.client, toolnexus.mcp_source
                return f"toolnexus.{rest[1]}"
            return rest[0].removesuffix(".py") if rest else filename
    for i, part in enumerate(parts):
        if part.startswith("python3") and i + 1 < len(parts):
            return "stdlib:" + parts[i + 1].removesuffix(".py")
    return Path(filename).stem


def self_time_by_package(stats: pstats.Stats) -> dict[str, float]:
    """Self time per package; a C builtin's time goes to the package of whoever called it."""
    totals: dict[str, float] = defaultdict(float)
    table = stats.stats  # type: ignore[attr-defined]
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, callers) in table.items():
        if filename == "~" and callers:
            for (caller_file, _l, _n), caller_stats in callers.items():
                totals[package_of(caller_file)] += caller_stats[2]
        else:
            totals[package_of(filename)] += tottime
    return totals


async def scenario(n: int) -> cProfile.Profile:
    from toolnexus import create_client, create_toolkit

    with c.MockLLMProcess() as base_url:
        toolkit = await create_toolkit(c.mcp_config(), builtins=False)
        try:
            client = create_client(base_url=base_url, style="openai", model="mock", api_key="x")
            for _ in range(c.WARMUP * 4):
                await client.run(c.PROMPT, toolkit)
            profile = cProfile.Profile(time.process_time)
            start = time.process_time()
            profile.enable()
            for _ in range(n):
                await client.run(c.PROMPT, toolkit)
            profile.disable()
            cpu = time.process_time() - start
        finally:
            await toolkit.close()
    print(f"{n} requests, {cpu * 1000 / n:.2f} ms CPU per request under cProfile\n")
    return profile


_TOOL_CALLS = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1_w",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        },
        {
            "id": "call_1_a",
            "type": "function",
            "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'},
        },
    ],
}
_ANSWER = {
    "role": "assistant",
    "content": "Here is what the tools said: sunny, 21 C in Paris | 4",
}


def _completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "mock",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 12, "total_tokens": 54},
    }


class _ScriptedModel:
    """A transport answering like the mock LLM, in this process and without any encoding."""

    transport_errors: tuple[type[BaseException], ...] = ()
    can_stream = False
    unwinds_promptly = True

    async def post(self, url: str, headers: Any, body: dict[str, Any]) -> tuple[int, Any, bytes]:
        if body["messages"][-1]["role"] == "tool":
            data = _completion(dict(_ANSWER), "stop")
        else:
            data = _completion(dict(_TOOL_CALLS), "tool_calls")
        return 200, data, b""

    async def open_stream(self, url: str, headers: Any, body: dict[str, Any]) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


def _own_tools() -> list[Any]:
    from toolnexus import Tool, ToolResult

    async def get_weather(args: dict[str, Any], ctx: Any) -> ToolResult:
        return ToolResult(f"sunny, 21 C in {args['city']}")

    async def add(args: dict[str, Any], ctx: Any) -> ToolResult:
        return ToolResult(str(args["a"] + args["b"]))

    weather_schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    add_schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    return [
        Tool("get_weather", "Current weather for a city.", weather_schema, "mcp", get_weather),
        Tool("add", "Add two integers.", add_schema, "mcp", add),
    ]


async def own_scenario(n: int, rounds: int) -> cProfile.Profile:
    from toolnexus import create_toolkit
    from toolnexus.client import Client

    toolkit = await create_toolkit(extra_tools=_own_tools(), builtins=False)
    client = Client._over(_ScriptedModel(), style="openai", model="mock", api_key="x")
    try:
        for _ in range(200):
            result = await client.run(c.PROMPT, toolkit)
        assert c.answer_ok(result.text), result.text
        best = float("inf")
        for _ in range(rounds):
            start = time.process_time()
            for _ in range(n):
                await client.run(c.PROMPT, toolkit)
            best = min(best, time.process_time() - start)
        profile = cProfile.Profile(time.process_time)
        profile.enable()
        for _ in range(n):
            await client.run(c.PROMPT, toolkit)
        profile.disable()
    finally:
        await toolkit.close()
    print(f"toolnexus's own code: {best * 1e6 / n:.1f} us CPU per request (best of {rounds})\n")
    return profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=300, help="profiled requests")
    parser.add_argument("--top", type=int, default=25, help="functions to list")
    parser.add_argument(
        "--filter", default="", help="list only functions whose file path contains this"
    )
    parser.add_argument("--dump", help="also save the raw profile here (for pstats/snakeviz)")
    parser.add_argument("--own", action="store_true", help="toolnexus's own code alone")
    parser.add_argument("--rounds", type=int, default=5, help="--own: timed rounds")
    args = parser.parse_args()
    if args.own:
        profile = asyncio.run(own_scenario(args.n, args.rounds))
    else:
        profile = asyncio.run(scenario(args.n))
    stats = pstats.Stats(profile)
    if args.dump:
        stats.dump_stats(args.dump)
    by_package = self_time_by_package(stats)
    total = sum(by_package.values())
    print("self CPU by package")
    for package, seconds in sorted(by_package.items(), key=lambda kv: -kv[1])[:20]:
        print(f"  {seconds / total:6.1%}  {seconds * 1000 / args.n:6.3f} ms/request  {package}")
    print()
    stats.sort_stats("tottime").print_stats(*filter(None, [args.filter]), args.top)


if __name__ == "__main__":
    sys.exit(main())
