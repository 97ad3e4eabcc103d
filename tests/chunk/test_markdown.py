"""``--mode markdown``: sections, tables, fences and images.

What the structure *is* comes from an oracle: markdown-it-py parsing the whole text at
once (``split_markdown`` parses only the parts that may hold structure, so this also
checks that it finds the same headings and tables). Property tests run on markdown
generated from a small grammar (headings of levels 1-6, ATX and setext, paragraphs
with images, lists, fences with blank lines and ``#`` lines inside, tables, quotes,
HTML blocks, CJK and emoji, CRLF and lone CRs); crafted cases check each rule; real
API references from Node.js's documentation check the issue's "done when" at chunk
sizes 256 and 1024.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from gligabao.chunk import ChunkSettings, cut
from gligabao.chunk.markdown import _Document, split_markdown
from gligabao.chunk.text import Chunk, Splitter
from tests.support.chunk_checks import PROPERTY, assert_invariants, reference_tokens
from tests.support.helpers import CORPUS_DIR

NODE_REFERENCES = ("dns.md", "webcrypto.md")

sizes = st.one_of(st.integers(32, 160), st.integers(32, 2000), st.sampled_from([32, 64, 1024]))
overlaps = st.one_of(st.integers(0, 50), st.sampled_from([0, 20, 50]))

_ORACLE = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
_BREAK = re.compile(rb"\r\n|\r|\n")  # CommonMark's line endings
_WS = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


# ------------------------------------------------------------------ the oracle


class Oracle:
    """Headings, fences, tables and paragraphs of a whole-text parse, in bytes."""

    def __init__(self, text: str) -> None:
        self.data = data = text.encode("utf-8", "surrogatepass")
        starts = [0, *(m.end() for m in _BREAK.finditer(data))]
        if starts[-1] != len(data):
            starts.append(len(data))
        self.headings: list[tuple[int, int, int]] = []  # (start, end, level)
        self.fences: list[tuple[int, int]] = []  # trimmed
        self.tables: list[tuple[int, int, str, list[int]]] = []  # start, end, header, rows
        self.paragraphs: list[tuple[int, int]] = []
        tokens = _ORACLE.parse(text)
        for i, t in enumerate(tokens):
            if not t.map:
                continue
            start, end = starts[t.map[0]], starts[t.map[1]]
            if t.type == "heading_open":
                self.headings.append((start, end, int(t.tag[1])))
            elif t.type == "fence":
                self.fences.append(trim(data, start, end))
            elif t.type == "paragraph_open":
                self.paragraphs.append((start, end))
            elif t.type == "table_open":
                rows = [
                    trim(data, starts[r.map[0]], starts[r.map[1]])[0]
                    for r in tokens[i:]
                    if r.type == "tr_open" and r.map and r.map[0] < t.map[1]
                ][1:]
                row, delimiter = _BREAK.split(data[start : starts[t.map[0] + 2]])[:2]
                # In the context, padding and runs of dashes are shortened.
                row = re.sub(rb"[ \t]+", b" ", row)
                delimiter = re.sub(rb"-+", b"-", re.sub(rb"[ \t]+", b" ", delimiter))
                header = (row + b"\n" + delimiter).decode("utf-8", "surrogatepass")
                self.tables.append((*trim(data, start, end), header, rows))

    def sections(self) -> list[tuple[int, int]]:
        return [(s, e) for s, e, level in self.headings if level <= 3]


def trim(data: bytes, start: int, end: int) -> tuple[int, int]:
    while start < end and data[start] in _WS:
        start += 1
    while end > start and data[end - 1] in _WS:
        end -= 1
    return start, end


def tokens_of(data: bytes, start: int, end: int) -> int:
    return reference_tokens(data[start:end].decode("utf-8", "surrogatepass"))


def check_markdown(
    text: str,
    chunks: list[Chunk],
    chunk_size: int,
    overlap: int,
    images: tuple[str, ...] = (),
    oracle: Oracle | None = None,
) -> None:
    """The chunking invariants, and the markdown rules against the oracle's structure
    (``oracle``: the whole parse of ``text``, when the caller has it already)."""
    assert_invariants(text, chunks, chunk_size, overlap)
    oracle = oracle or Oracle(text)
    data = oracle.data
    sections = oracle.sections()
    # No chunk holds an h1-h3 heading but in the headings it starts with.
    for c in chunks:
        for h_start, _ in sections:
            if c.start_offset < h_start < c.end_offset:
                before = bytearray(data[c.start_offset : h_start])
                for s, e in sections:
                    lo, hi = max(s, c.start_offset), min(e, h_start)
                    if lo < hi:
                        before[lo - c.start_offset : hi - c.start_offset] = bytes(hi - lo)
                rest = bytes(before).translate(None, b"\x00 \t\r\n>")
                assert not rest, f"chunk {c.index} holds a heading after {rest[:40]!r}"
    # Each section (a heading with no text of its own before the next one is part of
    # the next one's) starts a chunk, with no overlap, and no chunk runs into one.
    starts, lead = [], -1
    for i, (h_start, h_end) in enumerate(sections):
        start = h_start if lead < 0 else lead
        nxt = sections[i + 1][0] if i + 1 < len(sections) else -1
        if nxt >= 0 and not data[h_end:nxt].strip(b" \t\r\n>"):
            lead = start
            continue
        lead = -1
        starts.append(start)
    if starts and not data[: starts[0]].strip(_WS):
        starts[0] = 0
    for start in starts:
        assert any(c.start_offset == start and c.overlap_tokens == 0 for c in chunks)
        assert not any(c.start_offset < start < c.end_offset for c in chunks)
    # No section before the first heading, one from it on, and in the context.
    first_heading = sections[0][0] if sections else len(data) + 1
    for c in chunks:
        if c.end_offset <= first_heading:
            assert c.section is None and c.anchor is None
        if c.start_offset >= first_heading:
            assert c.section is not None and c.context.endswith("\n")
    # A fence that fits in a chunk is whole in one, and no chunk starts or ends inside.
    for f_start, f_end in oracle.fences:
        if tokens_of(data, f_start, f_end) > chunk_size:
            continue
        assert any(c.start_offset <= f_start and f_end <= c.end_offset for c in chunks)
        for c in chunks:
            assert not f_start < c.start_offset < f_end, f"chunk {c.index} starts in a fence"
            assert not f_start < c.end_offset < f_end, f"chunk {c.index} ends in a fence"
    # A chunk that starts inside a table after its header: the header again, at a row.
    for t_start, t_end, header, rows in oracle.tables:
        for c in chunks:
            if t_start < c.start_offset < t_end:
                context = re.sub(r"-+", "-", re.sub(r"[ \t]+", " ", c.context))
                assert context.endswith(header + "\n"), (c.context, header)
                bounds = [t_start, *rows, t_end]
                row_fits = all(
                    tokens_of(data, r, e) <= chunk_size for r, e in itertools.pairwise(bounds)
                )
                assert c.start_offset in rows or not row_fits
    # An image in a paragraph is never cut.
    for image in images:
        raw = image.encode()
        pos = data.find(raw)
        if pos < 0 or not any(s <= pos < e for s, e in oracle.paragraphs):
            continue
        end = pos + len(raw)
        if reference_tokens(image) > chunk_size:
            continue
        for c in chunks:
            assert not pos < c.start_offset < end, f"chunk {c.index} starts in {image}"
            assert not pos < c.end_offset < end, f"chunk {c.index} ends in {image}"


def check_structure(text: str, oracle: Oracle | None = None) -> None:
    """The headings and tables found by parsing only parts are those of a whole parse."""
    oracle = oracle or Oracle(text)
    doc = _Document(Splitter(text, chunk_size=1024))
    assert [(h.start, h.level) for h in doc.headings] == [(s, lv) for s, _, lv in oracle.headings]
    assert [t.start for t in doc.tables] == [t[0] for t in oracle.tables]


# ------------------------------------------------------------------ generated markdown

WORDS = (
    "alpha", "beta", "gamma", "delta", "Lorem", "ipsum", "dolor", "sit", "amet",
    "数据", "中文字", "检查。", "😀", "👩‍👩‍👧", "e\u0301", "שלום", "x", "note.", "end!", "why?",
    "42", "3.14", "foo_bar", "*em*", "**strong**", "`code`", "[link](http://x.y/z)",
    "<br>", "a|b", "#tag", "\\#", "—", "ok,",
)  # fmt: skip
CODE = (
    "x = 1", "# a comment, not a heading", "", "", "col0 text after a blank", "  indented",
    "if (a < b) { return; }", "## also not a heading", "---", "| a | b |", "<div>",
    "    deeper", "1. not a list", "> not a quote",
)  # fmt: skip

KINDS = (*"hhh", "setext", *"ppp", "list", "fence", "table", "quote", "html", "code", "hr", "odd")
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
titles = st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join)


@st.composite
def markdown(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    """A document, and the images put in its paragraphs.

    Options are tuples: hypothesis caches a strategy whose arguments hash, where one of a
    list would be built again at every draw."""
    images: list[str] = []

    def image() -> str:
        alt = draw(st.lists(st.sampled_from(("a", "wheel", "nut.", "数据", "big one")), max_size=3))
        src = draw(st.sampled_from(("img/{}.png", "<img/{} x.png>", 'i/{}.png "Title. Here"')))
        images.append(f"![{' '.join(alt)}]({src.format(len(images))})")
        return images[-1]

    def paragraph() -> str:
        parts = []
        for _ in range(draw(st.integers(1, 4))):
            parts.append(draw(words))
            if draw(st.integers(0, 4)) == 0:
                parts.append(image())
        return "".join(p + draw(st.sampled_from((" ", " ", "\n", ". "))) for p in parts).strip()

    def block() -> str:
        kind = draw(st.sampled_from(KINDS))
        if kind == "h":
            level = draw(st.integers(1, 6))
            title = draw(titles)
            return "#" * level + " " + title + draw(st.sampled_from(("", "", " ##")))
        if kind == "setext":
            return draw(words) + "\n" + draw(st.sampled_from(("===", "---", "=", "------")))
        if kind == "p":
            return paragraph()
        if kind == "list":
            items = []
            for _ in range(draw(st.integers(1, 6))):
                marker = draw(st.sampled_from(("- ", "* ", "1. ", "2) ", "+ ")))
                item = marker + paragraph().replace("\n", "\n  ")
                extra = draw(st.integers(0, 5))
                if extra == 0:
                    item += "\n  - " + draw(words)
                elif extra == 1:
                    item += "\n\n  ```\n  code in an item\n\n  # still code\n  ```"
                elif extra == 2:
                    item += "\n\n  continued paragraph " + draw(words)
                items.append(item)
            return draw(st.sampled_from(("\n", "\n\n"))).join(items)
        if kind == "fence":
            marker = draw(st.sampled_from(("```", "~~~", "````")))
            lines = draw(st.lists(st.sampled_from(CODE), max_size=12))
            closed = draw(st.integers(0, 6)) > 0
            body = marker + draw(st.sampled_from(("", "python", "js x"))) + "\n"
            body += "".join(line + "\n" for line in lines)
            return body + (marker if closed else "")
        if kind == "table":
            cols = draw(st.integers(1, 4))
            pipes = draw(st.booleans())

            def row(cells: list[str]) -> str:
                inner = " | ".join(cells)
                return f"| {inner} |" if pipes or cols == 1 else inner

            rows = [row([draw(words) for _ in range(cols)]) for _ in range(draw(st.integers(0, 8)))]
            return "\n".join([row([f"H{i}" for i in range(cols)]), row(["---"] * cols), *rows])
        if kind == "quote":
            inner = draw(st.sampled_from(("p", "h")))
            body = paragraph() if inner == "p" else "## " + draw(words)
            return "\n".join("> " + line for line in body.split("\n"))
        if kind == "html":
            return draw(
                st.sampled_from(
                    (
                        "<div>\n# not a heading inside a div\n</div>",
                        "<!-- a comment\n\n# not a heading\n\nstill the comment -->",
                        "<!--\nopen comment\n\nstill open",
                        "<a href='x'>a link</a> then text",
                        "<pre>\n## not a heading\n\n</pre>",
                        "<details>\n\n## a heading after the html block\n",
                    )
                )
            )
        if kind == "code":
            return "    indented code\n\n    # comment\n    more"
        if kind == "hr":
            return draw(st.sampled_from(("***", "---", "___", "- - -")))
        odd = ("#nospace", "# ", "#", "<notatag", "|", "1.", "- ", ">", "  #  x", "-\n  x")
        return draw(st.sampled_from(odd))

    blocks = [block() for _ in range(draw(st.integers(0, 40)))]
    text = "".join(
        b + draw(st.sampled_from(("\n\n", "\n\n", "\n", "\n\n\n", "\n \n"))) for b in blocks
    )
    if draw(st.booleans()):
        text = draw(words) + "\n\n" + text  # a preamble
    newline = draw(st.sampled_from(("\n", "\n", "\r\n", "mixed")))
    if newline == "\r\n":
        text = text.replace("\n", "\r\n")
    elif newline == "mixed":
        lines = text.split("\n")
        ends = draw(
            st.lists(
                st.sampled_from(("\n", "\r\n", "\r")), min_size=len(lines), max_size=len(lines)
            )
        )
        text = "".join(line + end for line, end in zip(lines, ends, strict=True))[:-1]
    return text or "x", tuple(images)


@PROPERTY
@given(doc=markdown(), chunk_size=sizes, overlap=overlaps)
def test_generated_markdown_keeps_every_rule_and_finds_the_structure_of_a_whole_parse(
    doc, chunk_size, overlap
):
    text, images = doc
    oracle = Oracle(text)  # one whole parse for both checks
    # Parsing only parts finds the headings and tables of the whole parse (this was a
    # test of its own, drawing 500 other documents: drawing them is most of the time).
    check_structure(text, oracle)
    chunks = split_markdown(text, chunk_size=chunk_size, overlap_percent=overlap)
    check_markdown(text, chunks, chunk_size, overlap, images, oracle)
    assert split_markdown(text, chunk_size=chunk_size, overlap_percent=overlap) == chunks


@PROPERTY
@given(text=st.text(alphabet="#-=|`~<>*+ \t\n\r1.)[]:!ab中", min_size=1, max_size=600))
def test_markdown_made_of_markup_characters(text):
    oracle = Oracle(text)
    check_structure(text, oracle)
    chunks = split_markdown(text, chunk_size=32, overlap_percent=50)
    check_markdown(text, chunks, 32, 50, oracle=oracle)


# ------------------------------------------------------------------ crafted cases


def words_of(n: int, word: str = "abcd") -> str:
    """``n`` tokens: each "abcd" is one estimated token."""
    return " ".join([word] * n)


def test_each_h1_h2_h3_starts_a_section_and_h4_does_not():
    text = (
        "# Guide\n\nIntro.\n\n## Install\n\nRun it.\n\n#### Detail\n\nMore.\n\n### Linux\n\nApt.\n"
    )
    chunks = split_markdown(text, chunk_size=32, overlap_percent=20)
    assert [c.text for c in chunks] == [
        "# Guide\n\nIntro.",
        "## Install\n\nRun it.\n\n#### Detail\n\nMore.",
        "### Linux\n\nApt.\n",
    ]
    assert [c.section for c in chunks] == ["Guide", "Guide > Install", "Guide > Install > Linux"]
    assert [c.anchor for c in chunks] == ["guide", "install", "linux"]
    assert [c.context for c in chunks] == [c.section + "\n" for c in chunks]
    check_markdown(text, chunks, 32, 20)


def test_text_before_the_first_heading_has_no_section():
    text = "Preamble words here.\n\n## First\n\n" + words_of(40)
    chunks = split_markdown(text, chunk_size=32, overlap_percent=0)
    assert chunks[0].text == "Preamble words here."
    assert (chunks[0].section, chunks[0].anchor, chunks[0].context) == (None, None, "")
    assert chunks[1].text.startswith("## First") and chunks[1].section == "First"


def test_a_heading_with_no_text_of_its_own_joins_the_next_section():
    text = "# Cleaning\n\n## Cleaning Steps\n\nWipe it. Dry it.\n\n## Other\n\nText.\n"
    chunks = split_markdown(text, chunk_size=32, overlap_percent=20)
    assert chunks[0].text == "# Cleaning\n\n## Cleaning Steps\n\nWipe it. Dry it."
    assert chunks[0].section == "Cleaning > Cleaning Steps"
    assert chunks[0].anchor == "cleaning-steps"
    assert chunks[1].section == "Cleaning > Other" and chunks[1].overlap_tokens == 0


def test_section_paths_strip_markup_and_anchors_are_github_slugs_with_duplicates():
    text = (
        "# The `gb` *tool*\n\n## What's new?\n\nA.\n\n## Setup\n\nB.\n\n### Setup\n\nC.\n\n"
        "## Setup\n\nD.\n\n## Ünïcode & [links](http://x)\n\nE.\n"
    )
    chunks = split_markdown(text, chunk_size=32, overlap_percent=0)
    assert [(c.section, c.anchor) for c in chunks] == [
        ("The gb tool > What's new?", "whats-new"),
        ("The gb tool > Setup", "setup"),
        ("The gb tool > Setup > Setup", "setup-1"),
        ("The gb tool > Setup", "setup-2"),
        ("The gb tool > Ünïcode & links", "ünïcode--links"),
    ]


def test_a_long_section_is_split_with_overlap_and_its_first_chunk_has_none():
    paragraphs = [words_of(10, w) for w in ("aaaa", "bbbb", "cccc", "dddd", "eeee", "ffff")]
    text = "## One\n\n" + "\n\n".join(paragraphs) + "\n\n## Two\n\n" + "\n\n".join(paragraphs)
    chunks = split_markdown(text, chunk_size=32, overlap_percent=50)
    one = [c for c in chunks if c.section == "One"]
    two = [c for c in chunks if c.section == "Two"]
    assert len(one) >= 3 and len(two) >= 3
    assert one[0].overlap_tokens == 0 and two[0].overlap_tokens == 0
    assert all(c.overlap_tokens > 0 for c in one[1:] + two[1:])
    assert two[0].text.startswith("## Two") and two[0].start_offset >= one[-1].end_offset
    check_markdown(text, chunks, 32, 50)


def test_a_table_is_split_between_rows_with_its_header_in_every_piece():
    header = "| Name | Value |\n|------|-------|"
    rows = [f"| row{i} {words_of(4)} | {i} |" for i in range(12)]
    text = "## Data\n\nThe table:\n\n" + header + "\n" + "\n".join(rows) + "\n\nAfter.\n"
    chunks = split_markdown(text, chunk_size=48, overlap_percent=0)
    pieces = [c for c in chunks if "| row" in c.text]
    assert len(pieces) >= 3
    assert header in pieces[0].text  # the first piece holds the header itself
    for c in pieces[1:]:
        assert c.text.startswith("| row")  # cut between rows
        assert c.context == "Data\n| Name | Value |\n|---|---|\n"
        assert (c.context + c.text).split("\n")[1] == "| Name | Value |"
    assert all(c.text.endswith("|") or c.text.endswith("After.\n") for c in pieces)
    check_markdown(text, chunks, 48, 0)


def test_the_header_and_first_row_stay_together():
    rows = [f"| r{i} | {words_of(6)} |" for i in range(6)]
    text = "## T\n\n" + words_of(20) + "\n\n| H | V |\n|---|---|\n" + "\n".join(rows) + "\n"
    chunks = split_markdown(text, chunk_size=40, overlap_percent=0)
    holder = next(c for c in chunks if "| H | V |" in c.text)
    assert "| r0 |" in holder.text


def test_a_fenced_block_that_fits_is_never_cut():
    fence = "```python\n" + "\n".join(f"x{i} = {i}  # step. done." for i in range(4)) + "\n```"
    assert reference_tokens(fence) <= 60
    text = "## Code\n\n" + words_of(20) + "\n\n" + fence + "\n\n" + words_of(20) + "\n"
    for overlap in (0, 20, 50):
        chunks = split_markdown(text, chunk_size=60, overlap_percent=overlap)
        assert any(fence in c.text for c in chunks)
        check_markdown(text, chunks, 60, overlap)


def test_a_fenced_block_larger_than_a_chunk_is_cut_at_line_breaks():
    lines = [f"value_{i} = compute({i}, {i + 1})" for i in range(60)]
    fence = "```\n" + "\n".join(lines) + "\n```"
    text = "## Big\n\n" + fence + "\n"
    chunks = split_markdown(text, chunk_size=40, overlap_percent=20)
    assert len(chunks) > 3
    data = text.encode()
    for c in chunks:
        assert c.start_offset == 0 or data[c.start_offset - 1 : c.start_offset] == b"\n"
        assert data[c.end_offset : c.end_offset + 1] in (b"\n", b"")
    check_markdown(text, chunks, 40, 20)


def test_an_image_is_never_cut_and_keeps_its_alt_text():
    image = "![A wheel. Loosen the nuts first. Then lift](img/wheel.png)"
    text = "## Wheels\n\n" + words_of(25) + " " + image + " " + words_of(25) + "\n"
    for overlap in (0, 20, 50):
        chunks = split_markdown(text, chunk_size=32, overlap_percent=overlap)
        assert any(image in c.text for c in chunks)
        check_markdown(text, chunks, 32, overlap, (image,))


def test_setext_headings_start_sections():
    text = "Title\n=====\n\nIntro text.\n\nPart\n----\n\nPart text.\n"
    chunks = split_markdown(text, chunk_size=32, overlap_percent=0)
    assert [c.text for c in chunks] == ["Title\n=====\n\nIntro text.", "Part\n----\n\nPart text.\n"]
    assert [c.section for c in chunks] == ["Title", "Title > Part"]
    assert [c.anchor for c in chunks] == ["title", "part"]


def test_crlf_offsets_are_exact():
    text = "# Über\r\n\r\nÄrger. " + words_of(30) + "\r\n\r\n## Zwei\r\n\r\n中文字。" + words_of(30)
    chunks = split_markdown(text, chunk_size=32, overlap_percent=20)
    data = text.encode()
    for c in chunks:
        assert data[c.start_offset : c.end_offset].decode() == c.text == text[c.start : c.end]
    assert [c.section for c in chunks if c.text.startswith("## Zwei")] == ["Über > Zwei"]
    check_markdown(text, chunks, 32, 20)


def test_hashes_in_fences_html_and_code_are_not_headings():
    text = (
        "## Real\n\n```sh\n# comment\n\n## not a heading\n```\n\n<!-- x\n\n# hidden\n\n-->\n\n"
        "    # indented code\n\n<pre>\n\n## still pre\n\n</pre>\n\nEnd.\n"
    )
    chunks = split_markdown(text, chunk_size=32, overlap_percent=0)
    assert {c.section for c in chunks} == {"Real"}
    check_structure(text)


def test_an_html_comment_ended_in_a_part_not_parsed_is_parsed_again():
    # The comment's end is in a stretch with nothing that looks like structure, so it is
    # skipped at first; the heading after it must not be read as comment.
    text = "<!-- start\n\nplain text\n\nend of the comment -->\n\n# Heading\n\nBody.\n"
    check_structure(text)
    chunks = split_markdown(text, chunk_size=32, overlap_percent=0)
    assert [c.section for c in chunks] == [None, "Heading"]
    assert chunks[1].text == "# Heading\n\nBody.\n"


def test_a_fence_left_open_runs_to_the_end():
    fence = "```\ncode\n\nplain\n\n# not a heading\n\nlast words\n"
    text = "## A\n\n" + words_of(30) + "\n\n" + fence
    check_structure(text)
    chunks = split_markdown(text, chunk_size=32, overlap_percent=20)
    assert chunks[-1].text.endswith(fence) and {c.section for c in chunks} == {"A"}
    check_markdown(text, chunks, 32, 20)


def test_a_long_section_path_is_cut_in_the_context_but_not_in_section():
    text = "# " + words_of(40, "chapter") + "\n\n## " + words_of(5, "part") + "\n\nBody.\n"
    chunks = split_markdown(text, chunk_size=32, overlap_percent=0)
    last = chunks[-1]
    assert last.section == words_of(40, "chapter") + " > " + words_of(5, "part")
    assert last.context == "… > " + words_of(5, "part") + "\n"
    assert reference_tokens(last.context) <= 30


def test_a_heading_larger_than_a_chunk_is_still_cut():
    text = "## " + words_of(100) + "\n\ntext\n"
    chunks = split_markdown(text, chunk_size=32, overlap_percent=20)
    assert len(chunks) > 3
    check_markdown(text, chunks, 32, 20)


def test_empty_and_blank_texts():
    assert split_markdown("") == []
    (chunk,) = split_markdown("  \n\n ")
    assert chunk.text == "  \n\n " and chunk.section is None


# ------------------------------------------------------------------ real documents


def api_references() -> list[tuple[str, str]]:
    """Markdown API references nobody here wrote, shipped in tests/support/corpus: Node.js's
    documentation of dns and webcrypto (MIT), about 50 KB each with many h2/h3 sections,
    tables and code blocks."""
    return [(name, (CORPUS_DIR / name).read_text(encoding="utf-8")) for name in NODE_REFERENCES]


@pytest.mark.parametrize("chunk_size", [256, 1024])
def test_real_api_references(chunk_size):
    for name, text in api_references():
        chunks = split_markdown(text, chunk_size=chunk_size, overlap_percent=20)
        oracle = Oracle(text)
        check_markdown(text, chunks, chunk_size, 20, oracle=oracle)
        check_structure(text, oracle)
        assert len(oracle.sections()) > 10, name
        assert oracle.tables and oracle.fences, name
        continued = [c for c in chunks if c.context.count("\n") > 1]
        if chunk_size == 256:
            assert continued, "some table is cut, its header repeated"


# ------------------------------------------------------------------ small sections packed


def check_packed(text: str, plain: list[Chunk], packed: list[Chunk], least: int) -> None:
    """A cut with ``min_section_tokens = least`` against the cut without: each chunk is one
    of the plain cut's, or a run of its chunks that are whole sections (no overlap), each
    smaller than ``least``, packed into one chunk that still fits."""
    i = 0
    for chunk in packed:
        j = i
        while plain[j].end < chunk.end:
            j += 1
        run = plain[i : j + 1]
        assert run[0].start == chunk.start and run[-1].end == chunk.end, chunk.index
        if len(run) == 1:
            assert chunk.text == run[0].text and chunk.section == run[0].section
        else:
            assert chunk.overlap_tokens == 0
            assert all(c.overlap_tokens == 0 and c.tokens < least for c in run)
            assert chunk.section is not None and chunk.context.endswith("\n")
        i = j + 1
    assert i == len(plain), "every chunk of the plain cut is in one of the packed cut"


@PROPERTY
@given(
    doc=markdown(),
    chunk_size=sizes,
    overlap=overlaps,
    least=st.one_of(st.integers(0, 200), st.sampled_from([0, 1, 32, 1024, 8000])),
)
def test_generated_markdown_with_small_sections_packed(doc, chunk_size, overlap, least):
    text, _ = doc
    plain = split_markdown(text, chunk_size=chunk_size, overlap_percent=overlap)
    packed = split_markdown(
        text, chunk_size=chunk_size, overlap_percent=overlap, min_section_tokens=least
    )
    assert_invariants(text, packed, chunk_size, overlap)
    check_packed(text, plain, packed, least)
    if least == 0:
        assert packed == plain


def test_small_sibling_sections_are_packed_and_keep_their_headings():
    text = (
        "# Changelog\n\nWhat changed.\n\n"
        "## 1.2.0\n\n### Fixed\n\n- a crash\n\n### Added\n\n- a flag\n\n"
        "## 1.1.0\n\n- one fix\n\n"
        "## 1.0.0\n\n" + words_of(60) + "\n\n"
        "# Other\n\n## o1\n\nshort\n\n## o2\n\nshort too\n"
    )
    plain = split_markdown(text, chunk_size=100, overlap_percent=0)
    chunks = split_markdown(text, chunk_size=100, overlap_percent=0, min_section_tokens=30)
    assert [c.section for c in chunks] == [
        "Changelog",  # the parent's own text is not packed with its children
        "Changelog > 1.2.0 … 1.1.0",  # 1.2.0 with its h3 sections, then 1.1.0
        "Changelog > 1.0.0",  # not small
        "Other",  # small as a whole, with its sections: never with 1.0.0's parent
    ]
    assert chunks[1].text.startswith("## 1.2.0") and chunks[1].text.endswith("- one fix")
    assert chunks[1].anchor == "120" and chunks[1].context == "Changelog > 1.2.0 … 1.1.0\n"
    check_packed(text, plain, chunks, 30)
    # One small heading and the sections under it, with no sibling to pack: its own path.
    alone = split_markdown(
        "# T\n\nx " + words_of(40) + "\n\n## A\n\n### a\n\none\n\n### b\n\ntwo\n",
        chunk_size=48,
        overlap_percent=0,
        min_section_tokens=20,
    )
    assert [c.section for c in alone] == ["T", "T > A"]


def test_packed_sections_never_exceed_a_chunk():
    sections = "".join(f"## v{i}\n\n{words_of(12)}\n\n" for i in range(10))
    chunks = split_markdown(sections, chunk_size=40, overlap_percent=20, min_section_tokens=20)
    assert [c.section for c in chunks] == ["v0 … v1", "v2 … v3", "v4 … v5", "v6 … v7", "v8 … v9"]
    assert_invariants(sections, chunks, 40, 20)


def test_a_real_changelog_is_cut_into_fewer_chunks_with_every_heading_kept():
    """pyenv's changelog (tests/support/corpus): ~220 headings, most over a few lines."""
    text = (CORPUS_DIR / "pyenv-CHANGELOG.md").read_text(encoding="utf-8")
    settings = ChunkSettings(chunk_size=1024, overlap_percent=20, mode="markdown")
    plain = cut(text, settings).chunks
    packed = cut(text, replace(settings, min_section_tokens=200)).chunks
    assert len(plain) > 150 and len(packed) < len(plain) / 2
    assert_invariants(text, packed, 1024, 20)
    check_packed(text, plain, packed, 200)
    assert sum(c.tokens < 100 for c in packed) < sum(c.tokens < 100 for c in plain) / 10
    oracle = Oracle(text)
    data = oracle.data
    for start, end, level in oracle.headings:
        holding = [c for c in packed if c.start_offset <= start and end <= c.end_offset + 1]
        heading = data[start:end].decode().strip()
        assert holding, heading
        if level <= 3:  # a section's heading is never in an overlap: in one chunk only
            assert len(holding) == 1, heading
            assert sum(heading in c.text for c in holding) == 1
