"""The A2A profile inside `serve`: routes, both profiles on one server, stores and callbacks."""

from __future__ import annotations

from typing import Any

from support.a2a_agent import message, rpc, serve_agent, settle


async def test_routes_without_mcp(served, http):
    for method, path in [("GET", "/"), ("POST", "/mcp"), ("GET", "/other")]:
        response = await http.request(method, served.url + path)
        assert (response.status_code, response.text) == (404, "not found")


async def test_both_profiles_on_one_server(agent_toolkit, seen, http):
    from mcp import Client
    from support.a2a_agent import Model
    from toolnexus.client import create_in_process_client

    client = create_in_process_client(model="scripted", generate=Model(seen))
    async with await agent_toolkit.serve("127.0.0.1:0", client=client, a2a={}, mcp={}) as handle:
        async with Client(handle.url + "/mcp") as mcp_client:
            names = [t.name for t in (await mcp_client.list_tools()).tools]
        assert names == [t.name for t in agent_toolkit.tools()]
        task = await rpc(http, handle.url, "SendMessage", {"message": message("both")})
        assert task["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        card = (await http.get(handle.url + "/.well-known/agent-card.json")).json()
        assert card["name"] == "toolnexus-agent"
        assert [s["id"] for s in card["skills"]] == ["echo"]


class RecordingStore:
    def __init__(self, fail_on: str | None = None) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}
        self.saved: list[dict[str, Any]] = []
        self.fail_on = fail_on

    async def get(self, id: str) -> dict[str, Any] | None:
        return self.tasks.get(id)

    async def save(self, task: dict[str, Any]) -> None:
        if task["status"]["state"] == self.fail_on:
            raise OSError("disk on fire")
        self.saved.append(task)
        self.tasks[task["id"]] = task


async def test_every_version_goes_through_the_store(agent_toolkit, seen, http):
    store = RecordingStore()
    handle = await serve_agent(agent_toolkit, seen, store=store)
    try:
        for extra in ({"contextId": "ctx-store"}, {}):
            sent = await rpc(
                http, handle.url, "SendMessage", {"message": message("stored", **extra)}
            )
            task = sent["result"]["task"]
            versions = [t for t in store.saved if t["id"] == task["id"]]
            assert [t["status"]["state"] for t in versions] == [
                "TASK_STATE_SUBMITTED",
                "TASK_STATE_WORKING",
                "TASK_STATE_COMPLETED",
            ]
            assert len({t["contextId"] for t in versions}) == 1
            assert versions[0]["contextId"] == extra.get("contextId", task["contextId"])
    finally:
        await handle.stop()


async def test_on_task_errors_and_store_failures_never_crash(agent_toolkit, seen, http):
    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("callback bug")

    from support.a2a_agent import Model
    from toolnexus.client import create_in_process_client

    client = create_in_process_client(model="scripted", generate=Model(seen))
    store = RecordingStore(fail_on="TASK_STATE_WORKING")
    profile = {"store": store}
    async with await agent_toolkit.serve(
        "127.0.0.1:0", client=client, a2a=profile, on_task=broken
    ) as handle:
        for text in ("robust", "again"):
            sent = await rpc(http, handle.url, "SendMessage", {"message": message(text)})
            assert sent["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
            got = await settle(http, handle.url, sent["result"]["task"]["id"])
            assert got["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_the_previous_toolnexus_outbound_still_works(served):
    from support import legacy_outbound
    from toolnexus.types import ToolContext

    tools = await legacy_outbound.agent_tools(
        legacy_outbound.agent(served.url + "/.well-known/agent-card.json", poll_every=10)
    )
    assert [t.name for t in tools] == ["tn_echo"]
    result = await tools[0].execute({"task": "from the past"}, ToolContext(timeout=10))
    assert (result.output, result.is_error) == ("turns=1 last=from the past", False)


async def test_a_guarded_agent_advertises_its_bearer_scheme(agent_toolkit, seen, http):
    from support import a2a_oracle as oracle
    from support.a2a_agent import Model
    from toolnexus.client import create_in_process_client

    client = create_in_process_client(model="scripted", generate=Model(seen))
    async with await agent_toolkit.serve(
        "127.0.0.1:0", client=client, a2a={"name": "tn"}, auth_token="s3cret"
    ) as handle:
        card_url = handle.url + "/.well-known/agent-card.json"
        # The card is public (a2a.md §2.1 as amended): discovery learns how to authenticate.
        answer = await http.get(card_url)
        assert answer.status_code == 200
        card = answer.json()
        assert card == (await http.get(card_url, headers={"Authorization": "Bearer s3cret"})).json()
        assert (await http.post(handle.url + "/", content=b"{}")).status_code == 401
        oracle.check_card(card)
        assert card["security"] == [{"bearer": []}]
        assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"] == {"scheme": "Bearer"}
