"""Every Python snippet of the README and of docs/ runs as written.

Each page runs in a fresh interpreter, its blocks in order in one namespace (a page builds on its
earlier blocks); a block with a top-level `await` runs as `python -m asyncio` would run it. The
working folder holds what the snippets name (`mcp.json` without servers, an empty `skills/`, a
`sandbox/`), the API keys are set, and `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` (which the
examples read) point at the local fake LLM server.

A few blocks cannot run offline as written (a real provider, a server that runs until stopped, a
fragment whose `...` stands for options shown elsewhere): `NOT_OFFLINE` names each with the
reason, and those still have to compile.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.fake_llm import FakeLLM, running, text

REPO = Path(__file__).resolve().parents[2]

# docs/agents.md is run by its own test, against its own fixtures (tests/agents).
DOCS = ["README.md", *(f"docs/{p.name}" for p in sorted((REPO / "docs").glob("*.md")))]
DOCS = [d for d in DOCS if d != "docs/agents.md"]

_PROVIDER = "talks to a real provider (its URL and key are the point of the example)"
_FRAGMENT = "a fragment: `...` stands for the client options shown above"
_SERVES = "serves until interrupted"
_INTERNET = "fetches a URL on the internet"

_YOURS = "a fragment: `client` and `toolkit` are your program's, built as above"
_PEER = "needs the server or agent the page started above"

# (page, 1-based block) -> why the block is not run here
NOT_OFFLINE: dict[tuple[str, int], str] = {
    ("docs/client.md", 6): "an Azure resource and its key",
    ("docs/client.md", 8): _YOURS,
    ("docs/client.md", 9): _YOURS,
    ("docs/client.md", 10): _YOURS,
    ("docs/client.md", 11): _FRAGMENT,
    ("docs/client.md", 12): _FRAGMENT,
    ("docs/client.md", 13): _FRAGMENT,
    ("docs/client.md", 14): _FRAGMENT,
    ("docs/durable.md", 2): "a fragment: `durable` is a DurableClient of your program, launched",
    ("docs/durable.md", 3): "needs a PostgreSQL system database holding a suspended run",
    ("docs/durable.md", 4): "a fragment: the two clients and the toolkit are your program's",
    ("docs/durable.md", 5): "a fragment: `durable` is a DurableClient of your program, launched",
    ("docs/durable.md", 6): "a fragment: `url` is your program's system database, holding runs",
    ("docs/http.md", 2): _INTERNET,
    ("docs/mcp.md", 2): "a fragment: `tk` is the toolkit of the block above",
    ("docs/mcp.md", 3): "a fragment: `tk` is the toolkit of the block above",
    ("docs/memory-and-metrics.md", 4): _FRAGMENT,
    ("docs/memory-and-metrics.md", 6): "needs FastAPI, which this package does not depend on",
    ("docs/serving.md", 1): _SERVES,
    ("docs/serving.md", 2): _PEER,
    ("docs/serving.md", 4): _SERVES,
    ("docs/serving.md", 5): _PEER,
}

RUNNER = textwrap.dedent(
    """
    import ast, asyncio, json, sys, traceback
    name, blocks, skipped = json.load(sys.stdin)
    namespace = {"__name__": "__main__"}
    for i, code in enumerate(blocks, 1):
        if i in skipped:
            continue
        label = f"{name} block {i}"
        try:
            try:
                compiled = compile(code, label, "exec")
            except SyntaxError:  # a top-level await: run it the way `python -m asyncio` does
                compiled = compile(code, label, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
                async def run():
                    result = eval(compiled, namespace)
                    if asyncio.iscoroutine(result):
                        await result
                asyncio.run(run())
            else:
                exec(compiled, namespace)
        except BaseException:
            traceback.print_exc()
            sys.exit(f"{label} failed")
    """
)


def python_blocks(doc: str) -> list[str]:
    text_ = (REPO / doc).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text_, re.S)


@pytest.fixture(scope="module")
def llm_server() -> Iterator[FakeLLM]:
    with running() as server:
        yield server


@pytest.mark.parametrize("doc", DOCS)
def test_every_block_compiles(doc: str) -> None:
    for i, code in enumerate(python_blocks(doc), 1):
        compile(code, f"{doc} block {i}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.mark.parametrize("doc", DOCS)
def test_every_offline_snippet_runs(doc: str, tmp_path: Path, llm_server: FakeLLM) -> None:
    blocks = python_blocks(doc)
    skipped = [i for (page, i) in NOT_OFFLINE if page == doc]
    (tmp_path / "mcp.json").write_text('{"mcpServers": {}}')
    (tmp_path / "skills").mkdir()
    (tmp_path / "sandbox").mkdir()
    llm_server.reset()
    llm_server.push(*(text("The model's answer.") for _ in range(20)))
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-docs-test",
        "ANTHROPIC_API_KEY": "sk-docs-test",
        "OPENAI_BASE_URL": llm_server.url + "/v1",
        "ANTHROPIC_BASE_URL": llm_server.url,
    }
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps([doc, blocks, skipped]),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_the_not_offline_list_names_real_blocks() -> None:
    for (page, i), _reason in NOT_OFFLINE.items():
        assert 1 <= i <= len(python_blocks(page)), (page, i)


def test_the_readme_never_points_at_the_contract_folder() -> None:
    assert "shared/spec" not in (REPO / "README.md").read_text(encoding="utf-8")
