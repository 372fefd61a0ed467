"""Built-in tools under hostile input: each limit holds and the event loop keeps running."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.serve_hardening import QuietHandler, threaded_http
from toolnexus import create_toolkit
from toolnexus.types import ToolContext


class LoopWatch:
    """Records the longest gap between ticks of a task running beside the work."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await asyncio.sleep(0.01)
            now = loop.time()
            self.longest = max(self.longest, now - last)
            last = now

    async def __aenter__(self) -> LoopWatch:
        self._task = asyncio.ensure_future(self._tick())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


async def test_grep_redos_times_out_without_freezing_the_loop(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 40 + "b\n")
    toolkit = await create_toolkit(builtins={"workspace": str(tmp_path)})
    loop = asyncio.get_running_loop()
    async with LoopWatch() as watch:
        started = loop.time()
        result = await toolkit.execute("grep", {"pattern": "(a+)+$"}, ToolContext(timeout=0.5))
        elapsed = loop.time() - started
    assert result.is_error and "timed out" in result.output, result.output
    assert elapsed < 10  # generous bound: the match alone would take hours
    assert watch.longest < 5  # generous bound: the loop was never frozen


async def test_grep_cancel_stops_a_catastrophic_search(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 40 + "b\n")
    toolkit = await create_toolkit(builtins={"workspace": str(tmp_path)})
    signal = asyncio.Event()
    call = asyncio.ensure_future(
        toolkit.execute("grep", {"pattern": "(a+)+$"}, ToolContext(signal=signal))
    )
    await asyncio.sleep(0.1)
    signal.set()
    result = await asyncio.wait_for(call, 10)
    assert result.is_error and "cancelled" in result.output


async def test_grep_still_finds_lines(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\nfind me\n")
    toolkit = await create_toolkit(builtins={"workspace": str(tmp_path)})
    result = await toolkit.execute("grep", {"pattern": "f.nd"})
    assert (result.is_error, result.output) == (False, "a.py:2:find me")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
async def test_read_refuses_devices_and_fifos(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    toolkit = await create_toolkit()
    calls = [toolkit.execute("read", {"path": p}) for p in ["/dev/zero", str(fifo)] * 6]
    results = await asyncio.wait_for(asyncio.gather(*calls), 10)
    assert all(r.is_error and "not a regular file" in r.output for r in results)
    (tmp_path / "ok.txt").write_text("fine")
    assert (await toolkit.execute("read", {"path": str(tmp_path / "ok.txt")})).output == "fine"


async def test_read_of_a_huge_line_holds_a_bounded_amount(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with open(big, "wb") as fh:
        fh.write(b"x" * (8 << 20) + b"\nsecond\n")
    toolkit = await create_toolkit(builtins={"max_output_bytes": 100})
    result = await toolkit.execute("read", {"path": str(big), "offset": 1, "limit": 2})
    assert result.output.startswith("x" * 100) and "truncated" in result.output


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read", {"path": "link.txt"}),
        ("write", {"path": "link.txt", "content": "changed"}),
        ("edit", {"path": "link.txt", "oldString": "outside", "newString": "changed"}),
        (
            "apply_patch",
            {
                "patchText": "*** Begin Patch\n*** Update File: link.txt\n@@\n-outside\n+changed"
                "\n*** End Patch"
            },
        ),
    ],
)
async def test_a_hard_link_out_of_the_workspace_is_refused(
    tmp_path: Path, tool: str, args: dict[str, str]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("outside")
    os.link(outside, workspace / "link.txt")
    toolkit = await create_toolkit(builtins={"workspace": str(workspace)})
    result = await toolkit.execute(tool, args)
    assert result.is_error and "hard links" in result.output, result.output
    assert outside.read_text() == "outside"


class _BigPages(QuietHandler):
    NESTED = ("<html><body>" + "<div>" * 200_000 + "deep" + "</div>" * 200_000).encode()
    FLAT = ("<html><body>" + "<p>word <b>bold</b></p>\n" * 400_000).encode()  # ~10 MB

    def do_GET(self) -> None:
        body = self.NESTED if self.path == "/nested" else self.FLAT
        self.reply(200, "text/html", body)


@pytest.fixture(scope="module")
def big_pages() -> Iterator[str]:
    with threaded_http(_BigPages) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("page", ["nested", "flat"])
async def test_webfetch_of_a_huge_page_is_bounded(big_pages: str, page: str) -> None:
    toolkit = await create_toolkit(builtins={"max_output_bytes": 2000})
    loop = asyncio.get_running_loop()
    async with LoopWatch() as watch:
        started = loop.time()
        result = await toolkit.execute("webfetch", {"url": f"{big_pages}/{page}", "timeout": 20})
        elapsed = loop.time() - started
    assert elapsed < 30, result.output  # generous bound on a hang
    assert watch.longest < 5
    assert "truncated" in result.output or result.is_error, result.output[:200]
