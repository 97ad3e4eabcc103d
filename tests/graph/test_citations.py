"""Citations checked against their sources (service/citations.py): markers of sources
no citation holds for taken out, sentences left without one marked."""

from __future__ import annotations

from gligabao.search.hybrid import Hit
from gligabao.service.citations import UNSUPPORTED, check, chunk_source, marked


def _chunk(text: str, first_line: int = 10) -> Hit:
    return Hit(
        score=1.0,
        ranks={},
        artifact_id=7,
        document_id=3,
        source="notes.md",
        start_offset=100,
        end_offset=100 + len(text.encode()),
        line_start=first_line,
        line_end=first_line + text.count("\n"),
        section=None,
        text=text,
        summary=None,
    )


def test_markers_of_unsupported_sources_go_and_their_sentences_are_marked() -> None:
    text = "Alice works at Acme [1]. She lives in Oslo [7]. It rains, e.g. today [1, 7]."
    shown, unsupported = marked(text, {1})
    assert (
        shown
        == f"Alice works at Acme [1]. She lives in Oslo. {UNSUPPORTED} It rains, e.g. today [1]."
    )
    assert unsupported == ["She lives in Oslo."]
    assert marked("Acme. [2]\nOslo [3].", {2, 3}) == ("Acme. [2]\nOslo [3].", [])


def test_a_quote_is_found_exactly_then_tolerantly_and_placed_on_its_lines() -> None:
    sources = [chunk_source(1, _chunk("Minutes.\n\nThe board met in Quito.\nIt chose Greta.\n"))]
    answer = {
        "answer": "Greta chairs it [1].",
        "citations": [
            {"source": 1, "quote": "It chose Greta."},
            {"source": 1, "quote": "the  BOARD met\nin quito"},
            {"source": 1, "quote": "It chose Hugo."},
            {"source": 0, "quote": "Minutes."},
            {"source": True, "quote": "Minutes."},
            {"source": 1, "quote": "  "},
        ],
    }
    checked = check(answer, sources)
    assert [(c.quote, c.exact, c.line_start, c.where) for c in checked.citations] == [
        ("It chose Greta.", True, 13, "notes.md:13"),
        ("The board met in Quito.", False, 12, "notes.md:12"),  # to its sentence's end
    ]
    assert [d.why for d in checked.dropped] == [
        "the quote is not in source [1]",
        "source [0] was not given",
        "source [True] was not given",
        "no quote",
    ]
    assert checked.answer == "Greta chairs it [1]." and checked.unsupported == []


def test_brackets_of_numbers_no_source_has_are_text_not_markers() -> None:
    # A list in an answer's code is not a citation: kept as written, and it supports
    # nothing. A number cited but not given is still a marker, taken out.
    sources = [chunk_source(n, _chunk(f"Grades {n}.")) for n in (1, 2, 3)]
    answer = {
        "answer": "Use bisect [1]. Call grade(s, [60, 70, 80, 90]). See [9].",
        "citations": [{"source": 1, "quote": "Grades 1."}, {"source": 9, "quote": "x"}],
    }
    checked = check(answer, sources)
    assert checked.answer == (
        f"Use bisect [1]. Call grade(s, [60, 70, 80, 90]). {UNSUPPORTED} See. {UNSUPPORTED}"
    )
    assert checked.unsupported == ["Call grade(s, [60, 70, 80, 90]).", "See."]
    assert marked("In [2, 3] out [2].", {2}, markers={1, 2}) == ("In [2, 3] out [2].", [])


def test_a_citation_the_answer_marks_nowhere_supports_nothing() -> None:
    """A small model may list citations whose quotes hold without a marker in its
    answer: they are dropped, said why, and an answer that marks none is not supported
    (gb ask says so and exits 1), rather than listing sources under sentences marked
    `[no source]`."""
    sources = [chunk_source(n, _chunk(f"Fact number {n}.")) for n in (1, 2, 3)]
    answer = {
        "answer": "Northwind builds robots.",
        "citations": [{"source": 2, "quote": "Fact number 2."}, {"source": 3, "quote": "3."}],
    }
    checked = check(answer, sources)
    assert checked.citations == []
    assert [(d.source, d.why) for d in checked.dropped] == [
        (2, "the answer marks it nowhere"),
        (3, "the answer marks it nowhere"),
    ]
    assert checked.answer == f"Northwind builds robots. {UNSUPPORTED}"

    answer["answer"] = "Northwind builds robots [3]. It is in Bergen."
    checked = check(answer, sources)
    assert [c.n for c in checked.citations] == [3]
    assert [(d.source, d.why) for d in checked.dropped] == [(2, "the answer marks it nowhere")]

    # A list in the answer's text is no marker, even holding a source's number.
    answer["answer"] = "Call f([2, 99]) and see [3]."
    checked = check(answer, sources)
    assert [c.n for c in checked.citations] == [3]
    assert [(d.source, d.why) for d in checked.dropped] == [(2, "the answer marks it nowhere")]
