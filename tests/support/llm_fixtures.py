"""Fixtures for tests that talk to one fake LLM server: import them into a folder's conftest.

`llm_server` runs for the session (per importing conftest), `llm` is that server reset for each
test, and `make_client(style, **options)` builds clients on it that are closed after the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from support.client_helpers import base_url
from support.fake_llm import FakeLLM, running
from toolnexus.client import Client, create_client

__all__ = ["llm", "llm_server", "make_client"]


@pytest.fixture(scope="session")
def llm_server() -> Iterator[FakeLLM]:
    with running() as server:
        yield server


@pytest.fixture
def llm(llm_server: FakeLLM) -> FakeLLM:
    """The session's server, reset (every body it receives is checked against the official SDKs'
    request types after the test, as any fake server's: `tests/conftest.py`)."""
    llm_server.reset()
    return llm_server


@pytest.fixture
async def make_client(llm: FakeLLM) -> AsyncIterator[Callable[..., Client]]:
    """`make_client(style, **options)`: a client on the fake server, closed after the test."""
    made: list[Client] = []

    def make(style: str = "openai", **options: Any) -> Client:
        options.setdefault("api_key", "sk-test")
        options.setdefault("retry_base_ms", 1)
        options.setdefault("model", "test-model")
        client = create_client(base_url=base_url(llm, style), style=style, **options)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()
