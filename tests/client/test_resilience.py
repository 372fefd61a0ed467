"""Retries, Retry-After, on_error, the run deadline and cancellation (client.md §10)."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import pytest

from support.client_helpers import STYLES, base_url, kit
from support.fake_llm import FakeLLM, RecordedRequest, Reply, call, error, running, text, tools
from toolnexus import ProviderConnectionError
from toolnexus.client import Client, ProviderError, RunCancelled, RunTimeout, create_client
from toolnexus.client._retry import parse_retry_after
from toolnexus.types import Tool


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("2", 2), ("  7  ", 7), ("0", 0), ("2147483647", 2147483647)]
    + [
        (v, None)
        for v in [
            "0.5",
            "5.9",
            "-5",
            "+5",
            "2147483648",
            "",
            None,
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "abc",
            "٢",
        ]
    ],
)
def test_retry_after_delay_seconds_only(value, seconds):
    assert parse_retry_after(value) == seconds


# Every row of client.md §10's table, over the wire. A header that is honoured makes the retry
# wait that many seconds: no second request comes within a 300 ms window (a backoff of 0 ms plus
# at most 100 ms of jitter would have retried by then), and `cancel` ends the wait. Every other
# value falls back to that short backoff and the retry succeeds.
HONOURED = ["2", "  7  ", "2147483647"]
BACKOFF = ["0.5", "5.9", "-5", "+5", "2147483648", "", None, "Wed, 21 Oct 2015 07:28:00 GMT"]
BACKOFF += ["abc", "٢"]


@pytest.mark.parametrize("value", HONOURED)
async def test_retry_after_seconds_are_waited(llm, make_client, value):
    llm.push(error(429, headers={"Retry-After": value}), text("too early"))
    decided = asyncio.Event()

    def on_error(info):
        decided.set()
        return "retry"

    cancel = asyncio.Event()
    client = make_client("openai", retry_base_ms=0, on_error=on_error)
    run = asyncio.create_task(client.run("x", cancel=cancel))
    await decided.wait()
    finished, _ = await asyncio.wait([run], timeout=0.3)
    assert not finished  # still waiting out the Retry-After
    cancel.set()
    with pytest.raises(RunCancelled):
        await run
    assert len(llm.requests) == 1


async def test_retry_after_zero_retries_at_once(llm, make_client):
    llm.push(error(503, headers={"Retry-After": "0"}), text("ok"))
    # a 60 s backoff would pass the deadline: the header's 0 s was used
    result = await make_client("openai", retry_base_ms=60_000, timeout_ms=5_000).run("x")
    assert result.text == "ok"


@pytest.mark.parametrize("value", BACKOFF, ids=repr)
async def test_other_retry_after_values_fall_back_to_the_backoff(llm, make_client, value):
    headers = {} if value is None else {"Retry-After": value}
    llm.push(error(429, headers=headers), text("ok"))
    result = await make_client("openai", retry_base_ms=0, timeout_ms=5_000).run("x")
    assert result.text == "ok"
    assert len(llm.requests) == 2


@pytest.mark.parametrize("style", STYLES)
async def test_429_with_retry_after_then_success(llm, make_client, style):
    llm.push(error(429, "slow down", headers={"Retry-After": "0"}), text("ok"))
    infos = []

    def on_error(info):
        infos.append(info)
        return "retry"

    result = await make_client(style, retry_base_ms=60_000, on_error=on_error).run("x")
    # a 60 s backoff would time the test out: the Retry-After of 0 s was used instead
    assert result.text == "ok"
    assert infos == [{"status": 429, "attempt": 0, "retryable": True}]
    assert len(llm.requests) == 2


async def test_retry_after_name_is_case_insensitive(llm, make_client):
    llm.push(error(503, headers={"rEtRy-AfTeR": "0"}), text("ok"))
    assert (await make_client("openai", retry_base_ms=60_000).run("x")).text == "ok"


@pytest.mark.parametrize("style", STYLES)
async def test_500_then_success(llm, make_client, style):
    llm.push(error(500), error(502), text("ok"))
    result = await make_client(style).run("x")
    assert result.text == "ok"
    assert len(llm.requests) == 3


async def test_retries_are_bounded(llm, make_client):
    llm.push(error(503, "down"), error(503, "down"), error(503, "down"), text("never"))
    with pytest.raises(ProviderError, match=r"^LLM 503: down$"):
        await make_client("openai", retries=2).run("x")
    assert len(llm.requests) == 3


@pytest.mark.parametrize("status", [529, 504])
async def test_overloaded_statuses_retry(llm, make_client, status):
    llm.push(error(status), text("ok"))
    assert (await make_client("anthropic").run("x")).text == "ok"


async def test_400_is_not_retried(llm, make_client):
    infos = []
    llm.push(error(400, "bad"), text("never"))
    with pytest.raises(ProviderError):
        await make_client("openai", on_error=lambda i: infos.append(i) or "fail").run("x")
    assert infos == [{"status": 400, "attempt": 0, "retryable": False}]
    assert len(llm.requests) == 1


async def test_extra_retryable_statuses(llm, make_client):
    llm.push(error(418), text("ok"))
    assert (await make_client("openai", retryable_statuses=[418]).run("x")).text == "ok"


async def test_on_error_can_retry_a_400_but_stays_bounded(llm, make_client):
    seen = []

    async def on_error(info):
        seen.append(info["attempt"])
        return "retry"

    llm.push(error(400), error(400), error(400), error(400))
    with pytest.raises(ProviderError):
        await make_client("openai", retries=2, on_error=on_error).run("x")
    assert seen == [0, 1, 2]
    assert len(llm.requests) == 3


async def test_on_error_can_fail_a_500_at_once(llm, make_client):
    llm.push(error(500), text("never"))
    with pytest.raises(ProviderError):
        await make_client("openai", on_error=lambda info: "fail").run("x")
    assert len(llm.requests) == 1


async def test_transport_errors_retry_and_then_propagate():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: connections are refused
    infos = []

    def on_error(info):
        infos.append(info)
        return "retry"

    client = create_client(
        base_url=f"http://127.0.0.1:{port}/v1",
        style="openai",
        model="m",
        api_key="k",
        retry_base_ms=1,
        on_error=on_error,
    )
    async with client:
        with pytest.raises(ProviderConnectionError) as raised:
            await client.run("x")
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    assert str(raised.value).startswith(f"cannot reach {url}: ")
    assert raised.value.url == url
    assert isinstance(raised.value.__cause__, httpx2.ConnectError)
    assert [i["attempt"] for i in infos] == [0, 1, 2]
    assert all(
        i["retryable"] is True
        and isinstance(i["error"], ProviderConnectionError)
        and isinstance(i["error"].__cause__, httpx2.ConnectError)
        for i in infos
    )


async def test_read_timeout_ends_a_dead_connection(llm, make_client):
    llm.push(tools(call("x"), hang=True), tools(call("x"), hang=True))
    with pytest.raises(ProviderConnectionError) as raised:
        await make_client("openai", read_timeout_ms=50, retries=1).run("x")
    assert isinstance(raised.value.__cause__, httpx2.ReadTimeout)
    assert len(llm.requests) == 2
    await llm.until(lambda: llm.disconnects >= 2)


# -- the deadline ---------------------------------------------------------------------------------


# A deadline short enough to keep the suite fast can run out on a loaded machine before the
# phase under test even begins (the request not yet at the server, the tool not yet started).
# Such a try proves nothing: it is made again, on a fresh fake server (nothing of the void try
# can reach it), with a deadline four times longer.
DEADLINES_MS = (400, 1600, 6400)


async def deadline_midway(attempt: Callable[[FakeLLM, int], Awaitable[bool]]) -> None:
    """Run `attempt(server, deadline_ms)` until it reports that the deadline fell where the
    test needs it (it asserts what it checks only then)."""
    for ms in DEADLINES_MS:
        with running() as llm:
            if await attempt(llm, ms):
                return
    pytest.fail("the deadline always ran out before the phase under test began")


def deadline_client(llm: FakeLLM, style: str, ms: int, **options: Any) -> Client:
    return create_client(
        base_url=base_url(llm, style), style=style, model="m", api_key="k", timeout_ms=ms,
        retry_base_ms=1, **options,
    )  # fmt: skip


async def timed_out(client: Client, run: Awaitable[Any]) -> RunTimeout:
    """The `RunTimeout` that `run` (a run or a stream of `client`) ends with; closes `client`."""
    try:
        with pytest.raises(RunTimeout) as info:
            await run
    finally:
        await client.aclose()
    return info.value


@pytest.mark.parametrize("style", STYLES)
async def test_deadline_during_a_slow_response_aborts_the_request(style):
    async def attempt(llm: FakeLLM, ms: int) -> bool:
        events: list[dict[str, Any]] = []
        received = threading.Event()

        def hang(request: RecordedRequest) -> Reply:
            received.set()
            return text("never", hang=True)

        llm.push(hang)
        client = deadline_client(llm, style, ms, on_metric=events.append)
        raised = await timed_out(client, client.run("x"))
        if not received.is_set():
            return False  # the deadline came before the request reached the server
        assert str(raised) == f"run timeout after {ms}ms (client timeout_ms budget)"
        assert isinstance(raised, TimeoutError)
        await llm.until(lambda: llm.disconnects >= 1)  # the in-flight request was aborted
        assert events[-1]["event"] == "run"
        assert events[-1]["error"] == f"run timeout after {ms}ms (client timeout_ms budget)"
        assert events[-2]["event"] == "llm" and events[-2]["status"] == "error"
        return True

    await deadline_midway(attempt)


async def test_an_aborted_run_leaves_its_task_uncancelled(llm, make_client):
    llm.push(text("never", hang=True))
    with pytest.raises(RunTimeout):
        await make_client("openai", timeout_ms=100).run("x")
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)  # a leftover cancellation request would be raised here


async def test_a_callers_own_cancellation_is_not_turned_into_a_run_error(llm, make_client):
    llm.push(text("never", hang=True))
    client = make_client("openai", timeout_ms=60000)
    with pytest.raises(TimeoutError) as info:
        async with asyncio.timeout(0.1):  # the caller's deadline, shorter than the run's
            await client.run("x")
    assert not isinstance(info.value, RunTimeout)
    await llm.until(lambda: llm.disconnects >= 1)  # the request was aborted all the same


@pytest.mark.parametrize("owned", [True, False])
async def test_deadline_ends_a_stalled_stream_with_either_http_client(owned):
    async def attempt(llm: FakeLLM, ms: int) -> bool:
        llm.push(text("abcdef", chunk_size=1, stall_after=2))
        seen = []
        async with httpx2.AsyncClient() as http:
            client = deadline_client(llm, "openai", ms, http_client=None if owned else http)

            async def read() -> None:
                async for event in client.stream("x"):
                    seen.append(event["type"])

            await timed_out(client, read())
        if not seen:
            return False  # the deadline came before the first events
        assert set(seen) == {"text"}
        await llm.until(lambda: llm.disconnects >= 1)
        return True

    await deadline_midway(attempt)


async def test_deadline_cuts_a_long_retry_after_and_is_never_classified():
    async def attempt(llm: FakeLLM, ms: int) -> bool:
        infos: list[dict[str, Any]] = []
        llm.push(error(429, headers={"Retry-After": "3600"}), text("never"))
        client = deadline_client(llm, "openai", ms, on_error=lambda i: infos.append(i) or "retry")
        await timed_out(client, client.run("x"))
        if not infos:
            return False  # the deadline came before the 429
        assert infos == [{"status": 429, "attempt": 0, "retryable": True}]
        assert len(llm.requests) == 1
        return True

    await deadline_midway(attempt)


async def test_deadline_cancels_a_slow_async_tool():
    async def attempt(llm: FakeLLM, ms: int) -> bool:
        seen: dict[str, Any] = {}
        cancelled = asyncio.Event()

        async def slow(args, ctx):
            seen["timeout"] = ctx.timeout
            seen["signal"] = ctx.signal
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return "never"

        llm.push(tools(call("slow")), text("never"))
        client = deadline_client(llm, "openai", ms)
        await timed_out(client, client.run("x", kit(Tool("slow", "", None, "native", slow))))
        if not seen:
            return False  # the deadline came before the tool started
        assert cancelled.is_set()
        assert 0 < seen["timeout"] <= ms / 1000
        assert seen["signal"].is_set()
        assert len(llm.requests) == 1
        return True

    await deadline_midway(attempt)


async def test_deadline_returns_while_a_sync_tool_thread_finishes():
    async def attempt(llm: FakeLLM, ms: int) -> bool:
        started, release = threading.Event(), threading.Event()
        state = {"finished": False, "signal_seen": None}

        def blocking(args, ctx):
            started.set()
            release.wait(30)
            state["signal_seen"] = ctx.signal.is_set()
            state["finished"] = True
            return "late"

        llm.push(tools(call("blocking")), text("never"))
        client = deadline_client(llm, "openai", ms)
        toolkit = kit(Tool("blocking", "", None, "native", blocking))
        try:
            await timed_out(client, client.run("x", toolkit))
            if not started.is_set():
                return False  # the deadline came before the tool started
            assert state["finished"] is False  # the run did not wait for the thread
        finally:
            release.set()
        await llm.until(lambda: state["finished"])
        assert state["signal_seen"] is True  # the tool could see the run was over
        return True

    await deadline_midway(attempt)


async def test_tools_get_a_signal_only_when_the_run_can_be_aborted(llm, make_client):
    seen = []

    async def probe(args, ctx):
        seen.append(ctx.signal)
        return "ok"

    toolkit = kit(Tool("probe", "", None, "native", probe))
    for options in ({}, {"timeout_ms": 60000}, {"cancel": asyncio.Event()}):
        llm.push(tools(call("probe")), text("done"))
        cancel = options.pop("cancel", None)
        await make_client("openai", **options).run("x", toolkit, cancel=cancel)
    # Nothing could set a signal for a run with neither a deadline nor a cancel event.
    assert seen[0] is None
    assert all(isinstance(s, asyncio.Event) and not s.is_set() for s in seen[1:])


# -- cancellation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
async def test_cancel_mid_request(llm, make_client, style):
    llm.push(text("never", hang=True))
    cancel = asyncio.Event()
    client = make_client(style)
    task = asyncio.create_task(client.run("x", cancel=cancel))
    await llm.until_requests(1)
    cancel.set()
    with pytest.raises(RunCancelled, match=r"^run cancelled$"):
        await task
    await llm.until(lambda: llm.disconnects >= 1)


async def test_cancel_already_set_sends_nothing(llm, make_client):
    cancel = asyncio.Event()
    cancel.set()
    with pytest.raises(RunCancelled):
        await make_client("openai").run("x", cancel=cancel)
    assert llm.requests == []


async def test_cancel_during_backoff(llm, make_client):
    llm.push(error(503, headers={"Retry-After": "3600"}), text("never"))
    cancel = asyncio.Event()
    task = asyncio.create_task(make_client("openai").run("x", cancel=cancel))
    await llm.until_requests(1)
    cancel.set()
    with pytest.raises(RunCancelled):
        await task
    assert len(llm.requests) == 1


async def test_cancel_reaches_a_running_tool(llm, make_client):
    entered = asyncio.Event()
    seen = {}

    async def waits(args, ctx):
        seen["ctx"] = ctx
        entered.set()
        await asyncio.sleep(3600)
        return "never"

    llm.push(tools(call("waits")), text("never"))
    cancel = asyncio.Event()
    task = asyncio.create_task(
        make_client("openai").run("x", kit(Tool("waits", "", None, "native", waits)), cancel=cancel)
    )
    await entered.wait()
    assert seen["ctx"].timeout is None and not seen["ctx"].cancelled
    cancel.set()
    with pytest.raises(RunCancelled):
        await task
    assert seen["ctx"].cancelled


async def test_failure_is_never_a_suspension(llm, make_client):
    llm.push(error(400, "nope"))
    with pytest.raises(ProviderError):
        await make_client("openai", wait_for=lambda r: None).run("x")


async def test_injected_http_client_is_used_for_every_request(llm):
    seen = []

    async def hook(request):
        seen.append(str(request.url))

    async with httpx2.AsyncClient(event_hooks={"request": [hook]}) as http:
        client = create_client(
            base_url=base_url(llm, "openai"),
            style="openai",
            model="m",
            api_key="k",
            http_client=http,
            retry_base_ms=1,
        )
        llm.push(error(500), text("ok"))
        await client.run("x")
        await client.aclose()  # does not close an injected client
        assert not http.is_closed
    assert len(seen) == 2


async def test_an_environment_proxy_carries_the_owned_clients_requests(llm, monkeypatch):
    # The fake LLM plays the proxy: it gets the absolute-form target of a host that
    # does not exist, so the answer can only have come through the proxy.
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", llm.url)
    client = create_client(base_url="http://llm.invalid/v1", style="openai", model="m", api_key="k")
    llm.push(text("via the proxy"))
    try:
        result = await client.run("x")
    finally:
        await client.aclose()
    assert result.text == "via the proxy"
    assert llm.requests[0].path == "http://llm.invalid/v1/chat/completions"
