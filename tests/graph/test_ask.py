"""`gb ask`: an answer from the memory, its sources the facts of the time asked about
(checked in the request the test server received), each citation checked against its
source and dropped when it fails, no answer shown as known without support, one LLM call
for a question asked twice, and no chat endpoint refused (exit 5).

The test server answers from the sources it is given (source 1, quoting its first
sentence); `server.answer_with` scripts the answers a careless model gives.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from gligabao import Memory
from gligabao.errors import ConfigError
from tests.graph.test_facts import DOCS
from tests.support.helpers import SECRET, absolute, configure, gb, stderr_lines, write
from tests.support.llm_server import answer_sources

QUESTION = "Where does Alice Moreau work?"
FIELDS = {
    "question",
    "at",
    "known_at",
    "answer",
    "citations",
    "dropped_citations",
    "unsupported_sentences",
    "supported",
    "inference_id",
    "cost",
    "reused",
    "sources",
}
CITATION_FIELDS = {
    "n",
    "kind",
    "id",
    "source",
    "line_start",
    "line_end",
    "locations",
    "quote",
    "exact",
    "interval",
}


@pytest.fixture
def remembered(gb_cli, online) -> list[str]:
    """The three years of DOCS remembered in order, each a moment apart: the times just
    after each was stored, to ask what the graph held then."""
    moments = []
    for name, text in DOCS.items():
        write(name, text)
        gb(gb_cli, "remember", name, "--quiet")
        moments.append(datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
        time.sleep(0.01)
    return moments


def _ask(gb_cli, *args: str, code: int = 0) -> dict[str, Any]:
    result = gb(gb_cli, "ask", "--json", *args, code=code)
    [line] = result.stdout.splitlines()
    return json.loads(line)


def _facts(gb_cli, *args: str) -> list[dict[str, Any]]:
    result = gb(gb_cli, "facts", "--json", *args)
    return [json.loads(line) for line in result.stdout.splitlines()]


def _sent(server) -> dict[int, tuple[str, str]]:
    """The sources of the last answer request the server received."""
    body = server.requests_for("answer")[-1].body
    prompt = body["messages"][-1]["content"]
    return answer_sources(prompt.split("<sources>\n", 1)[1].rsplit("</sources>", 1)[0])


def _sent_facts(server) -> set[tuple[str, str]]:
    """Each fact sent: (its sentence, the interval its heading gives)."""
    return {
        (text.split("\n")[0], heading.split(", ")[1])
        for heading, text in _sent(server).values()
        if heading.startswith("fact, ")
    }


def _month_interval(fact: dict[str, Any]) -> str:
    since = fact["valid_at"][:7] if fact["valid_at"] else "?"
    until = fact["invalid_at"][:7] if fact["invalid_at"] else "current"
    return f"{since} -> {until}"


@pytest.mark.parametrize("at", ["2016-01-01", "2019-01-01", "2022-01-01"])
def test_the_facts_sent_for_at_are_those_gb_facts_gives_for_that_time(
    gb_cli, remembered, online, at
) -> None:
    shown = _ask(gb_cli, QUESTION, "--at", at, "-k", "4")
    # What gb facts gives for the question and for the entity it names, at that time.
    wanted = _facts(gb_cli, QUESTION, "--at", at, "-k", "4")
    wanted += _facts(gb_cli, "--about", "Alice Moreau", "--at", at, "-k", "4")
    assert _sent_facts(online) == {(f["fact"], _month_interval(f)) for f in wanted}
    # ...every one true then, and the employer of that time among them.
    true_then = {f["id"] for f in _facts(gb_cli, "--at", at, "-k", "1000")}
    assert {f["id"] for f in wanted} <= true_then
    employer = {"2016-01-01": "Acme Corp", "2019-01-01": "Globex", "2022-01-01": "Initech"}[at]
    assert any(f"works at {employer}" in fact for fact, _ in _sent_facts(online))
    others = {"Acme Corp", "Globex", "Initech"} - {employer}
    assert not any(f"works at {o}" in fact for o in others for fact, _ in _sent_facts(online))
    assert shown["at"].startswith(at) and shown["supported"]
    # The header says the time the answer is true for.
    said = gb(gb_cli, "ask", QUESTION, "--at", at, "-k", "4").stdout
    assert said.splitlines()[0] == f"Answer true at {at}:"


def test_the_facts_sent_for_known_at_are_what_the_graph_held_then(
    backend, gb_cli, remembered, online
) -> None:
    after_2015 = remembered[0]
    _ask(gb_cli, QUESTION, "--known-at", after_2015)
    held = _facts(gb_cli, QUESTION, "--known-at", after_2015, "-k", "6")
    held += _facts(gb_cli, "--about", "Alice Moreau", "--known-at", after_2015, "-k", "6")
    assert _sent_facts(online) == {(f["fact"], _month_interval(f)) for f in held}
    sent = {fact for fact, _ in _sent_facts(online)}
    assert any("works at Acme Corp" in fact for fact in sent)
    assert not any("Globex" in fact or "Initech" in fact for fact in sent)  # not known yet
    passages = [h for h, _ in _sent(online).values() if h.startswith("passage")]
    assert passages == [f"passage, {absolute('y2015.txt')}:1"]  # nor the later texts
    _ask(gb_cli, QUESTION)  # now: the current employer only
    now = {fact for fact, _ in _sent_facts(online)}
    assert any("Initech" in fact for fact in now)
    assert not any("works at Acme Corp" in fact for fact in now)


def test_json_gives_the_answer_its_checked_citations_and_the_call(gb_cli, remembered) -> None:
    shown = _ask(gb_cli, QUESTION)
    assert set(shown) == FIELDS
    assert shown["question"] == QUESTION and shown["at"] is None and shown["known_at"] is None
    [citation] = shown["citations"]
    assert set(citation) == CITATION_FIELDS
    first = shown["sources"][0]
    assert citation["n"] == 1 and citation["kind"] == first["kind"] == "fact"
    assert citation["id"] == first["id"] and citation["exact"] is True
    assert citation["quote"] == "Alice Moreau works at Initech since 2021-09-01."
    assert citation["source"] == absolute("y2021.txt") and citation["line_start"] == 1
    assert citation["interval"] == "2021-09 -> current"
    assert shown["answer"] == f"{citation['quote']} [1]"
    assert shown["supported"] and shown["dropped_citations"] == []
    assert isinstance(shown["inference_id"], int) and shown["reused"] is False


def test_the_terminal_form_lists_each_source_with_its_place_quote_and_interval(
    gb_cli, remembered
) -> None:
    lines = gb(gb_cli, "ask", QUESTION).stdout.splitlines()
    assert lines[0] == "Alice Moreau works at Initech since 2021-09-01. [1]"
    assert f"[1] {absolute('y2021.txt')}:1  2021-09 -> current" in lines
    assert '    "Alice Moreau works at Initech since 2021-09-01."' in lines


def test_the_same_question_twice_makes_one_llm_call(backend, gb_cli, remembered, online) -> None:
    first = _ask(gb_cli, QUESTION, "--at", "2019-01-01")
    again = _ask(gb_cli, QUESTION, "--at", "2019-01-01")
    assert online.calls("answer") == 1
    assert again["inference_id"] == first["inference_id"] and again["reused"] is True
    assert again["cost"] == 0 and again["answer"] == first["answer"]
    _ask(gb_cli, QUESTION, "--at", "2016-01-01")  # other facts: another question
    assert online.calls("answer") == 2


def test_citations_of_a_source_not_given_or_of_words_not_in_it_are_dropped(
    gb_cli, remembered, online
) -> None:
    def careless(question: str, sources: dict[int, tuple[str, str]]) -> dict[str, Any]:
        first = sources[1][1].split("\n")[0]
        return {
            "answer": f"{first} [1]. She runs the company [2]. She has a cat [42].",
            "citations": [
                {"source": 1, "quote": first.upper()},  # found, not as given
                {"source": 2, "quote": "Alice Moreau runs Initech."},  # not in source 2
                {"source": 42, "quote": "a cat"},  # no source 42
            ],
        }

    online.answer_with = careless
    shown = _ask(gb_cli, QUESTION)
    [kept] = shown["citations"]
    assert kept["n"] == 1 and kept["exact"] is False  # in the source's words
    assert kept["quote"] == "Alice Moreau works at Initech since 2021-09-01."
    assert [(d["source"], d["why"]) for d in shown["dropped_citations"]] == [
        (2, "the quote is not in source [2]"),
        (42, "source [42] was not given"),
    ]
    assert shown["supported"]
    assert shown["unsupported_sentences"] == ["She runs the company.", "She has a cat."]
    assert shown["answer"].endswith(
        "[1]. She runs the company. [no source] She has a cat. [no source]"
    )
    result = gb(gb_cli, "ask", QUESTION)
    assert "2 citations dropped: [2] the quote is not in source [2]; [42] source [42] was not " in (
        result.stderr
    )
    assert "She has a cat. [no source]" in result.stdout


def test_an_answer_left_without_support_exits_1_with_the_closest_sources(
    gb_cli, remembered, online
) -> None:
    online.answer_with = lambda question, sources: {
        "answer": "Alice Moreau works at Hooli [1].",
        "citations": [{"source": 1, "quote": "Alice Moreau works at Hooli."}],
    }
    result = gb(gb_cli, "ask", QUESTION, code=1)
    assert "Hooli" not in result.stdout  # never printed as if it were known
    assert stderr_lines(result) == [
        "gb: warning: 1 citation dropped: [1] the quote is not in source [1]",
        "gb: no support in the memory for an answer; the closest sources:",
    ]
    assert result.stdout.startswith(f"[1] {absolute('y2021.txt')}:1  2021-09 -> current\n")
    shown = _ask(gb_cli, QUESTION, code=1)
    assert shown["supported"] is False and shown["citations"] == []
    assert len(shown["dropped_citations"]) == 1 and shown["sources"]

    # A model that finds nothing to cite: the same.
    online.answer_with = lambda question, sources: {"answer": "I do not know.", "citations": []}
    result = gb(gb_cli, "ask", QUESTION, code=1)
    assert "no support in the memory" in result.stderr and "I do not know" not in result.stdout


def test_nothing_found_asks_nothing_and_exits_1(gb_cli, remembered, online) -> None:
    result = gb(gb_cli, "ask", QUESTION, "--session", "no-such-session", code=1)
    assert "nothing in it matches the question" in result.stderr
    assert online.calls("answer") == 0
    shown = _ask(gb_cli, QUESTION, "--session", "no-such-session", code=1)
    assert shown["sources"] == [] and shown["supported"] is False
    assert shown["inference_id"] is None


def test_a_chunk_citation_points_at_the_lines_of_its_quote(gb_cli, online) -> None:
    text = "Minutes of the board.\n\nThe board met in Quito.\nIt chose Greta Keller as chair.\n"
    write("minutes.txt", text)
    gb(gb_cli, "remember", "minutes.txt", "--quiet")

    def from_the_passage(question: str, sources: dict[int, tuple[str, str]]) -> dict[str, Any]:
        [n] = [n for n, (heading, _) in sources.items() if heading.startswith("passage")]
        quote = "It chose Greta Keller as chair."
        return {"answer": f"Greta Keller [{n}].", "citations": [{"source": n, "quote": quote}]}

    online.answer_with = from_the_passage
    [citation] = _ask(gb_cli, "Who chairs the board?")["citations"]
    assert citation["kind"] == "chunk" and citation["interval"] is None
    assert (citation["source"], citation["line_start"], citation["line_end"]) == (
        absolute("minutes.txt"),
        4,
        4,
    )


def test_without_a_chat_endpoint_ask_is_a_configuration_error(
    gb_cli, remembered, monkeypatch
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name)
    configure(monkeypatch, None)
    result = gb(gb_cli, "ask", QUESTION, code=5)
    [line] = stderr_lines(result)
    assert "no chat endpoint is configured" in line
    assert "gb facts" in line and "gb search" in line and SECRET not in line
    with Memory() as memory, pytest.raises(ConfigError, match="no chat endpoint"):
        memory.ask(QUESTION)


def test_memory_ask_answers_what_the_cli_prints_and_streams_the_answer(
    gb_cli, remembered, online
) -> None:
    heard: list[str | None] = []
    with Memory() as memory:
        answered = memory.ask(QUESTION, at="2019-01-01", on_text=heard.append)
    assert answered.supported and answered.citations[0].where == f"{absolute('y2018.txt')}:1"
    assert "".join(p for p in heard if p) == answered.answer  # streamed as it came
    assert _ask(gb_cli, QUESTION, "--at", "2019-01-01") == {
        **answered.as_json(),
        "reused": True,
        "cost": 0.0,
    }
    assert online.calls("answer") == 1


def test_the_answer_model_is_its_own_setting(gb_cli, remembered, online) -> None:
    _ask(gb_cli, QUESTION, "--model", "gpt-4o")
    [request] = online.requests_for("answer")
    assert request.body["model"] == "gpt-4o"
    listed = gb(gb_cli, "inferences", "--stage", "answer", "--json").stdout
    [row] = [json.loads(line) for line in listed.splitlines()]
    assert row["stage"] == "answer" and row["model"].startswith("gpt-4o-")


def test_on_a_terminal_the_answer_streams_then_stays_once_as_checked(remembered, online) -> None:
    from tests.behaviour.test_progress import _run_in_pty
    from tests.support.helpers import gb_env

    online.token_rate = 25  # the answer's ~40 tokens come over more than a second
    screens = _run_in_pty(["ask", QUESTION], gb_env(online))
    answer = "Alice Moreau works at Initech since 2021-09-01. [1]"
    partial = [
        s for s in screens if s and answer.startswith(s[-1]) and s[-1] != answer and len(s[-1]) > 5
    ]
    assert partial, screens  # words shown before the answer was whole
    # The streamed words cleared: the answer once, then its source (a long path may
    # wrap at the terminal's width).
    assert screens[-1][0] == answer
    shown = "".join(screens[-1][1:])
    assert shown.startswith(f"[1] {absolute('y2021.txt')}:1  2021-09 -> current")
    assert shown.endswith('    "Alice Moreau works at Initech since 2021-09-01."')
    assert answer not in shown


def test_a_server_without_structured_output_answers_in_prompt_mode(remembered, online) -> None:
    online.structured_outputs = False  # the schema goes in the prompt; fences, <think>
    heard: list[str | None] = []
    with Memory() as memory:
        answered = memory.ask(QUESTION, on_text=heard.append)
    assert answered.supported and answered.answer.endswith("[1]")
    assert "".join(p for p in heard if p) == answered.answer
