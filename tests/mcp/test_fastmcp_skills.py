"""Skills over MCP against FastMCP 4.2, which serves and reads skills natively. FastMCP cannot
share this environment's `mcp` pins, so its side runs in the Python named by
`TOOLNEXUS_FASTMCP_PYTHON` (`make test` builds and caches `.venv-fastmcp` from
`tests/support/fastmcp/requirements.txt`); without it these tests skip, and fail under
`TOOLNEXUS_REQUIRE_ALL=1`.

A FastMCP server's skill is loaded through the `skill` tool; FastMCP's client, as a caller of
the gateway serving that toolkit, lists the skill and reads every file, verified against the
gateway's digests and frontmatter."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
import pytest_asyncio

from support.polling import wait_until
from support.requires import missing
from toolnexus import create_toolkit
from toolnexus.toolkit import Toolkit

PYTHON = os.environ.get("TOOLNEXUS_FASTMCP_PYTHON", "")
SCRIPTS = Path(__file__).resolve().parents[1] / "support" / "fastmcp"
INSTRUCTIONS = "# Release notes\n\nGroup changes by theme; follow template.md.\n"
TEMPLATE = "## Highlights\n\n## Fixes\n"
DESCRIPTION = "Write release notes from merged pull requests."


@pytest.fixture(autouse=True)
def _fastmcp_python() -> None:
    if not PYTHON:
        missing("FastMCP 4.2 Python (TOOLNEXUS_FASTMCP_PYTHON)", "make test builds .venv-fastmcp")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def fastmcp_url() -> AsyncIterator[str]:
    if not PYTHON:
        missing("FastMCP 4.2 Python (TOOLNEXUS_FASTMCP_PYTHON)", "make test builds .venv-fastmcp")
    proc = await asyncio.create_subprocess_exec(
        PYTHON, str(SCRIPTS / "skills_server.py"), stdout=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        url = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
        async with httpx2.AsyncClient() as http:

            async def up() -> bool:
                try:
                    await http.get(url)
                except httpx2.HTTPError:
                    return False
                return True

            await wait_until(up, timeout=60)
        yield url
    finally:
        proc.kill()
        await proc.wait()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def toolkit(fastmcp_url: str) -> AsyncIterator[Toolkit]:
    kit = await create_toolkit(mcp_config={"team": {"url": fastmcp_url}}, builtins=False)
    yield kit
    await kit.close()


async def test_a_fastmcp_skill_loads_through_the_skill_tool(toolkit: Toolkit) -> None:
    assert toolkit.mcp_status() == {"team": "connected"}
    assert f"- **team/release-notes**: {DESCRIPTION}" in toolkit.skills_prompt()
    loaded = await toolkit.execute("skill", {"name": "team/release-notes"})
    assert not loaded.is_error
    assert INSTRUCTIONS.strip() in loaded.output
    assert "Base directory for this skill: skill://release-notes/" in loaded.output
    assert "<file>template.md</file>" in loaded.output
    template = await toolkit.read_mcp_resource("skill://release-notes/template.md")
    assert template.output == TEMPLATE


async def test_fastmcp_client_reads_the_gateways_skills(toolkit: Toolkit) -> None:
    handle = await toolkit.serve("127.0.0.1:0", mcp={"name": "gw"})
    try:
        proc = await asyncio.create_subprocess_exec(
            PYTHON,
            str(SCRIPTS / "skills_client.py"),
            handle.url + "/mcp",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        await handle.stop()
    assert proc.returncode == 0, err.decode()[-3000:]
    seen = json.loads(out)
    uri = "skill://team/release-notes/SKILL.md"
    assert seen["skills"] == [
        {"uri": uri, "frontmatter": {"name": "release-notes", "description": DESCRIPTION}}
    ]
    files = seen["read"][uri]
    assert sorted(files) == ["SKILL.md", "template.md"]
    assert files["SKILL.md"].endswith(INSTRUCTIONS)
    assert files["template.md"] == TEMPLATE
