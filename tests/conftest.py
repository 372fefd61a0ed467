"""Shared test setup: `tests/support` (fake LLM, MCP test servers, helpers) is importable, one
real PostgreSQL server serves the whole session, and asyncio tasks garbage-collected while still
pending are listed at the end of the run."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))

from support.db_servers import SERVERS_HINT, PostgresServer, postgres_bin  # noqa: E402 (needs the path above)
from support.fake_llm import LIVE  # noqa: E402
from support.request_types import check_request  # noqa: E402
from support.requires import missing  # noqa: E402


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the session (skipped, with the install command, without it)."""
    if postgres_bin() is None:
        missing("PostgreSQL binaries", SERVERS_HINT)
    server = PostgresServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(autouse=True)
def _request_bodies_fit_the_sdk_types(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every body a fake LLM server received during the test is checked against the official
    `openai`/`anthropic` SDKs' request types, unless the test is marked `raw_bodies` (it sends
    bodies it shaped itself, e.g. through `body_transform`)."""
    for server in list(LIVE):
        server.take_unchecked()  # what an earlier test's background work sent is not this one's
    yield
    raw = request.node.get_closest_marker("raw_bodies") is not None
    for server in list(LIVE):
        for received in server.take_unchecked():
            if not raw and isinstance(received.body, dict):
                check_request(received.style, received.body)


class _DroppedTasks(logging.Handler):
    """Records asyncio's "Task was destroyed but it is pending!" reports with the test that was
    running. Such a task was dropped by whoever started it; its coroutine is then finalized by
    the garbage collector in whatever thread happens to run, which once hung a test server."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.test = "(outside a test)"
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Task was destroyed but it is pending"):
            task = message.partition("task: ")[2][:200]
            self.seen.append(f"{self.test}: {task}")


_dropped = _DroppedTasks()
logging.getLogger("asyncio").addHandler(_dropped)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    _dropped.test = item.nodeid
    try:
        return (yield)
    finally:
        _dropped.test = "(between tests)"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _dropped.seen:
        terminalreporter.write_sep("=", "asyncio tasks destroyed while pending (a leak to fix)")
        for line in _dropped.seen:
            terminalreporter.write_line(line)
