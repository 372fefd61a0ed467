"""`http_tools_from_openapi` on a pet-store spec, against the real local pet store."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.local_http import PETSTORE_SPEC, LocalServer
from toolnexus import create_toolkit, http_tools_from_openapi
from toolnexus.types import Tool


def by_name(tools: list[Tool]) -> dict[str, Tool]:
    return {t.name: t for t in tools}


def absolute_spec(server: LocalServer) -> dict[str, Any]:
    spec = copy.deepcopy(PETSTORE_SPEC)
    spec["servers"] = [{"url": server.url + "/v1"}]
    return spec


async def test_tools_from_url_names_descriptions_and_schemas(server: LocalServer) -> None:
    tools = await http_tools_from_openapi(server.url + "/v1/openapi.json")
    assert [t.name for t in tools] == [
        "listPets",
        "createPet",
        "showPetById",
        "update_pet_",  # sanitised operationId "update pet!"
        "delete__pets__petId_",  # no operationId: <method>_<path>, sanitised
        "setTags",
    ]
    tools_by_name = by_name(tools)
    assert all(t.source == "http" for t in tools)
    list_pets = tools_by_name["listPets"]
    assert list_pets.description == "List pets\n\nPets in the store, optionally filtered by tag."
    # The $ref'd query parameter resolved; the header parameter is not shown to the model.
    assert list_pets.input_schema == {
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "minimum": 1, "description": "How many pets at most"},
            "tag": {"type": "string", "description": "Only pets with this tag"},
        },
    }
    assert tools_by_name["createPet"].input_schema == {
        "type": "object",
        "properties": {
            "dryRun": {"type": "boolean"},
            "name": {"type": "string", "description": "The pet's name"},
            "tag": {"type": ["string", "null"], "enum": ["dog", "cat", None]},
        },
        "required": ["name"],
    }
    assert tools_by_name["showPetById"].input_schema == {
        "type": "object",
        "properties": {"petId": {"type": "integer", "description": "The pet's id"}},
        "required": ["petId"],
    }
    assert tools_by_name["delete__pets__petId_"].description == "Remove a pet"


async def test_allof_body_recursive_ref_and_read_only(server: LocalServer) -> None:
    update = by_name(await http_tools_from_openapi(server.url + "/v1/openapi.json"))["update_pet_"]
    props = update.input_schema["properties"]
    assert list(props) == ["petId", "name", "tag", "friends"]
    assert "id" not in props  # readOnly: assigned by the server, never sent
    assert props["friends"] == {"type": "array", "items": {}}  # Pet → Pet recursion cut
    assert update.input_schema["required"] == ["petId", "name"]


async def test_operations_run_against_the_server(
    pet_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PET_KEY", "k-123")
    tools = await http_tools_from_openapi(
        pet_server.url + "/v1/openapi.json", headers={"X-Api-Key": "${PET_KEY}"}
    )
    async with await create_toolkit(extra_tools=tools, builtins=False) as tk:
        res = await tk.execute("listPets", {"tag": "dog", "limit": 1})
        assert (res.output, res.is_error) == ('[{"id":1,"name":"Rex","tag":"dog"}]', False)
        assert pet_server.state.seen_keys == ["k-123"]

        res = await tk.execute("createPet", {"name": "Nemo", "tag": None, "dryRun": True})
        assert (res.output, res.metadata) == ('{"id":4,"name":"Nemo","tag":null}', {"status": 201})
        assert 4 not in pet_server.state.pets  # dryRun travelled in the query string
        res = await tk.execute("createPet", {"name": "Nemo", "tag": "cat"})
        assert res.output == '{"id":4,"name":"Nemo","tag":"cat"}'
        assert pet_server.state.pets[4]["name"] == "Nemo"

        invalid = await tk.execute("createPet", {"tag": "dog"})
        assert invalid.is_error and "'name' is a required property" in invalid.output

        res = await tk.execute("showPetById", {"petId": 2})
        assert res.output == '{"id":2,"name":"Tom","tag":"cat"}'
        res = await tk.execute("update_pet_", {"petId": 2, "name": "Tommy"})
        assert res.output == '{"id":2,"name":"Tommy","tag":"cat"}'
        res = await tk.execute("delete__pets__petId_", {"petId": 3})
        assert (res.output, res.is_error, res.metadata) == ("", False, {"status": 204})
        res = await tk.execute("showPetById", {"petId": 3})
        assert (res.output, res.is_error) == ('HTTP 404: {"error":"no pet 3"}', True)
        res = await tk.execute("setTags", {"petId": 1, "body": ["good", "boy"]})
        assert res.output == '{"petId":1,"tags":["good","boy"]}'


async def test_missing_header_reaches_the_model_as_the_server_said(pet_server: LocalServer) -> None:
    tools = by_name(await http_tools_from_openapi(pet_server.url + "/v1/openapi.json"))
    res = await tools["listPets"].execute({})
    assert (res.output, res.is_error) == ('HTTP 401: {"error":"missing X-Api-Key"}', True)


async def test_yaml_url_and_files(server: LocalServer, tmp_path: Path) -> None:
    from_yaml_url = await http_tools_from_openapi(server.url + "/v1/openapi.yaml")
    assert len(from_yaml_url) == 6
    spec = absolute_spec(server)
    json_file = tmp_path / "petstore.json"
    json_file.write_text(json.dumps(spec))
    yaml_file = tmp_path / "petstore.yaml"
    yaml_file.write_text(yaml.safe_dump(spec))
    for source in (json_file, str(yaml_file)):
        tools = by_name(await http_tools_from_openapi(source))
        res = await tools["showPetById"].execute({"petId": 1})
        assert res.is_error is False and '"name":' in res.output


async def test_dict_spec_with_base_url_and_include(
    server: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    spec = copy.deepcopy(PETSTORE_SPEC)
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        tools = await http_tools_from_openapi(
            spec,
            base_url=server.url + "/v1/",
            include=["showPetById", "update pet!", "nope"],
        )
    assert [t.name for t in tools] == ["showPetById", "update_pet_"]
    assert caplog.messages == ['[toolnexus] OpenAPI include "nope" matches no operation — ignored']
    res = await tools[0].execute({"petId": 1})
    assert res.is_error is False
    assert spec == PETSTORE_SPEC  # the caller's document is not modified


async def test_server_variables_take_their_defaults(server: LocalServer) -> None:
    port = server.url.rsplit(":", 1)[1]
    spec = copy.deepcopy(PETSTORE_SPEC)
    spec["servers"] = [
        {
            "url": "http://127.0.0.1:{port}/{version}",
            "variables": {"port": {"default": port}, "version": {"default": "v1"}},
        }
    ]
    tools = by_name(await http_tools_from_openapi(spec, include=["showPetById"]))
    assert (await tools["showPetById"].execute({"petId": 1})).is_error is False


async def test_path_parameter_names_beyond_word_characters(server: LocalServer) -> None:
    spec = {
        "openapi": "3.1.0",
        "servers": [{"url": server.url}],
        "paths": {
            "/echo/{item-id}": {
                "get": {
                    "operationId": "getItem",
                    "parameters": [
                        {"name": "item-id", "in": "path", "required": True, "schema": {}},
                        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                        {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                    ],
                }
            }
        },
    }
    (tool,) = await http_tools_from_openapi(spec)
    assert tool.input_schema == {
        "type": "object",
        "properties": {"item-id": {"type": "string"}},
        "required": ["item-id"],
    }
    res = await tool.execute({"item-id": "a/b", "q": 1})
    seen = json.loads(res.output)
    assert (seen["path"], seen["query"]) == ("/echo/a%2Fb", "q=1")


async def test_form_and_text_bodies_and_swagger_2(server: LocalServer) -> None:
    spec = {
        "openapi": "3.0.0",
        "servers": [{"url": server.url}],
        "paths": {
            "/echo/form": {
                "post": {
                    "operationId": "form",
                    "requestBody": {
                        "content": {
                            "application/x-www-form-urlencoded": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"a": {"type": "string"}},
                                }
                            }
                        }
                    },
                }
            },
            "/echo/text": {
                "put": {
                    "operationId": "text",
                    "requestBody": {
                        "required": True,
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                }
            },
        },
    }
    tools = by_name(await http_tools_from_openapi(spec))
    seen = json.loads((await tools["form"].execute({"a": "x y"})).output)
    assert seen["body"] == "a=x+y"
    assert tools["text"].input_schema["required"] == ["body"]
    seen = json.loads((await tools["text"].execute({"body": "hello"})).output)
    assert seen["body"] == "hello"

    host = server.url.removeprefix("http://")
    swagger = {
        "swagger": "2.0",
        "host": host,
        "basePath": "/echo",
        "schemes": ["http"],
        "paths": {
            "/things/{id}": {
                "post": {
                    "operationId": "addThing",
                    "parameters": [
                        {"name": "id", "in": "path", "required": True, "type": "string"},
                        {"name": "verbose", "in": "query", "type": "boolean"},
                        {
                            "name": "payload",
                            "in": "body",
                            "required": True,
                            "schema": {
                                "type": "object",
                                "required": ["label"],
                                "properties": {"label": {"type": "string"}},
                            },
                        },
                    ],
                }
            }
        },
    }
    (tool,) = await http_tools_from_openapi(swagger)
    assert tool.input_schema["required"] == ["id", "label"]
    seen = json.loads((await tool.execute({"id": "7", "verbose": True, "label": "L"})).output)
    assert (seen["path"], seen["query"], seen["body"]) == (
        "/echo/things/7",
        "verbose=true",
        '{"label":"L"}',
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"openapi": "3.0.0", "paths": {}}, None),  # no operations: no tools, no error
        (
            {"openapi": "3.0.0", "servers": [{"url": "/api"}], "paths": PETSTORE_SPEC["paths"]},
            "is relative",
        ),
        ({"openapi": "3.0.0", "paths": PETSTORE_SPEC["paths"]}, "has no servers entry"),
        ({"openapi": "3.0.0", "paths": []}, "is not an OpenAPI document"),
        ({"hello": "world"}, "is not an OpenAPI document"),
    ],
)
async def test_bad_dict_specs(spec: dict[str, Any], message: str | None) -> None:
    if message is None:
        assert await http_tools_from_openapi(spec) == []
        return
    with pytest.raises(ValueError, match=message):
        await http_tools_from_openapi(spec)


async def test_bad_sources_are_precise_errors(server: LocalServer, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"OpenAPI spec file not found: .*missing\.yaml"):
        await http_tools_from_openapi(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("openapi: [unclosed\n")
    with pytest.raises(ValueError, match="is neither JSON nor YAML"):
        await http_tools_from_openapi(broken)
    with pytest.raises(ValueError, match=r"cannot fetch OpenAPI spec .*: HTTP 404"):
        await http_tools_from_openapi(server.url + "/status/404")
    with pytest.raises(TypeError, match="include must be a list"):
        await http_tools_from_openapi({"paths": {}}, include="listPets")
    with pytest.raises(ValueError, match="url must start with http"):
        await http_tools_from_openapi(PETSTORE_SPEC, base_url="api.test/v1")


async def test_yaml_dates_stay_strings(tmp_path: Path, server: LocalServer) -> None:
    spec_file = tmp_path / "dated.yaml"
    spec_file.write_text(
        "openapi: 3.0.0\n"
        "info: {title: t, version: 2024-01-01}\n"
        f"servers: [{{url: '{server.url}'}}]\n"
        "paths:\n"
        "  /echo/d:\n"
        "    get:\n"
        "      operationId: byDay\n"
        "      parameters:\n"
        "        - {name: day, in: query, schema: {type: string, default: 2024-01-01}}\n"
    )
    (tool,) = await http_tools_from_openapi(spec_file)
    assert tool.input_schema["properties"]["day"] == {"type": "string", "default": "2024-01-01"}
    json.dumps(tool.input_schema)  # declarations must serialise
