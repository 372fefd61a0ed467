"""`http_tool` against a real local server: every method, URL placeholders, query, bodies,
`${ENV}` headers, status mapping, timeouts, cancellation, result modes, network errors."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.local_http import LocalServer, echoed
from support.polling import wait_until
from toolnexus import ToolContext, Toolkit, create_toolkit, http_tool
from toolnexus.types import Tool


def echo_tool(server: LocalServer, method: str, path: str = "/echo/x", **options: Any) -> Tool:
    return http_tool(
        name="echo", description="Echo", method=method, url=server.url + path, **options
    )


@pytest.mark.parametrize("method", ["GET", "HEAD", "DELETE", "get", "Delete"])
async def test_get_head_delete_send_every_arg_as_query(server: LocalServer, method: str) -> None:
    tool = echo_tool(server, method)
    res = await tool.execute({"q": "a b", "n": 3, "flag": True, "tags": ["x", "y"]})
    assert res.is_error is False
    assert res.metadata == {"status": 200}
    if method.upper() == "HEAD":
        assert res.output == ""  # a HEAD response has no body; the request still went out
        return
    seen = echoed(res.output)
    assert seen["method"] == method.upper()
    assert seen["query"] == "q=a%20b&n=3&flag=true&tags=x&tags=y"
    assert seen["body"] == ""
    assert "content-type" not in seen["headers"]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "OPTIONS"])
async def test_other_methods_send_a_json_body(server: LocalServer, method: str) -> None:
    tool = echo_tool(server, method)
    seen = echoed((await tool.execute({"name": "Rex", "age": 3, "tags": ["a"]})).output)
    assert seen["method"] == method
    assert seen["query"] == ""
    assert seen["body"] == '{"name":"Rex","age":3,"tags":["a"]}'
    assert seen["headers"]["content-type"] == "application/json"


async def test_no_args_left_means_no_body(server: LocalServer) -> None:
    tool = echo_tool(server, "POST", "/echo/{id}")
    seen = echoed((await tool.execute({"id": "7"})).output)
    assert (seen["path"], seen["body"]) == ("/echo/7", "")
    assert "content-type" not in seen["headers"]


RESERVED = "a/b?c=d&e#f g%+:@!$'()*,;=[]~é"


async def test_placeholders_are_percent_encoded_and_consumed(server: LocalServer) -> None:
    tool = echo_tool(server, "POST", "/echo/{first}/mid/{second}")
    seen = echoed((await tool.execute({"first": RESERVED, "second": 42, "rest": 1})).output)
    encoded = quote(RESERVED, safe="")
    assert seen["path"] == f"/echo/{encoded}/mid/42"
    for ch in "/?#&=+:@!$'()*,;[] ":
        assert ch not in encoded
    assert seen["body"] == '{"rest":1}'  # substituted keys are gone from the body


@pytest.mark.parametrize("value", [".", "..", "..."])
async def test_dot_values_cannot_change_the_path(server: LocalServer, value: str) -> None:
    tool = echo_tool(server, "GET", "/echo/{a}/tail")
    path = echoed((await tool.execute({"a": value})).output)["path"]
    assert path == "/echo/" + "%2E" * len(value) + "/tail"


@pytest.fixture(scope="module")
def echo_toolkit(server: LocalServer) -> Iterator[tuple[asyncio.Runner, Toolkit]]:
    """A toolkit on its own event loop, for the sync hypothesis test below (one loop, one pool)."""
    runner = asyncio.Runner()
    tool = echo_tool(server, "GET", "/echo/{a}/tail")
    toolkit = runner.run(create_toolkit(extra_tools=[tool], builtins=False))
    try:
        yield runner, toolkit
    finally:
        runner.run(toolkit.close())
        runner.close()


@settings(
    derandomize=True,
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(value=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20))
def test_any_placeholder_value_arrives_intact(
    echo_toolkit: tuple[asyncio.Runner, Toolkit], value: str
) -> None:
    runner, toolkit = echo_toolkit
    res = runner.run(toolkit.execute("echo", {"a": value}))
    path = echoed(res.output)["path"]
    assert path.startswith("/echo/") and path.endswith("/tail")
    assert unquote(path[len("/echo/") : -len("/tail")]) == value


async def test_absent_placeholder_is_empty(server: LocalServer) -> None:
    tool = echo_tool(server, "GET", "/echo/a{missing}b")
    assert echoed((await tool.execute({})).output)["path"] == "/echo/ab"


async def test_query_names_for_body_methods_and_existing_question_mark(
    server: LocalServer,
) -> None:
    tool = echo_tool(server, "POST", "/echo/{id}?fixed=1", query=["page", "absent"])
    seen = echoed((await tool.execute({"id": "x", "page": 2, "title": "t"})).output)
    assert seen["path"] == "/echo/x"
    assert seen["query"] == "fixed=1&page=2"
    assert seen["body"] == '{"title":"t"}'


async def test_form_body(server: LocalServer) -> None:
    tool = echo_tool(server, "POST", body="form")
    seen = echoed((await tool.execute({"a": "x y&z", "b": False, "c": [1, 2]})).output)
    assert seen["body"] == "a=x+y%26z&b=false&c=1&c=2"
    assert seen["headers"]["content-type"] == "application/x-www-form-urlencoded"


async def test_raw_body_and_explicit_content_type(server: LocalServer) -> None:
    tool = echo_tool(server, "PUT", body="raw", headers={"content-TYPE": "text/csv"})
    seen = echoed((await tool.execute({"body": "a,b\n1,2", "ignored": 1})).output)
    assert seen["body"] == "a,b\n1,2"
    assert seen["headers"]["content-type"] == "text/csv"
    structured = echoed((await tool.execute({"body": {"a": [1, True]}})).output)
    assert structured["body"] == '{"a":[1,true]}'  # a non-string body travels as its JSON
    nothing = echoed((await tool.execute({"other": 1})).output)
    assert nothing["body"] == ""
    json_tool = echo_tool(server, "POST", headers={"Content-Type": "application/vnd.x+json"})
    seen = echoed((await json_tool.execute({"k": "v"})).output)
    assert seen["headers"]["content-type"] == "application/vnd.x+json"
    assert seen["body"] == '{"k":"v"}'


async def test_env_headers_expand_at_call_time(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    tool = echo_tool(
        server,
        "GET",
        headers={"Authorization": "Bearer ${TN_TEST_TOKEN}", "X-Static": "plain"},
    )
    monkeypatch.setenv("TN_TEST_TOKEN", "s3cret-one")
    with caplog.at_level(logging.DEBUG):
        first = echoed((await tool.execute({})).output)
        monkeypatch.setenv("TN_TEST_TOKEN", "s3cret-two")
        second = echoed((await tool.execute({})).output)
    assert first["headers"]["authorization"] == "Bearer s3cret-one"
    assert second["headers"]["authorization"] == "Bearer s3cret-two"
    assert first["headers"]["x-static"] == "plain"
    assert "s3cret" not in caplog.text


async def test_unset_env_header_is_an_error_naming_the_variable(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TN_TEST_MISSING", raising=False)
    tool = echo_tool(server, "GET", headers={"X-Key": "${TN_TEST_MISSING}"})
    res = await tool.execute({})
    assert (res.output, res.is_error, res.metadata) == (
        "environment variable TN_TEST_MISSING is not set",
        True,
        None,
    )


async def test_secret_header_values_never_reach_the_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TN_TEST_TOKEN", "top-secret-value")
    refused = http_tool(
        name="t",
        description="",
        method="GET",
        url=f"http://127.0.0.1:{closed_port()}/x",
        headers={"Authorization": "${TN_TEST_TOKEN}"},
    )
    res = await refused.execute({})
    assert res.is_error and "top-secret-value" not in res.output
    monkeypatch.setenv("TN_TEST_TOKEN", "line\r\nInjected: top-secret-value")
    res = await refused.execute({})
    assert res.is_error and "top-secret-value" not in res.output
    assert res.output == (
        "header Authorization has a control character in its value (a trailing newline from "
        "an env file?)"
    )
    for value in ("tab\tis fine", "é"):  # a tab is legal; a non-ASCII value fails in encoding
        monkeypatch.setenv("TN_TEST_TOKEN", f"top-secret-value {value}")
        res = await refused.execute({})
        assert res.is_error and "top-secret" not in res.output


@pytest.mark.parametrize("value", ["top-secret-value ", "top-secret\\'value "])
async def test_a_refused_header_value_is_hidden_in_every_spelling(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    # The HTTP stack refuses a trailing space, without the value (or any spelling of it) in
    # its message.
    monkeypatch.setenv("TN_TEST_TOKEN", value)
    tool = echo_tool(server, "GET", headers={"Authorization": "${TN_TEST_TOKEN}"})
    res = await tool.execute({})
    assert res.is_error
    assert "top-secret" not in res.output
    assert "LocalProtocolError: Illegal header value for 'Authorization'" in res.output


async def test_redirects_keep_secret_headers_on_their_origin(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TN_TEST_TOKEN", "s3cret")
    headers = {"X-Key": "${TN_TEST_TOKEN}", "X-Static": "plain"}
    same = server.url + "/echo/same"
    other = server.url.replace("127.0.0.1", "localhost") + "/echo/other"  # another origin
    for target, key in ((same, "s3cret"), (other, None)):
        tool = http_tool(
            name="r",
            description="",
            method="POST",
            url=server.url + "/redirect",
            query=["to", "code"],
            headers=headers,
        )
        seen = echoed((await tool.execute({"to": target, "code": 307, "n": 1})).output)
        assert (seen["method"], seen["body"]) == ("POST", '{"n":1}')  # 307 keeps method and body
        assert seen["headers"].get("x-key") == key
        assert seen["headers"]["x-static"] == "plain"


@pytest.mark.parametrize("code", [400, 404, 500, 503])
async def test_non_2xx_is_an_error_with_status(server: LocalServer, code: int) -> None:
    res = await echo_tool(server, "GET", f"/status/{code}").execute({})
    assert (res.output, res.is_error, res.metadata) == (
        f"HTTP {code}: boom {code}",
        True,
        {"status": code},
    )


async def test_2xx_statuses_other_than_200(server: LocalServer) -> None:
    res = await echo_tool(server, "POST", "/status/201", result_mode="status+text").execute({})
    assert (res.output, res.is_error, res.metadata) == ("201\nboom 201", False, {"status": 201})


async def test_result_modes(server: LocalServer) -> None:
    as_json = http_tool(
        name="j", description="", method="GET", url=server.url + "/json", result_mode="json"
    )
    res = await as_json.execute({})
    assert (res.output, res.metadata) == ('{"a":[1,2.5,"é"]}', {"status": 200})
    text_as_json = http_tool(
        name="t", description="", method="GET", url=server.url + "/text", result_mode="json"
    )
    assert (await text_as_json.execute({})).output == '"not json {"'
    text = http_tool(name="t", description="", method="GET", url=server.url + "/text")
    assert (await text.execute({})).output == "not json {"
    both = http_tool(
        name="b",
        description="",
        method="GET",
        url=server.url + "/text",
        result_mode="status+text",
    )
    assert (await both.execute({})).output == "200\nnot json {"


async def test_timeout_is_an_error_and_aborts_the_request(server: LocalServer) -> None:
    tool = echo_tool(server, "GET", "/slow", timeout=0.05)
    res = await tool.execute({"case": "timeout"})
    assert res.is_error is True and res.metadata is None
    assert res.output == f"GET {server.url}/slow timed out after 0.05s"
    await wait_until(lambda: "case=timeout" in server.state.disconnects)


async def test_ctx_timeout_overrides_the_tool_timeout(server: LocalServer) -> None:
    quick = echo_tool(server, "GET", "/delay", timeout=0.001)
    res = await quick.execute({"ms": 50}, ToolContext(timeout=10))
    assert (res.output, res.is_error) == ("done", False)
    patient = echo_tool(server, "GET", "/slow")  # default 30 s
    res = await patient.execute({"case": "ctx-timeout"}, ToolContext(timeout=0.05))
    assert res.output.endswith("timed out after 0.05s")


@pytest.mark.parametrize("kind", ["asyncio", "threading"])
async def test_signal_cancels_the_in_flight_request(server: LocalServer, kind: str) -> None:
    signal: Any = asyncio.Event() if kind == "asyncio" else threading.Event()
    tool = echo_tool(server, "GET", "/slow")
    marker = f"case=cancel-{kind}"
    call = asyncio.ensure_future(tool.execute({"case": f"cancel-{kind}"}, ToolContext(signal)))
    await wait_until(lambda: marker in server.state.started)
    assert not call.done()
    signal.set()
    res = await asyncio.wait_for(call, 10)
    assert (res.output, res.is_error) == (f"GET {server.url}/slow cancelled", True)
    await wait_until(lambda: marker in server.state.disconnects)


async def test_signal_already_set_sends_nothing(server: LocalServer) -> None:
    signal = asyncio.Event()
    signal.set()
    res = await echo_tool(server, "GET", "/slow").execute({"case": "pre-set"}, ToolContext(signal))
    assert res.output.endswith("cancelled") and res.is_error
    assert "case=pre-set" not in server.state.started


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_connection_refused_is_an_error_with_the_cause() -> None:
    port = closed_port()
    tool = http_tool(name="r", description="", method="GET", url=f"http://127.0.0.1:{port}/x")
    res = await tool.execute({"a": 1})
    assert res.is_error is True and res.metadata is None
    assert res.output.startswith(f"GET http://127.0.0.1:{port}/x failed: ConnectError: ")
    assert "refused" in res.output.lower() or "connect call failed" in res.output.lower()


def test_default_schema_declares_placeholders_and_stays_open() -> None:
    tool = http_tool(
        name="t", description="d", method="GET", url="https://api.test/{org}/{repo}/{org}"
    )
    assert tool.source == "http"
    assert tool.input_schema == {
        "type": "object",
        "properties": {"org": {"type": "string"}, "repo": {"type": "string"}},
        "required": ["org", "repo"],
    }
    plain = http_tool(name="p", description="d", method="GET", url="https://api.test/x")
    assert plain.input_schema == {"type": "object", "properties": {}}
    custom = {"type": "object", "properties": {"q": {"type": "integer"}}}
    given = http_tool(
        name="c", description="d", method="GET", url="https://a.test/", input_schema=custom
    )
    assert given.input_schema is custom


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"body": "xml"}, "body must be one of json, form, raw"),
        ({"result_mode": "html"}, "result_mode must be one of text, json, status+text"),
        ({"url": "ftp://x/y"}, "url must start with http:// or https://"),
        ({"url": "{base}/y"}, "url must start with http:// or https://"),
        ({"timeout": 0}, "timeout must be a positive number of seconds"),
        ({"method": " "}, "method must be an HTTP method"),
        ({"query": "page"}, "query must be a list of argument names"),
    ],
)
def test_bad_definitions_are_precise_errors(options: dict[str, Any], message: str) -> None:
    base: dict[str, Any] = {"name": "t", "description": "", "method": "GET", "url": "https://x/"}
    with pytest.raises((ValueError, TypeError), match=re.escape(message)) as info:
        http_tool(**{**base, **options})
    assert str(info.value).startswith("http_tool 't': ")


async def test_in_a_toolkit_validation_and_close(server: LocalServer) -> None:
    tool = http_tool(
        name="get_item", description="Fetch", method="GET", url=server.url + "/echo/items/{id}"
    )
    async with await create_toolkit(extra_tools=[tool], builtins=False) as tk:
        seen = echoed((await tk.execute("get_item", {"id": "9", "extra": "ok"})).output)
        assert (seen["path"], seen["query"]) == ("/echo/items/9", "extra=ok")
        missing = await tk.execute("get_item", {})
        assert missing.is_error and "'id' is a required property" in missing.output
    # The toolkit closed the pooled client; the tool still works afterwards (a new pool).
    assert (await tool.execute({"id": "1"})).is_error is False


async def test_cancelling_the_caller_aborts_the_request(server: LocalServer) -> None:
    tool = echo_tool(server, "GET", "/slow")
    call = asyncio.ensure_future(tool.execute({"case": "outer-cancel"}))
    await wait_until(lambda: "case=outer-cancel" in server.state.started)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await wait_until(lambda: "case=outer-cancel" in server.state.disconnects)


def test_defining_a_tool_loads_no_http_client() -> None:
    code = (
        "import sys\nfrom toolnexus import http_tool\n"
        "http_tool(name='t', description='', method='GET', url='https://x.test/{a}')\n"
        "print([m for m in ('httpx2', 'pydantic', 'jsonschema', 'mcp') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_older_module_name_hands_out_the_same_objects() -> None:
    import toolnexus.http
    import toolnexus.http_tools

    assert toolnexus.http_tools.__all__
    for name in toolnexus.http_tools.__all__:
        assert getattr(toolnexus.http_tools, name) is getattr(toolnexus.http, name), name
