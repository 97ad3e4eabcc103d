"""`split_markdown`: cut markdown along its structure (``--mode markdown``).

The structure comes from markdown-it-py (CommonMark with GFM tables). The cut:

- every h1, h2 and h3 heading (ATX or setext, at any depth) starts a *section*, and
  each section is cut as a region of its own, so no chunk spans two sections and
  a chunk holds such a heading only at its start. Text before the first heading
  is a section without a heading (``section`` None). A heading with no text of
  its own before the next one joins that next section: its line opens the next
  section's first chunk, and the section path is the next heading's;
- within a section the units are its blocks: paragraphs, a list or block quote
  that fits in a chunk (else its items and their blocks, recursively), fenced and
  indented code blocks, HTML blocks, tables, h4-h6 headings; a heading is packed
  with the block after it. Units are packed as in text mode, with overlap within the
  section; the first chunk of a section has no overlap. A section that fits in a
  chunk is one chunk;
- a fenced code block that fits in a chunk is never cut: no chunk, overlap
  included, starts or ends inside it. A larger one is cut at line breaks (so is
  an indented code block, where parsed: see Speed);
- a table is cut between rows only (a row larger than a chunk aside): the header
  row, its delimiter row and the first body row are one unit, every other row a
  unit. Every chunk that starts inside a table after its header gets the header
  and delimiter rows in its ``context`` (padding and runs of dashes shortened);
- an image (``![alt](src)``) is never cut: it stays in the chunk text whole, alt
  text included, and nothing is added for it. Images are found by markdown-it's
  inline parser from the start of the image's line through the two lines after,
  so one that runs on over more lines may be cut.

Small sections (``min_section_tokens`` above 0, ``[markdown] min_section_tokens``): the
rule above is relaxed for sections smaller than that. A section here is a heading with all
below it (up to the next heading of its level or above); consecutive siblings (one parent)
smaller than the threshold are packed, whole and in order, into one chunk up to
``chunk_size``, each keeping its heading in the text. Such a chunk has no overlap; its
``section`` names the parent, then its first and last: "Changelog > 1.2.0 … 1.0.0" (one
small heading packed with the sections below it: its own path), its ``anchor`` that of
the first. A section that is not small is cut as before, its small children packed the
same way; the text before the first heading is never packed.

Each chunk's ``section`` is the heading path ("Cleaning > Cleaning Steps", plain
text, inline markup stripped), ``anchor`` the GitHub-style slug of its section's
own heading (lowercase, punctuation dropped, spaces made hyphens; duplicates get
-1, -2, ...; None when empty), and ``context`` the section path (cut to about 30
tokens) on a line of its own, plus the repeated table header where one applies;
"" before the first heading outside tables. The context is what is put before the
chunk text when it is embedded and keyword-indexed; it is never part of the stored
text, its offsets or its ``tokens``, so the embedded text may exceed ``chunk_size``
by the context.

Speed. markdown-it-py parses about 4 MB/s, several times slower than the text cut,
so only the parts of a text that may hold structure are parsed. The text is cut
into *segments* where a parse starts afresh: a line at column 0 after a blank
line, or any line after a blank line when the segment so far has no fence, HTML
block or list item. A segment with no line that may be an ATX heading, a setext
underline or table delimiter row, a code fence or (by markdown-it's own start
patterns) an HTML block is not parsed: its blocks are its blank-line runs, and
the list items of a run larger than a chunk. The other segments are parsed as one
document, with a thematic break before one that starts indented or with a list
item, so that no list runs on across a skipped segment. A fence or HTML block
the parse leaves open across a skipped segment covers it; an HTML block is parsed
again with the segment that ends it. So the headings, fences and tables found are
those a parse of the whole text finds (the tests check it).

Most flagged segments start (at column 0) a block whose extent their lines tell
without a parse: a heading (ATX, or setext of one line), with at most a paragraph of
plain lines after it in its segment; a fence, to its closing line, with only blank
lines after that in its segment; an HTML block that ends in its segment. Those *lone*
blocks are read as markdown-it's rules read them, and not parsed; where a block of the
parse runs across one (a fence or HTML block left open), that one is parsed after all,
so what is parsed, and found, is what it would be with no lone blocks. Block starts,
atoms and images are looked for only in the sections that are cut: most fit in one
chunk.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, pairwise
from operator import attrgetter

from markdown_it import MarkdownIt
from markdown_it.rules_block import heading as heading_rule
from markdown_it.rules_block import html_block as html_block_rule
from markdown_it.rules_block.html_block import HTML_SEQUENCES
from markdown_it.rules_inline import image as markdown_image

from gligabao.chunk.text import _SPACE, Chunk, Splitter
from gligabao.chunk.tokens import Estimator, Tokenizer, token_marks

CONTEXT_PATH_TOKENS = 30  # the section path in a chunk's context is cut to about this


def _block_parser() -> MarkdownIt:
    """CommonMark with GFM tables, block structure only (inline parsing is done for
    the few places that need it). ATX headings and HTML blocks are tried right after
    indented code: of the rules between, none matches a line that starts with "#" or
    "<", so the parse is the same, only sooner."""
    md = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    ruler = md.block.ruler
    for name, rule in (("heading", heading_rule), ("html_block", html_block_rule)):
        ruler.disable(name)
        ruler.before(
            "fence", f"{name}_first", rule, {"alt": ["paragraph", "reference", "blockquote"]}
        )
    return md


_BLOCKS = _block_parser()
_PLAIN = MarkdownIt("commonmark")  # heading text
_IMAGES = MarkdownIt("commonmark")  # where images are: see _find_images
_SEPARATOR = "***\n\n"  # between parsed segments: ends lists, is inside a fence or HTML

# The scans below run over b"\n" + text (lone CRs made LFs), so a match's start is
# the start of the line it matches, in the text's own offsets.
# A blank line, then a line that is not: the start of a run of lines.
_RUN = re.compile(rb"\n[ \t]*\r?\n(?=[ \t]*[^ \t\r\n])")
# Lines after which the parser's state may outlast a blank line: fences, HTML
# blocks, list items.
_OPEN = re.compile(rb"\n[ \t]*(?:`{3}|~{3}|<|(?:[*+-]|[0-9]{1,9}[.)])(?:[ \t]|\r?\n))")
# Lines that may be structure the parser must see, behind any container prefix: an
# ATX heading, a fence; a setext underline or a table delimiter row; and lines that
# start with "<", an HTML block if markdown-it's own start patterns say so.
_STRUCTURE = re.compile(
    rb"\n[ \t>*+\-0-9.)]*(?:`{3}|~{3}|#)"
    rb"|\n[ \t>*+\-0-9.):=|]*[-=|:][ \t>*+\-0-9.):=|]*\r?(?=\n|\Z)"
)
_ANGLE = re.compile(rb"\n[ \t>*+\-0-9.)]*<")
# How an HTML block starts: a line that is a lone open or close tag (the kind that
# cannot interrupt a paragraph) ends with ">", so that pattern is tried on those only.
_HTML_STARTS = [start for start, _, interrupts in HTML_SEQUENCES if interrupts]
_HTML_TAG_LINE = [start for start, _, interrupts in HTML_SEQUENCES if not interrupts]
_ITEM = re.compile(rb"\n[ \t]*(?:[*+-]|[0-9]{1,9}[.)])(?:[ \t]|\r?\n)")
# A segment that is one heading, maybe a paragraph after it, then blank lines, with no
# CR or NUL (which markdown-it would change first): an ATX heading, its "#"s and the
# rest of its line; or a setext heading of one line of text and its underline. Each line
# of its text or paragraph starts with a letter and holds no "|", so that it can start
# no other block, nor continue one.
_PLAIN_LINES = rb"((?:\n[A-Za-z][^\r\n\x00|]*)*)[ \t\r\n]*"
_ATX_ALONE = re.compile(rb"(#{1,6})((?:[ \t][^\r\n\x00]*)?)" + _PLAIN_LINES)
_SETEXT_ALONE = re.compile(rb"([A-Za-z][^\r\n\x00|]*)\n {0,3}(=+|-+)[ \t]*" + _PLAIN_LINES)
_ASCII_LETTERS = bytes(range(65, 91)) + bytes(range(97, 123))
# A fence's opening line: its marker run and its info string.
_FENCE = re.compile(rb"(`{3,}|~{3,})([^\n]*)")
_BLANK_LINE = re.compile(rb"\n[ \t\r]*\n")
_BLANK = b" \t\r\n"  # what a blank line holds (a form feed is text to markdown-it)
_PLUS_ONE = (1).__add__
_START = attrgetter("start")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_PADDING = re.compile(r"[ \t]{2,}")
_DASHES = re.compile(r"-{4,}")
_LONE_CR = re.compile(rb"\r(?!\n)")

_CONTAINERS = frozenset({"bullet_list", "ordered_list", "list_item", "blockquote"})
_CODE = frozenset({"fence", "code_block"})
_CUT_BY_PARTS = _CONTAINERS | _CODE | {"table"}  # when larger than a chunk
_INLINE_MARKUP = re.compile(r"[\\`*_\[\]<>!&\n]")
_ONE_CODE_SPAN = re.compile(r"`([^`]+)`")
_SLUG_ASCII_DROP = re.compile(r"[^a-z0-9 _-]")


def split_markdown(
    text: str,
    *,
    chunk_size: int = 1024,
    overlap_percent: int = 20,
    tokenizer: Tokenizer | None = None,
    min_section_tokens: int = 0,
) -> list[Chunk]:
    """Cut markdown ``text`` into chunks of at most ``chunk_size`` tokens by its sections.

    Every chunk is still an exact slice of ``text``; ``section``,
    ``anchor`` and ``context`` say where it sits (see the module docstring). A
    chunk's ``tokens`` count its text only: what is embedded, ``context + text``,
    can be larger than ``chunk_size`` by the context (a short section path, and a
    table's header rows for a chunk that continues a table).

    With ``min_section_tokens`` above 0, consecutive sibling sections smaller than that
    are packed into one chunk (see the module docstring, Small sections).
    """
    splitter = Splitter(
        text, chunk_size=chunk_size, overlap_percent=overlap_percent, tokenizer=tokenizer
    )
    return markdown_chunks(splitter, min_section_tokens=min_section_tokens)


def markdown_chunks(splitter: Splitter, *, min_section_tokens: int = 0) -> list[Chunk]:
    """`split_markdown` of a text whose `Splitter` is made (and its tokens counted) already."""
    if not splitter.data:
        return []
    return _Document(splitter).chunks(splitter.tokenizer, min_section_tokens)


# --------------------------------------------------------------------------- structure


class _Node:
    """A block of the parse, in byte offsets of the text: ``[start, end)`` whole lines."""

    __slots__ = ("children", "content", "end", "kind", "level", "section", "start")

    def __init__(
        self, kind: str, start: int, end: int, children: list[_Node] | tuple[()] = ()
    ) -> None:
        self.kind = kind
        self.start = start
        self.end = end
        self.children = children  # a list for a block that may hold others: () for a leaf
        self.level = 0  # a heading's level
        self.content = ""  # a heading's inline source
        self.section = False  # is or holds an h1-h3 heading


@dataclass(slots=True)
class _Heading:
    start: int  # the start of its first line
    end: int  # the end of its last line
    level: int
    text: str
    anchor: str | None
    path: str = ""


@dataclass(slots=True)
class _Table:
    start: int  # the first byte of the header row
    end: int  # the end of the last row
    header: str  # the header and delimiter rows


class _Document:
    """The structure of one markdown text and its cut."""

    def __init__(self, splitter: Splitter) -> None:
        self.splitter = splitter
        self.data = data = splitter.data
        self.chunk_size = splitter.chunk_size
        # CommonMark breaks lines at CR too: make lone CRs LFs, at the same offsets.
        scan = _LONE_CR.sub(b"\n", data) if b"\r" in data else data
        self.scan = scan
        self.lined = b"\n" + scan  # a match's start in it is a line start in scan
        # Of the section being cut (`_cut`): block starts, atoms, blocks holding images.
        self.starts: list[int] = []
        self.atoms: list[tuple[int, int]] = []
        self.image_blocks: list[tuple[int, int]] = []  # blocks holding "![": see _images
        self.headings: list[_Heading] = []
        self.tables: list[_Table] = []
        self.top: list[_Node] = []  # the top-level blocks, parsed or lone
        self.spans: list[tuple[int, int]] = []  # where each of them is
        self.gaps: list[tuple[int, int]] = []  # text not parsed, and not inside a block
        self._slugs: dict[str, int] = {}
        self._structure()

    # ---------------------------------------------------------------- segments

    def _structure(self) -> None:
        scan, lined = self.scan, self.lined
        runs = [0] + [m.end() - 1 for m in _RUN.finditer(lined)]
        # Segment bounds: where a parse may start afresh. A run at column 0 always
        # (the state a blank line leaves there is fresh, unless a fence or HTML block
        # is open, which the parse sees); an indented run only when every run of the
        # segment before it was plain (no fence, HTML block or list item).
        bounds: list[int] = []
        plain = True
        prev = 0
        for run in runs:
            if run == 0 or scan[run] not in b" \t":
                bounds.append(run)
                plain = True
            elif plain and not _OPEN.search(lined, prev, run):
                bounds.append(run)
            else:
                plain = False
            prev = run
        flagged = {bisect_right(bounds, m.start()) - 1 for m in _STRUCTURE.finditer(lined)}
        for m in _ANGLE.finditer(lined):
            segment = bisect_right(bounds, m.start()) - 1
            if segment in flagged:
                continue
            end = lined.find(b"\n", m.end())
            line = lined[m.end() - 1 : end if end >= 0 else len(lined)].rstrip()
            text = line.decode("utf-8", "surrogatepass")
            if any(start.search(text) for start in _HTML_STARTS) or (
                line.endswith(b">") and any(start.search(text) for start in _HTML_TAG_LINE)
            ):
                flagged.add(segment)
        bounds.append(len(scan))
        self.runs = runs
        # Lone blocks (a heading, a fence, an HTML block: most of what is flagged, as a
        # rule) are not parsed: their nodes are made here.
        lone = self._lone_blocks(bounds, flagged)
        while True:
            skipped = set().union(*(range(i, stop) for i, (_, stop) in lone.items()))
            parse = flagged - skipped
            pieces = self._pieces(bounds, parse)
            tokens, starts, ends, piece_lines = self._parse(pieces)
            more, spanned = self._recheck(tokens, ends, pieces, piece_lines, bounds, sorted(lone))
            if spanned:
                # A block of the parse runs across lone blocks (a fence or HTML block
                # left open): those are parsed after all, and the parse done again, so
                # that what is parsed is always what would be with no lone blocks.
                for i in spanned:
                    del lone[i]
                continue
            if not more - flagged:
                break
            flagged |= more
        lone_nodes = [node for nodes, _ in lone.values() for node in nodes]
        self._build(tokens, starts, ends, self._pieces(bounds, parse | skipped), lone_nodes)

    def _lone_blocks(
        self, bounds: list[int], flagged: set[int]
    ) -> dict[int, tuple[list[_Node], int]]:
        """The flagged segments that start a block markdown-it would find whole without
        a parse, read as its rules read them, by segment: the block's node (a heading's,
        and the paragraph's after it) and the segment after its last. Each starts at
        column 0 after a blank line, where the parse starts afresh unless a fence or
        HTML block is open (see _recheck)."""
        scan = self.scan
        lone: dict[int, tuple[list[_Node], int]] = {}
        stop = 0
        for i in sorted(flagged):
            if i < stop:
                continue  # inside a lone fence
            start, end = bounds[i], bounds[i + 1]
            first = scan[start]
            if first == 35 or first in _ASCII_LETTERS:  # "#", or a setext heading's text
                nodes = self._lone_heading(start, end)
                if nodes is not None:
                    lone[i] = (nodes, i + 1)
            elif first == 60:  # "<"
                node = self._lone_html(start, end)
                if node is not None:
                    lone[i] = ([node], i + 1)
            elif first in b"`~":
                node = self._lone_fence(start)
                if node is None:
                    continue
                last = bisect_right(bounds, node.end - 1) - 1  # the closing line's segment
                if scan[node.end : bounds[last + 1]].strip(_BLANK):
                    continue  # more after the closing line in its segment: parsed
                stop = last + 1
                lone[i] = ([node], stop)
        return lone

    def _lone_heading(self, start: int, end: int) -> list[_Node] | None:
        """The heading of the segment ``[start, end)``, and the paragraph after it, if
        the segment is just those (an ATX heading, or a setext heading of one line of
        text), read as markdown-it's rules read them: the heading's level, and its text
        without a closing run of "#". None where markdown-it is left to read it: the
        segment is no such heading, or its text would start or end with whitespace that
        markdown-it's trim may take (which differs between its versions)."""
        scan = self.scan
        match = _ATX_ALONE.fullmatch(scan, start, end)
        if match is not None:
            level = match.end(1) - start
            text = self.data[match.start(2) : match.end(2)].decode("utf-8", "surrogatepass")
            text = text.rstrip(" \t")
            closed = text.rstrip("#")
            if closed[-1:] in (" ", "\t"):
                text = closed
        else:
            match = _SETEXT_ALONE.fullmatch(scan, start, end)
            if match is None:
                return None
            level = 1 if scan[match.start(2)] == 61 else 2  # "=" or "-"
            text = self.data[start : match.end(1)].decode("utf-8", "surrogatepass")
        text = text.strip(" \t")
        if text[:1].isspace() or text[-1:].isspace():
            return None
        paragraph = match.start(3)  # the line break before it, if any
        line_end = scan.find(b"\n", match.end(2), end)
        heading = _Node("heading", start, end if line_end < 0 else line_end + 1)
        heading.level = level
        heading.section = level <= 3
        heading.content = text
        if paragraph == match.end(3):
            return [heading]
        line_end = scan.find(b"\n", match.end(3), end)
        return [heading, _Node("paragraph", paragraph + 1, end if line_end < 0 else line_end + 1)]

    def _lone_fence(self, start: int) -> _Node | None:
        """The fence opened by the line at ``start`` (column 0), to its closing line, or
        to the end of the text where none closes it, as markdown-it's fence rule finds
        it: None where that line opens no fence, or may open a table (it holds "|")."""
        scan = self.scan
        opening = _FENCE.match(scan, start)
        if opening is None or b"|" in opening[0]:
            return None
        marker = opening[1][:1]
        if marker == b"`" and b"`" in opening[2]:
            return None  # a backtick fence's info string has no backtick
        close = _fence_close(marker, len(opening[1])).search(scan, opening.end())
        line_end = -1 if close is None else scan.find(b"\n", close.end())
        return _Node("fence", start, len(scan) if line_end < 0 else line_end + 1)

    def _lone_html(self, start: int, end: int) -> _Node | None:
        """The HTML block at ``start`` (column 0) if it ends in its segment with only
        blank lines after it, as markdown-it's HTML block rule finds it: at a blank line,
        or at the line with its closing sequence (a comment's "-->"); else None."""
        body = self.scan[start:end].rstrip(_BLANK)
        if b"\x00" in body or b"\r" in body:
            return None  # a NUL or CR, which the parse changes first
        text = body.decode("utf-8", "surrogatepass")
        first = text.split("\n", 1)[0]
        if "|" in first:
            return None  # it may start a table
        kind = next((seq for seq in HTML_SEQUENCES if seq[0].search(first)), None)
        if kind is None:
            return None
        if kind[1].search(""):  # it ends before a blank line: the segment's first
            if _BLANK_LINE.search(body):
                return None
            last = len(body)  # the end of its last line, but for spaces
        else:  # it ends with the line that holds its closing sequence
            close = kind[1].search(text)
            if close is None:
                return None  # it runs on past its segment
            line_end = text.find("\n", close.end())
            if line_end >= 0 and text[line_end:].strip(" \t\r\n"):
                return None  # more blocks in its segment
            # In its last line: the end of the text, or the line break after the closing
            # sequence (what follows it is blank, ASCII: as many bytes as characters).
            last = len(body) if line_end < 0 else len(body) - (len(text) - line_end)
        line_end = self.scan.find(b"\n", start + last)
        return _Node("html_block", start, len(self.scan) if line_end < 0 else line_end + 1)

    @staticmethod
    def _pieces(bounds: list[int], flagged: set[int]) -> list[tuple[int, int]]:
        """The flagged segments, neighbours joined."""
        pieces: list[tuple[int, int]] = []
        for i in sorted(flagged):
            start, end = bounds[i], bounds[i + 1]
            if pieces and pieces[-1][1] == start:
                pieces[-1] = (pieces[-1][0], end)
            else:
                pieces.append((start, end))
        return pieces

    def _parse(self, pieces: list[tuple[int, int]]):
        """Parse the pieces as one document. Returns its tokens, where each of its lines
        starts and ends in the text (a separator's lines: empty, at the end of the piece
        before) and the first line of each piece."""
        data, scan = self.data, self.scan
        parts: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        piece_lines: list[int] = []
        prev_end = 0
        for start, end in pieces:
            # A piece that starts at column 0, not with a list item, closes any list
            # or quote the piece before left open; before any other, a thematic break
            # does (inside a fence or HTML block left open, it is just a line of it).
            if parts and (scan[start] in b" \t" or _ITEM.match(self.lined, start)):
                parts.append(_SEPARATOR)
                starts += (prev_end, prev_end)
                ends += (prev_end, prev_end)
            piece_lines.append(len(starts))
            parts.append(data[start:end].decode("utf-8", "surrogatepass"))
            line_starts = self._line_starts(start, end)
            starts += line_starts
            ends += line_starts[1:]
            ends.append(end)
            prev_end = end
        tokens = _BLOCKS.parse("".join(parts)) if parts else []
        return tokens, starts, ends, piece_lines

    def _recheck(
        self, tokens, ends, pieces, piece_lines, bounds, lone: list[int]
    ) -> tuple[set[int], set[int]]:
        """Skipped segments a top-level block of the parse runs across that may change
        it: one holding the end of an HTML block left open, or (never expected) any
        block but a fence or HTML block running across one. Those are to be parsed.
        Also the ``lone`` blocks (their first segments, in order) any block runs across."""
        more: set[int] = set()
        spanned: set[int] = set()
        size = len(self.data)
        tail = [(pieces[-1][1], size)] if pieces and pieces[-1][1] < size else []
        piece_of = []  # the piece of each parsed line
        for p, (first, nxt) in enumerate(pairwise([*piece_lines, len(ends)])):
            piece_of += [p] * (nxt - first)
        for token in tokens:
            if token.level or not token.map:
                continue
            first, last = piece_of[token.map[0]], piece_of[token.map[1] - 1]
            open_at_end = token.map[1] == len(ends) and token.type in ("fence", "html_block")
            if first == last and not open_at_end:
                continue
            gaps = [(pieces[p][1], pieces[p + 1][0]) for p in range(first, last)]
            if open_at_end:
                gaps += tail  # left open at the end: it runs on to the end of the text
            for gap_start, gap_end in gaps:
                lo, hi = bisect_left(bounds, gap_start), bisect_left(bounds, gap_end)
                spanned.update(lone[bisect_left(lone, lo) : bisect_left(lone, hi)])
            if not gaps or token.type == "fence":
                continue
            close = None
            if token.type == "html_block":
                line = token.content.split("\n", 1)[0].lstrip(" \t")
                close = next((c for o, c, _ in HTML_SEQUENCES if o.search(line)), None)
            for gap_start, gap_end in gaps:
                if close is not None:
                    gap = self.data[gap_start:gap_end].decode("utf-8", "surrogatepass")
                    if not close.search(gap):
                        continue
                lo = bisect_left(bounds, gap_start)
                more.update(range(lo, bisect_left(bounds, gap_end)))
        return more, spanned

    # ---------------------------------------------------------------- the parse

    def _build(self, tokens, starts, ends, covered, lone: list[_Node]) -> None:
        """Nodes from the tokens, with those of the ``lone`` blocks (not parsed); the
        headings and tables of the whole text. ``covered``: the stretches of text parsed
        or in a lone block; the others are the gaps."""
        size = len(self.data)
        root = _Node("root", 0, size, [])
        stack = [root]
        headings: list[_Node] = []
        tables: list[_Node] = []
        for token in tokens:
            if token.nesting == 1:
                node = _Node(token.type[:-5], -1, -1, [])
                if token.map:
                    node.start, node.end = starts[token.map[0]], ends[token.map[1] - 1]
                if token.type == "heading_open":
                    node.level = int(token.tag[1])
                    node.section = node.level <= 3
                    headings.append(node)
                elif token.type == "table_open":
                    tables.append(node)
                stack[-1].children.append(node)
                stack.append(node)
            elif token.nesting == -1:
                node = stack.pop()
                if node.section:
                    stack[-1].section = True
            elif token.type == "inline":
                if stack[-1].kind == "heading":
                    stack[-1].content = token.content
            elif token.map:
                end = ends[token.map[1] - 1]
                if token.map[1] == len(ends) and token.level == 0:
                    end = size  # a fence or HTML block left open: on to the end
                stack[-1].children.append(_Node(token.type, starts[token.map[0]], end))
        # A separator's paragraph has no length: drop it.
        top = [n for n in root.children if n.end > n.start]
        self.gaps = self._gaps([(n.start, n.end) for n in top], covered)
        self.top = sorted(top + lone, key=_START)
        self.spans = [(n.start, n.end) for n in self.top]
        headings += (node for node in lone if node.kind == "heading")
        for node in sorted(headings, key=_START):
            self._heading(node)
        for node in tables:
            self._table(node)

    def _descend(self, node: _Node) -> None:
        """Block starts inside ``node``, whose own start is one already."""
        kind = node.kind
        if kind not in _CUT_BY_PARTS or (self._fits(node) and not node.section):
            return
        if kind == "table":
            self.starts.extend(row.start for row in _rows(node)[1:])
        elif kind in _CODE:
            self.starts.extend(self._line_starts(node.start, node.end)[1:])
        else:
            for i, child in enumerate(node.children):
                if i:
                    self.starts.append(child.start)
                self._descend(child)

    def _fits(self, node: _Node) -> bool:
        return self.splitter.count(node.start, node.end) <= self.chunk_size

    def _collect(self, node: _Node) -> None:
        """Atoms and blocks holding images in ``node`` and below."""
        kind = node.kind
        if kind == "heading":
            self._atom(node.start, node.end)
        elif kind == "paragraph":
            if self.scan.find(b"![", node.start, node.end) >= 0:
                self.image_blocks.append((node.start, node.end))
        elif kind in _CODE:
            if self._fits(node):
                self._atom(node.start, node.end)
            else:
                bounds = [*self._line_starts(node.start, node.end), node.end]
                for start, end in pairwise(bounds):
                    self._atom(start, end)
        elif kind == "table":
            rows = _rows(node)
            header = node.children[0]  # thead: the header and delimiter rows
            self._atom(header.start, rows[0].start if rows else node.end)
            for row in rows:
                self._atom(row.start, row.end)
        for child in node.children:
            self._collect(child)

    def _table(self, node: _Node) -> None:
        head = node.children[0]  # thead, the header row
        rows = _rows(node)
        header_end = rows[0].start if rows else node.end
        start, _ = self._trim(head.start, header_end)
        # The header and delimiter rows for the context, padding and long runs of
        # dashes shortened: "| Name   |\n| ------ |" is "| Name |\n| --- |".
        text = self.data[head.start : header_end].decode("utf-8", "surrogatepass")
        row, delimiter = [*_LINE_BREAK.split(text), ""][:2]
        header = _PADDING.sub(" ", row) + "\n" + _PADDING.sub(" ", _DASHES.sub("---", delimiter))
        self.tables.append(_Table(start, self._trim(node.start, node.end)[1], header))

    def _gaps(
        self, spans: list[tuple[int, int]], pieces: list[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """The stretches of text between ``pieces`` (what was parsed, and lone blocks)
        but those inside a parsed block that runs across them (a fence left open across
        it), given the ``spans`` of the top-level blocks: they belong to it."""
        gaps = []
        pos = 0
        for start, end in [*pieces, (len(self.data), len(self.data))]:
            if start > pos and not _within(spans, pos, start):
                gaps.append((pos, start))
            pos = end
        return gaps

    def _gap(self, gap_start: int, gap_end: int) -> None:
        """Blocks and atoms of a stretch of text that was not parsed: its runs of lines,
        and the list items of a run larger than a chunk."""
        runs, scan = self.runs, self.scan
        lo, hi = bisect_right(runs, gap_start), bisect_left(runs, gap_end)
        self.starts.append(gap_start)
        self.starts.extend(runs[lo:hi])
        bounds = [gap_start, *runs[lo:hi], gap_end]
        # A run larger than a chunk: cut at its list items, if any.
        if self.splitter.count(gap_start, gap_end) > self.chunk_size:
            for run_start, run_end in pairwise(bounds):
                if self.splitter.count(run_start, run_end) > self.chunk_size:
                    self.starts.extend(
                        m.start() for m in _ITEM.finditer(self.lined, run_start + 1, run_end)
                    )
        pos = scan.find(b"![", gap_start, gap_end)
        while pos >= 0:
            r = bisect_right(bounds, pos) - 1
            self.image_blocks.append((bounds[r], bounds[r + 1]))
            pos = scan.find(b"![", bounds[r + 1], gap_end)

    # ---------------------------------------------------------------- pieces of it

    def _line_starts(self, start: int, end: int) -> list[int]:
        """Where the lines of ``scan[start:end]`` start (``end`` a line end or the end)."""
        if end > start and self.scan[end - 1] == 10:  # a final "\n" starts no line
            end -= 1
        lengths = map(_PLUS_ONE, map(len, self.scan[start:end].split(b"\n")))
        starts = list(accumulate(lengths, initial=start))
        starts.pop()
        return starts

    def _trim(self, start: int, end: int) -> tuple[int, int]:
        data = self.data
        while start < end and data[start] in _SPACE:
            start += 1
        while end > start and data[end - 1] in _SPACE:
            end -= 1
        return start, end

    def _atom(self, start: int, end: int) -> None:
        start, end = self._trim(start, end)
        if start < end:
            self.atoms.append((start, end))

    def _images(self, start: int, end: int) -> list[tuple[int, int]]:
        """The images in the block ``data[start:end]``, as byte spans: each parsed from
        the start of its line, with the two lines after it (an image that runs on
        further is not found, and so may be cut)."""
        scan = self.scan
        spans = []
        pos = scan.find(b"![", start, end)
        while pos >= 0:
            w_start = scan.rfind(b"\n", start, pos) + 1 or start
            w_end = pos
            for _ in range(3):
                w_end = scan.find(b"\n", w_end, end) + 1 or end
            text = self.data[w_start:w_end].decode("utf-8", "surrogatepass")
            for s, e in _find_images(text):
                if len(text) != w_end - w_start:  # not ASCII: characters to bytes
                    s, e = (len(text[:i].encode("utf-8", "surrogatepass")) for i in (s, e))
                spans.append((w_start + s, w_start + e))
            pos = scan.find(b"![", max(w_end, spans[-1][1] if spans else 0), end)
        return spans

    def _heading(self, node: _Node) -> None:
        text = _plain_text(node.content)
        slug = _slug(text)
        # github-slugger: a slug already given gets -1, -2, ... (the first one free).
        anchor = slug
        while anchor in self._slugs:
            self._slugs[slug] += 1
            anchor = f"{slug}-{self._slugs[slug]}"
        self._slugs[anchor] = 0
        self.headings.append(_Heading(node.start, node.end, node.level, text, anchor or None))

    # ---------------------------------------------------------------- the cut

    def _sections(self) -> list[tuple[int, _Heading | None, int]]:
        """(start, heading, first content) of each section: its heading is the one
        whose text it holds, its start that of the empty headings before it."""
        data = self.data
        heads = [h for h in self.headings if h.level <= 3]  # headings are in order
        path: list[_Heading] = []
        for h in self.headings:
            if h.level <= 3:
                path = [p for p in path if p.level < h.level] + [h]
                h.path = " > ".join(p.text for p in path)
        sections: list[tuple[int, _Heading | None, int]] = []
        lead = -1  # the start of the empty headings waiting for the next
        for i, h in enumerate(heads):
            start = h.start if lead < 0 else lead
            nxt = heads[i + 1].start if i + 1 < len(heads) else -1
            if nxt >= 0 and not data[h.end : nxt].strip(b" \t\r\n>"):
                lead = start
                continue
            lead = -1
            sections.append((start, h, h.end))
        if not sections or data[: sections[0][0]].strip(_SPACE):
            sections.insert(0, (0, None, 0))
        else:
            first = sections[0]
            sections[0] = (0, first[1], first[2])
        return sections

    def chunks(self, tokenizer: Tokenizer, min_section_tokens: int = 0) -> list[Chunk]:
        data, splitter = self.data, self.splitter
        sections = self._sections()
        heading_ends = sorted(h.end for h in self.headings)
        ends = [
            self._trim(start, sections[i + 1][0])[1] if i + 1 < len(sections) else len(data)
            for i, (start, _, _) in enumerate(sections)
        ]
        packed = self._packed(sections, ends, min_section_tokens) if min_section_tokens else {}
        paths = [h.path for _, h, _ in sections if h is not None]
        names = [name for _, name, _ in packed.values()]
        path_tokens = iter(_token_counts(paths + names, tokenizer))
        contexts = [
            _context_path(h.path, next(path_tokens), tokenizer) if h is not None else ""
            for _, h, _ in sections
        ]
        packed_contexts = {
            i: _context_path(name, next(path_tokens), tokenizer)
            for i, (_, name, _) in packed.items()
        }
        spans: list[tuple[int, int]] = []
        where: list[tuple[str | None, str | None, str]] = []
        skip_to = 0
        for i, (start, heading, _content) in enumerate(sections):
            if i < skip_to:
                continue  # packed into the chunk of a section before it
            if i in packed:
                stop, name, anchor = packed[i]
                spans.append((start, ends[stop - 1]))
                where.append((name, anchor, packed_contexts[i]))
                skip_to = stop
                continue
            end = ends[i]
            if heading is None:
                info: tuple[str | None, str | None, str] = (None, None, "")
            else:
                info = (heading.path, heading.anchor, contexts[i])
            if splitter.fits(start, end):
                spans.append((start, end))  # the section fits: one chunk
                where.append(info)
                continue
            region = self._cut(start, end, heading_ends)
            spans += region
            # A chunk that starts inside a table, after its header: the header again.
            # (Only a cut section has one: a section starts at its heading.)
            for r_start, _ in region:
                t = bisect_left(self.tables, r_start, key=_START) - 1
                if t >= 0 and r_start < self.tables[t].end:
                    where.append((*info[:2], info[2] + self.tables[t].header + "\n"))
                else:
                    where.append(info)
        return splitter.chunks(spans, where)

    def _packed(
        self, sections: list[tuple[int, _Heading | None, int]], ends: list[int], least: int
    ) -> dict[int, tuple[int, str, str | None]]:
        """The runs of small sections packed into one chunk each, by the index of the
        first section of each run: (the index after its last, its name, its anchor).

        The units packed are the sections of the heading tree: a heading with all below
        it, up to the next heading of its level or above. Sibling units (one parent, in
        order) smaller than ``least`` tokens are packed, as many as fit in a chunk; a
        unit that is not small has its own children packed the same way. A unit whose
        bounds are not those of sections of the cut (an empty deeper heading runs into
        the next one's section) is never packed, nor is the text before the first
        heading."""
        heads = [h for h in self.headings if h.level <= 3]
        head_starts = [h.start for h in heads]
        starts = [start for start, _, _ in sections]
        first_of = {start: i for i, start in enumerate(starts)}
        children: list[list[int]] = [[] for _ in heads]
        top: list[int] = []
        stack: list[int] = []  # the open headings, outermost first
        stop = [len(heads)] * len(heads)  # the next heading of the same level or above
        for k, h in enumerate(heads):
            while stack and heads[stack[-1]].level >= h.level:
                stop[stack.pop()] = k
            (children[stack[-1]] if stack else top).append(k)
            stack.append(k)
        # Each heading's unit as sections [first, after), or None where it has none: a
        # unit starts where its section does when the headings before it there (empty
        # ones joining it) are its parents, and ends where a section starts.
        units: list[tuple[int, int] | None] = []
        for k, h in enumerate(heads):
            first = bisect_right(starts, h.start) - 1
            lead = heads[bisect_left(head_starts, starts[first]) : k]
            after = first_of.get(heads[stop[k]].start) if stop[k] < len(heads) else len(sections)
            parents = all(g.level < h.level for g in lead)
            units.append((first, after) if after is not None and parents else None)
        splitter, chunk_size = self.splitter, self.chunk_size
        packed: dict[int, tuple[int, str, str | None]] = {}

        def span(first: int, after: int) -> tuple[int, int]:
            return starts[first], ends[after - 1]

        def pack(run: list[tuple[int, int, int]], parent: str) -> None:
            """Pack consecutive small units greedily, as many as fit in a chunk each; a
            chunk of one section is left as it is."""
            groups: list[list[tuple[int, int, int]]] = []
            for unit in run:
                if groups and splitter.count(*span(groups[-1][0][1], unit[2])) <= chunk_size:
                    groups[-1].append(unit)
                else:
                    groups.append([unit])
            for group in groups:
                (k, first, _), (last, _, after) = group[0], group[-1]
                if after - first < 2:
                    continue
                a, b = heads[k], heads[last]
                if len(group) == 1:
                    name = a.path  # one heading and the sections under it
                else:
                    name = f"{a.text} … {b.text}"
                    name = f"{parent} > {name}" if parent else name
                packed[first] = (after, name, a.anchor)

        def visit(siblings: list[int], parent: str) -> None:
            run: list[tuple[int, int, int]] = []
            for k in siblings:
                unit = units[k]
                if unit is not None:
                    tokens = splitter.count(*span(*unit))
                    if tokens < least and tokens <= chunk_size:
                        run.append((k, *unit))
                        continue
                pack(run, parent)
                run = []
                visit(children[k], heads[k].path)
            pack(run, parent)

        visit(top, "")
        return packed

    def _cut(self, start: int, end: int, heading_ends: list[int]) -> list[tuple[int, int]]:
        """The chunks of a section larger than one, from its blocks, atoms and images:
        found only now, in the blocks and the text not parsed that overlap it (most
        sections fit in a chunk and need none of them)."""
        self.starts, self.atoms, self.image_blocks = [], [], []
        for node in _overlapping(self.top, self.spans, start, end):
            self.starts.append(node.start)
            self._descend(node)
            self._collect(node)
        for gap in _overlapping(self.gaps, self.gaps, start, end):
            self._gap(*gap)
        self.starts.sort()
        self.atoms.sort()
        self.image_blocks.sort()
        lo = bisect_left(self.atoms, (start, -1))
        hi = bisect_left(self.atoms, (end, -1))
        atoms = [a for a in self.atoms[lo:hi] if a[1] <= end]
        blocks = self._blocks(start, end, heading_ends)
        images = self._region_images(start, end)
        if images:
            atoms = sorted(atoms + images)
        return self.splitter.region(start, end, blocks, atoms=atoms)

    def _region_images(self, start: int, end: int) -> list[tuple[int, int]]:
        """The images of a section that is cut (finding them takes an inline parse)."""
        lo = bisect_left(self.image_blocks, (start, -1))
        hi = bisect_left(self.image_blocks, (end, -1))
        found: list[tuple[int, int]] = []
        for b_start, b_end in self.image_blocks[lo:hi]:
            found += self._images(b_start, b_end)
        return found

    def _blocks(self, start: int, end: int, heading_ends: list[int]) -> list[tuple[int, int]]:
        """The blocks of the section ``[start, end)``: a heading and the block after it
        are one block."""
        starts = self.starts
        inner = starts[bisect_right(starts, start) : bisect_left(starts, end)]
        if not inner:
            return [(start, end)]
        drop = set()
        data = self.data
        for e in heading_ends[bisect_left(heading_ends, start) : bisect_right(heading_ends, end)]:
            k = bisect_left(inner, e)
            if k < len(inner) and not data[e : inner[k]].strip(b" \t\r\n>"):
                drop.add(inner[k])  # the block right after a heading
        if drop:
            inner = [s for s in inner if s not in drop]
        bounds = [start, *inner, end]
        return list(pairwise(bounds))


@lru_cache(maxsize=64)
def _fence_close(marker: bytes, length: int) -> re.Pattern[bytes]:
    """A line that closes a fence of ``length`` ``marker``s: indented less than a code
    block, as many markers or more, then only spaces (and a CRLF's CR)."""
    return re.compile(rb"\n {0,3}%s{%d,}[ \t]*\r?(?=\n|\Z)" % (re.escape(marker), length))


def _within(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``[start, end)`` lies inside one of ``spans`` (in order, apart)."""
    i = bisect_right(spans, (start, sys.maxsize)) - 1
    return i >= 0 and spans[i][1] >= end


def _rows(table: _Node) -> list[_Node]:
    """A table's rows after its header row."""
    return [row for part in table.children[1:] for row in part.children]


def _overlapping(items: list, spans: list[tuple[int, int]], start: int, end: int) -> list:
    """The items whose spans (in order, apart) overlap ``[start, end)``."""
    lo = bisect_right(spans, (start, sys.maxsize)) - 1  # the last that starts by start
    if lo < 0 or spans[lo][1] <= start:
        lo += 1
    return items[lo : bisect_left(spans, (end, -1))]


# --------------------------------------------------------------------------- inline


class _AnyReference(dict):
    """Link references as the image rule sees them: every label is defined, so that
    a reference image is found without the document's definitions."""

    def get(self, key, default=None):
        return {"href": "", "title": ""}

    def __contains__(self, key) -> bool:
        return True


def _image(state, silent: bool) -> bool:
    """markdown-it's image rule, noting where each image it finds starts and ends."""
    start = state.pos
    if not markdown_image(state, silent):
        return False
    if not silent:
        state.env["gb_images"].append((len(state.src), start, state.pos))
    return True


_IMAGES.inline.ruler.at("image", _image)
# Only where images are matters, not their URLs: skip normalising and checking them.
_IMAGES.normalizeLink = _IMAGES.normalizeLinkText = str
_IMAGES.validateLink = lambda url: True


def _find_images(text: str) -> list[tuple[int, int]]:
    """Character spans of the images in ``text`` (as inline markdown), outermost only."""
    env = {"references": _AnyReference(), "gb_images": []}
    # CRs out, at the same offsets, so that positions in the parse are positions in text.
    _IMAGES.parseInline(text.replace("\r", " "), env)
    # An image's alt text is parsed on its own: keep the images of the text itself.
    found = sorted((s, e) for n, s, e in env["gb_images"] if n == len(text))
    outer: list[tuple[int, int]] = []
    for s, e in found:
        if not outer or s >= outer[-1][1]:
            outer.append((s, e))
    return outer


def _plain_text(content: str) -> str:
    """A heading's text as it reads, inline markup stripped."""
    if not _INLINE_MARKUP.search(content):
        return content.strip()
    code = _ONE_CODE_SPAN.fullmatch(content)
    if code:
        inner = code.group(1)
        if inner.startswith(" ") and inner.endswith(" ") and inner.strip(" "):
            inner = inner[1:-1]
        return inner
    tokens = _PLAIN.parseInline(content)
    parts: list[str] = []

    def walk(children) -> None:
        for t in children or ():
            if t.type in ("text", "code_inline"):
                parts.append(t.content)
            elif t.type in ("softbreak", "hardbreak"):
                parts.append(" ")
            elif t.children:  # emphasis, links, an image's alt text
                walk(t.children)

    for token in tokens:
        walk(token.children)
    return "".join(parts).strip()


def _slug(text: str) -> str:
    """GitHub's anchor for a heading (github-slugger): lowercase, only letters, marks,
    numbers, connector punctuation, spaces and hyphens kept, spaces made hyphens."""
    text = text.lower()
    if text.isascii():
        return _SLUG_ASCII_DROP.sub("", text).replace(" ", "-")
    kept = (
        ch
        for ch in text
        if ch in " -" or unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc"
    )
    return "".join(kept).replace(" ", "-")


def _token_counts(texts: list[str], tokenizer: Tokenizer) -> list[int]:
    """Each text's tokens; for the estimator, all in one pass."""
    if not isinstance(tokenizer, Estimator):
        return [tokenizer.count(t) for t in texts]
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    marks = token_marks(b"\n".join(encoded))
    counts = []
    pos = 0
    for e in encoded:
        counts.append(marks.count(b"T", pos, pos + len(e)))
        pos += len(e) + 1
    return counts


def _context_path(path: str, tokens: int, tokenizer: Tokenizer) -> str:
    """The section path (of ``tokens`` tokens) as a context line, cut to about
    CONTEXT_PATH_TOKENS tokens: outer headings go first ("… > Inner > Innermost"),
    then the last one's end."""
    if tokens <= CONTEXT_PATH_TOKENS:
        return path + "\n"
    parts = path.split(" > ")
    while len(parts) > 1:
        parts.pop(0)
        short = "… > " + " > ".join(parts)
        if tokenizer.count(short) <= CONTEXT_PATH_TOKENS:
            return short + "\n"
    words = parts[0].split()
    while len(words) > 1 and tokenizer.count(" ".join(words) + " …") > CONTEXT_PATH_TOKENS:
        words.pop()
    return " ".join(words) + " …\n"
