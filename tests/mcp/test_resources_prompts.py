"""Resources, templates, prompts and completions of SDK servers through the toolkit API, the
`mcp_read_resource` tool the model uses to follow a `resource_link`, and the input a resource
or a prompt may ask for first (2026-07-28)."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from support.mcp_fixtures import Asker
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.sdk_eras import IMAGE_BYTES
from toolnexus import McpInputError, ToolnexusError, create_toolkit
from toolnexus.mcp_source import McpResource, McpSource, load_mcp_with_context
from toolnexus.toolkit import Toolkit
from toolnexus.types import Answer, ToolContext, pending_of

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


# -- input asked for by a resource or a prompt (2026-07-28) -----------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def answered(asks: ThreadedHttpServer) -> AsyncIterator[tuple[McpSource, Asker]]:
    asker = Asker(answer=lambda r: Answer(r.id, True, {"name": "Ada"}))
    source = await load_mcp_with_context({"asks": {"url": asks.url(), "roots": ["/srv/ws"]}}, asker)
    yield source, asker
    await source.close()


async def test_input_a_resource_asks_for_goes_through_wait_for(
    answered: tuple[McpSource, Asker],
) -> None:
    source, asker = answered
    asker.requests.clear()
    read = await source.read_mcp_resource("ask://name")
    assert (read.output, read.is_error) == ("read by Ada (state r1)", False)
    [request] = asker.requests
    assert (request.kind, request.prompt) == ("input", "Who is reading?")
    # roots are answered by toolnexus, the form by the host, in one retry
    prompt = await source.get_mcp_prompt("asks", "hello")
    assert prompt.messages == [{"role": "user", "content": "hello Ada in file:///srv/ws"}]
    with pytest.raises(McpInputError) as sampled:
        await source.read_mcp_resource("ask://sample")
    assert str(sampled.value) == (
        'MCP server "asks" asked for sampling, which toolnexus does not provide'
    )


async def test_a_resource_that_never_stops_asking_is_cut_after_10_rounds(
    answered: tuple[McpSource, Asker],
) -> None:
    source, asker = answered
    asker.requests.clear()
    with pytest.raises(McpInputError) as nagged:
        await source.read_mcp_resource("ask://nag")
    assert str(nagged.value) == (
        'MCP server "asks" asked for input more than 10 times to read ask://nag'
    )
    assert len(asker.requests) == 10  # as for a tool: the eleventh question is never asked


async def test_a_resumed_read_whose_state_is_refused_is_asked_afresh_reusing_the_answer(
    asks: ThreadedHttpServer,
) -> None:
    source = await load_mcp_with_context({"asks": {"url": asks.url()}})
    try:
        tool = next(t for t in source.tools if t.name == "mcp_read_resource")
        request = pending_of(await tool.execute({"uri": "ask://name"}))
        assert request is not None and request.data is not None
        # as if the server restarted meanwhile: the state it echoed cannot be opened any more
        mcp = {**request.data["mcp"], "requestState": "expired"}
        stale = dataclasses.replace(request, data={**request.data, "mcp": mcp})
        answer = Answer(stale.id, True, {"name": "Ada"})
        done = await tool.execute({"uri": "ask://name"}, ToolContext(answer=answer, request=stale))
        # refused, asked afresh: the same question is answered with the answer already given
        assert (done.output, done.is_error) == ("read by Ada (state r1)", False)
    finally:
        await source.close()


async def test_without_wait_for_the_question_is_the_error(asks: ThreadedHttpServer) -> None:
    source = await load_mcp_with_context({"asks": {"url": asks.url()}})
    try:
        # it offers no tools at all (no `tools` capability, no tools/list): still connected
        state = source.servers["asks"]
        assert (state.status, state.tool_count, state.protocol) == ("connected", 0, "2026-07-28")
        with pytest.raises(McpInputError) as unanswered:
            await source.read_mcp_resource("ask://name")
        assert isinstance(unanswered.value, ToolnexusError)
        assert str(unanswered.value) == (
            'MCP server "asks" asked for input to read ask://name, and there is no wait_for '
            "to ask: Who is reading?"
        )
        with pytest.raises(McpInputError) as rootless:
            await source.get_mcp_prompt("asks", "hello")
        assert str(rootless.value) == (
            'MCP server "asks" asked for roots; none are configured (create_toolkit(roots=...))'
        )
        # the model's tool suspends instead, as an MCP tool call does, and resumes
        tool = next(t for t in source.tools if t.name == "mcp_read_resource")
        model = await tool.execute({"uri": "ask://name"})
        request = pending_of(model)
        assert request is not None
        assert (model.output, model.is_error, model.metadata) == (
            "Who is reading?",
            True,
            {"pending": request, "server": "asks"},
        )
        assert (request.kind, request.data["schema"]["required"]) == ("input", ["name"])  # type: ignore[index]
        answer = Answer(request.id, True, {"name": "Ada"})
        done = await tool.execute(
            {"uri": "ask://name"}, ToolContext(answer=answer, request=request)
        )
        assert (done.output, done.is_error) == ("read by Ada (state r1)", False)
        only_answer = await tool.execute({"uri": "ask://name"}, ToolContext(answer=answer))
        assert only_answer.output == "read by Ada (state r1)"  # the Request remembered here
        other = await tool.execute({"uri": "ask://pair"}, ToolContext(answer=answer))
        assert (other.output, other.is_error) == (
            "Reading ask://pair failed: the answer does not belong to this request",
            True,
        )
    finally:
        await source.close()
