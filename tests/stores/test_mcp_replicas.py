"""Replicas of `toolnexus serve --mcp` sharing the request-state key from the environment: a
multi-round-trip call (2026-07-28) started on one replica is finished on another, and a
replica with another key refuses the state."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest

from mcp import Client, MCPError
from support.cli_runner import clean_env, start_serve, stop_serve

KEY = "replica-shared-state-key-0123456789abcdef"
QUESTION = {"questions": [{"question": "Your name?"}]}


async def form_answer(context: Any, params: Any) -> Any:
    return types.ElicitResult(action="accept", content={"answer": "Ada"})


@pytest.fixture(scope="module")
async def gateways() -> AsyncIterator[list[str]]:
    started = []
    try:
        for key in (KEY, KEY, "another-replica-key-0123456789abcdef0123"):
            env = clean_env(TOOLNEXUS_REQUEST_STATE_KEYS=key)
            started.append(
                await start_serve(
                    "--mcp", "--builtins", "--tools", "question", "--port", "0", env=env
                )
            )
        yield [urls["mcp"] for _, urls in started]
    finally:
        for proc, _ in started:
            _out, err = await stop_serve(proc, signal.SIGTERM)
            assert KEY.encode() not in err  # the key is a secret: never printed


async def test_a_round_started_on_one_replica_finishes_on_another(gateways: list[str]) -> None:
    first, second, stranger = gateways
    async with Client(first, elicitation_callback=form_answer) as client:
        assert client.protocol_version == "2026-07-28"
        raw = await client.session.call_tool("question", QUESTION, allow_input_required=True)
    assert isinstance(raw, types.InputRequiredResult) and raw.request_state is not None
    assert "Your name" not in raw.request_state  # sealed, not readable
    [key] = list(raw.input_requests or {})
    responses: Any = {key: {"action": "accept", "content": {"answer": "Ada"}}}
    async with Client(second, elicitation_callback=form_answer) as client:
        done = await client.call_tool(
            "question", QUESTION, input_responses=responses, request_state=raw.request_state
        )
    assert done.is_error is False
    assert "Ada" in done.content[0].text  # type: ignore[union-attr]
    async with Client(stranger, elicitation_callback=form_answer) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool(
                "question", QUESTION, input_responses=responses, request_state=raw.request_state
            )
    assert refused.value.code == types.INVALID_PARAMS
