"""`question` (a suspension) and `todowrite` (an echo)."""

from __future__ import annotations

import pytest

from support.builtin_tools import tools_for
from toolnexus import create_toolkit
from toolnexus.types import Answer, Request, ToolContext, pending_of

EXAMPLE = [
    {"question": "Pick a color?", "header": "Choice", "options": ["red", "green"]},
    {"question": "Confirm?"},
]


async def test_question_example_renders_byte_exact() -> None:
    result = await tools_for()["question"].execute({"questions": EXAMPLE})
    assert result.is_error
    assert result.output == "Pick a color? (options: red, green)\nConfirm?"
    request = pending_of(result)
    assert isinstance(request, Request)
    assert request.kind == "question"
    assert request.prompt == "Pick a color? (options: red, green)\nConfirm?"
    assert request.data == {"questions": EXAMPLE}
    assert request.url is None
    assert request.id
    assert result.metadata == {"pending": request}


@pytest.mark.parametrize(
    ("questions", "prompt"),
    [
        ([{"question": "Q?", "options": []}], "Q?"),
        ([{"question": 42, "options": ["a"]}], " (options: a)"),
        ([{"question": "A?", "multiple": True, "header": "H"}, {"question": "B?"}], "A?\nB?"),
        ([{"question": "N?", "options": ["1", "two", "3"]}], "N? (options: 1, two, 3)"),
    ],
)
async def test_question_rendering_rules(questions: list, prompt: str) -> None:
    result = await tools_for()["question"].execute({"questions": questions})
    assert result.output == prompt
    request = pending_of(result)
    assert request is not None and request.data == {"questions": questions}


async def test_each_suspension_has_its_own_id() -> None:
    question = tools_for()["question"]
    first = pending_of(await question.execute({"questions": EXAMPLE}))
    second = pending_of(await question.execute({"questions": EXAMPLE}))
    assert first is not None and second is not None and first.id != second.id


async def test_question_with_answer_returns_its_data_as_compact_json() -> None:
    question = tools_for()["question"]
    answer = Answer(id="q1", ok=True, data={"answers": ["red", "yes"], "note": "é"})
    result = await question.execute({"questions": EXAMPLE}, ToolContext(answer=answer))
    assert not result.is_error
    assert result.output == '{"answers":["red","yes"],"note":"é"}'
    empty = await question.execute({"questions": EXAMPLE}, ToolContext(answer=Answer("q", True)))
    assert empty.output == "{}"


async def test_question_needs_questions() -> None:
    question = tools_for()["question"]
    for args in ({}, {"questions": []}, {"questions": "what?"}):
        result = await question.execute(args)
        assert result.output == "question: questions is required"
        assert pending_of(result) is None


async def test_question_through_the_toolkit() -> None:
    async with await create_toolkit() as tk:
        result = await tk.execute("question", {"questions": EXAMPLE})
        assert pending_of(result) is not None
        answered = await tk.execute(
            "question", {"questions": EXAMPLE}, ToolContext(answer=Answer("x", True, {"a": 1}))
        )
        assert answered.output == '{"a":1}'


async def test_todowrite_echoes_the_list() -> None:
    todos = [
        {"id": "1", "text": "write tests", "completed": True},
        {"id": "2", "text": "ship it", "completed": False},
    ]
    result = await tools_for()["todowrite"].execute({"todos": todos})
    assert result.output == "[x] write tests\n[ ] ship it"
    assert result.metadata == {"todos": todos}
    assert not result.is_error


async def test_todowrite_empty_and_missing() -> None:
    todowrite = tools_for()["todowrite"]
    empty = await todowrite.execute({"todos": []})
    assert (empty.output, empty.metadata) == ("(no todos)", {"todos": []})
    assert (await todowrite.execute({})).output == "todowrite: todos is required"
