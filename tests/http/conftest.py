"""Fixtures: the local HTTP test server (see `support.local_http`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.local_http import LocalServer, ServerState, ServerThread, build_app


@pytest.fixture(scope="session")
def server() -> Iterator[LocalServer]:
    state = ServerState()
    state.reset_pets()
    thread = ServerThread(build_app(state))
    thread.start()
    try:
        yield LocalServer(thread.url, state)
    finally:
        thread.stop()


@pytest.fixture
def pet_server(server: LocalServer) -> LocalServer:
    server.state.reset_pets()
    server.state.seen_keys.clear()
    return server
