"""`Client.derive`: a variant of a client with some options changed, sharing what it should."""

from __future__ import annotations

import inspect

import pytest

from toolnexus import ConfigError, ConfigTypeError, create_client, create_in_process_client
from toolnexus.client import Client, InMemoryConversationStore
from toolnexus.testing import ScriptedModel, text


async def test_a_variant_changes_only_what_it_is_given() -> None:
    model = ScriptedModel(text("variant"), text("base"))
    base = model.client(system_prompt="base soul", max_turns=3)
    variant = base.derive(model="other-model", system_prompt="variant soul")
    assert (await variant.run("x")).text == "variant"
    assert (await base.run("y")).text == "base"
    first, second = model.requests
    assert first.body["model"] == "other-model"
    assert first.messages[0] == {"role": "system", "content": "variant soul"}
    assert second.body["model"] == "test-model"
    assert second.messages[0] == {"role": "system", "content": "base soul"}
    assert (variant.max_turns, base.model, base.system_prompt) == (3, "test-model", "base soul")


async def test_a_variant_shares_the_metric_registry_and_the_store() -> None:
    model = ScriptedModel(text("one"), text("two"))
    base = model.client()
    variant = base.derive(model="other-model")
    await base.ask("hi", id="c1")
    await variant.ask("again", id="c1")  # continues the conversation the base saved
    assert [m["content"] for m in model.requests[1].messages if m["role"] == "user"] == [
        "hi",
        "again",
    ]
    assert variant.conversation_store is base.conversation_store
    for client in (base, variant):
        metrics = client.metrics()
        assert 'model="test-model"' in metrics and 'model="other-model"' in metrics


async def test_a_variant_with_its_own_store_keeps_its_own_conversations() -> None:
    model = ScriptedModel(text("one"), text("two"))
    base = model.client()
    own = InMemoryConversationStore()
    variant = base.derive(store=own)
    await base.ask("hi", id="c1")
    await variant.ask("fresh", id="c1")
    assert [m["role"] for m in model.requests[1].messages] == ["user"]
    assert variant.conversation_store is own
    assert await base.conversation_store.get("c1") is not None


async def test_closing_a_variant_leaves_the_client_it_derives_from_working() -> None:
    model = ScriptedModel(text("one"), text("two"))
    base = model.client()
    async with base.derive(model="other-model") as variant:
        await variant.run("x")
    assert (await base.run("y")).text == "two"
    await base.aclose()


def test_changed_options_are_checked_as_the_constructor_checks_them() -> None:
    base = ScriptedModel().client()
    with pytest.raises(ConfigError, match="max_turns must be an integer >= 1"):
        base.derive(max_turns=0)
    with pytest.raises(ConfigTypeError, match="unknown client option 'base_url'"):
        base.derive(base_url="http://127.0.0.1:9")  # type: ignore[call-arg]
    with pytest.raises(ConfigTypeError, match="unknown hook"):
        base.derive(hooks={"before_tool_cal": print})
    assert base.max_turns == 10


async def test_a_misspelt_run_option_is_refused() -> None:
    client = ScriptedModel(text("never sent")).client()
    with pytest.raises(TypeError, match="unexpected keyword argument 'output_retry'"):
        await client.run("x", output_retry=2)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="unexpected keyword argument 'dep'"):
        client.conversation(dep=1)  # type: ignore[call-arg]


def test_every_client_is_made_with_the_documented_defaults() -> None:
    """An in-process client and a test model's client start from the same option defaults as
    `create_client`, whatever path built them."""
    over_http = create_client(base_url="http://127.0.0.1:9", style="openai", model="m")
    in_process = create_in_process_client(model="m", generate=lambda request: {"content": ""})
    defaults = {
        name: p.default
        for name, p in inspect.signature(Client).parameters.items()
        if p.default is not p.empty
    }
    attributes = [
        "system_prompt",
        "max_turns",
        "hooks",
        "timeout_ms",
        "wait_for",
        "output_type",
        "output_mode",
        "output_retries",
        "tool_search",
        "usage_limits",
        "raise_on_limit",
        "model_settings",
    ]
    for name in attributes:
        assert getattr(over_http, name) == getattr(in_process, name) == defaults[name], name
