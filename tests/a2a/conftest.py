"""Fixtures of the A2A tests (the pieces live in `support.a2a_agent`)."""

import gc
from collections.abc import Iterator

import pytest

from support.a2a_agent import agent_toolkit, http, seen, served

__all__ = ["agent_toolkit", "http", "seen", "served", "sweep_sdk_garbage"]


@pytest.fixture(autouse=True, scope="module")
def sweep_sdk_garbage() -> Iterator[None]:
    """Finalize what a module's a2a-sdk servers dropped (task producers never awaited) here,
    on the test thread: collected later in another test's server thread, one such producer
    once blocked that thread on its queue's lock for good."""
    yield
    gc.collect()
