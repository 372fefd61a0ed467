"""Every response body the library reads is bounded once decoded: a ~260 KB gzip answer that
inflates to 256 MiB stops at the limit, with an error naming the limit and how to raise it, and
the reader's peak memory grows by a small multiple of the limit, never by the inflated size.

The readers run in a subprocess (`support.bomb_reader`, one forked child per reader) so that
each one's peak RSS is its own; the server (`support.bomb_server`) is real Uvicorn on loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.bomb_reader import CASES, LIMIT, MCP_LIMIT
from support.bomb_server import bomb_server

TESTS = Path(__file__).parent.parent
TOOLKIT_HINT = "raise it with the environment variable TOOLNEXUS_MAX_RESPONSE_BYTES"
MODEL_ERROR = (
    "LLM 200: the response body is larger than the 4 MiB limit; "
    "raise it with create_client(max_response_bytes=...)"
)
MCP_HINT = 'raise it with "maxMessageBytes" in the config of server "bomb"'
# Peak RSS may grow by a small multiple of the limit (chunks held, joined, decoded to text)
# plus the reader's own allocations; the unbounded reads grew by 500 MB to 1 GB.
MAX_GROWTH_KIB = 48 * 1024

EXPECTED = {
    "http_tool": f"BodyTooLarge: the response body is larger than the 4 MiB limit; {TOOLKIT_HINT}",
    "openapi": (
        "cannot fetch OpenAPI spec {url}/json/openapi.json: the response body is larger than "
        f"the 4 MiB limit; {TOOLKIT_HINT}"
    ),
    "a2a_card": f"the response body is larger than the 4 MiB limit; {TOOLKIT_HINT}",
    "a2a_answer": f"the response body is larger than the 4 MiB limit; {TOOLKIT_HINT}",
    "mcp_json": f"the response body is larger than the 512 KiB limit; {MCP_HINT}",
    "mcp_sse": f"an event of the response stream is larger than the 512 KiB limit; {MCP_HINT}",
    "model": f"ProviderError: {MODEL_ERROR}",
    "model_stream": f"ProviderError: {MODEL_ERROR}",
}


@pytest.fixture(scope="module")
def outcomes() -> Iterator[tuple[str, dict[str, dict[str, object]]]]:
    assert LIMIT == 4 * 1024 * 1024 and MCP_LIMIT == 512 * 1024
    with bomb_server() as url:
        env = dict(os.environ, TOOLNEXUS_MAX_RESPONSE_BYTES=str(LIMIT), PYTHONPATH=str(TESTS))
        done = subprocess.run(
            [sys.executable, "-m", "support.bomb_reader", url, ",".join(CASES)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    yield url, {line["case"]: line for line in lines}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_a_compression_bomb_stops_at_the_limit(
    case: str, outcomes: tuple[str, dict[str, dict[str, object]]]
) -> None:
    url, by_case = outcomes
    outcome = by_case[case]
    assert EXPECTED[case].format(url=url) in str(outcome["error"])
    grew = outcome["grew_kib"]
    assert isinstance(grew, int) and grew < MAX_GROWTH_KIB, f"peak RSS grew by {grew} KiB"


def test_every_reader_is_covered() -> None:
    assert set(EXPECTED) == set(CASES)
