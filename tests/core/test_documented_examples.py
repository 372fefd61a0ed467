"""The three documented `to_openai` examples, exactly as a user would run them."""

from __future__ import annotations

import json

from toolnexus import Context, Tool, define_tool, to_openai

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
}


def weather_tool() -> Tool:
    return define_tool(
        name="get_weather",
        description="Current weather for a city",
        input_schema=WEATHER_SCHEMA,
        execute=lambda args, ctx: f"sunny in {args['city']}",
    )


def test_one_tool_becomes_one_openai_entry() -> None:
    get_weather = weather_tool()

    tools = to_openai([get_weather])

    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": WEATHER_SCHEMA,
            },
        }
    ]
    assert all(isinstance(key, str) for key in tools[0]) and "input_schema" not in tools[0]
    assert get_weather.source == "native"


def test_output_drops_into_a_request_body_in_order() -> None:
    get_weather = weather_tool()
    get_time = define_tool(
        name="get_time",
        description="Current time in a city",
        input_schema=WEATHER_SCHEMA,
        execute=lambda args, ctx: "noon",
    )
    body = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Weather in Chennai?"}],
        "tools": to_openai([get_weather, get_time]),
    }

    payload = json.dumps(body)  # no custom encoder needed

    decoded = json.loads(payload)
    assert [t["function"]["name"] for t in decoded["tools"]] == ["get_weather", "get_time"]
    assert decoded["tools"][0]["function"]["parameters"] == WEATHER_SCHEMA


async def test_round_trip_from_model_call_to_result() -> None:
    get_weather = weather_tool()
    tools = {t.name: t for t in [get_weather]}
    # what an OpenAI-style model sends back: the declared name, arguments as a JSON string
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Chennai"}'},
    }

    tool = tools[call["function"]["name"]]
    result = await tool.execute(json.loads(call["function"]["arguments"]), Context())

    assert tool is get_weather
    assert result.output == "sunny in Chennai"
    assert result.is_error is False


def test_no_tools_is_an_empty_list() -> None:
    assert to_openai([]) == []
