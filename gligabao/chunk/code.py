"""`split_code`: cut source code along its structure (``--mode code``).

Python is cut along its syntax tree (the standard ``ast``). The *units* are the
top-level statements: a def or class with the decorators and the contiguous
``#`` lines directly above it (its docstring is inside it anyway), consecutive
imports as one group, and any other statement. Units are packed whole and in
order, so a function or class that fits in a chunk is never cut. A unit larger
than a chunk is handled by what it is:

- a class is cut by its members, as a region of its own: its header (comments,
  decorators, the ``class`` line), its docstring, each method and each
  class-level statement are units packed in order; a member larger than a chunk
  is cut the same way in turn. Every chunk of it that does not hold the
  ``class`` line gets that line as its ``context``;
- a function (or any other statement) is cut as a region of its own, at the
  boundaries of the statements of its body (a nested def that fits stays whole),
  a statement still larger at blank lines, then at line breaks, then as in text mode
  (words, pieces). Its chunks after the first get the ``def`` line (and the
  ``class`` lines around it) as their ``context``;
- a compound statement holding defs or classes (``if TYPE_CHECKING:``,
  ``try: ... except ImportError:``) is cut by its statements like a class.

Overlap: chunks repeat the end of the previous one only inside a region that had
to be split (an oversized function or statement, comment or line), never where
whole units are packed, so no function is stored twice and each chunk's overlap
stays within the budget. Between regions there is no overlap.

The other languages (JavaScript, TypeScript, Go, Rust, Java, C, C++, C#, Ruby, PHP,
Kotlin, Swift, shell) are read by their tree-sitter grammar into statements shaped
like Python's (syntax.py) and packed by the same rules: a function, method or
constructor is a def; a class, struct, impl, trait, interface, enum, module or
namespace is a class, cut by its members with its header lines (up to the first
member: ``class A extends B {``) as context; imports, includes and ``use`` lines are
grouped; ``export``, ``template <...>`` and Rust's ``#[...]`` lines go with their
declaration as decorators do; the comment lines are those the parser found, so a doc
comment above a declaration stays with it; an ``#if`` block holding functions is cut
by what it holds, like ``if TYPE_CHECKING:``.

Text in no language (``language=None``), a language with no grammar, and code that
does not parse, are cut as text with line breaks preferred over words: blank-line
paragraphs, a paragraph larger than a chunk at its lines, with overlap as in text
mode; ``notices`` then says why.

Each chunk's ``section`` is where it starts: ``"Class.method"``, ``"Class"`` or
``"function"`` (None for module-level code; a Go method is ``"Type.method"``);
``anchor`` is None.
"""

from __future__ import annotations

import ast
import gc
import re
import warnings
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from itertools import accumulate

from gligabao.chunk.syntax import Stmt, Tree
from gligabao.chunk.text import Chunk, Splitter
from gligabao.chunk.tokens import Tokenizer

# Line breaks as Python's tokenizer sees them (a lone CR is one; \f and \v are not).
_NEWLINE = re.compile(rb"\r\n|\r(?!\n)|\n")
# One or more blank lines (spaces, tabs and form feeds only) after a line break.
_BLANK_LINES = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:[ \t\x0b\x0c]*(?:\r\n|\r(?!\n)|\n))+")
# Whitespace as the text splitter trims it.
_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
_INDENT = b" \t\x0c"
_BOM = b"\xef\xbb\xbf"

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NAMED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPORTS = (ast.Import, ast.ImportFrom)

# A statement of Python's tree or of another language's (syntax.py, shaped the same).
Statement = ast.stmt | Stmt
# Where a chunk sits: its section, and the headers (byte offset, text) around it.
Scopes = tuple[tuple[int, str], ...]


