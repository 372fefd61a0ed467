"""Core types: Tool, ToolResult, Context, sanitize and the suspension data (core.md §1-5)."""

from __future__ import annotations

import asyncio
import threading

import pytest

import toolnexus
from toolnexus import (
    Answer,
    Context,
    Request,
    Tool,
    ToolContext,
    ToolResult,
    answer_declined,
    answer_output,
    auth_required,
    pending,
    pending_of,
    sanitize,
)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("a b/c.d:e", "a_b_c_d_e"),
        ("keep-_OK1", "keep-_OK1"),
        ("", ""),
        ("..", "__"),  # one for one, no collapsing
        ("héllo wörld", "h_llo_w_rld"),
        ("srv.tool@v2", "srv_tool_v2"),
    ],
)
def test_sanitize(raw: str, clean: str) -> None:
    assert sanitize(raw) == clean


def test_context_is_tool_context_and_defaults_to_nothing() -> None:
    assert Context is ToolContext
    ctx = Context()
    assert (ctx.signal, ctx.timeout, ctx.answer) == (None, None, None)
    assert ctx.cancelled is False
    signal = asyncio.Event()
    ctx = Context(signal=signal, timeout=2.5)
    signal.set()
    assert ctx.cancelled is True
    flag = threading.Event()  # anything with is_set() is a signal
    assert Context(signal=flag).cancelled is False
    flag.set()
    assert Context(signal=flag).cancelled is True


def test_public_names_come_from_the_package_root() -> None:
    assert toolnexus.Tool is Tool
    assert toolnexus.Context is Context
    assert toolnexus.sanitize is sanitize


def test_pending_builds_a_suspension() -> None:
    result = pending(kind="approval", prompt="Deploy to prod?", data={"env": "prod"})

    assert result.is_error is True
    assert result.output == "Deploy to prod?"
    request = pending_of(result)
    assert isinstance(request, Request)
    assert request.kind == "approval"
    assert request.data == {"env": "prod"}
    assert request.id  # generated
    assert pending(kind="input", prompt="x").metadata["pending"].id != request.id  # type: ignore[index]


def test_pending_with_url_and_given_id() -> None:
    result = pending(
        kind="authorization",
        prompt="Log in",
        id="req-1",
        url="https://auth.example/authorize",
        expiresAt="2030-01-01T00:00:00Z",
    )
    assert result.output == "Log in\nhttps://auth.example/authorize"
    assert pending_of(result) == Request(
        id="req-1",
        kind="authorization",
        prompt="Log in",
        url="https://auth.example/authorize",
        expiresAt="2030-01-01T00:00:00Z",
    )


def test_auth_required_is_an_authorization_suspension() -> None:
    result = auth_required("https://auth.example/authorize")
    request = pending_of(result)
    assert request is not None
    assert request.kind == "authorization"
    assert request.prompt == "Authorization required to continue"
    assert result.output == "Authorization required to continue\nhttps://auth.example/authorize"


def test_pending_of_ordinary_results_is_none() -> None:
    assert pending_of(ToolResult("fine")) is None
    assert pending_of(ToolResult("x", metadata={"pending": {"id": "not a Request"}})) is None
    assert pending_of(None) is None


def test_request_to_dict_omits_none_and_keeps_wire_keys() -> None:
    assert Request(id="r1", kind="input", prompt="Name?").to_dict() == {
        "id": "r1",
        "kind": "input",
        "prompt": "Name?",
    }
    full = Request(
        id="r2", kind="approval", prompt="OK?", url="u", data={"a": 1}, expiresAt="t"
    ).to_dict()
    assert list(full) == ["id", "kind", "prompt", "url", "data", "expiresAt"]
    assert Request.from_dict(full) == Request("r2", "approval", "OK?", "u", {"a": 1}, "t")


def test_answers() -> None:
    assert answer_output("r1", "blue").to_dict() == {
        "id": "r1",
        "ok": True,
        "data": {"output": "blue"},
    }
    assert answer_declined("r1").to_dict() == {"id": "r1", "ok": False, "reason": "declined"}
    assert answer_declined("r1", "expired").reason == "expired"
    assert Answer.from_dict({"id": "r1", "ok": True}) == Answer(id="r1", ok=True)


@pytest.mark.parametrize("output", [5, None, {"a": 1}, b"blue"])
def test_answer_output_takes_text_only(output: object) -> None:
    with pytest.raises(TypeError, match="answer output must be a str, got"):
        answer_output("r1", output)  # type: ignore[arg-type]


def test_answer_declined_takes_the_three_reasons_only() -> None:
    for reason in ("declined", "cancelled", "expired"):
        assert answer_declined("r1", reason).reason == reason
    with pytest.raises(ValueError, match="got 'nope'"):
        answer_declined("r1", "nope")


async def test_tool_execute_maps_returns_and_failures() -> None:
    def boom(args: dict[str, object], ctx: Context) -> str:
        raise ValueError("no such city")

    async def structured(args: dict[str, object], ctx: Context) -> object:
        return {"temp": 31, "city": "Chennai", "ok": True}

    raising = Tool("boom", "", None, "custom", boom)
    value = Tool("value", "", None, "custom", structured)

    failed = await raising.execute({"city": "x"})
    assert (failed.output, failed.is_error) == ("no such city", True)
    assert (await value.execute()).output == '{"temp":31,"city":"Chennai","ok":true}'
    assert raising.input_schema == {"type": "object", "properties": {}}


async def test_tool_execute_gives_empty_args_and_a_fresh_context() -> None:
    seen: list[tuple[dict[str, object], Context]] = []

    def record(args: dict[str, object], ctx: Context) -> str:
        seen.append((args, ctx))
        return "ok"

    tool = Tool("record", "", None, "custom", record)
    await tool.execute()
    assert seen[0][0] == {}
    assert isinstance(seen[0][1], Context)


async def test_sync_execute_runs_off_the_event_loop() -> None:
    loop_thread = threading.get_ident()

    def where(args: dict[str, object], ctx: Context) -> str:
        return "loop" if threading.get_ident() == loop_thread else "worker"

    assert (await Tool("where", "", None, "custom", where).execute()).output == "worker"


async def test_renamed_keeps_behaviour_and_original_name() -> None:
    tool = Tool("a.b", "d", None, "mcp", lambda args, ctx: "hi")
    clone = tool.renamed("a_b")
    assert (clone.name, clone.original_name, clone.source) == ("a_b", "a.b", "mcp")
    assert (await clone.execute()).output == "hi"
    assert tool.name == "a.b"


def test_tool_needs_an_execute_callable() -> None:
    with pytest.raises(TypeError, match="execute"):
        Tool("x", "", None, "custom", None)


def test_request_and_answer_wire_data_name_what_is_missing() -> None:
    with pytest.raises(ValueError, match='Request wire data needs "kind" \\(got keys: id\\)'):
        Request.from_dict({"id": "r1"})
    with pytest.raises(ValueError, match='Answer wire data needs "ok"'):
        Answer.from_dict({"id": "r1", "data": {}})
