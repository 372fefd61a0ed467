"""Our agent on the raw wire: dialect choice, the legacy hybrid, parts, timing, contexts,
errors and robustness. Every answer passes the a2a-sdk models (see `support.a2a_agent.rpc`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import a2a_oracle as oracle
from support.a2a_agent import message, rpc, serve_agent, settle, sse
from support.media import GOLDEN_B64
from support.polling import wait_until
from toolnexus.serve import build_agent_card

PNG = GOLDEN_B64


# -- dialect choice ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "version", "code"),
    [
        ("GetTask", "1.0", -32001),
        ("GetTask", "1.0.0", -32001),
        ("GetTask", "1.3", -32001),
        ("GetTask", "1", -32001),
        ("GetTask", None, -32001),  # legacy
        ("GetTask", "0.3", -32001),  # legacy
        ("GetTask", "", -32001),
        ("GetTask", "2.0", -32009),
        ("GetTask", "x", -32009),
        ("ListTasks", None, -32009),
        ("ListTasks", "0.3", -32009),
        ("SubscribeToTask", None, -32009),
        ("tasks/get", "2.0", -32001),  # a 0.3 name ignores the header
        ("tasks/get", None, -32001),
        ("message/nope", "1.0", -32601),
        ("Nope", None, -32601),
    ],
)
async def test_dialect_table(served, http, method, version, code):
    answer = await rpc(http, served.url, method, {"id": "missing"}, version=version)
    assert answer["error"]["code"] == code
    if code == -32009:
        shown = version or "0.3"
        assert answer["error"]["message"] == (
            f"A2A version '{shown}' is not supported by this handler. Expected version '1.0'."
        )
        assert answer["error"]["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"
    if code == -32601:
        assert answer["error"]["message"] == f"Method not found: {method}"
    if code == -32001:
        assert answer["error"]["message"] == "Task not found: missing"
        assert ("data" in answer["error"]) == (version is not None and version.startswith("1"))


async def test_push_and_extended_card_methods(served, http):
    for method, version in [
        ("CreateTaskPushNotificationConfig", "1.0"),
        ("tasks/pushNotificationConfig/set", None),
    ]:
        answer = await rpc(http, served.url, method, {}, version=version)
        assert answer["error"] == {
            **answer["error"],
            "code": -32003,
            "message": "Push Notification is not supported",
        }
    for method, version in [
        ("GetExtendedAgentCard", "1.0"),
        ("agent/getAuthenticatedExtendedCard", None),
    ]:
        answer = await rpc(http, served.url, method, {}, version=version)
        assert answer["error"]["code"] == -32007


# -- the legacy hybrid ------------------------------------------------------------------------


async def test_legacy_bodies_get_unwrapped_03_tasks(served, http):
    body = {
        "message": {
            "role": "user",
            "messageId": "x1",
            "parts": [{"kind": "text", "text": "legacy hi"}],
        },
        "configuration": {"blocking": False},
    }
    answer = await rpc(http, served.url, "SendMessage", body, version=None)
    task = answer["result"]
    assert task["kind"] == "task" and task["status"]["state"] in ("submitted", "working")
    assert task["contextId"]
    done = await settle(http, served.url, task["id"], version="legacy")
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"] == [{"kind": "text", "text": "turns=1 last=legacy hi"}]
    # resume and cancel in the legacy dialect
    asked = await rpc(
        http,
        served.url,
        "SendMessage",
        {"message": {**body["message"], "parts": [{"kind": "text", "text": "ask"}]}},
        version=None,
    )
    waiting = await settle(http, served.url, asked["result"]["id"], version="legacy")
    assert waiting["status"]["state"] == "input-required"
    assert waiting["status"]["message"]["kind"] == "message"
    resumed = await rpc(
        http,
        served.url,
        "SendMessage",
        {
            "message": {
                "role": "user",
                "messageId": "x2",
                "taskId": waiting["id"],
                "parts": [{"kind": "text", "text": "blue"}],
            }
        },
        version=None,
    )
    assert resumed["result"]["status"]["state"] == "working"
    assert (await settle(http, served.url, waiting["id"], version="legacy"))["status"][
        "state"
    ] == "completed"
    asked = await rpc(
        http,
        served.url,
        "SendMessage",
        {"message": {**body["message"], "parts": [{"kind": "text", "text": "ask"}]}},
        version=None,
    )
    await settle(http, served.url, asked["result"]["id"], version="legacy")
    canceled = await rpc(
        http, served.url, "CancelTask", {"id": asked["result"]["id"]}, version=None
    )
    assert canceled["result"]["status"]["state"] == "canceled"
    streamed = await rpc(http, served.url, "SendStreamingMessage", body, version=None)
    assert streamed["error"]["code"] == -32009


# -- reading messages -------------------------------------------------------------------------


async def test_parts_without_kind_are_read_and_empty_messages_refused(served, http, seen):
    answer = await rpc(http, served.url, "SendMessage", {"message": message("plain 1.0 parts")})
    assert answer["result"]["task"]["artifacts"][0]["parts"] == [
        {"text": "turns=1 last=plain 1.0 parts"}
    ]
    calls = seen.model_calls
    for parts in ([{"text": ""}], [{"bogus": 1}], []):
        answer = await rpc(
            http, served.url, "SendMessage", {"message": {**message("x"), "parts": parts}}
        )
        assert answer["error"]["code"] == -32602
    answer = await rpc(
        http, served.url, "SendMessage", {"message": {**message("x"), "parts": [{"text": ""}]}}
    )
    assert (
        answer["error"]["message"] == "Invalid params: the message has no text, file or data part"
    )
    assert seen.model_calls == calls


@pytest.mark.parametrize("dialect", ["1.0", "0.3"])
async def test_file_and_data_parts_reach_the_run_as_content_parts(served, http, seen, dialect):
    if dialect == "1.0":
        parts = [
            {"text": "look"},
            {"raw": PNG, "mediaType": "image/png", "filename": "fixture.png"},
            {"data": {"k": [1, 2]}},
            {"data": 7},
        ]
        method, version = "SendMessage", "1.0"
    else:
        parts = [
            {"kind": "text", "text": "look"},
            {
                "kind": "file",
                "file": {"bytes": PNG, "mimeType": "image/png", "name": "fixture.png"},
            },
            {"kind": "data", "data": {"k": [1, 2]}},
            {"kind": "data", "data": {"value": 7}, "metadata": {"data_part_compat": True}},
        ]
        method, version = "message/send", None
    msg = {**message("look", dialect=dialect), "parts": parts}
    answer = await rpc(http, served.url, method, {"message": msg}, version=version)
    result = answer["result"]
    task = result["task"] if dialect == "1.0" else result
    assert "turns=1" in json.dumps(task["artifacts"])
    prompt = seen.prompts[-1]
    assert isinstance(prompt, list)
    image = [b for b in prompt if b.get("type") not in ("text",)]
    assert image, prompt
    texts = [b.get("text") for b in prompt if b.get("type") == "text"]
    assert texts == ["look", '{"k":[1,2]}', "7"]


# -- timing, history and the taskId table -----------------------------------------------------


async def test_answer_timing_per_dialect(served, http):
    cases = [
        ("SendMessage", "1.0", {"returnImmediately": True}, False),
        ("SendMessage", "1.0", {"blocking": False}, False),
        ("SendMessage", "1.0", None, True),
        ("message/send", None, {"blocking": False}, False),
        ("message/send", None, None, True),
        ("SendMessage", None, None, False),  # legacy: always at once
    ]
    for method, version, config, blocks in cases:
        dialect = "1.0" if version else ("0.3" if "/" in method else "legacy")
        params: dict[str, Any] = {
            "message": message("timing", dialect="1.0" if dialect == "1.0" else "0.3")
        }
        if config is not None:
            params["configuration"] = config
        answer = await rpc(http, served.url, method, params, version=version)
        task = answer["result"]["task"] if dialect == "1.0" else answer["result"]
        state = task["status"]["state"]
        finished = state in ("TASK_STATE_COMPLETED", "completed")
        assert finished == blocks, (method, version, config, state)


async def test_history_length(served, http):
    answer = await rpc(http, served.url, "SendMessage", {"message": message("history test")})
    task_id = answer["result"]["task"]["id"]
    full = await rpc(http, served.url, "GetTask", {"id": task_id})
    assert len(full["result"]["history"]) == 1
    none = await rpc(http, served.url, "GetTask", {"id": task_id, "historyLength": 0})
    assert "history" not in none["result"]
    one = await rpc(
        http, served.url, "tasks/get", {"id": task_id, "historyLength": 1}, version=None
    )
    assert len(one["result"]["history"]) == 1
    for bad in (-1, "2", 1.5, True):
        answer = await rpc(http, served.url, "GetTask", {"id": task_id, "historyLength": bad})
        assert answer["error"]["code"] == -32602
    answer = await rpc(http, served.url, "GetTask", {"id": task_id, "historyLength": -1})
    assert answer["error"]["message"] == "history length must be non-negative"


async def test_task_id_table(served, http):
    done = (await rpc(http, served.url, "SendMessage", {"message": message("finish")}))["result"][
        "task"
    ]
    unknown = await rpc(http, served.url, "SendMessage", {"message": message("x", taskId="nope")})
    assert unknown["error"] == {
        **unknown["error"],
        "code": -32001,
        "message": "Task not found: nope",
    }
    other = await rpc(
        http,
        served.url,
        "SendMessage",
        {"message": message("x", taskId=done["id"], contextId="other")},
    )
    assert other["error"]["code"] == -32602
    assert other["error"]["message"] == (
        f"Context other does not match context {done['contextId']} of task {done['id']}"
    )
    terminal = await rpc(
        http, served.url, "SendMessage", {"message": message("x", taskId=done["id"])}
    )
    assert terminal["error"]["code"] == -32004
    assert terminal["error"]["message"] == f"Task {done['id']} is in terminal state: completed"


async def test_a_running_task_refuses_messages(served, http, seen):
    seen.slow_started.clear()
    started = await rpc(
        http,
        served.url,
        "SendMessage",
        {"message": message("slow one"), "configuration": {"returnImmediately": True}},
    )
    task_id = started["result"]["task"]["id"]
    await wait_until(seen.slow_started.is_set)
    busy = await rpc(http, served.url, "SendMessage", {"message": message("x", taskId=task_id)})
    assert busy["error"]["code"] == -32004
    assert busy["error"]["message"] == (
        f"Task {task_id} is working; only an input-required or auth-required task accepts a message"
    )
    await rpc(http, served.url, "CancelTask", {"id": task_id})


async def test_context_ids_everywhere(served, http):
    first = (await rpc(http, served.url, "SendMessage", {"message": message("one")}))["result"][
        "task"
    ]
    context = first["contextId"]
    assert context and all(m["contextId"] == context for m in first["history"])
    second = await rpc(
        http, served.url, "SendMessage", {"message": message("two", contextId=context)}
    )
    task = second["result"]["task"]
    assert task["contextId"] == context
    assert task["artifacts"][0]["parts"] == [{"text": "turns=2 last=two"}]  # saw the first turn
    events = await sse(
        http,
        served.url,
        "message/stream",
        {"message": message("three", dialect="0.3")},
        version=None,
    )
    results = [e["result"] for e in events]
    assert results[0]["kind"] == "task"
    assert {r["contextId"] for r in results} == {results[0]["contextId"]}
    assert [r.get("final") for r in results[1:]] == [False, None, True]
    assert results[2]["kind"] == "artifact-update" and results[2]["append"] is False


async def test_auth_required_and_failed_runs(served, http):
    auth = (await rpc(http, served.url, "SendMessage", {"message": message("auth please")}))[
        "result"
    ]["task"]
    assert auth["status"]["state"] == "TASK_STATE_AUTH_REQUIRED"
    assert auth["status"]["message"]["parts"] == [
        {"text": "Please sign in\nhttps://login.example/x"}
    ]
    assert auth["status"]["message"]["metadata"]["toolnexusRequest"]["kind"] == "authorization"
    failed = (await rpc(http, served.url, "SendMessage", {"message": message("fail now")}))[
        "result"
    ]["task"]
    assert failed["status"]["state"] == "TASK_STATE_FAILED"
    assert "the model exploded" in failed["status"]["message"]["parts"][0]["text"]


async def test_cancel_an_interrupted_task_and_errors(served, http):
    asked = (await rpc(http, served.url, "SendMessage", {"message": message("ask")}))["result"][
        "task"
    ]
    canceled = await rpc(http, served.url, "CancelTask", {"id": asked["id"]})
    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    again = await rpc(http, served.url, "CancelTask", {"id": asked["id"]})
    assert again["error"]["code"] == -32002
    assert again["error"]["message"] == f"Task {asked['id']} is canceled and cannot be canceled"
    missing = await rpc(http, served.url, "tasks/cancel", {"id": "nope"}, version=None)
    assert missing["error"]["code"] == -32001
    sub = await sse(http, served.url, "SubscribeToTask", {"id": asked["id"]})
    assert sub[0]["error"]["code"] == -32004


# -- robustness -------------------------------------------------------------------------------

INVALID_JSON = [
    b"",
    b"{",
    b"\xff\xfe",
    b'{"jsonrpc":"2.0"} trailing',
    b'{"jsonrpc":"2.0","id":NaN,"method":"GetTask"}',
    b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":Infinity}}',
    b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":-Infinity}}',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"GetTask"}',
    b'{"jsonrpc":"2.0","id":1,"method":"\\udc00x"}',
    b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"\\ud800\\u0041"}}',
    b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"text":"\\ud83d"}]}}}',
    b"[" * 100_000 + b"]" * 100_000,
]


@pytest.mark.parametrize("body", INVALID_JSON, ids=range(len(INVALID_JSON)))
async def test_invalid_json_is_a_parse_error(served, http, body):
    response = await http.post(
        served.url + "/", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200
    assert oracle.check_strict_json(response.content) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]',
        b'"x"',
        b'{"jsonrpc":"1.0","id":1,"method":"GetTask"}',
        b'{"jsonrpc":"2.0","id":1}',
        b'{"jsonrpc":"2.0","id":1,"method":""}',
        b'{"jsonrpc":"2.0","id":1e400,"method":"GetTask"}',
        b'{"jsonrpc":"2.0","id":1.5,"method":"GetTask"}',
        b'{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask"}',
    ],
)
async def test_invalid_requests(served, http, body):
    response = await http.post(served.url + "/", content=body)
    assert response.status_code == 200
    answer = oracle.check_strict_json(response.content)
    assert answer["error"]["code"] == -32600
    request = json.loads(body) if body.startswith(b"{") and b"1e400" not in body else None
    valid_id = isinstance(request, dict) and type(request.get("id")) in (int, str)
    assert answer["id"] == (request["id"] if valid_id else None)


async def test_valid_pairs_and_big_ids_echo(served, http):
    pair = "\\ud83d\\ude00"
    body = f'{{"jsonrpc":"2.0","id":"{pair}","method":"GetTask","params":{{"id":"{pair}"}}}}'
    response = await http.post(served.url + "/", content=body, headers={"A2A-Version": "1.0"})
    answer = oracle.check_strict_json(response.content)
    assert answer["id"] == "\U0001f600"
    assert answer["error"]["message"] == "Task not found: \U0001f600"


_BODIES = st.one_of(
    st.binary(max_size=300),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=20,
    ).map(
        lambda v: json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": v}}
        ).encode()
    ),
)


async def test_arbitrary_bodies_never_break_the_endpoint(served):
    import httpx2

    client = httpx2.Client(timeout=20)

    @settings(max_examples=80, derandomize=True, deadline=None, database=None)
    @given(_BODIES, st.sampled_from([None, "1.0", "0.3", "9"]))
    def check(body: bytes, version: str | None) -> None:
        headers = {"A2A-Version": version} if version else {}
        response = client.post(served.url + "/", content=body, headers=headers)
        assert response.status_code == 200
        oracle.check_strict_json(response.content)
        assert b"Traceback" not in response.content

    try:
        await asyncio.to_thread(check)  # the server runs on this loop: post from a thread
    finally:
        client.close()


async def test_bad_model_text_and_nan_tool_results_stay_valid(served, http):
    weird = (await rpc(http, served.url, "SendMessage", {"message": message("weird")}))["result"][
        "task"
    ]
    text = weird["artifacts"][0]["parts"][0]["text"]
    assert "\ud800" not in text and "\ufffd" in text
    events = await sse(
        http, served.url, "SendStreamingMessage", {"message": message("weird again")}
    )
    assert all("\ud800" not in json.dumps(e, ensure_ascii=False, allow_nan=False) for e in events)
    nan = (await rpc(http, served.url, "SendMessage", {"message": message("nan please")}))[
        "result"
    ]["task"]
    assert nan["status"]["state"] == "TASK_STATE_COMPLETED"
    got = await rpc(http, served.url, "GetTask", {"id": nan["id"]})
    assert got["result"]["id"] == nan["id"]


async def test_in_flight_cap(agent_toolkit, seen, http):
    handle = await serve_agent(agent_toolkit, seen, maxInFlight=2)
    seen.release.clear()
    try:
        params = {"message": message("hold on"), "configuration": {"returnImmediately": True}}
        first = await rpc(http, handle.url, "SendMessage", params)
        second = await rpc(http, handle.url, "SendMessage", params)
        calls = seen.model_calls
        third = await rpc(http, handle.url, "SendMessage", params)
        assert third["error"]["code"] == -32603
        assert third["error"]["message"] == "Too many tasks in flight (limit 2); retry later"
        assert third["error"]["data"][0]["reason"] == "RESOURCE_EXHAUSTED"
        legacy = await rpc(
            http,
            handle.url,
            "SendMessage",
            {"message": message("hold", dialect="0.3")},
            version=None,
        )
        assert legacy["error"] == {
            "code": -32603,
            "message": "Too many tasks in flight (limit 2); retry later",
        }
        many = await asyncio.gather(
            *(rpc(http, handle.url, "SendMessage", params) for _ in range(200))
        )
        assert all(m["error"]["code"] == -32603 for m in many)
        assert seen.most_active <= 2 and seen.model_calls <= calls + 0 + 2
        seen.release.set()
        for task in (first, second):
            await settle(http, handle.url, task["result"]["task"]["id"])
        freed = await rpc(http, handle.url, "SendMessage", {"message": message("after")})
        assert freed["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        seen.release.set()
        await handle.stop()


# -- the card ---------------------------------------------------------------------------------

GOLDEN = (
    '{"name":"tn","description":"A toolnexus agent.","version":"0.1.0",'
    '"supportedInterfaces":[{"url":"http://127.0.0.1:8080/","protocolBinding":"JSONRPC","protocolVersion":"1.0"},'
    '{"url":"http://127.0.0.1:8080/","protocolBinding":"JSONRPC","protocolVersion":"0.3"}],'
    '"capabilities":{"streaming":true,"pushNotifications":false},'
    '"securitySchemes":{"bearer":{"httpAuthSecurityScheme":{"scheme":"Bearer"},"type":"http","scheme":"Bearer"}},'
    '"securityRequirements":[{"schemes":{"bearer":{}}}],'
    '"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],'
    '"skills":[{"id":"echo","name":"echo","description":"Echoes the task.","tags":["echo"]}],'
    '"url":"http://127.0.0.1:8080/","preferredTransport":"JSONRPC","protocolVersion":"0.3.0","security":[{"bearer":[]}]}'
)


def test_card_golden():
    skills = [{"name": "echo", "description": "Echoes the task."}]
    card = build_agent_card({"name": "tn"}, skills, "http://127.0.0.1:8080", auth=True)
    assert json.dumps(card, separators=(",", ":")) == GOLDEN
    oracle.check_card(card)
    plain = build_agent_card({"name": "tn"}, skills, "http://127.0.0.1:8080")
    assert not {"securitySchemes", "securityRequirements", "security"} & set(plain)
    oracle.check_card(plain)
    default = build_agent_card({"description": ""}, [], "http://h/")
    assert default["name"] == "toolnexus-agent" and default["version"] == "0.1.0"
    assert default["skills"] == [
        {
            "id": "general",
            "name": "general",
            "description": "A toolnexus agent.",
            "tags": ["general"],
        }
    ]
    listed = build_agent_card({"skills": ["echo", "unknown"]}, [*skills, {"name": "b"}], "http://h")
    assert [s["id"] for s in listed["skills"]] == ["echo"]
    oracle.check_card(default)


async def test_served_card_uses_the_public_url(agent_toolkit, seen, http):
    handle = await serve_agent(agent_toolkit, seen, url="https://agents.example/tn")
    try:
        card = (await http.get(handle.url + "/.well-known/agent-card.json")).json()
        assert card["url"] == "https://agents.example/tn/"
        assert {i["url"] for i in card["supportedInterfaces"]} == {"https://agents.example/tn/"}
        oracle.check_card(card)
    finally:
        await handle.stop()


async def test_subscribe_to_an_interrupted_task_follows_its_resume(served, http):
    asked = (await rpc(http, served.url, "SendMessage", {"message": message("ask")}))["result"]
    task = asked["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    body = {"jsonrpc": "2.0", "id": 7, "method": "tasks/resubscribe", "params": {"id": task["id"]}}
    events = []
    async with http.stream("POST", served.url + "/", json=body) as stream:
        lines = stream.aiter_lines()
        async for line in lines:
            if line.startswith("data: "):
                events.append(oracle.check_strict_json(line[6:])["result"])
                break
        reply = {"message": message("teal", taskId=task["id"])}
        done = await rpc(http, served.url, "SendMessage", reply)
        assert done["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        async for line in lines:
            if line.startswith("data: "):
                answer = oracle.check_strict_json(line[6:])
                oracle.check_response("tasks/resubscribe", "0.3", answer, 7)
                events.append(answer["result"])
    assert events[0]["kind"] == "task" and events[0]["status"]["state"] == "input-required"
    assert events[-1]["kind"] == "status-update" and events[-1]["final"] is True
    assert events[-1]["status"]["state"] == "completed"
    assert any(e["kind"] == "artifact-update" for e in events)
