"""Runs the Python blocks of one documentation page, through Sybil: `python doc_pages.py PAGE`.

Sybil finds the ```python fences (and `<!-- invisible-code-block: python -->` comments) of a
page; other fences (sh, json, ...) are not code to run. The blocks run in order in one
namespace, so a block may continue the ones above it; a block with a top-level `await` runs on
the page's event loop, as `python -m asyncio` would run it. A block after a
`<!-- skip: next "reason" -->` comment is not run and is printed with its reason, which fails
the page's test: every block runs (a page that needs a server or a model starts a local one).

Sybil's own `PythonEvaluator` compiles without the top-level-await flag, so `evaluate` below is
that evaluator plus the flag and a loop. Each page runs in a process of its own (see
`test_pages.py`): pages configure what is process-wide (OpenTelemetry's providers, DBOS), and
Sybil's pytest integration would run them inside the test session, and collects only files below
its conftest, which the pages are not.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import sys
import unittest
from pathlib import Path

from sybil import Document, Example, Sybil
from sybil.evaluators.python import pad
from sybil.parsers.markdown import CodeBlockParser, SkipParser

REPO = Path(__file__).resolve().parents[2]

_LOOP = "__docs_loop__"  # the page's event loop, in the page's namespace


def evaluate(example: Example) -> None:
    """Run one block in the page's namespace; a top-level `await` runs on the page's loop."""
    source = pad(example.parsed, example.line + example.parsed.line_offset)
    code = compile(
        source, example.path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    if code.co_flags & inspect.CO_COROUTINE:
        loop: asyncio.AbstractEventLoop = example.namespace[_LOOP]
        loop.run_until_complete(eval(code, example.namespace))
    else:
        exec(code, example.namespace)


SYBIL = Sybil(parsers=[SkipParser(), CodeBlockParser("python", evaluator=evaluate)])


def pages() -> list[Path]:
    """The pages whose blocks run: README.md, MIGRATING.md and every page under docs/."""
    found = [REPO / "README.md", REPO / "MIGRATING.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [page for page in found if page.exists()]


def parse(page: Path) -> Document:
    return SYBIL.parse(page)


def run(page: Path) -> int:
    """Run the page's blocks in order; the number of blocks run."""
    document = parse(page)
    loop = asyncio.new_event_loop()
    document.namespace.update({"__name__": "__main__", _LOOP: loop})
    ran = 0
    try:
        for example in document.examples():
            try:
                example.evaluate()
            except unittest.SkipTest as skip:
                print(f"NOT RUN {page.name}:{example.line}: {skip}", file=sys.stderr)
            else:
                ran += 1
    finally:
        running = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in running:
            task.cancel()
        if running:
            loop.run_until_complete(asyncio.wait(running))
        # sse-starlette (the MCP SDK's SSE responses) keeps one shutdown watcher per event
        # loop for the loop's life: the library's, not something the page left running.
        left = [t for t in running if t.get_coro().__qualname__ != "_shutdown_watcher"]
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    if left:
        sys.exit(f"{page.name} left tasks running: {left}")
    return ran


if __name__ == "__main__":
    print(f"RAN {run(Path(sys.argv[1]))}")
