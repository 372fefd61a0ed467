"""`/healthz` and `/readyz` of a served toolkit: ready means its stores answer."""

from __future__ import annotations

from typing import Any

import httpx2

from support.db_servers import free_port
from toolnexus.client import create_in_process_client
from toolnexus.toolkit import create_toolkit


async def answer(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": "ok"}


async def serve(store: str, **options: Any) -> Any:
    toolkit = await create_toolkit(builtins=False)
    client = create_in_process_client(model="m", generate=answer)
    return await toolkit.serve("127.0.0.1:0", client=client, a2a={"store": store}, **options)


async def test_probes_answer_without_the_token_and_ready_means_the_store_answers(redis_server):
    handle = await serve(redis_server.url, auth_token="tok-9")
    try:
        async with httpx2.AsyncClient() as http:
            health = await http.get(handle.url + "/healthz")
            ready = await http.get(handle.url + "/readyz")
            refused = await http.post(handle.url + "/", json={})
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        assert refused.status_code == 401  # everything else still needs the token
    finally:
        await handle.stop()


async def test_not_ready_while_the_store_is_unreachable_and_the_reason_hides_the_password():
    port = free_port()
    handle = await serve(f"postgresql://me:hush-19@127.0.0.1:{port}/db")
    try:
        async with httpx2.AsyncClient() as http:
            health = await http.get(handle.url + "/healthz")
            ready = await http.get(handle.url + "/readyz")
        assert health.status_code == 200
        assert ready.status_code == 503
        body = ready.json()
        assert body["status"] == "unavailable"
        assert f"me:***@127.0.0.1:{port}" in body["reasons"][0]
        assert "hush-19" not in ready.text
    finally:
        await handle.stop()
