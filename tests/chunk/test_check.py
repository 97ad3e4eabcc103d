"""`check_chunks`: what a chunk may lack when a chatbot gets it alone. Documents with one
planted fault each (a reference to the steps above, a preamble at the top of every
section, a procedure and a table cut across chunks) are flagged for it and nothing else;
a clean document, and one that fits in a chunk, are not flagged."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gligabao.chunk.check import (
    READ_CHARS,
    REFERENCE_PATTERNS,
    check_chunks,
)
from gligabao.chunk.markdown import split_markdown
from gligabao.chunk.text import split_text
from tests.chunk.test_markdown import markdown
from tests.support.chunk_checks import PROPERTY

WARNING = (
    "> **Warning:** never get under a car held up by the jack alone. The jack can slip and "
    "the car can fall on you. Keep hands and feet clear of the car at all times while it "
    "is lifted, and never start the engine."
)


def section(title: str, body: str) -> str:
    return f"## {title}\n\n{body}\n\n"


def steps(n: int, what: str = "Turn the nut on the stud") -> str:
    return "\n".join(
        f"{i}. {what} number {i}, slowly and evenly, then check it." for i in range(1, n + 1)
    )


CLEAN = "# Tyres\n\n" + "".join(
    section(
        title,
        f"The {title.lower()} of a tyre is checked once a month, cold, with a gauge. "
        "Write the figure down and compare it with the one on the door pillar.",
    )
    for title in ("Pressure", "Tread", "Sidewalls", "Valves", "Age")
)


def kinds(text: str, chunk_size: int, **options) -> dict[int, list[str]]:
    chunks = split_markdown(text, chunk_size=chunk_size, overlap_percent=0)
    assert len(chunks) > 1
    return {
        c.chunk.index: [f.kind for f in c.findings]
        for c in check_chunks(text, chunks, chunk_size=chunk_size, **options)
        if c.findings
    }


def test_a_clean_document_is_not_flagged():
    assert kinds(CLEAN, 48) == {}


def test_a_text_that_fits_in_a_chunk_is_not_checked():
    text = "Repeat the steps above.\n\n1. one\n2. two\n"
    assert check_chunks(text, split_text(text, chunk_size=1024)) == []


def test_a_reference_to_the_steps_above_is_flagged_in_its_chunk():
    text = CLEAN + section("Rotation", "Repeat the steps above for the spare wheel too.")
    chunks = split_markdown(text, chunk_size=48, overlap_percent=0)
    checks = check_chunks(text, chunks, chunk_size=48)
    flagged = [c for c in checks if c.findings]
    assert [c.chunk.section for c in flagged] == ["Tyres > Rotation"]
    (finding,) = flagged[0].findings
    assert finding.kind == "reference" and finding.figures["phrase"] == "Repeat the steps above"
    assert "Repeat the steps above" in finding.excerpt and finding.suggestion
    assert flagged[0].chunk.text[finding.figures["at"] :].startswith("Repeat the steps above")


def test_reference_phrases_are_a_list_others_extend():
    text = CLEAN + section("Rotation", "Wie oben beschrieben, the spare too.")
    assert kinds(text, 48) == {}
    extended = (*REFERENCE_PATTERNS, r"wie oben beschrieben")
    assert list(kinds(text, 48, references=extended).values()) == [["reference"]]
    for phrase in ("as mentioned earlier", "the previous step", "see below", "shown above"):
        planted = CLEAN + section("Rotation", f"Do it {phrase}, then stop.")
        assert list(kinds(planted, 48).values()) == [["reference"]], phrase


def test_a_forward_reference_is_flagged_only_where_what_follows_is_cut_off():
    example = "```sh\n" + "gb remember notes.md --chunk-size 512 --overlap 10\n" * 5 + "```"
    followed = CLEAN + section("Example", f"Run the following example:\n\n{example}")
    assert kinds(followed, 160) == {}  # the example is in the same chunk
    cut_off = CLEAN + section("Example", "Run the following example.")
    assert list(kinds(cut_off, 48).values()) == [["reference"]]


def test_a_preamble_repeated_at_the_top_of_sections_is_flagged_with_how_much_it_fills():
    text = "# Wheels\n\n" + "".join(
        section(title, f"{WARNING}\n\nThen {title.lower()} the wheel, as its own part says.")
        for title in ("Loosen", "Lift", "Swap")
    )
    chunks = split_markdown(text, chunk_size=100, overlap_percent=0)
    checks = check_chunks(text, chunks, chunk_size=100)
    assert [[f.kind for f in c.findings] for c in checks] == [
        [],
        ["repeated_start"],
        ["repeated_start"],
    ]
    finding = checks[2].findings[0]
    assert finding.figures["window"] == READ_CHARS
    assert finding.figures["preamble_chars"] == len(WARNING)  # one paragraph, in characters
    assert finding.figures["repeated_chars"] == len(WARNING)  # no overlap
    assert finding.figures["first_chunk"] == 0
    assert f"{len(WARNING)} of its first {READ_CHARS} characters" in finding.said
    assert "move the warning" in finding.suggestion


def test_overlap_alone_is_not_a_repeated_preamble():
    text = "# Long\n\n" + "\n\n".join(
        f"Paragraph {i} says something of its own about wheels and nuts and jacks."
        for i in range(40)
    )
    chunks = split_markdown(text, chunk_size=64, overlap_percent=50)
    assert any(c.overlap_tokens for c in chunks)
    assert not any(c.findings for c in check_chunks(text, chunks, chunk_size=64))


def test_a_procedure_split_across_chunks_is_flagged_where_it_continues():
    text = CLEAN + section(
        "Changing a wheel", "Before you begin, park on level ground.\n\n" + steps(8)
    )
    chunks = split_markdown(text, chunk_size=80, overlap_percent=0)
    checks = check_chunks(text, chunks, chunk_size=80)
    flagged = [c for c in checks if c.findings]
    assert flagged and all([f.kind for f in c.findings] == ["split_procedure"] for c in flagged)
    first = flagged[0].findings[0]
    assert first.figures["parts"] == 8 and 1 < first.figures["part"] <= 8
    assert first.said.startswith(f"starts at step {first.figures['part']} of a numbered procedure")
    assert first.excerpt.startswith(f"{first.figures['part']}. Turn the nut")
    assert "h3 sub-sections" in first.suggestion
    # The same procedure in a chunk large enough for it: whole, not flagged.
    assert kinds(text, 1024 // 4) == {}


def test_a_table_split_across_chunks_is_flagged():
    rows = "\n".join(
        f"| {size} | {size * 10} Nm | check after {size * 5} km |" for size in range(13, 25)
    )
    text = CLEAN + section("Torques", "| size | torque | note |\n| --- | --- | --- |\n" + rows)
    found = kinds(text, 64)
    assert found and all(k == ["split_table"] for k in found.values())


def test_findings_and_checks_as_json():
    text = CLEAN + section("Rotation", "Repeat the steps above for the spare wheel too.")
    chunks = split_markdown(text, chunk_size=48, overlap_percent=0)
    shown = [c.as_json() for c in check_chunks(text, chunks, chunk_size=48)]
    assert all(
        set(c) == {"index", "start_offset", "end_offset", "section", "findings"} for c in shown
    )
    (finding,) = shown[-1]["findings"]
    assert set(finding) == {"kind", "said", "suggestion", "excerpt", "phrase", "at"}


@settings(PROPERTY, max_examples=200)
@given(doc=markdown(), chunk_size=st.sampled_from([32, 64, 160]), overlap=st.sampled_from([0, 20]))
def test_any_markdown_is_checked_and_every_finding_is_well_formed(doc, chunk_size, overlap):
    text, _ = doc
    chunks = split_markdown(text, chunk_size=chunk_size, overlap_percent=overlap)
    checks = check_chunks(text, chunks, chunk_size=chunk_size)
    assert [c.chunk for c in checks] == (chunks if len(chunks) > 1 else [])
    for check in checks:
        for f in check.findings:
            assert f.kind in {"reference", "repeated_start", "split_procedure", "split_table"}
            assert f.said and f.suggestion
            if f.kind == "reference":
                at = f.figures["at"]
                assert " ".join(check.chunk.text[at:].split()).startswith(f.figures["phrase"])
            elif f.kind == "repeated_start":
                assert f.figures["preamble_chars"] <= f.figures["repeated_chars"] <= READ_CHARS
            else:
                assert 1 <= f.figures["part"] <= f.figures["parts"]
                assert f.figures["begins_in"] < check.chunk.index
