"""`gb chunk-preview` on markdown: small sections packed when the configuration asks
(`[markdown] min_section_tokens`), and `--check`, what a chunk may lack on its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.helpers import CORPUS_DIR, configure, gb

CHANGELOG = CORPUS_DIR / "pyenv-CHANGELOG.md"


def preview(gb_cli, *args: str) -> dict:
    result = gb_cli("chunk-preview", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_min_section_tokens_from_the_file_or_the_environment_packs_sections(
    gb_cli, monkeypatch
) -> None:
    plain = preview(gb_cli, str(CHANGELOG))
    Path("gligabao.toml").write_text("[markdown]\nmin_section_tokens = 200\n")
    packed = preview(gb_cli, str(CHANGELOG))
    assert packed["chunk_count"] < plain["chunk_count"] / 2
    assert packed["tokens"] == plain["tokens"]
    assert any(" … " in (c["section"] or "") for c in packed["chunks"])
    monkeypatch.setenv("GB_MARKDOWN_MIN_SECTION_TOKENS", "0")  # the environment beats it
    assert preview(gb_cli, str(CHANGELOG)) == plain
    shown = json.loads(gb_cli("config", "--json").stdout)["markdown.min_section_tokens"]
    assert shown == {"value": 0, "source": "env GB_MARKDOWN_MIN_SECTION_TOKENS"}


def test_remember_stores_the_packed_cut_and_completes_it_the_same_way(gb_cli, monkeypatch) -> None:
    """The threshold is stored with the document: a later run that completes it (offline
    here, so every stage is left to do) cuts it as the first did, whatever it is set to."""
    configure(monkeypatch, None)
    shutil.copy(CHANGELOG, "CHANGELOG.md")
    Path("gligabao.toml").write_text("[markdown]\nmin_section_tokens = 200\n")
    packed = preview(gb_cli, "CHANGELOG.md")["chunk_count"]
    first = json.loads(gb(gb_cli, "remember", "--json", "CHANGELOG.md").stdout.splitlines()[0])
    assert len(first["chunks"]) == packed
    monkeypatch.setenv("GB_MARKDOWN_MIN_SECTION_TOKENS", "0")
    again = json.loads(gb(gb_cli, "remember", "--json", "CHANGELOG.md").stdout.splitlines()[0])
    assert [c["end_offset"] for c in again["chunks"]] == [c["end_offset"] for c in first["chunks"]]


WARNING = (
    "> **Warning:** never get under a car held up by the jack alone. The jack can slip and "
    "the car can fall on you. Keep hands and feet clear of the car at all times while it "
    "is lifted, and never start the engine."
)
STEPS = "\n".join(
    f"{i}. Turn nut number {i} half a turn anticlockwise, slowly and evenly." for i in range(1, 13)
)
# One of each fault: a preamble at the top of every section, a procedure too long for a
# chunk of 100 tokens, and a chunk that leans on the steps above.
FLAWED = (
    "# Changing a wheel\n\n"
    f"## Loosening\n\n{WARNING}\n\nPark on level ground first.\n\n"
    f"## Lifting\n\n{WARNING}\n\nThen follow these steps.\n\n{STEPS}\n\n"
    "## The other wheels\n\nRepeat the steps above for each other wheel that needs it.\n"
)
CLEAN = "# Tyres\n\n" + "".join(
    f"## {title}\n\nThe {title.lower()} of a tyre is checked once a month, cold, with a "
    "gauge. Write the figure down and compare it with the one on the door pillar.\n\n"
    for title in ("Pressure", "Tread", "Sidewalls", "Valves", "Age")
)
SMALL = ("--chunk-size", "100", "--overlap", "0")


def test_check_flags_each_planted_fault_and_exits_1(gb_cli) -> None:
    Path("wheel.md").write_text(FLAWED)
    result = gb_cli("chunk-preview", "--check", *SMALL, "wheel.md")
    assert result.exit_code == 1, result.stderr
    out = result.stdout
    assert out.startswith("wheel.md: ") and "chunks flagged" in out
    assert 'reference: "Repeat the steps above" points at text' in out
    assert "repeated start: " in out and f"{len(WARNING)} of its first 800 characters" in out
    assert "split procedure: starts at step" in out
    for suggestion in ("say what it refers to", "move the warning", "h3 sub-sections"):
        assert suggestion in out
    assert "Changing a wheel > The other wheels" in out  # the flagged chunk's section


def test_check_passes_a_clean_document(gb_cli) -> None:
    Path("tyres.md").write_text(CLEAN)
    result = gb_cli("chunk-preview", "--check", "--chunk-size", "48", "tyres.md")
    assert result.exit_code == 0, result.stdout
    assert result.stdout.strip() == "tyres.md: 5 chunks, nothing flagged"
    short = gb_cli("chunk-preview", "--check", "-", input="Repeat the steps above.\n")
    assert short.exit_code == 0 and "fits in one chunk, nothing to check" in short.stdout


def test_check_json_gives_every_chunk_with_its_findings(gb_cli) -> None:
    Path("wheel.md").write_text(FLAWED)
    result = gb_cli("chunk-preview", "--check", "--json", *SMALL, "wheel.md")
    assert result.exit_code == 1
    shown = json.loads(result.stdout)
    assert set(shown) == {
        "source",
        "tokens",
        "chunked",
        "chunk_count",
        "flagged_chunks",
        "findings",
        "chunks",
    }
    assert shown["source"] == "wheel.md" and len(shown["chunks"]) == shown["chunk_count"] > 1
    for chunk in shown["chunks"]:
        assert set(chunk) == {"index", "start_offset", "end_offset", "section", "findings"}
        for finding in chunk["findings"]:
            assert {"kind", "said", "suggestion", "excerpt"} <= set(finding)
    found = [f for c in shown["chunks"] for f in c["findings"]]
    assert {f["kind"] for f in found} == {"reference", "repeated_start", "split_procedure"}
    assert shown["findings"] == len(found)
    assert shown["flagged_chunks"] == sum(bool(c["findings"]) for c in shown["chunks"])
    (repeated,) = (f for f in found if f["kind"] == "repeated_start")
    assert repeated["window"] == 800 and repeated["repeated_chars"] >= len(WARNING)
    step = next(f for f in found if f["kind"] == "split_procedure")
    assert step["parts"] == 12 and 1 < step["part"] <= 12


def test_check_walks_folders_and_reads_stdin(gb_cli) -> None:
    Path("docs").mkdir()
    Path("docs/wheel.md").write_text(FLAWED)
    Path("docs/tyres.md").write_text(CLEAN)
    result = gb_cli("chunk-preview", "--check", "-r", *SMALL, "docs")
    assert result.exit_code == 1
    assert "checked 2 documents: 1 flagged" in result.stdout.splitlines()[-1]
    piped = gb_cli("chunk-preview", "--check", "--mode", "markdown", *SMALL, "-", input=FLAWED)
    assert piped.exit_code == 1 and "split procedure" in piped.stdout
    clean = gb_cli("chunk-preview", "--check", "--json", "--chunk-size", "48", "-", input=CLEAN)
    assert clean.exit_code == 0 and json.loads(clean.stdout)["findings"] == 0
