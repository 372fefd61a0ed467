"""Store test fixtures: one real Redis server for the session (PostgreSQL is the session's
shared one, from tests/conftest.py), and servers of their own for the outage tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.db_servers import SERVERS_HINT, PostgresServer, RedisServer, postgres_bin, redis_bin
from support.requires import missing


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    if redis_bin() is None:
        missing("redis-server", SERVERS_HINT)
    server = RedisServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session", params=["postgres", "redis"])
def fragile(request: pytest.FixtureRequest) -> Iterator[tuple[str, PostgresServer | RedisServer]]:
    """A server of its own, which a test stops and starts again (and leaves running)."""
    server: PostgresServer | RedisServer
    if request.param == "postgres":
        if postgres_bin() is None:
            missing("PostgreSQL binaries", SERVERS_HINT)
        server = PostgresServer()
    else:
        if redis_bin() is None:
            missing("redis-server", SERVERS_HINT)
        server = RedisServer()
    try:
        yield request.param, server
    finally:
        server.close()
