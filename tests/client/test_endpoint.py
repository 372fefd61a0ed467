"""The model seam as a user meets it: unreachable endpoints, in-process models, dialects."""

from __future__ import annotations

import socket

import httpx2
import pytest

from support.fake_llm import text
from toolnexus import ProviderConnectionError, ToolnexusError, create_client
from toolnexus.client import create_in_process_client


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: connections are refused


@pytest.mark.parametrize(
    ("style", "path"), [("openai", "/v1/chat/completions"), ("anthropic", "/v1/messages")]
)
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_dead_endpoint_raises_provider_connection_error_naming_the_url(
    style: str, path: str, streaming: bool
) -> None:
    port = _closed_port()
    client = create_client(
        base_url=f"http://user:pa55word-secret@127.0.0.1:{port}/v1?api-key=qsecret",
        style=style,  # type: ignore[arg-type]
        model="m",
        api_key="sk-never-shown-123",
        retries=1,
        retry_base_ms=1,
    )
    async with client:
        with pytest.raises(ProviderConnectionError) as raised:
            if streaming:
                async for _ in client.stream("hi"):
                    pass
            else:
                await client.run("hi")
    err = raised.value
    assert isinstance(err, ToolnexusError) and isinstance(err, ConnectionError)
    assert err.url == f"http://127.0.0.1:{port}{path}"
    assert str(err).startswith(f"cannot reach http://127.0.0.1:{port}{path}: ")
    assert isinstance(err.__cause__, httpx2.ConnectError)
    for secret in ("pa55word", "qsecret", "sk-never-shown"):
        assert secret not in str(err) and secret not in repr(err)


async def test_the_in_process_client_has_its_model_and_no_url() -> None:
    seen: list[dict[str, object]] = []

    def generate(request: dict[str, object]) -> dict[str, object]:
        seen.append(request)
        return {"content": "local answer"}

    client = create_in_process_client(model="local-model", generate=generate)
    assert (client.base_url, client.style, client.model) == (None, "openai", "local-model")
    assert repr(client) == "<Client openai 'local-model' at in-process>"
    client.check_api_key()  # nothing to authenticate
    result = await client.run("hello")
    assert result.text == "local answer"
    assert seen[0]["model"] == "local-model"
    with pytest.raises(NotImplementedError, match="does not support streaming"):
        client.stream("hello")
    await client.aclose()


async def test_changing_a_client_option_applies_to_the_next_run(llm, make_client) -> None:
    client = make_client("openai")
    llm.push(text("one"), text("two"))
    await client.run("x")
    client.model = "other-model"
    client.system_prompt = "be brief"
    await client.run("x")
    first, second = llm.requests
    assert first.body["model"] == "test-model"
    assert second.body["model"] == "other-model"
    assert second.body["messages"][0] == {"role": "system", "content": "be brief"}
