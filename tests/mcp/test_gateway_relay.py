"""The gateway re-serves its upstream MCP servers' resources and prompts (prefixed prompt names,
URIs unchanged, the first server's where two list one), so a client can follow a passed-through
`resource_link`; `resources: false` / `prompts: false` turn that off; a native tool with an
output schema that returns no structured content is an error. Driven by the official SDK client
in both eras."""

from __future__ import annotations

import base64
import logging
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from mcp.client.stdio import StdioServerParameters

from mcp import Client, MCPError
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.sdk_eras import IMAGE_BYTES
from support.mcp_servers.sdk_eras import app as eras_app
from toolnexus import create_toolkit
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
MODES = ["auto", "legacy"]


def _unstructured() -> Tool:
    return Tool(
        "count",
        "Claims structure, returns text.",
        None,
        "native",
        lambda args, ctx: "seven",
        metadata={"outputSchema": SCHEMA},
    )


@pytest.fixture(scope="module")
def upstream() -> Iterator[ThreadedHttpServer]:
    server = ThreadedHttpServer(eras_app())
    yield server
    server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def toolkit(upstream: ThreadedHttpServer) -> AsyncIterator[Toolkit]:
    # two servers on one upstream: every URI is listed twice, every prompt once per server
    kit = await create_toolkit(
        mcp_config={"up": {"url": upstream.url()}, "up2": {"url": upstream.url()}},
        extra_tools=[_unstructured()],
        builtins=False,
    )
    yield kit
    await kit.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway_url(toolkit: Toolkit) -> AsyncIterator[str]:
    handle = await toolkit.serve("127.0.0.1:0", mcp={"name": "gw"})
    yield handle.url + "/mcp"
    await handle.stop()


@pytest.mark.parametrize("mode", MODES)
async def test_upstream_resources_are_served(gateway_url: str, mode: str) -> None:
    async with Client(gateway_url, mode=mode) as client:
        assert client.server_capabilities.resources is not None
        listed = (await client.list_resources(cache_mode="bypass")).resources
        assert sorted(str(r.uri) for r in listed) == ["eras://logo", "eras://notes"]
        notes = next(r for r in listed if str(r.uri) == "eras://notes")
        assert (notes.name, notes.title, notes.mime_type) == ("notes", "Notes", "text/plain")
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["eras://users/{user}"]
        text = (await client.read_resource("eras://notes")).contents[0]
        assert isinstance(text, types.TextResourceContents) and text.text == "the notes"
        blob = (await client.read_resource("eras://logo")).contents[0]
        assert isinstance(blob, types.BlobResourceContents)
        assert base64.b64decode(blob.blob) == IMAGE_BYTES
        assert blob.mime_type == "image/png"
        user = (await client.read_resource("eras://users/ada")).contents[0]
        assert isinstance(user, types.TextResourceContents) and user.text == "user ada"


