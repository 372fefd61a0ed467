"""Conversation memory through the client: ask(id=…), stream(id=…), conversation(), both stores."""

from __future__ import annotations

import asyncio

import pytest

from support.client_helpers import STYLES
from support.fake_llm import text
from toolnexus.client import InMemoryConversationStore, RunCancelled, SQLiteConversationStore


def echo(request):
    """Answer with the last user prompt, so each answer shows which request it belongs to."""
    last = request.body["messages"][-1]["content"]
    return text(f"echo:{last}")


@pytest.fixture(params=["memory", "sqlite"])
async def store(request, tmp_path):
    if request.param == "memory":
        yield InMemoryConversationStore()
        return
    async with SQLiteConversationStore(tmp_path / "conversations.db") as sqlite_store:
        yield sqlite_store


@pytest.mark.parametrize("style", STYLES)
async def test_ask_with_id_continues_the_conversation(llm, make_client, style, store):
    llm.push(echo, echo)
    client = make_client(style, store=store, system_prompt="S")
    first = await client.ask("one", id="conv")
    second = await client.ask("two", id="conv")
    assert second.text == "echo:two"
    sent = llm.requests[1].body["messages"]
    if style == "openai":
        assert [m["content"] for m in sent] == ["S", "one", "echo:one", "two"]
    else:
        assert [m["role"] for m in sent] == ["user", "assistant", "user"]
        assert llm.requests[1].body["system"] == "S"
    assert await store.get("conv") == second.messages
    assert second.messages[: len(first.messages)] == first.messages


async def test_ask_without_id_leaves_the_store_alone(llm, make_client, store):
    llm.push(echo)
    client = make_client("openai", store=store)
    await client.ask("x")
    assert await store.get("x") is None
    assert client.conversation_store is store


async def test_default_store_is_per_client_and_stable(llm, make_client):
    client = make_client("openai")
    assert isinstance(client.conversation_store, InMemoryConversationStore)
    assert client.conversation_store is client.conversation_store
    assert make_client("openai").conversation_store is not client.conversation_store


@pytest.mark.parametrize("style", STYLES)
async def test_concurrent_asks_on_one_id_lose_no_turn(llm, make_client, style, store):
    prompts = [f"p{n}" for n in range(6)]
    llm.push(*([echo] * len(prompts)))
    client = make_client(style, store=store)
    results = await asyncio.gather(*(client.ask(p, id="shared") for p in prompts))
    assert sorted(r.text for r in results) == sorted(f"echo:{p}" for p in prompts)
    saved = await store.get("shared")
    users = [m["content"] for m in saved if m["role"] == "user"]
    assistants = [m["content"] for m in saved if m["role"] == "assistant"]
    assert sorted(users) == sorted(prompts)  # every turn is there
    answers = [a if isinstance(a, str) else a[0]["text"] for a in assistants]
    assert answers == [f"echo:{u}" for u in users]  # each answer right after its question
    # each request saw all the turns before it: the transcript grew one turn per ask
    sizes = [len(r.body["messages"]) for r in llm.requests]
    assert sizes == [1 + 2 * n for n in range(len(prompts))]


async def test_different_ids_run_concurrently(llm, make_client):
    llm.push(text("slow", hang=True), text("b"))
    client = make_client("openai")
    cancel = asyncio.Event()
    slow = asyncio.create_task(client.ask("first", id="A", cancel=cancel))
    await llm.until_requests(1)
    fast = await client.ask("second", id="B")  # not blocked by A's lock
    assert fast.text == "b"
    assert not slow.done()
    cancel.set()
    with pytest.raises(RunCancelled):
        await slow
    assert await client.conversation_store.get("A") is None  # a failed ask saves nothing


@pytest.mark.parametrize("style", STYLES)
async def test_stream_with_id_saves_when_done(llm, make_client, style, store):
    llm.push(echo, echo)
    client = make_client(style, store=store)
    events = [e async for e in client.stream("one", id="s")]
    assert await store.get("s") == events[-1]["result"].messages
    deltas = []
    result = await client.ask("two", id="s", on_text=deltas.append)
    assert "".join(deltas) == "echo:two"
    assert await store.get("s") == result.messages
    assert len(result.messages) == 4


async def test_stream_without_id_stores_nothing(llm, make_client):
    llm.push(echo)
    client = make_client("openai")
    [e async for e in client.stream("x")]
    assert await client.conversation_store.get("x") is None


async def test_conversation_send_messages_reset(llm, make_client):
    llm.push(echo, echo, echo)
    conversation = make_client("anthropic").conversation()
    await conversation.send("one")
    result = await conversation.send("two")
    assert conversation.messages == result.messages
    assert [m["role"] for m in conversation.messages] == ["user", "assistant", "user", "assistant"]
    conversation.reset()
    assert conversation.messages == []
    await conversation.send("three")
    assert llm.requests[2].body["messages"] == [{"role": "user", "content": "three"}]


async def test_saved_transcript_is_a_copy(llm, make_client):
    llm.push(echo)
    client = make_client("openai")
    result = await client.ask("x", id="c")
    result.messages.append({"role": "user", "content": "tampered"})
    assert len(await client.conversation_store.get("c")) == 2


async def test_cancel_reaches_an_ask_queued_behind_another_on_its_id(llm, make_client):
    llm.push(text("never", hang=True))
    client = make_client("openai")
    first_cancel, second_cancel = asyncio.Event(), asyncio.Event()
    first = asyncio.create_task(client.ask("one", id="c", cancel=first_cancel))
    await llm.until_requests(1)
    second = asyncio.create_task(client.ask("two", id="c", cancel=second_cancel))
    second_cancel.set()
    with pytest.raises(RunCancelled):
        await second  # while the first still holds the id
    assert not first.done()
    first_cancel.set()
    with pytest.raises(RunCancelled):
        await first
    assert len(llm.requests) == 1
    assert await client.conversation_store.get("c") is None


@pytest.mark.parametrize("style", STYLES)
async def test_ask_on_text_with_id_continues_the_conversation(llm, make_client, style):
    llm.push(echo, echo)
    client = make_client(style)
    deltas = []
    await client.ask("one", id="talk", on_text=deltas.append)
    second = await client.ask("two", id="talk", on_text=deltas.append)
    assert "".join(deltas) == "echo:oneecho:two"
    assert [m["content"] for m in second.messages if m["role"] == "user"] == ["one", "two"]
    assert await client.conversation_store.get("talk") == second.messages
