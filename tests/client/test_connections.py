"""The client's own connections: keep-alive, idle connections dropped, large bodies, TLS."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import httpx2
import pytest

from support.client_helpers import STYLES
from support.fake_llm import FakeLLM, Reply, text
from support.mcp_servers import BASIC, command
from support.tls import make_certificates
from toolnexus import ProviderConnectionError
from toolnexus.client import ProviderError, create_client

TLS_CLIENT = Path(__file__).resolve().parents[1] / "support" / "tls_client_run.py"


async def test_requests_share_one_kept_alive_connection(llm, make_client):
    llm.push(text("one"), text("two"), text("three"))
    client = make_client("openai")
    for prompt in ("a", "b", "c"):
        await client.run(prompt)
    assert llm.connections == 1


async def test_a_connection_the_server_dropped_while_idle_is_replaced(llm, make_client):
    llm.push(text("one", close_after=True), text("two"))
    client = make_client("openai", retries=0)  # a failed request would raise, not retry
    assert (await client.run("a")).text == "one"
    await llm.until(lambda: llm.server_closes == 1)
    assert (await client.run("b")).text == "two"
    assert llm.connections == 2


def _completion(content: str) -> bytes:
    return json.dumps(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    ).encode()


async def test_answers_are_asked_for_uncompressed(llm, make_client):
    llm.push(text("plain"))
    await make_client("openai").run("x")
    sent = llm.requests[0].headers
    assert sent["accept-encoding"] == "identity"
    assert sent["host"] == llm.url.removeprefix("http://")
    assert int(sent["content-length"]) == len(llm.requests[0].raw)


async def test_credentials_in_the_base_url_are_sent_as_basic_auth(llm: FakeLLM) -> None:
    # As httpx does for a URL with userinfo (a gateway or proxy in front of the provider).
    llm.push(text("one"), text("two"))
    base = llm.url.replace("http://", "http://gate%40way:pa%3Ass@") + "/v1"
    client = create_client(base_url=base, style="openai", model="m", api_key="sk-test")
    try:
        for prompt in ("a", "b"):
            await client.run(prompt)
    finally:
        await client.aclose()
    expected = "Basic " + base64.b64encode(b"gate@way:pa:ss").decode()
    assert [r.headers.get("authorization") for r in llm.requests] == [expected, expected]


@pytest.mark.parametrize(
    ("coding", "compress"), [("gzip", gzip.compress), ("deflate", zlib.compress)]
)
async def test_an_answer_compressed_anyway_is_decoded(llm, make_client, coding, compress):
    headers = {"Content-Encoding": coding}
    llm.push(Reply(body=compress(_completion("unpacked")), headers=headers))
    llm.push(Reply(body=compress(_completion("streamed")), headers=headers, ignore_stream=True))
    llm.push(Reply(status=400, body=compress(b'{"error": {"message": "bad"}}'), headers=headers))
    client = make_client("openai", retries=0)
    assert (await client.run("x")).text == "unpacked"
    deltas = [e["delta"] async for e in client.stream("y") if e["type"] == "text"]
    assert deltas == ["streamed"]
    with pytest.raises(ProviderError, match="LLM 400: bad"):
        await client.run("z")


async def test_a_compressed_event_stream_is_decoded():
    events = [
        {"choices": [{"index": 0, "delta": {"content": "zip"}}]},
        {"choices": [{"index": 0, "delta": {"content": "ped"}, "finish_reason": "stop"}]},
    ]
    sse = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    body = gzip.compress(sse.encode())

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with create_client(
            base_url=f"http://127.0.0.1:{port}/v1", style="openai", model="m", api_key="k"
        ) as client:
            deltas = [e["delta"] async for e in client.stream("x") if e["type"] == "text"]
    finally:
        server.close()
        await server.wait_closed()
    assert deltas == ["zip", "ped"]


@pytest.mark.parametrize("style", STYLES)
async def test_a_large_answer_arrives_whole(llm, make_client, style):
    big = "".join(chr(ord("a") + i % 26) for i in range(3_000_000))
    llm.push(text(big))
    assert (await make_client(style).run("x")).text == big


async def test_a_large_stream_read_slowly_loses_nothing(llm, make_client):
    big = "".join(chr(ord("a") + i % 26) for i in range(2_000_000))
    llm.push(text(big, chunk_size=4096))
    deltas = []
    async for event in make_client("openai").stream("x"):
        if event["type"] == "text":
            if not deltas:
                await asyncio.sleep(0.1)  # a consumer far behind the producer for a while
            deltas.append(event["delta"])
    assert "".join(deltas) == big


async def test_a_self_signed_certificate_is_refused(tmp_path):
    certs = make_certificates(tmp_path)
    with FakeLLM(ssl=certs.server_context()) as llm:
        llm.push(text("never"))
        client = create_client(
            base_url=llm.url + "/v1", style="openai", model="m", api_key="k", retries=0
        )
        async with client:
            with pytest.raises(ProviderConnectionError, match="CERTIFICATE_VERIFY_FAILED") as err:
                await client.run("x")
        assert str(err.value).startswith(f"cannot reach {llm.url}/v1/chat/completions: ")
        assert isinstance(err.value.__cause__, httpx2.ConnectError)
        assert llm.requests == []


async def test_https_with_a_trusted_certificate(tmp_path):
    make_certificates(tmp_path)
    env = {**os.environ, "SSL_CERT_FILE": str(tmp_path / "ca.pem")}
    env.pop("SSL_CERT_DIR", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(TLS_CLIENT),
        str(tmp_path),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode(errors="replace")
    seen = json.loads(out)
    assert seen["url"].startswith("https://")
    assert seen["text"] == "3"
    assert seen["tool_output"] == "3"
    assert seen["streamed"] == "streamed over TLS"
    assert seen["requests"] == 3
    assert seen["connections"] == 1  # kept alive across runs, streamed or not


def test_a_plain_http_run_loads_no_tls_store_driver_or_validator(llm: FakeLLM) -> None:
    """What a client run over plain HTTP leaves out of the process: the CA bundle (a TLS
    context), the shared conversation stores' modules and pydantic (typed results only)."""
    llm.push(text("hello"))
    probe = """
import asyncio, gc, ssl, sys
before = set(sys.modules)  # what the interpreter had already (a coverage tracer loads sqlite3)
from toolnexus import create_client

async def main() -> str:
    client = create_client(base_url=sys.argv[1], style="openai", model="m", api_key="k")
    try:
        return (await client.run("hi")).text
    finally:
        await client.aclose()

answer = asyncio.run(main())
loaded = [m for m in ("sqlite3", "pydantic", "toolnexus.client.memory._postgres",
                      "toolnexus.client.memory._redis") if m in set(sys.modules) - before]
contexts = sum(isinstance(o, ssl.SSLContext) for o in gc.get_objects())
print(answer, loaded, contexts)
"""
    done = subprocess.run(
        [sys.executable, "-c", probe, llm.url + "/v1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["hello", "[]", "0"]


def test_a_toolkit_of_plain_mcp_servers_loads_no_oauth_flow_or_builtins() -> None:
    """What a toolkit of plain MCP servers with built-ins off leaves out of the process: the
    OAuth flow (the SDK's provider, PyJWT, cryptography's key and certificate modules) and the
    built-in tools' modules."""
    probe = """
import asyncio, json, sys
from toolnexus import create_toolkit

async def main() -> str:
    toolkit = await create_toolkit({"s": {"command": json.loads(sys.argv[1])}}, builtins=False)
    try:
        return (await toolkit.execute("s_echo", {"text": "up"})).output
    finally:
        await toolkit.close()

answer = asyncio.run(main())
unwanted = ("jwt", "cryptography.x509", "mcp.client.auth", "toolnexus.oauth._authorization",
            "toolnexus.builtin")
print(answer, [m for m in unwanted if m in sys.modules])
"""
    done = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(command(BASIC))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["up", "[]"]
