"""Run readers of the library against a gzip bomb (`support.bomb_server`); print JSON lines
`{"case", "error": <what the reader reported>, "grew_kib": <peak RSS growth>}`.

    python -m support.bomb_reader <bomb server URL> <case>,<case>,...

Each case runs in a child forked once everything is imported; its peak RSS (`ru_maxrss`) is
taken before and after the read: the growth is what the read cost at most.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
from collections.abc import Callable, Coroutine
from typing import Any

LIMIT = 4 * 1024 * 1024  # the limit the test sets for the model client (and in the environment)
# Below the MCP SDK's own 1 MiB cap on one event, so that the library's bound is what trips.
MCP_LIMIT = 512 * 1024


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def _http_tool(url: str) -> str:
    from toolnexus import http_tool
    from toolnexus.types import ToolContext

    tool = http_tool(name="bomb", description="d", method="GET", url=f"{url}/json/x")
    result = await tool.execute({}, ToolContext())
    assert result.is_error, result.output[:200]
    return result.output


async def _openapi(url: str) -> str:
    from toolnexus.errors import ConfigError
    from toolnexus.openapi import http_tools_from_openapi

    try:
        await http_tools_from_openapi(f"{url}/json/openapi.json")
    except ConfigError as exc:
        return str(exc)
    raise AssertionError("the spec loaded")


async def _a2a_card(url: str) -> str:
    from toolnexus.a2a import agent, agent_tools

    try:
        await agent_tools(agent(f"{url}/json/.well-known/agent-card.json"))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError("the card loaded")


async def _a2a_answer(url: str) -> str:
    from toolnexus.a2a import agent, agent_tools
    from toolnexus.types import ToolContext

    (tool,) = await agent_tools(agent(f"{url}/card/.well-known/agent-card.json", streaming=False))
    result = await tool.execute({"task": "hi"}, ToolContext())
    assert result.is_error, result.output[:200]
    return result.output


async def _mcp(url: str) -> str:
    from toolnexus import create_toolkit

    limit = MCP_LIMIT
    config = {"mcpServers": {"bomb": {"url": url, "maxMessageBytes": limit, "timeout": 30000}}}
    toolkit = await create_toolkit(config, builtins=False)
    async with toolkit:
        state = toolkit._mcp_source().servers["bomb"]
        assert state.status == "failed", state
        return str(state.error)


async def _model(url: str, stream: bool) -> str:
    from toolnexus import create_client
    from toolnexus.errors import ProviderError

    client = create_client(
        base_url=f"{url}/v1",
        style="openai",
        model="m",
        api_key="k",
        retries=0,
        max_response_bytes=LIMIT,
    )
    try:
        if stream:
            async for _ in client.stream("hi"):
                pass
        else:
            await client.run("hi")
    except ProviderError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        await client.aclose()
    raise AssertionError("the reply was read")


CASES: dict[str, Callable[[str], Coroutine[Any, Any, str]]] = {
    "http_tool": _http_tool,
    "openapi": _openapi,
    "a2a_card": _a2a_card,
    "a2a_answer": _a2a_answer,
    "mcp_json": lambda url: _mcp(f"{url}/json/mcp"),
    "mcp_sse": lambda url: _mcp(f"{url}/sse/mcp"),
    "model": lambda url: _model(f"{url}/json", False),
    "model_stream": lambda url: _model(f"{url}/sse", True),
}


def _run(case: str, url: str) -> dict[str, object]:
    before = _peak_kib()
    try:
        error: str = asyncio.run(CASES[case](url))
    except BaseException as exc:  # reported to the test, which fails on it
        error = f"reader failed: {type(exc).__name__}: {exc}"
    return {"case": case, "error": error, "grew_kib": _peak_kib() - before}


def main(url: str, cases: list[str]) -> None:
    """Run each case in a child forked from this process (imports paid once), one JSON line
    each."""
    # Everything the readers import, imported before any baseline.
    import httpx2  # noqa: F401
    import mcp.client.streamable_http  # noqa: F401

    import toolnexus.a2a
    import toolnexus.client
    import toolnexus.mcp_source
    import toolnexus.openapi  # noqa: F401

    for case in cases:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            print(json.dumps(_run(case, url)), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(","))
