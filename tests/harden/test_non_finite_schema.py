"""A remote MCP server whose tool schema holds NaN/Infinity (not JSON, but what Python's
`json.dumps` writes) never makes a request body invalid: the numbers are left out at load time,
with a warning naming the server and the tool, and every body the client sends is strict JSON."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from support.fake_llm import FakeLLM, text
from toolnexus import create_client, create_toolkit

HOSTILE = Path(__file__).parents[1] / "support" / "hostile_stdio.py"


def _refuse(constant: str) -> Any:
    raise ValueError(f"not JSON: {constant}")


async def test_non_finite_numbers_in_a_server_schema_never_reach_the_model(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = {
        "mcpServers": {
            "odd": {"command": [sys.executable, str(HOSTILE), "tnx-non-finite", "--non-finite"]}
        }
    }
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        toolkit = await create_toolkit(config, builtins=False)
    async with toolkit:
        warnings = [r.getMessage() for r in caplog.records if "measure" in r.getMessage()]
        assert warnings == [
            '[toolnexus] MCP server "odd" tool "measure": its input schema holds numbers JSON '
            "cannot carry (NaN or Infinity), left out: /properties/size/maximum, "
            "/properties/ratio/default, /properties/ratio/enum/1"
        ]
        schema = toolkit.get("odd_measure").input_schema  # type: ignore[union-attr]
        assert schema["properties"] == {
            "size": {"type": "number", "minimum": 0},
            "ratio": {"type": "number", "enum": [1]},
        }
        with FakeLLM() as llm:
            llm.push(text("done"))
            client = create_client(base_url=llm.url + "/v1", style="openai", model="m", api_key="k")
            async with client:
                result = await client.run("measure", toolkit=toolkit)
            assert result.text == "done"
            body = json.loads(llm.requests[0].raw, parse_constant=_refuse)
        declared = {t["function"]["name"]: t["function"] for t in body["tools"]}
        assert declared["odd_measure"]["parameters"] == schema


async def test_a_request_body_holding_nan_is_refused_with_a_clear_error() -> None:
    from toolnexus.errors import WireFormatError

    with FakeLLM() as llm:
        client = create_client(
            base_url=llm.url + "/v1",
            style="openai",
            model="m",
            api_key="k",
            request_params={"temperature": float("nan")},
            retries=0,
        )
        async with client:
            with pytest.raises(WireFormatError) as caught:
                await client.run("hi")
        assert str(caught.value) == (
            "the request body cannot be sent as JSON: "
            "Out of range float values are not JSON compliant"
        )
        assert llm.requests == []
