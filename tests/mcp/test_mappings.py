"""The §3 result mapping and the §5 elicitation mappings, over the SDK's own data types."""

from __future__ import annotations

import base64

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.mcp_source import answer_to_elicit_result, elicitation_to_request
from toolnexus.mcp_source._results import map_call_result
from toolnexus.types import Answer


def result(*content: types.ContentBlock, **fields: object) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), **fields)  # type: ignore[arg-type]


def text(value: str) -> types.TextContent:
    return types.TextContent(text=value)


def test_texts_are_joined_with_newlines() -> None:
    mapped = map_call_result(result(text("a"), text(""), text("b")), "srv")
    assert (mapped.output, mapped.is_error) == ("a\n\nb", False)
    assert mapped.metadata == {
        "server": "srv",
        "content": [
            {"type": "text", "text": "a"},
            {"type": "text", "text": ""},
            {"type": "text", "text": "b"},
        ],
    }


def test_no_content_is_an_empty_output() -> None:
    assert map_call_result(result(), "srv").output == ""


def test_text_is_what_the_model_sees_and_structure_goes_to_metadata() -> None:
    mapped = map_call_result(
        result(text("human readable"), structured_content={"b": [1, 2], "a": "ü"}), "srv"
    )
    assert mapped.output == "human readable"
    assert mapped.metadata is not None
    assert mapped.metadata["structured"] == {"b": [1, 2], "a": "ü"}


def test_structured_content_alone_is_compact_json() -> None:
    mapped = map_call_result(result(structured_content={"b": [1, 2], "a": "ü"}), "srv")
    assert mapped.output == '{"b":[1,2],"a":"ü"}'
    blank = map_call_result(result(text("  "), structured_content={"result": 5}), "srv")
    assert blank.output == '{"result":5}'


def test_rendered_structure_never_carries_base64() -> None:
    raw = base64.b64encode(bytes(range(256)) * 2).decode()
    structured = {"png": raw, "url": "data:image/png;base64," + raw, "short": "QUJD", "n": [raw]}
    mapped = map_call_result(result(structured_content=structured), "srv")
    assert mapped.output == (
        '{"png":"[base64: 512 bytes]","url":"[base64: 512 bytes]","short":"QUJD",'
        '"n":["[base64: 512 bytes]"]}'
    )
    assert mapped.metadata is not None
    assert mapped.metadata["structured"] == structured  # the original is kept


def test_an_error_keeps_only_non_blank_texts() -> None:
    mapped = map_call_result(result(text("x"), text(" \n"), text("y"), is_error=True), "s")
    assert (mapped.output, mapped.is_error) == ("x\n\ny", True)


def test_an_error_with_only_structured_content_reports_it() -> None:
    mapped = map_call_result(result(structured_content={"why": "quota"}, is_error=True), "s")
    assert (mapped.output, mapped.is_error) == ('{"why":"quota"}', True)


def test_a_resource_link_becomes_a_url_part() -> None:
    block = types.ResourceLink(uri="https://x/y", name="y")
    mapped = map_call_result(result(block), "s")
    assert mapped.parts == [
        {"type": "file", "mimeType": "application/octet-stream", "url": "https://x/y", "name": "y"}
    ]


def test_an_error_with_structured_content_still_reports_the_texts() -> None:
    mapped = map_call_result(result(text("bad"), structured_content={"a": 1}, is_error=True), "s")
    assert mapped.output == "bad"


def test_an_error_without_text_uses_the_fallback_and_keeps_parts() -> None:
    image = types.ImageContent(data=base64.b64encode(b"1234").decode(), mime_type="image/gif")
    mapped = map_call_result(result(image, is_error=True), "s")
    assert mapped.output == "MCP tool returned an error\n[image: image/gif, 4 bytes]"
    assert mapped.parts == [{"type": "image", "mimeType": "image/gif", "data": "MTIzNA=="}]
    assert mapped.metadata is not None
    assert mapped.metadata["content"] == [
        {"type": "image", "mimeType": "image/gif", "data": "MTIzNA=="}
    ]


def test_structure_beside_other_blocks_is_not_rendered() -> None:
    link = types.ResourceLink(uri="https://x/y", name="y")
    mapped = map_call_result(result(link, structured_content={"ok": True}), "s")
    assert mapped.output == "[resource link: https://x/y]"


def test_a_binary_embedded_resource() -> None:
    blob = types.BlobResourceContents(uri="file:///a.bin", blob="AAEC", mime_type="application/x")
    mapped = map_call_result(result(text("see"), types.EmbeddedResource(resource=blob)), "s")
    assert mapped.output == "see\n[resource: file:///a.bin]"
    assert mapped.parts == [
        {"type": "file", "mimeType": "application/x", "data": "AAEC", "name": "file:///a.bin"}
    ]


@settings(derandomize=True, max_examples=80)
@given(st.binary(max_size=300))
def test_byte_counts_match_the_decoded_data(data: bytes) -> None:
    encoded = base64.b64encode(data).decode()
    audio = types.AudioContent(data=encoded, mime_type="audio/ogg")
    assert map_call_result(result(audio), "s").output == f"[audio: audio/ogg, {len(data)} bytes]"


def test_form_elicitation_from_the_sdk_model() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    request = elicitation_to_request(
        types.ElicitRequestFormParams(message="Proceed?", requested_schema=schema)
    )
    assert (request.kind, request.prompt, request.data, request.url) == (
        "input",
        "Proceed?",
        {"schema": schema},
        None,
    )


def test_url_elicitation_from_a_wire_dict() -> None:
    request = elicitation_to_request(
        {"mode": "url", "message": "Sign in", "url": "https://a/b", "elicitationId": "e1"}
    )
    assert (request.kind, request.prompt, request.url, request.data) == (
        "authorization",
        "Sign in",
        "https://a/b",
        {"elicitationId": "e1"},
    )


def test_form_mode_is_the_default_and_message_may_be_missing() -> None:
    request = elicitation_to_request({"requestedSchema": {"type": "object"}})
    assert (request.kind, request.prompt, request.data) == (
        "input",
        "",
        {"schema": {"type": "object"}},
    )
    assert elicitation_to_request({}).data is None


def test_each_request_gets_a_fresh_id() -> None:
    ids = {elicitation_to_request({"message": "m"}).id for _ in range(50)}
    assert len(ids) == 50 and all(i.startswith("elc-") for i in ids)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (Answer("1", True, {"name": "Ann"}), {"action": "accept", "content": {"name": "Ann"}}),
        (Answer("1", True), {"action": "accept", "content": {}}),
        (Answer("1", False, reason="declined"), {"action": "decline"}),
        (Answer("1", False, reason="cancelled"), {"action": "cancel"}),
        (Answer("1", False, reason="expired"), {"action": "cancel"}),
        (Answer("1", False), {"action": "cancel"}),
        (None, {"action": "cancel"}),
    ],
)
def test_answer_to_elicit_result(answer: Answer | None, expected: dict[str, object]) -> None:
    result = answer_to_elicit_result(answer)  # the SDK's ElicitResult
    assert result.model_dump(exclude_none=True) == expected
