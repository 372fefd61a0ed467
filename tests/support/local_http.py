"""A real HTTP server on 127.0.0.1 (Starlette + Uvicorn in a thread) for HTTP and OpenAPI tests.

Routes:
- `/echo/...` (any method): the request as JSON — method, raw path, raw query, body, headers.
- `/status/{code}`: that status with body `boom <code>`.
- `/slow`: answers only when the client goes away; records the start and the disconnect.
- `/delay?ms=N`: answers `done` after N milliseconds.
- `/redirect?to=URL&code=N`: a redirect (default 302) to `URL`.
- `/json`, `/text`: fixed bodies (JSON with odd spacing, text that is not JSON).
- `/v1/...`: a small pet store, described by `/v1/openapi.json` (and `.yaml`).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send


@dataclass
class ServerState:
    started: list[str] = field(default_factory=list)
    disconnects: list[str] = field(default_factory=list)
    pets: dict[int, dict[str, Any]] = field(default_factory=dict)
    next_id: int = 1
    seen_keys: list[str] = field(default_factory=list)
    delays: list[str] = field(default_factory=list)  # `/delay` requests received

    def reset_pets(self) -> None:
        self.pets = {
            1: {"id": 1, "name": "Rex", "tag": "dog"},
            2: {"id": 2, "name": "Tom", "tag": "cat"},
            3: {"id": 3, "name": "Fido", "tag": "dog"},
        }
        self.next_id = 4


PETSTORE_SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Pet store", "version": "1.0.0"},
    "servers": [{"url": "/v1"}],
    "paths": {
        "/pets": {
            "get": {
                "operationId": "listPets",
                "summary": "List pets",
                "description": "Pets in the store, optionally filtered by tag.",
                "parameters": [
                    {"$ref": "#/components/parameters/Limit"},
                    {
                        "name": "tag",
                        "in": "query",
                        "description": "Only pets with this tag",
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "X-Api-Key",
                        "in": "header",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "operationId": "createPet",
                "summary": "Add a pet",
                "parameters": [
                    {"name": "dryRun", "in": "query", "schema": {"type": "boolean"}},
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}
                    },
                },
                "responses": {"201": {"description": "created"}},
            },
        },
        "/pets/{petId}": {
            "parameters": [
                {
                    "name": "petId",
                    "in": "path",
                    "required": True,
                    "description": "The pet's id",
                    "schema": {"type": "integer"},
                }
            ],
            "get": {
                "operationId": "showPetById",
                "summary": "Info for one pet",
                "responses": {"200": {"description": "ok"}},
            },
            "put": {
                "operationId": "update pet!",
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                    }
                },
                "responses": {"200": {"description": "ok"}},
            },
            "delete": {
                "description": "Remove a pet",
                "responses": {"204": {"description": "gone"}},
            },
        },
        "/pets/{petId}/tags": {
            "post": {
                "operationId": "setTags",
                "parameters": [
                    {"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {"type": "array", "items": {"type": "string"}}
                        }
                    }
                },
                "responses": {"200": {"description": "ok"}},
            }
        },
    },
    "components": {
        "parameters": {
            "Limit": {
                "name": "limit",
                "in": "query",
                "description": "How many pets at most",
                "schema": {"type": "integer", "minimum": 1},
            }
        },
        "schemas": {
            "NewPet": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "description": "The pet's name"},
                    "tag": {"$ref": "#/components/schemas/Tag"},
                },
            },
            "Tag": {"type": "string", "nullable": True, "enum": ["dog", "cat", None]},
            "Pet": {
                "allOf": [
                    {"$ref": "#/components/schemas/NewPet"},
                    {
                        "type": "object",
                        "properties": {
                            "id": {"type": "integer", "readOnly": True},
                            "friends": {
                                "type": "array",
                                "items": {"$ref": "#/components/schemas/Pet"},
                            },
                        },
                    },
                ]
            },
        },
    },
}


def build_app(state: ServerState) -> ASGIApp:
    async def echo(request: Request) -> Response:
        body = (await request.body()).decode("utf-8", "replace")
        return JSONResponse(
            {
                "method": request.method,
                "path": request.scope["raw_path"].decode("latin-1"),
                "query": request.scope["query_string"].decode("latin-1"),
                "body": body,
                "headers": {k.lower(): v for k, v in request.headers.items()},
            },
            headers={"X-Echo": "1"},
        )

    async def status(request: Request) -> Response:
        code = int(request.path_params["code"])
        return PlainTextResponse(f"boom {code}", status_code=code)

    async def slow(request: Request) -> Response:
        state.started.append(request.url.query)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if await request.is_disconnected():
                state.disconnects.append(request.url.query)
                break
            await asyncio.sleep(0.005)
        return PlainTextResponse("late")

    async def delay(request: Request) -> Response:
        state.delays.append(request.url.query)
        await asyncio.sleep(int(request.query_params["ms"]) / 1000)
        return PlainTextResponse("done")

    async def redirect(request: Request) -> Response:
        code = int(request.query_params.get("code", "302"))
        return RedirectResponse(request.query_params["to"], status_code=code)

    async def fixed_json(request: Request) -> Response:
        return Response('{ "a" : [1, 2.5, "é"] }', media_type="application/json")

    async def fixed_text(request: Request) -> Response:
        return PlainTextResponse("not json {")

    async def spec_json(request: Request) -> Response:
        return JSONResponse(PETSTORE_SPEC)

    async def spec_yaml(request: Request) -> Response:
        return PlainTextResponse(yaml.safe_dump(PETSTORE_SPEC), media_type="application/yaml")

    def authorised(request: Request) -> bool:
        key = request.headers.get("x-api-key")
        if key:
            state.seen_keys.append(key)
        return key is not None

    async def pets(request: Request) -> Response:
        if request.method == "POST":
            data = await request.json()
            if not isinstance(data, dict) or "name" not in data:
                return JSONResponse({"error": "name is required"}, status_code=400)
            pet = {"id": state.next_id, "name": data["name"], "tag": data.get("tag")}
            if request.query_params.get("dryRun") != "true":
                state.pets[state.next_id] = pet
                state.next_id += 1
            return JSONResponse(pet, status_code=201)
        if not authorised(request):
            return JSONResponse({"error": "missing X-Api-Key"}, status_code=401)
        found = list(state.pets.values())
        if "tag" in request.query_params:
            found = [p for p in found if p["tag"] == request.query_params["tag"]]
        limit = int(request.query_params.get("limit", "100"))
        return JSONResponse(found[:limit])

    async def pet(request: Request) -> Response:
        pet_id = int(request.path_params["pet_id"])
        if pet_id not in state.pets:
            return JSONResponse({"error": f"no pet {pet_id}"}, status_code=404)
        if request.method == "DELETE":
            del state.pets[pet_id]
            return Response(status_code=204)
        if request.method == "PUT":
            data = await request.json()
            state.pets[pet_id].update({k: v for k, v in data.items() if k in ("name", "tag")})
        return JSONResponse(state.pets[pet_id])

    async def pet_tags(request: Request) -> Response:
        return JSONResponse(
            {"petId": int(request.path_params["pet_id"]), "tags": await request.json()}
        )

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    routes = Starlette(
        routes=[
            Route("/status/{code:int}", status, methods=methods),
            Route("/slow", slow, methods=methods),
            Route("/delay", delay),
            Route("/redirect", redirect, methods=methods),
            Route("/json", fixed_json),
            Route("/text", fixed_text),
            Route("/v1/openapi.json", spec_json),
            Route("/v1/openapi.yaml", spec_yaml),
            Route("/v1/pets", pets, methods=["GET", "POST"]),
            Route("/v1/pets/{pet_id:int}", pet, methods=["GET", "PUT", "DELETE"]),
            Route("/v1/pets/{pet_id:int}/tags", pet_tags, methods=["POST"]),
        ]
    )

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        # `/echo/...` bypasses the router, whose path patterns stop at a decoded newline.
        if scope["type"] == "http" and scope["path"].startswith("/echo/"):
            await (await echo(Request(scope, receive)))(scope, receive, send)
        else:
            await routes(scope, receive, send)

    return app


class ServerThread:
    """Uvicorn serving `app` on an ephemeral 127.0.0.1 port from a daemon thread."""

    def __init__(self, app: ASGIApp) -> None:
        # IPPROTO_TCP explicitly: asyncio turns on TCP_NODELAY only for sockets whose proto says
        # TCP; without it every answer stalls ~40 ms (Nagle + delayed ACK).
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("test HTTP server did not start")
            time.sleep(0.005)

    def stop(self) -> None:
        """Stop at once: a connection still open is cut, not waited for (uvicorn's graceful
        shutdown would wait for it up to the join's timeout)."""
        self.server.should_exit = True
        self.server.force_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@dataclass
class LocalServer:
    url: str
    state: ServerState


def echoed(output: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(output)
    return data