def split_code(
    text: str,
    *,
    language: str | None = "python",
    chunk_size: int = 1024,
    overlap_percent: int = 20,
    tokenizer: Tokenizer | None = None,
    notices: list[str] | None = None,
) -> list[Chunk]:
    """Cut source ``text`` into chunks of at most ``chunk_size`` tokens, overlap included.

    In a ``language`` with a syntax tree here (Python, or one of `syntax.GRAMMARS`) the
    text is cut along that tree where it parses; otherwise (``language=None``, no
    grammar, or text that does not parse) as text with line breaks preferred over
    words, and a line saying why is added to ``notices``. The chunks are exact slices in
    order: the first starts at 0, the last ends at ``len(text)``, and only whitespace
    lies between two chunks that do not overlap.
    """
    splitter = Splitter(
        text, chunk_size=chunk_size, overlap_percent=overlap_percent, tokenizer=tokenizer
    )
    return code_chunks(splitter, language=language, notices=notices)


def code_chunks(
    splitter: Splitter, *, language: str | None = "python", notices: list[str] | None = None
) -> list[Chunk]:
    """`split_code` of a text whose `Splitter` is made (and its tokens counted) already."""
    data = splitter.data
    if not data:
        return []
    if not data.strip(_SPACE):
        return splitter.chunks(splitter.region(0, len(data)))
    # The parser makes an object per node. With the collector running, its passes over
    # that many live objects cost as much again as the parse; nothing here makes a
    # reference cycle, so the tree is freed as soon as the cut is made.
    collecting = gc.isenabled()
    gc.disable()
    tree: ast.Module | Tree | None = None
    try:
        starts = _line_starts(data)
        if language == "python":
            tree = _parse(splitter.text)
        elif language is not None:
            from gligabao.chunk import syntax

            if not syntax.available(language):
                _notice(notices, f"no grammar for {language}: cut as text, lines first")
                language = None
            else:
                tree = syntax.parse(data, starts, language)
        if language is not None and tree is None:
            _notice(notices, f"the {language} code did not parse: cut as text, lines first")
        try:
            return _Cutter(splitter, tree, starts).cut()
        except RecursionError:  # blocks in blocks thousands deep (generated code)
            if tree is None:
                raise
            tree = None
            _notice(notices, f"the {language} code nests too deep: cut as text, lines first")
            return _Cutter(splitter, None, starts).cut()
    finally:
        tree = None
        if collecting:
            gc.enable()


def _notice(notices: list[str] | None, said: str) -> None:
    if notices is not None:
        notices.append(said)


def _parse(text: str) -> ast.Module | None:
    """The module's tree, or None where it is not Python this interpreter can parse."""
    if text.startswith("\ufeff"):  # a byte order mark: the parser refuses it in a str
        text = text[1:]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


@dataclass(slots=True)
class _Unit:
    """One or more statements on their lines, with the comments that go with them.

    ``start`` .. ``node_start`` holds the comment lines directly above;
    ``node_end`` .. ``end`` the deeper-indented comment lines just below.
    """

    nodes: list[Statement]
    first: int  # first line of the statements (decorators included), 1-based
    last: int  # their last line
    start: int = 0
    node_start: int = 0
    node_end: int = 0
    end: int = 0
    tail: int = 0  # last line, trailing comments included
    parts: list[_Unit] | None = None  # the members of an import group


@dataclass(slots=True)
class _Block:
    """A unit that fits, to be packed whole with its neighbours."""

    start: int
    end: int
    label: str | None
    scopes: Scopes


@dataclass(slots=True)
class _Region:
    """Blocks cut as one region by the splitter, each with the section and the
    headers that its chunks get; with overlap where the region is one thing split."""

    blocks: list[tuple[int, int]] = field(default_factory=list)
    labels: list[str | None] = field(default_factory=list)
    scopes: list[Scopes] = field(default_factory=list)
    overlap: bool = True
    label: str | None = None  # what `add` gives the next blocks
    scope: Scopes = ()

    def add(self, start: int, end: int) -> None:
        self.blocks.append((start, end))
        self.labels.append(self.label)
        self.scopes.append(self.scope)

    @property
    def start(self) -> int:
        return self.blocks[0][0]

    @property
    def end(self) -> int:
        return self.blocks[-1][1]


