"""A server's skill files read through the toolkit (`mcp_read_resource`) are checked against
the skill's listing, as the Skills extension asks of a host: a file the listing leaves out is
refused, one whose bytes do not match the listed digest is never used, and a skill changed since
it was listed is fetched again first. The upstream is the official SDK's `MCPServer` with a
Skills extension, over streamable HTTP on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.skills_server import Catalog, app
from toolnexus import create_toolkit


@pytest.fixture
def catalog() -> Iterator[tuple[Catalog, str]]:
    catalog = Catalog()
    catalog.add(
        "demo",
        "A demo skill.",
        "Read notes.md.\n",
        **{"notes.md": "the notes\n", "secret.md": "hidden\n", "tampered.md": "changed\n"},
    )
    catalog.unlisted.add("skill://demo/secret.md")
    catalog.misdigested.add("skill://demo/tampered.md")
    server = ThreadedHttpServer(app(catalog))
    yield catalog, server.url()
    server.stop()


async def test_skill_file_reads_are_checked_against_the_listing(
    catalog: tuple[Catalog, str],
) -> None:
    data, url = catalog
    async with await create_toolkit(mcp_config={"up": {"url": url}}, builtins=False) as kit:
        assert kit.skill_source is not None
        assert list(kit.skill_source.skills) == ["up/demo"]
        read = "mcp_read_resource"
        notes = await kit.execute(read, {"uri": "skill://demo/notes.md"})
        assert (notes.is_error, notes.output) == (False, "the notes\n")

        unlisted = await kit.execute(read, {"uri": "skill://demo/secret.md"})
        assert unlisted.is_error
        assert "skill://demo/secret.md is not a file of the skill up/demo" in unlisted.output
        assert "hidden" not in unlisted.output

        tampered = await kit.execute(read, {"uri": "skill://demo/tampered.md"})
        assert tampered.is_error
        assert "does not match the digest and size" in tampered.output
        assert "changed" not in tampered.output.replace("skill://", "")

        # a resource outside every skill is read as ever
        plain = await kit.execute(read, {"uri": "note://readme"})
        assert (plain.is_error, plain.output) == (False, "not a skill")

        # a file added after the listing: the skill's entry is fetched again, then it is read
        data.files["skill://demo/extra.md"] = b"added later\n"
        extra = await kit.execute(read, {"uri": "skill://demo/extra.md"})
        assert (extra.is_error, extra.output) == (False, "added later\n")
