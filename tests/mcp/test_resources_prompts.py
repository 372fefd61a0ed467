"""Resources, templates, prompts and completions of SDK servers through the toolkit API, and the
`mcp_read_resource` tool the model uses to follow a `resource_link`."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import pytest_asyncio

from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.sdk_eras import IMAGE_BYTES
from toolnexus import create_toolkit
from toolnexus.mcp_source import McpResource
from toolnexus.toolkit import Toolkit

DESCRIPTION = (
    "Read a resource (a file, document or record) from a connected MCP server by its URI, for "
    'example one named in a "[resource link: ...]" line of an earlier tool result.'
)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def toolkit(era_http: dict[str, ThreadedHttpServer]) -> AsyncIterator[Toolkit]:
    tk = await create_toolkit(
        mcp_config={
            "one": {"url": era_http["dual"].url()},
            "two": {"url": era_http["legacy"].url()},
            "hidden": {"url": era_http["dual"].url(), "resources": False},
        },
        builtins=False,
    )
    yield tk
    await tk.close()


async def test_resources_are_listed_and_read(toolkit: Toolkit) -> None:
    listed = await toolkit.list_mcp_resources("one")
    assert McpResource("one", "eras://notes", "notes", "Notes", "", "text/plain") in listed
    templates = await toolkit.list_mcp_resource_templates("two")
    assert [(t.server, t.uri_template, t.name) for t in templates] == [
        ("two", "eras://users/{user}", "user")
    ]
    notes = await toolkit.read_mcp_resource("eras://notes", server="two")
    assert (notes.output, notes.is_error) == ("the notes", False)
    assert notes.metadata == {"server": "two", "uri": "eras://notes"}
    user = await toolkit.read_mcp_resource("eras://users/ada", server="one")
    assert user.output == "user ada"


async def test_the_model_reads_a_linked_resource_and_a_blob(toolkit: Toolkit) -> None:
    tool = toolkit.get("mcp_read_resource")
    assert tool is not None and tool.description == DESCRIPTION
    assert tool.input_schema["required"] == ["uri"]
    ambiguous = await toolkit.execute("mcp_read_resource", {"uri": "eras://users/zed"})
    assert (ambiguous.output, ambiguous.is_error) == (
        'Cannot tell which MCP server owns eras://users/zed; pass "server" (one of: one, two)',
        True,
    )
    # a tool result linked the resource: its server owns it
    media = await toolkit.execute("two_media", {})
    assert "[resource link: eras://notes]" in media.output
    linked = await toolkit.execute("mcp_read_resource", {"uri": "eras://notes"})
    assert (linked.output, linked.is_error) == ("the notes", False)
    assert (linked.metadata or {})["server"] == "two"
    logo = await toolkit.execute("mcp_read_resource", {"uri": "eras://logo", "server": "one"})
    assert logo.output == "[resource: eras://logo]"
    [part] = logo.parts or []
    assert part["type"] == "image" and base64.b64decode(part["data"]) == IMAGE_BYTES
    assert part["data"] not in logo.output


async def test_hidden_and_unknown_servers_raise(toolkit: Toolkit) -> None:
    for server, text in (
        ("hidden", 'MCP server "hidden" does not offer resources'),
        ("nope", 'no MCP server named "nope"'),
    ):
        try:
            await toolkit.list_mcp_resources(server)
        except ValueError as exc:
            assert str(exc) == text
        else:
            raise AssertionError("no ValueError")


async def test_prompts_and_completions(toolkit: Toolkit) -> None:
    prompts = await toolkit.list_mcp_prompts("one")
    [review] = [p for p in prompts if p.name == "review"]
    assert (review.title, review.description) == ("Code review", "Review some code.")
    assert review.arguments == [
        {"name": "code", "description": None, "required": True},
        {"name": "style", "description": None, "required": False},
    ]
    rendered = await toolkit.get_mcp_prompt("two", "review", {"code": "x = 1", "style": "kind"})
    assert rendered.messages == [{"role": "user", "content": "Review this (kind): x = 1"}]
    values = await toolkit.complete_mcp(
        "one", {"type": "ref/prompt", "name": "review"}, "style", "t"
    )
    assert values == ["terse", "thorough", "tender"]
