"""The authorization server the auth tests share, one per module."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from support.oauth_server import AuthServer, running_auth_server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def authz() -> AsyncIterator[AuthServer]:
    async with running_auth_server() as server:
        yield server
