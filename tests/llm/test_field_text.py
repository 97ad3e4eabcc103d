"""A streamed JSON answer's string field read as it comes (`FieldText`): the same text
whatever the pieces it arrives in, escapes cut between pieces waited for, what precedes
the field skipped, and an answer begun again read anew."""

from __future__ import annotations

import json

import pytest

from gligabao.llm.streaming import FieldText

ANSWER = 'She said "yes" \\ then left.\nNext: é, 😀 [1].'
DOCUMENT = {"answer": ANSWER, "citations": [{"source": 1, "quote": "answer"}]}


@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 1000])
def test_the_field_is_the_same_whatever_the_pieces(size: int, ascii_only: bool) -> None:
    text = "```json\n" + json.dumps(DOCUMENT, ensure_ascii=ascii_only)  # prompt mode's fence
    heard: list[str] = []
    reader = FieldText("answer", heard.append)
    for start in range(0, len(text), size):
        reader.add(text[start : start + size])
    assert "".join(heard) == ANSWER


def test_an_answer_begun_again_is_read_anew() -> None:
    heard: list[str] = []
    reader = FieldText("answer", heard.append)
    reader.add('{"answer": "first try')
    reader.add(None)
    heard.clear()
    reader.add('{"answer": "second"}')
    assert heard == ["second"]


def test_a_field_that_is_no_string_shows_nothing() -> None:
    heard: list[str] = []
    reader = FieldText("answer", heard.append)
    reader.add('{"answer": 42, "x": "answer"}')
    assert heard == []