class _Cutter:
    """Packs the statements of a Python ``ast`` or of a tree-sitter `syntax.Tree` (whose
    statements are shaped like Python's) into chunks; no tree: the text, lines first."""

    def __init__(
        self, splitter: Splitter, tree: ast.Module | Tree | None, starts: list[int]
    ) -> None:
        self.splitter = splitter
        self.data = data = splitter.data
        self.size = splitter.chunk_size
        self.tree = tree
        # Byte offset where each line starts; line n (1-based) starts at starts[n - 1].
        self.starts = starts
        self.bom = 3 if data.startswith(_BOM) else 0
        # Other languages' comments are found by the parser, not by a leading `#`.
        self.comment_lines = tree.comment_lines if isinstance(tree, Tree) else None

    # ------------------------------------------------------------------ the cut

    def cut(self) -> list[Chunk]:
        data = self.data
        if self.tree is None:
            whole = _Region()
            self._text(0, len(data), whole)
            regions = [whole]
        else:
            items: list[_Block | _Region] = []
            self._level(items, self.tree.body, 0, len(data), 0, len(self.starts), None, ())
            regions = _regions(items)
        spans: list[tuple[int, int]] = []
        meta: list[tuple[str | None, Scopes]] = []
        for i, region in enumerate(regions):
            r_start = 0 if i == 0 else region.start
            r_end = len(data) if i == len(regions) - 1 else region.end
            cut = self.splitter.region(r_start, r_end, region.blocks, overlap=region.overlap)
            firsts = [start for start, _ in region.blocks]
            prev_end = -1
            for start, end in cut:
                # The first block with something new in the chunk names it.
                at = max(start, prev_end)
                k = max(bisect_right(firsts, at) - 1, 0)
                if start < prev_end and region.blocks[k][1] <= at and k + 1 < len(firsts):
                    k += 1
                meta.append((region.labels[k], region.scopes[k]))
                prev_end = end
            spans.extend(cut)
        spans = self._indent_starts(spans)
        chunks = self.splitter.chunks(spans)
        return [
            replace(
                chunk,
                section=label,
                context="".join(text for at, text in scopes if chunk.start_offset > at),
            )
            for chunk, (label, scopes) in zip(chunks, meta, strict=True)
        ]

    def _indent_starts(self, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Start a chunk that begins after a line's indentation at the line's start, where
        that costs no tokens (nor overlap tokens): a method or a line reads as indented."""
        data, starts, count = self.data, self.starts, self.splitter.count
        out = spans[:1]
        for start, end in spans[1:]:
            line = starts[bisect_right(starts, start) - 1]
            prev_start, prev_end = out[-1]
            if (
                prev_start < line < start
                and not data[line:start].strip(_INDENT)
                and count(line, end) == count(start, end)
                and (line >= prev_end or count(line, prev_end) == count(start, prev_end))
            ):
                start = line
            out.append((start, end))
        return out

    # ------------------------------------------------------------ packing levels

    def _level(
        self,
        items: list[_Block | _Region],
        stmts: list[Statement],
        lo: int,
        hi: int,
        floor: int,
        ceiling: int,
        prefix: str | None,
        scopes: Scopes,
    ) -> None:
        """The units of a module's body between bytes lo and hi, in order."""
        self._pack(items, self._group(self._units(stmts, floor, ceiling)), lo, hi, prefix, scopes)

    def _pack(
        self,
        items: list[_Block | _Region],
        units: list[_Unit],
        lo: int,
        hi: int,
        prefix: str | None,
        scopes: Scopes,
    ) -> None:
        pos = lo
        for unit in units:
            self._gap(items, pos, unit.start, prefix, scopes)
            self._place(items, unit, prefix, scopes)
            pos = unit.end
        self._gap(items, pos, hi, prefix, scopes)

    def _place(
        self, items: list[_Block | _Region], unit: _Unit, prefix: str | None, scopes: Scopes
    ) -> None:
        label = _label(unit, prefix)
        if self.fits(unit.start, unit.end):
            self._block(items, unit.start, unit.end, label, scopes)
            return
        if unit.parts is not None:  # an import group too large: its imports one by one
            self._pack(items, unit.parts, unit.start, unit.end, prefix, scopes)
            return
        whole = self._whole_end(unit)
        if whole is not None:
            # Whole without its comments: the comments go on their own.
            self._gap(items, unit.start, unit.node_start, label, scopes)
            self._block(items, unit.node_start, whole, label, scopes)
            self._gap(items, whole, unit.end, prefix, scopes)
            return
        if self._by_members(unit):
            self._members(items, unit, label, prefix, scopes)
            return
        region = _Region(label=label, scope=self._def_scopes(unit, scopes))
        self._flatten(unit, region)
        items.append(region)

    def _by_members(self, unit: _Unit) -> bool:
        """Whether an oversized unit is cut by its members: a class, or a compound
        statement holding defs or classes."""
        if unit.parts is not None or len(unit.nodes) != 1:
            return False
        node = unit.nodes[0]
        return _is_class(node) or (not _is_def(node) and _holds_defs(node))

    def _members(
        self,
        items: list[_Block | _Region],
        unit: _Unit,
        label: str | None,
        prefix: str | None,
        scopes: Scopes,
    ) -> None:
        """A class (or ``if``/``try`` holding defs) larger than a chunk, by its members."""
        node = unit.nodes[0]
        if _is_class(node):
            scopes = (*scopes, (self.line_start(node.lineno), self._header(node)))
            prefix = label
        members = self._group(self._units(_children(node), node.lineno, unit.tail))
        pos = unit.start
        if members and not self.fits(unit.start, members[0].end):
            first = members[0]
            docstring = _is_docstring(first)
            if docstring or not (self.fits(first.start, first.end) or self._by_members(first)):
                # The header cannot share a chunk with what follows it whole, so rather
                # than leave it alone in a chunk, cut it with that: a docstring as prose,
                # a member that is split anyway as it would be.
                region = _Region(label=prefix, scope=scopes)
                self._text(unit.start, first.start, region)
                region.label = _label(first, prefix)
                if docstring:
                    self._text(first.start, first.end, region)
                else:
                    region.scope = self._def_scopes(first, scopes)
                    self._flatten(first, region)
                items.append(region)
                pos = first.end
                members = members[1:]
        self._pack(items, members, pos, unit.end, prefix, scopes)

    def _gap(
        self, items: list[_Block | _Region], start: int, end: int, label: str | None, scopes: Scopes
    ) -> None:
        """What lies between units (comments, ``else:``): paragraphs packed as units; one
        larger than a chunk is a region of its own, cut at its lines."""
        if not self.data[start:end].strip(_SPACE):
            return
        if self.fits(start, end):
            self._block(items, start, end, label, scopes)
            return
        for p_start, p_end in self._paragraphs(start, end):
            if self.fits(p_start, p_end):
                self._block(items, p_start, p_end, label, scopes)
            else:
                region = _Region(label=label, scope=scopes)
                self._lines(p_start, p_end, region)
                items.append(region)

    def _block(
        self, items: list[_Block | _Region], start: int, end: int, label: str | None, scopes: Scopes
    ) -> None:
        start, end = self._tidy(start, end)
        if start < end:
            items.append(_Block(start, end, label, scopes))

    def _whole_end(self, unit: _Unit) -> int | None:
        """Where the statements of a unit end if they fit in a chunk without the comments
        around them: at the end of their last line, else (a comment after them on that
        line left out) where the last one ends; None if they do not fit."""
        if self.fits(unit.node_start, unit.node_end):
            return unit.node_end
        node = unit.nodes[-1]
        if node.end_lineno is None or node.end_col_offset is None:
            return None
        end = self.line_start(node.end_lineno) + node.end_col_offset
        if node.end_lineno == 1:
            end += self.bom
        return (
            end
            if unit.node_start < end <= unit.node_end and self.fits(unit.node_start, end)
            else None
        )

    def _def_scopes(self, unit: _Unit, scopes: Scopes) -> Scopes:
        """A function's chunks after its first carry its ``def`` line too."""
        if unit.parts is None and len(unit.nodes) == 1 and _is_def(unit.nodes[0]):
            node = unit.nodes[0]
            return (*scopes, (self.line_start(node.lineno), self._header(node)))  # type: ignore[arg-type]
        return scopes

    # ------------------------------------------------------------ split regions

    def _flatten(self, unit: _Unit, out: _Region) -> None:
        """Blocks for a unit inside a region that is split: whole if it fits, else its
        statements (recursively), else its paragraphs and lines."""
        if self.fits(unit.start, unit.end):
            self._add(out, unit.start, unit.end)
            return
        if unit.parts is not None:
            pos = unit.start
            for part in unit.parts:
                self._text(pos, part.start, out)
                self._flatten(part, out)
                pos = part.end
            self._text(pos, unit.end, out)
            return
        self._text(unit.start, unit.node_start, out)
        node = unit.nodes[0]
        kids = _children(node) if len(unit.nodes) == 1 else []
        whole = self._whole_end(unit)
        if whole is not None:
            self._add(out, unit.node_start, whole)
            self._text(whole, unit.end, out)
            return
        if kids:
            members = self._group(self._units(kids, node.lineno, unit.last))
            pos = unit.node_start
            if _is_docstring(members[0]) and not self.fits(pos, members[0].end):
                self._text(pos, members[0].end, out)  # the def line with its docstring, as prose
                pos = members[0].end
                members = members[1:]
            for kid in members:
                self._text(pos, kid.start, out)
                self._flatten(kid, out)
                pos = kid.end
            self._text(pos, unit.node_end, out)
        else:
            self._text(unit.node_start, unit.node_end, out)
        self._text(unit.node_end, unit.end, out)

    def _text(self, start: int, end: int, out: _Region) -> None:
        """Blocks for plain text: whole if it fits, else paragraphs, else lines."""
        if not self.data[start:end].strip(_SPACE):
            return
        if self.fits(start, end):
            self._add(out, start, end)
            return
        for p_start, p_end in self._paragraphs(start, end):
            self._lines(p_start, p_end, out)

    def _lines(self, start: int, end: int, out: _Region) -> None:
        """A paragraph whole if it fits, else one block per line (a line still larger
        is left to the splitter: sentences, words, pieces)."""
        if self.fits(start, end):
            self._add(out, start, end)
            return
        pos = start
        for match in _NEWLINE.finditer(self.data, start, end):
            self._add(out, pos, match.start())
            pos = match.end()
        self._add(out, pos, end)

    def _add(self, out: _Region, start: int, end: int) -> None:
        start, end = self._tidy(start, end)
        if start < end:
            out.add(start, end)

    def _paragraphs(self, start: int, end: int) -> list[tuple[int, int]]:
        spans = []
        pos = start
        for match in _BLANK_LINES.finditer(self.data, start, end):
            spans.append((pos, match.start()))
            pos = match.end()
        spans.append((pos, end))
        return [(s, e) for s, e in spans if self.data[s:e].strip(_SPACE)]

    # ------------------------------------------------------------------- units

    def _units(self, stmts: list[Statement], floor: int, ceiling: int) -> list[_Unit]:
        """Statements as units: those sharing a line are one; each takes the comment lines
        directly above it (below line ``floor``) and the deeper-indented ones just below
        it (up to line ``ceiling``)."""
        units: list[_Unit] = []
        for node in stmts:
            first = node.lineno
            decorators = getattr(node, "decorator_list", None)
            if decorators:
                first = min(first, *(d.lineno for d in decorators))
            if units and first <= units[-1].last:  # `a = 1; b = 2`
                units[-1].nodes.append(node)
                units[-1].last = max(units[-1].last, node.end_lineno or node.lineno)
            else:
                units.append(_Unit([node], first, node.end_lineno or node.lineno))
        above = floor
        for k, unit in enumerate(units):
            node = unit.nodes[0]
            line = self.line_start(unit.first)
            at = line + self.col(node)
            own_line = not self.data[line:at].strip(_INDENT) or (
                unit.first == 1 and self.data[line:at] == _BOM
            )
            if getattr(node, "decorator_list", None) or own_line:
                unit.node_start = line
                indent = self.indent(unit.first)
                top = unit.first
                while top - 1 > above and self.is_comment(top - 1):
                    top -= 1
                unit.start = self.line_start(top)
            else:  # after a header on its line: `class A: x = 1`
                unit.node_start = unit.start = at
                indent = at - line
            unit.node_end = self.line_end(unit.last)
            stop = min(units[k + 1].first if k + 1 < len(units) else ceiling + 1, ceiling + 1)
            tail = unit.last
            j = unit.last + 1
            while j < stop:
                if self.is_blank(j):
                    j += 1
                elif self.is_comment(j) and self.indent(j) > indent:
                    tail = j
                    j += 1
                else:
                    break
            unit.tail = above = tail
            unit.end = self.line_end(tail)
        return units

    def _group(self, units: list[_Unit]) -> list[_Unit]:
        """Consecutive imports (only comments between them) as one unit."""
        out: list[_Unit] = []
        for unit in units:
            prev = out[-1] if out else None
            if (
                prev is not None
                and _is_import(unit)
                and _is_import(prev)
                and (
                    self._only_comments(prev.end, unit.start)
                    if self.comment_lines is None
                    else self._only_comment_lines(prev.end, unit.start)
                )
            ):
                if prev.parts is None:
                    prev = _Unit(
                        list(prev.nodes),
                        prev.first,
                        prev.last,
                        prev.start,
                        prev.node_start,
                        prev.node_end,
                        prev.end,
                        prev.tail,
                        [prev],
                    )
                    out[-1] = prev
                prev.parts.append(unit)  # type: ignore[union-attr]
                prev.nodes.extend(unit.nodes)
                prev.last, prev.node_end, prev.end, prev.tail = (
                    unit.last,
                    unit.node_end,
                    unit.end,
                    unit.tail,
                )
            else:
                out.append(unit)
        return out

    def _only_comments(self, start: int, end: int) -> bool:
        for line in _NEWLINE.split(self.data[start:end]):
            stripped = line.strip(_SPACE)
            if stripped and not stripped.startswith(b"#"):
                return False
        return True

    def _only_comment_lines(self, start: int, end: int) -> bool:
        """Whether lines from the one holding ``start`` to the one holding ``end`` are
        blank or comments, as the parser found them."""
        if end <= start:
            return True
        lines = self.comment_lines or set()
        first = bisect_right(self.starts, start)
        if self.starts[first - 1] != start:  # the rest of the line before
            if self.data[start : self.line_end(first)].strip(_SPACE):
                return False
            first += 1
        last = bisect_right(self.starts, end - 1)
        return all(j in lines or self.is_blank(j) for j in range(first, last + 1))

    def _header(self, node: Statement) -> str:
        """The ``class``/``def`` line(s) up to the colon, as context: ``"class A(B):\\n"``."""
        start = self.line_start(node.lineno)
        kids = _children(node)
        kid = kids[0] if kids else None
        kid_first = (
            min([kid.lineno, *(d.lineno for d in getattr(kid, "decorator_list", None) or ())])
            if kid is not None
            else node.lineno
        )
        if kid is None:  # a body with no statements (another language's): the first line
            end = self.line_end(node.lineno)
        elif kid_first <= node.lineno:  # `class A: pass`
            end = start + self.col(kid)
        else:
            j = kid_first - 1
            while j > node.lineno and (self.is_blank(j) or self.is_comment(j)):
                j -= 1
            end = self.line_end(j)
        header = self.data[start:end].decode("utf-8", "surrogatepass").rstrip()
        header = header.lstrip("\ufeff")
        return header.replace("\r\n", "\n").replace("\r", "\n") + "\n"

    # ------------------------------------------------------------------- lines

    def line_start(self, line: int) -> int:
        return self.starts[line - 1] if line - 1 < len(self.starts) else len(self.data)

    def line_end(self, line: int) -> int:
        """Where line ``line`` ends, before its line break."""
        if line >= len(self.starts):
            return len(self.data)
        nxt = self.starts[line]
        return nxt - 2 if self.data[nxt - 2 : nxt] == b"\r\n" else nxt - 1

    def line(self, line: int) -> bytes:
        return self.data[self.line_start(line) : self.line_end(line)]

    def is_blank(self, line: int) -> bool:
        return not self.line(line).strip(_SPACE)

    def is_comment(self, line: int) -> bool:
        if self.comment_lines is not None:
            return line in self.comment_lines
        return self.line(line).lstrip(_INDENT).startswith(b"#")

    def indent(self, line: int) -> int:
        text = self.line(line)
        return len(text) - len(text.lstrip(_INDENT))

    def col(self, node: Statement) -> int:
        """The node's column in bytes (the parser saw the text without its BOM)."""
        return node.col_offset + (self.bom if node.lineno == 1 else 0)

    def fits(self, start: int, end: int) -> bool:
        return self.splitter.count(start, end) <= self.size

    def _tidy(self, start: int, end: int) -> tuple[int, int]:
        """Trim whitespace, but keep the indentation of the first line with text."""
        data = self.data
        while end > start and data[end - 1] in _SPACE:
            end -= 1
        first = start
        while first < end and data[first] in _SPACE:
            first += 1
        line = first
        while line > start and data[line - 1] in _INDENT:
            line -= 1
        if line == 0 or data[line - 1] in b"\r\n":
            first = line
        return first, end


def _line_starts(data: bytes) -> list[int]:
    """Where each line starts: after each LF, CRLF or lone CR."""
    if data.count(b"\r") != data.count(b"\r\n"):  # lone CRs: the regex sees them
        return [0, *(match.end() for match in _NEWLINE.finditer(data))]
    # Only LF and CRLF: a line starts after each LF; summing lengths is C-speed.
    lengths = map((1).__add__, map(len, data.split(b"\n")))
    starts = list(accumulate(lengths, initial=0))
    starts.pop()  # past the end
    return starts


def _regions(items: list[_Block | _Region]) -> list[_Region]:
    """Runs of consecutive whole units with the same scopes as one packed region each
    (no overlap); split regions as they are."""
    regions: list[_Region] = []
    run: _Region | None = None
    for item in items:
        if isinstance(item, _Region):
            regions.append(item)
            run = None
            continue
        if run is None or run.scope != item.scopes:
            run = _Region(overlap=False, scope=item.scopes)
            regions.append(run)
        run.label = item.label
        run.add(item.start, item.end)
    return regions


def _children(node: Statement) -> list[Statement]:
    """The statements directly inside a compound statement, in source order."""
    if isinstance(node, Stmt):
        return node.kids
    kids: list[Statement] = []
    for name in ("body", "handlers", "orelse", "finalbody", "cases"):
        for item in getattr(node, name, None) or ():
            if isinstance(item, ast.stmt):
                kids.append(item)
            else:  # an except handler or a match case: its own body
                kids.extend(getattr(item, "body", ()))
    kids.sort(key=lambda n: (n.lineno, n.col_offset))
    return kids


def _holds_defs(node: Statement) -> bool:
    return any(_is_named(kid) or _holds_defs(kid) for kid in _children(node))


def _is_def(node: Statement) -> bool:
    return node.kind == "def" if isinstance(node, Stmt) else isinstance(node, _DEFS)


def _is_class(node: Statement) -> bool:
    return node.kind == "class" if isinstance(node, Stmt) else isinstance(node, ast.ClassDef)


def _is_named(node: Statement) -> bool:
    return node.kind in ("def", "class") if isinstance(node, Stmt) else isinstance(node, _NAMED)


def _is_import(unit: _Unit) -> bool:
    return all(
        node.kind == "import" if isinstance(node, Stmt) else isinstance(node, _IMPORTS)
        for node in unit.nodes
    )


def _label(unit: _Unit, prefix: str | None) -> str | None:
    """``Class.method``, ``Class`` or ``function`` for a def or class; else the prefix."""
    if unit.parts is None and len(unit.nodes) == 1 and _is_named(unit.nodes[0]):
        name = unit.nodes[0].name  # type: ignore[union-attr]
        if name is None:
            return prefix
        return f"{prefix}.{name}" if prefix else name
    return prefix


def _is_docstring(unit: _Unit) -> bool:
    node = unit.nodes[0]
    return (
        unit.parts is None
        and len(unit.nodes) == 1
        and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )
