"""The authorization servers the auth tests share, one per module: `authz` (JWTs and
introspection, for the serving side) and `oauth_world` (the MCP SDK's authorization-server
routes with an auto-approving provider and a protected SDK MCP server, for the client side)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from support.llm_fixtures import llm, llm_server, make_client
from support.oauth_server import AuthServer, running_auth_server
from support.sdk_oauth import OAuthWorld, running_oauth_world


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def authz() -> AsyncIterator[AuthServer]:
    async with running_auth_server() as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def oauth_world() -> AsyncIterator[OAuthWorld]:
    """The SDK-built authorization server and the protected SDK MCP server in front of it."""
    async with running_oauth_world() as world:
        yield world


__all__ = ["authz", "llm", "llm_server", "make_client", "oauth_world"]
