"""A server's skills listing is kept for its `ttlMs` and read again once that has passed, so
skills the server adds or removes come and go in the `skill` tool, the skills prompt, the
inventory (`skill_source.skills`) and a gateway's own `skills/list`. The upstream is the official
SDK's `MCPServer` with a Skills extension, over streamable HTTP on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcp import Client
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.skills_server import Catalog, app
from toolnexus import create_toolkit
from toolnexus.mcp_source._skills import ListSkillsRequest, ListSkillsResult


@pytest.fixture
def upstream() -> Iterator[tuple[Catalog, str]]:
    catalog = Catalog()
    catalog.add("alpha", "The first skill.", "Alpha steps.\n")
    server = ThreadedHttpServer(app(catalog))
    yield catalog, server.url()
    server.stop()


async def test_a_stale_listing_is_read_again(upstream: tuple[Catalog, str]) -> None:
    catalog, url = upstream  # ttlMs 0: stale at once
    async with await create_toolkit(mcp_config={"up": {"url": url}}, builtins=False) as kit:
        source = kit.skill_source
        assert source is not None
        assert list(source.skills) == ["up/alpha"]

        catalog.add("beta", "The second skill.", "Beta steps.\n")
        beta = await kit.execute("skill", {"name": "up/beta"})
        assert not beta.is_error
        assert "Beta steps." in beta.output
        assert list(source.skills) == ["up/alpha", "up/beta"]
        assert "- **up/beta**: The second skill." in kit.skills_prompt()

        catalog.remove("alpha")
        gone = await kit.execute("skill", {"name": "up/alpha"})
        assert gone.is_error
        assert gone.output == 'Skill "up/alpha" not found. Available skills: up/beta'
        assert list(source.skills) == ["up/beta"]
        assert "up/alpha" not in kit.skills_prompt()

        # a gateway over the toolkit serves the current set
        handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw"})
        try:
            catalog.add("gamma", "The third skill.", "Gamma steps.\n")
            async with Client(handle.url + "/mcp") as client:
                listed = await client.session.send_request(ListSkillsRequest(), ListSkillsResult)
            assert [s.uri for s in listed.skills] == [
                "skill://up/beta/SKILL.md",
                "skill://up/gamma/SKILL.md",
            ]
        finally:
            await handle.stop()


async def test_a_fresh_listing_is_not_read_again(upstream: tuple[Catalog, str]) -> None:
    catalog, url = upstream
    catalog.ttl_ms = 3_600_000
    async with await create_toolkit(mcp_config={"up": {"url": url}}, builtins=False) as kit:
        lists = catalog.lists
        catalog.add("beta", "The second skill.", "Beta steps.\n")
        alpha = await kit.execute("skill", {"name": "up/alpha"})
        assert "Alpha steps." in alpha.output
        beta = await kit.execute("skill", {"name": "up/beta"})
        assert beta.output == 'Skill "up/beta" not found. Available skills: up/alpha'
        assert catalog.lists == lists  # within its ttlMs the listing is not asked for again


async def test_a_skill_is_cached_per_listed_version(upstream: tuple[Catalog, str]) -> None:
    catalog, url = upstream
    catalog.ttl_ms = 3_600_000
    async with await create_toolkit(mcp_config={"up": {"url": url}}, builtins=False) as kit:
        # changed after it was listed: the digest no longer matches, so its entry is fetched
        # again (`skills/get`) and the new version read
        catalog.add("alpha", "The first skill.", "v2\n")
        first = await kit.execute("skill", {"name": "up/alpha"})
        assert not first.is_error
        assert "v2" in first.output
        # the version held is loaded from the cache, not read again
        catalog.add("alpha", "The first skill.", "v3\n")
        second = await kit.execute("skill", {"name": "up/alpha"})
        assert "v2" in second.output