async def test_a_uri_two_servers_list_is_served_once_with_a_warning(
    toolkit: Toolkit, caplog: pytest.LogCaptureFixture
) -> None:
    handle = await toolkit.serve("127.0.0.1:0", mcp={"name": "fresh"})
    try:
        with caplog.at_level(logging.WARNING, logger="toolnexus"):
            async with Client(handle.url + "/mcp") as client:
                for _ in range(2):
                    listed = (await client.list_resources(cache_mode="bypass")).resources
                    assert [str(r.uri) for r in listed].count("eras://notes") == 1
    finally:
        await handle.stop()
    duplicates = [m for m in caplog.messages if "both list eras://notes" in m]
    assert duplicates == [  # once, however often it is listed
        '[toolnexus] MCP servers "up" and "up2" both list eras://notes; the gateway serves "up"\'s'
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_a_passed_through_resource_link_can_be_followed(gateway_url: str, mode: str) -> None:
    async with Client(gateway_url, mode=mode) as client:
        media = await client.call_tool("up_media", {})
        [link] = [block for block in media.content if block.type == "resource_link"]
        read = await client.read_resource(str(link.uri))  # type: ignore[union-attr]
        assert read.contents[0].text == "the notes"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_upstream_prompts_are_served_under_prefixed_names(
    gateway_url: str, mode: str
) -> None:
    async with Client(gateway_url, mode=mode) as client:
        assert client.server_capabilities.prompts is not None
        prompts = (await client.list_prompts(cache_mode="bypass")).prompts
        assert [p.name for p in prompts] == ["up_review", "up2_review"]
        assert (prompts[0].title, prompts[0].description) == ("Code review", "Review some code.")
        assert [(a.name, a.required) for a in prompts[0].arguments or ()] == [
            ("code", True),
            ("style", False),
        ]
        got = await client.get_prompt("up2_review", {"code": "x = 1", "style": "thorough"})
        assert got.messages[0].content.text == "Review this (thorough): x = 1"  # type: ignore[union-attr]
        done = await client.complete(
            types.PromptReference(name="up_review"), {"name": "style", "value": "t"}
        )
        assert done.completion.values == ["terse", "thorough", "tender"]
        with pytest.raises(MCPError, match="Unknown prompt: nope"):
            await client.get_prompt("nope")


async def test_profile_keys_turn_the_relay_off(toolkit: Toolkit) -> None:
    handle = await toolkit.serve("127.0.0.1:0", mcp={"resources": False, "prompts": False})
    only_native = await toolkit.serve("127.0.0.1:0", mcp={"tools": ["count"]})
    try:
        for url in (handle.url, only_native.url):
            async with Client(url + "/mcp") as client:
                capabilities = client.server_capabilities
                assert (capabilities.resources, capabilities.prompts) == (None, None)
                with pytest.raises(MCPError):
                    await client.list_resources()
                with pytest.raises(MCPError):
                    await client.list_prompts()
    finally:
        await handle.stop()
        await only_native.stop()


async def test_prompts_alone_stay_served(toolkit: Toolkit) -> None:
    handle = await toolkit.serve("127.0.0.1:0", mcp={"resources": False})
    try:
        async with Client(handle.url + "/mcp") as client:
            assert client.server_capabilities.resources is None
            assert [p.name for p in (await client.list_prompts()).prompts][:1] == ["up_review"]
    finally:
        await handle.stop()


@pytest.mark.parametrize("mode", MODES)
async def test_an_output_schema_without_structured_content_is_an_error(
    gateway_url: str, mode: str
) -> None:
    async with Client(gateway_url, mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed["count"].output_schema == SCHEMA
        result: Any = await client.call_tool("count", {})
        assert result.is_error is True
        assert result.content[0].text == (
            "Tool count has an output schema but returned no structured content"
        )
        assert result.structured_content is None


# -- what an upstream server asks while the gateway reads a resource or gets a prompt --------

GATEWAY_STDIO = Path(__file__).parents[1] / "support" / "mcp_gateway_stdio.py"
READ_BY_ADA = "read by Ada (state r1)"  # the upstream server echoes its own request state
HELLO_ADA = "hello Ada in file:///srv/ws"  # roots answered by the gateway, the name by Ada


async def _name_ada(context: Any, params: Any) -> Any:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def asking_gateway(asks: ThreadedHttpServer) -> AsyncIterator[str]:
    kit = await create_toolkit(
        mcp_config={"asks": {"url": asks.url()}}, roots=["/srv/ws"], builtins=False
    )
    handle = await kit.serve("127.0.0.1:0", mcp={"name": "gw"})
    yield handle.url + "/mcp"
    await handle.stop()
    await kit.close()


async def test_a_modern_client_answers_what_an_upstream_read_asks(asking_gateway: str) -> None:
    seen: list[Any] = []

    async def answer(context: Any, params: Any) -> Any:
        seen.append(params)
        return await _name_ada(context, params)

    async with Client(asking_gateway, elicitation_callback=answer) as client:
        assert client.protocol_version == "2026-07-28"
        read = await client.read_resource("ask://name")
        assert read.contents[0].text == READ_BY_ADA  # type: ignore[union-attr]
        [asked] = seen
        assert (asked.message, asked.requested_schema["required"]) == ("Who is reading?", ["name"])
        got = await client.get_prompt("asks_hello")
        assert got.messages[0].content.text == HELLO_ADA  # type: ignore[union-attr]
        assert len(seen) == 2


async def test_the_read_tool_suspends_and_a_modern_client_resumes_it(
    asking_gateway: str,
) -> None:
    async with Client(asking_gateway, elicitation_callback=_name_ada) as client:
        result = await client.call_tool("mcp_read_resource", {"uri": "ask://name"})
        assert (result.content[0].text, result.is_error) == (READ_BY_ADA, False)  # type: ignore[union-attr]


async def test_a_modern_client_gets_one_input_request_per_question(asking_gateway: str) -> None:
    async with Client(asking_gateway, elicitation_callback=_name_ada) as client:
        first = await client.session.read_resource("ask://name", allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        [(key, entry)] = (first.input_requests or {}).items()
        assert entry.params.message == "Who is reading?"  # type: ignore[union-attr]
        assert first.request_state is not None and "Who is reading" not in first.request_state
        declined = await client.session.read_resource(
            "ask://name",
            input_responses={key: types.ElicitResult(action="decline")},
            request_state=first.request_state,
            allow_input_required=True,
        )
        # the upstream round is finished with the declined answer (no content: no name)
        assert declined.contents[0].text == "read by None (state r1)"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as foreign:  # a state sealed for another request
            await client.session.read_resource(
                "ask://sample",
                input_responses={key: types.ElicitResult(action="decline")},
                request_state=first.request_state,
                allow_input_required=True,
            )
        assert foreign.value.code == types.INVALID_PARAMS


async def test_two_questions_in_one_upstream_round_are_two_input_requests(
    asking_gateway: str,
) -> None:
    async def fill(context: Any, params: Any) -> Any:
        content = {"name": "Ada"} if "name" in params.requested_schema["properties"] else {}
        return types.ElicitResult(action="accept", content=content or {"city": "Oslo"})

    async with Client(asking_gateway, elicitation_callback=fill) as client:
        first = await client.session.read_resource("ask://pair", allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        [(name_key, name_entry)] = (first.input_requests or {}).items()
        assert name_entry.params.message == "Who is reading?"  # type: ignore[union-attr]
        second = await client.session.read_resource(
            "ask://pair",
            input_responses={name_key: await fill(None, name_entry.params)},
            request_state=first.request_state,
            allow_input_required=True,
        )
        # the round's second question, asked before the upstream server is asked again
        assert isinstance(second, types.InputRequiredResult)
        [(city_key, city_entry)] = (second.input_requests or {}).items()
        assert city_entry.params.message == "Which city?"  # type: ignore[union-attr]
        done = await client.session.read_resource(
            "ask://pair",
            input_responses={city_key: await fill(None, city_entry.params)},
            request_state=second.request_state,
            allow_input_required=True,
        )
        assert done.contents[0].text == "Ada from Oslo (state r2)"  # type: ignore[union-attr]
        # the SDK's own driver does the same rounds
        read = await client.read_resource("ask://pair")
        assert read.contents[0].text == "Ada from Oslo (state r2)"  # type: ignore[union-attr]


async def test_what_the_gateway_cannot_provide_is_an_error_naming_it(asking_gateway: str) -> None:
    async with Client(asking_gateway, elicitation_callback=_name_ada) as client:
        with pytest.raises(MCPError) as sampled:
            await client.read_resource("ask://sample")
        assert sampled.value.message == (
            'MCP server "asks" asked for sampling, which toolnexus does not provide'
        )
    async with Client(asking_gateway) as mute:  # no elicitation capability: cannot be asked
        with pytest.raises(MCPError) as unasked:
            await mute.read_resource("ask://name")
        assert unasked.value.message == (
            'MCP server "asks" asked for input to read ask://name, and there is no wait_for '
            "to ask: Who is reading?"
        )
        # the code and data the SDK's own servers answer for a capability not declared
        assert unasked.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
        assert unasked.value.error.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


async def test_a_handshake_client_over_http_is_asked_by_push_in_its_session(
    asking_gateway: str,
) -> None:
    async with Client(asking_gateway, mode="legacy", elicitation_callback=_name_ada) as client:
        assert client.protocol_version == "2025-11-25"
        got = await client.get_prompt("asks_hello")
        assert got.messages[0].content.text == HELLO_ADA  # type: ignore[union-attr]


async def test_a_handshake_client_over_stdio_is_asked_by_push(asks: ThreadedHttpServer) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[str(GATEWAY_STDIO), "--upstream", asks.url()]
    )
    async with Client(params, mode="legacy", elicitation_callback=_name_ada) as client:
        assert client.protocol_version == "2025-11-25"
        read = await client.read_resource("ask://name")
        assert read.contents[0].text == READ_BY_ADA  # type: ignore[union-attr]
        got = await client.get_prompt("asks_hello")
        assert got.messages[0].content.text == HELLO_ADA  # type: ignore[union-attr]
        # as for a tool: one push per request; a second question is left unresolved
        with pytest.raises(MCPError) as unresolved:
            await client.read_resource("ask://pair")
        assert unresolved.value.message == "unresolved: Which city?"


async def test_a_modern_client_over_stdio_gets_input_requests(asks: ThreadedHttpServer) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[str(GATEWAY_STDIO), "--upstream", asks.url()]
    )

    async def fill(context: Any, params: Any) -> Any:
        if "city" in params.requested_schema["properties"]:
            return types.ElicitResult(action="accept", content={"city": "Oslo"})
        return await _name_ada(context, params)

    async with Client(params, elicitation_callback=fill) as client:
        assert client.protocol_version == "2026-07-28"
        read = await client.read_resource("ask://name")
        assert read.contents[0].text == READ_BY_ADA  # type: ignore[union-attr]
        pair = await client.read_resource("ask://pair")  # two input requests, one after another
        assert pair.contents[0].text == "Ada from Oslo (state r2)"  # type: ignore[union-attr]
        got = await client.get_prompt("asks_hello")
        assert got.messages[0].content.text == HELLO_ADA  # type: ignore[union-attr]


# -- completions of upstream resource templates ---------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def mixed(asks: ThreadedHttpServer, upstream: ThreadedHttpServer) -> AsyncIterator[Toolkit]:
    # `asks` comes first and offers resources but no templates: the template is `up`'s alone
    kit = await create_toolkit(
        mcp_config={"asks": {"url": asks.url()}, "up": {"url": upstream.url()}}, builtins=False
    )
    yield kit
    await kit.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def mixed_gateway(mixed: Toolkit) -> AsyncIterator[str]:
    handle = await mixed.serve("127.0.0.1:0", mcp={"name": "gw"})
    yield handle.url + "/mcp"
    await handle.stop()


async def test_a_server_without_templates_lists_none(mixed: Toolkit) -> None:
    # `asks` does not know `resources/templates/list` (templates are optional): no error
    templates = await mixed.list_mcp_resource_templates()
    assert [(t.server, t.uri_template) for t in templates] == [("up", "eras://users/{user}")]
    assert await mixed.list_mcp_resource_templates("asks") == []


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_a_resource_template_completion_goes_to_the_server_that_lists_it(
    mixed_gateway: str, mode: str, version: str
) -> None:
    template = types.ResourceTemplateReference(uri="eras://users/{user}")
    async with Client(mixed_gateway, mode=mode) as client:
        assert client.protocol_version == version
        assert client.server_capabilities.completions is not None
        listed = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in listed] == ["eras://users/{user}"]
        done = await client.complete(template, {"name": "user", "value": "a"})
        assert done.completion.values == ["ada", "alan"]
        # what the template completes, the gateway reads from the same server
        read = await client.read_resource("eras://users/ada")
        assert read.contents[0].text == "user ada"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as unknown:
            await client.complete(
                types.ResourceTemplateReference(uri="eras://nobody/{x}"), {"name": "x", "value": ""}
            )
        assert unknown.value.code == types.INVALID_PARAMS
        assert unknown.value.message == "Unknown resource template: eras://nobody/{x}"
