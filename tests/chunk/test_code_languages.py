"""``--mode code`` in other languages than Python: cut along their tree-sitter syntax tree.

Real source files: one small file per language under fixtures/ (written for these tests),
and whatever source files of these languages the machine's packages ship (C and C++
headers, shell scripts, JavaScript, Go, PHP...). The oracle walks each file's tree here,
with its own list of what a function and a class are in each language: every function
or method that fits in a chunk is whole in one, the chunks tile the file, a chunk that
starts in a function or class is named after it, and a class too large is cut by its
members with its header line as the chunks' context. JavaScript and Rust drawn from a
small grammar go through the same checks.
"""

from __future__ import annotations

import functools
import glob
import importlib
import os
from bisect import bisect_right
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tree_sitter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gligabao.chunk import Chunk, ChunkSettings, cut
from gligabao.chunk.code import split_code
from gligabao.chunk.cutting import code_language
from tests.support.chunk_checks import assert_invariants, reference_tokens

FIXTURES = Path(__file__).parent / "fixtures"

GRAMMARS = {
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    "swift": ("tree_sitter_swift", "language"),
    "bash": ("tree_sitter_bash", "language"),
}

# What a function is, language by language, in the grammars' own words.
FUNCTIONS = {
    "javascript": {"function_declaration", "method_definition", "generator_function_declaration"},
    "typescript": {"function_declaration", "method_definition"},
    "tsx": {"function_declaration", "method_definition"},
    "go": {"function_declaration", "method_declaration"},
    "rust": {"function_item"},
    "java": {"method_declaration", "constructor_declaration"},
    "c": {"function_definition"},
    "cpp": {"function_definition"},
    "csharp": {"method_declaration", "constructor_declaration"},
    "ruby": {"method", "singleton_method"},
    "php": {"function_definition", "method_declaration"},
    "kotlin": {"function_declaration"},
    "swift": {"function_declaration", "init_declaration"},
    "bash": {"function_definition"},
}
# What a class is (cut by its members when too large).
CLASSES = {
    "javascript": {"class_declaration"},
    "typescript": {"class_declaration", "abstract_class_declaration", "interface_declaration"},
    "tsx": {"class_declaration", "interface_declaration"},
    "go": set(),
    "rust": {"impl_item", "trait_item", "mod_item"},
    "java": {"class_declaration", "interface_declaration", "enum_declaration"},
    "c": set(),
    "cpp": {"class_specifier", "namespace_definition"},
    "csharp": {"class_declaration", "namespace_declaration", "struct_declaration"},
    "ruby": {"class", "module"},
    "php": {"class_declaration", "namespace_definition"},
    "kotlin": {"class_declaration", "object_declaration"},
    "swift": {"class_declaration", "protocol_declaration"},
    "bash": set(),
}
# Where a function or class counts as a member (not code inside another function).
CONTAINERS = {
    "program",
    "source_file",
    "translation_unit",
    "compilation_unit",
    "class_body",
    "declaration_list",
    "field_declaration_list",
    "body_statement",
    "protocol_body",
    "enum_body",
    "export_statement",
    "template_declaration",
    "preproc_if",
    "preproc_ifdef",
    "preproc_else",
    "preproc_elif",
    "linkage_specification",
    "declaration",
    "ambient_declaration",
}
SUFFIX = {
    "javascript": ".js",
    "typescript": ".ts",
    "tsx": ".tsx",
    "go": ".go",
    "rust": ".rs",
    "java": ".java",
    "c": ".c",
    "cpp": ".cpp",
    "csharp": ".cs",
    "ruby": ".rb",
    "php": ".php",
    "kotlin": ".kt",
    "swift": ".swift",
    "bash": ".sh",
}

# Source files the machine's packages ship, where it has them; read-only, size-capped.
SYSTEM_PATTERNS = [
    "/usr/include/*.h",
    "/usr/include/*/*.h",
    "/usr/share/doc/git/contrib/**/*.sh",
    "/usr/share/doc/git/contrib/**/*.go",
    "/usr/share/ucf/*.sh",
    "/usr/lib/node_modules/npm/lib/**/*.js",
    "/usr/lib/google-cloud-sdk/platform/google_appengine/php/sdk/google/**/*.php",
    "/usr/local/cuda*/include/*.hpp",
]


def _system_files(limit: int = 60) -> list[str]:
    found: list[str] = []
    for pattern in SYSTEM_PATTERNS:
        paths = sorted(glob.glob(pattern, recursive=True))
        picked = [p for p in paths if 2_000 < _size(p) < 120_000 and code_language(p) in GRAMMARS]
        found.extend(picked[:: max(1, len(picked) // 8)][:8])
    return found[:limit]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


FIXTURE_FILES = sorted(str(p) for p in FIXTURES.iterdir())
SYSTEM_FILES = _system_files()


def read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8", errors="replace")


def parser(language: str) -> tree_sitter.Parser:
    module, function = GRAMMARS[language]
    grammar = getattr(importlib.import_module(module), function)()
    return tree_sitter.Parser(tree_sitter.Language(grammar))


def walk(node: Any) -> Iterator[Any]:
    """Every named node, in document order (a stack: generated code nests deep)."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.named_children))


def is_member(node: Any) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type not in CONTAINERS and parent.type not in CLASSES_ALL:
            return False
        parent = parent.parent
    return True


CLASSES_ALL = set().union(*CLASSES.values())


def name_of(node: Any) -> str | None:
    name = node.child_by_field_name("name")
    if name is None and node.type == "impl_item":
        name = node.child_by_field_name("type")
    if name is None:  # C and C++: the identifier inside the declarator
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.child_by_field_name("declarator"):
            declarator = declarator.child_by_field_name("declarator")
        name = declarator
    return None if name is None else name.text.decode()


def outer(node: Any) -> Any:
    """A declaration with what goes with it, as decorators go with a Python function:
    ``export``, ``template <...>``, Rust's ``#[...]`` lines just above it."""
    while node.parent is not None and node.parent.type in WRAPPERS:
        node = node.parent
    while node.prev_named_sibling is not None and node.prev_named_sibling.type == "attribute_item":
        node = node.prev_named_sibling
    return node


WRAPPERS = {"export_statement", "template_declaration", "ambient_declaration"}


def trimmed_end(data: bytes, node: Any) -> int:
    end = node.end_byte
    while end > node.start_byte and data[end - 1 : end].isspace():
        end -= 1
    return end


def holder(chunks: list[Chunk], start: int) -> Chunk:
    """Of the chunks starting at or before ``start``, the last: it reaches furthest."""
    return chunks[bisect_right([c.start_offset for c in chunks], start) - 1]


def check_file(text: str, language: str, chunk_size: int, overlap: int) -> tuple[int, int]:
    """The cut of one file against the tree walked here; returns how many functions were
    found whole and how many large classes were cut by their members."""
    notices: list[str] = []
    chunks = split_code(
        text, language=language, chunk_size=chunk_size, overlap_percent=overlap, notices=notices
    )
    assert_invariants(text, chunks, chunk_size, overlap)
    if notices:  # did not parse, and was cut as text: nothing more is promised
        return 0, 0
    data = text.encode()
    root = parser(language).parse(data).root_node
    whole = cut_by_members = 0
    nodes = [n for n in walk(root) if n.type in FUNCTIONS[language] | CLASSES[language]]
    for node in nodes:
        if not is_member(node) or node.has_error:
            continue
        start, end = outer(node).start_byte, trimmed_end(data, node)
        line = data.rfind(b"\n", 0, start) + 1
        if data[line:start].strip():  # `static MACRO int f(void)`: what leads its line
            start = line
        name = name_of(node)
        size = reference_tokens(data[start:end].decode("utf-8", "replace"))
        if node.type in FUNCTIONS[language] and size <= chunk_size:
            chunk = holder(chunks, start)
            assert end <= chunk.end_offset, f"{language} function {name} fits but was cut"
            whole += 1
            # Named after it where it starts a chunk, alone on its lines (statements
            # sharing a line are one unit, as in Python: `int a; int f() {...}`).
            alone = not data[end : data.find(b"\n", end) % (len(data) + 1)].strip()
            if chunk.start_offset == start and chunk.overlap_tokens == 0 and name and alone:
                assert chunk.section is not None
                assert chunk.section.split(".")[-1] == name.split(".")[-1].split("::")[-1]
        if node.type in CLASSES[language] and size > chunk_size and name:
            own = node.start_byte  # the class line itself, not the attributes above it
            header = data[own:end].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
            body_start = data.index(b"\n", own) + 1 if b"\n" in data[own:end] else end
            inside = [c for c in chunks if body_start <= c.start_offset < end]
            for chunk in inside:
                assert header in chunk.context, f"{language} class {name}: {chunk.context!r}"
                assert chunk.section is not None and name.split("::")[-1] in chunk.section
            cut_by_members += bool(inside)
    return whole, cut_by_members


# ------------------------------------------------------------ the fixtures


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=os.path.basename)
@pytest.mark.parametrize("chunk_size", [40, 64, 100, 200, 1024])
def test_fixture_functions_whole_and_classes_cut_by_members(path: str, chunk_size: int):
    language = code_language(path)
    whole, _ = check_file(read(path), language, chunk_size, 20)
    assert whole > 0 or chunk_size < 64


def test_every_language_has_a_fixture_and_is_cut_by_its_tree():
    languages = {code_language(path) for path in FIXTURE_FILES}
    assert languages == set(GRAMMARS)
    for path in FIXTURE_FILES:
        notices: list[str] = []
        text = read(path)
        language = code_language(path)
        chunks = split_code(text, language=language, chunk_size=64, notices=notices)
        assert notices == [], path
        # Cut as text, lines first, the same file comes out otherwise: the tree is used.
        assert chunks != split_code(text, language=None, chunk_size=64), path


def test_large_classes_get_their_header_as_context():
    cut_by_members = 0
    for path in FIXTURE_FILES:
        _, classes = check_file(read(path), code_language(path), 64, 20)
        cut_by_members += classes
    assert cut_by_members >= 10


@pytest.mark.parametrize(
    ("fixture", "sections"),
    [
        ("Inventory.java", ["Inventory.receive", "Inventory.reserve", "Inventory.Entry"]),
        ("queue.go", ["Queue.Push", "Queue.Start", "Queue.Close", "New"]),
        ("histogram.rs", ["Histogram.quantile", "Histogram.fmt", "tests"]),
        ("Ledger.cs", ["Accounts.Ledger.Post", "Accounts.Ledger.Statement"]),
        ("config_loader.rb", ["Settings.Loader.load", "Settings.load"]),
        ("matrix.hpp", ["physics.Matrix.transposed", "physics.trace"]),
        ("ratelimit.ts", ["RateLimiter.take", "parseRate", "unlimited"]),
        ("TodoList.tsx", ["Row", "TodoList", "Counter"]),
        ("events.js", ["Bus.emit", "fromEmitter", "logTo"]),
        ("Router.php", ["Router.dispatch", "redirect"]),
        ("Scheduler.kt", ["Scheduler.runDue", "describe"]),
        ("Cache.swift", ["LRUCache.insert", "LRUCache.touch", "ByteCount"]),
        ("backup.sh", ["log", "prune", "main"]),
        ("ring.c", ["ring_new", "ring_write", "ring_free"]),
    ],
)
def test_sections_name_the_enclosing_class_and_function(fixture: str, sections: list[str]):
    path = str(FIXTURES / fixture)
    chunks = split_code(read(path), language=code_language(path), chunk_size=80)
    named = {chunk.section for chunk in chunks}
    assert set(sections) <= named


def test_doc_comments_stay_with_what_they_document():
    text = read(str(FIXTURES / "Inventory.java"))
    chunks = split_code(text, language="java", chunk_size=200)
    reserve = next(c for c in chunks if "public boolean reserve" in c.text)
    assert "Takes units out of stock if there are enough." in reserve.text
    text = read(str(FIXTURES / "queue.go"))
    chunks = split_code(text, language="go", chunk_size=80)
    push = next(c for c in chunks if "func (q *Queue) Push" in c.text)
    assert push.text.lstrip().startswith("// Push adds a task")


def test_imports_and_includes_are_grouped():
    for fixture, language, lines in [
        ("Inventory.java", "java", ["import java.util.ArrayList;", "import java.util.Optional;"]),
        ("Ledger.cs", "csharp", ["using System;", "using System.Linq;"]),
        ("ring.c", "c", ["#include <stdlib.h>", '#include "ring.h"']),
        ("histogram.rs", "rust", ["use std::fmt;", "use std::time::Duration;"]),
    ]:
        text = read(str(FIXTURES / fixture))
        chunks = split_code(text, language=language, chunk_size=100, overlap_percent=0)
        holding = [c for c in chunks if any(line in c.text for line in lines)]
        assert len(holding) == 1, (fixture, [c.text for c in holding])
        assert all(line in holding[0].text for line in lines)


def test_a_method_too_large_is_split_with_its_class_and_def_lines_as_context():
    text = read(str(FIXTURES / "Inventory.java"))
    chunks = split_code(text, language="java", chunk_size=40, overlap_percent=20)
    parts = [c for c in chunks if c.section == "Inventory.toString"]
    assert len(parts) > 1
    for part in parts[1:]:
        assert part.context.startswith("public class Inventory {\n")
        assert "public String toString() {" in part.context


# ------------------------------------------------------------ the machine's files


@pytest.mark.skipif(not SYSTEM_FILES, reason="no source files of these languages here")
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    path=st.sampled_from(SYSTEM_FILES or ["-"]),
    chunk_size=st.one_of(st.integers(32, 400), st.sampled_from([64, 512, 1024])),
    overlap=st.sampled_from([0, 10, 20, 50]),
)
def test_system_source_files_hold_the_invariants(path: str, chunk_size: int, overlap: int):
    check_file(read(path), code_language(path), chunk_size, overlap)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    path=st.sampled_from(FIXTURE_FILES),
    cut_at=st.integers(0, 10_000),
    chunk_size=st.integers(32, 300),
    overlap=st.sampled_from([0, 20, 50]),
)
def test_truncated_and_spliced_files_hold_the_invariants(
    path: str, cut_at: int, chunk_size: int, overlap: int
):
    # Code being edited: a file cut short, or with its ends swapped, parses with errors.
    text = read(path)
    at = cut_at % (len(text) + 1)
    language = code_language(path)
    for broken in (text[:at], text[at:] + "\r\n" + text[:at]):
        if not broken.strip():
            continue
        chunks = split_code(
            broken, language=language, chunk_size=chunk_size, overlap_percent=overlap
        )
        assert_invariants(broken, chunks, chunk_size, overlap)


# ------------------------------------------------------------ modes and fallbacks


@pytest.mark.parametrize("language", sorted(GRAMMARS))
def test_auto_mode_picks_the_language_by_extension(language: str):
    path = next(p for p in FIXTURE_FILES if code_language(p) == language)
    text = read(path)
    settings_ = ChunkSettings(chunk_size=64, overlap_percent=20, mode="auto")
    result = cut(text, settings_, path=f"src/file{SUFFIX[language]}")
    assert result.mode == "code"
    assert result.chunks == split_code(text, language=language, chunk_size=64)
    assert result.notices == []


def test_code_that_does_not_parse_is_cut_as_text_with_a_notice():
    text = "\n".join(f"}}}} ))) <<< ]]] @@@ line {i} ((( {{{{ ::: ===" for i in range(80))
    for language in ("go", "java", "rust", "c"):
        notices: list[str] = []
        chunks = split_code(text, language=language, chunk_size=64, notices=notices)
        assert notices == [f"the {language} code did not parse: cut as text, lines first"]
        assert chunks == split_code(text, language=None, chunk_size=64)


def test_a_cpp_header_named_h_is_read_as_cpp():
    text = read(str(FIXTURES / "matrix.hpp"))
    assert code_language("matrix.h") == "c"
    notices: list[str] = []
    chunks = split_code(text, language="c", chunk_size=80, notices=notices)
    assert notices == []
    assert chunks == split_code(text, language="cpp", chunk_size=80)
    assert "physics.Matrix.transposed" in {c.section for c in chunks}


def test_code_nested_thousands_deep_is_cut_as_text_with_a_notice():
    text = "function f() {\n  let x = 1;\n" * 3000 + "}\n" * 3000
    notices: list[str] = []
    chunks = split_code(text, language="javascript", chunk_size=64, notices=notices)
    assert notices == ["the javascript code nests too deep: cut as text, lines first"]
    assert chunks == split_code(text, language=None, chunk_size=64)


def test_forced_code_mode_on_a_language_without_a_grammar_says_so():
    text = read(str(FIXTURES / "queue.go"))
    result = cut(text, ChunkSettings(chunk_size=64, mode="code"), path="queue.scala")
    assert result.notices == ["no grammar for scala: cut as text, lines first"]
    assert result.chunks == split_code(text, language=None, chunk_size=64)


def test_crlf_and_a_byte_order_mark():
    source = read(str(FIXTURES / "Inventory.java"))
    plain = split_code(source, language="java", chunk_size=64)
    for text in (source.replace("\n", "\r\n"), "\ufeff" + source, source.replace("\n", "\r")):
        chunks = split_code(text, language="java", chunk_size=64, overlap_percent=20)
        assert_invariants(text, chunks, 64, 20)
        assert [c.section for c in chunks] == [c.section for c in plain]


# ------------------------------------------------------------ generated sources

# JavaScript and Rust drawn from a small grammar: classes (impl blocks) of methods,
# functions with nested blocks, doc comments, attributes, import groups, module code,
# Unicode names and strings, CRLF. The oracle is the same tree walk.
WORDS = ["value", "total", "données", "名前", "count", "ok", "Δt", "node", "size", "key"]
STRINGS = ["plain", "éè", "中文", "😀👍🏽", "tab\\t", "a{b}c", "// not a comment", "/* nor */"]
words = st.sampled_from(WORDS)
strings = st.sampled_from(STRINGS)
STATEMENT_KINDS = st.sampled_from(["let", "call", "comment", "if", "for", "fn"])
SIMPLE_KINDS = st.sampled_from(["let", "call", "comment"])


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def js_statement(draw: st.DrawFn, indent: str, depth: int) -> list[str]:
    kind = draw(STATEMENT_KINDS if depth < 1 else SIMPLE_KINDS)
    name = draw(words)
    if kind == "let":
        return [f"{indent}let {name}{draw(st.integers(0, 99))} = {draw(st.integers(0, 10**6))};"]
    if kind == "call":
        return [f'{indent}console.log("{draw(strings)}", {name});']
    if kind == "comment":
        return [f"{indent}// {draw(strings)} {name}"]
    inner = draw(js_body(indent + "  ", depth + 1))
    if kind == "if":
        return [f"{indent}if ({name} > 1) {{", *inner, f"{indent}}}"]
    if kind == "for":
        return [f"{indent}for (const {name} of items) {{", *inner, f"{indent}}}"]
    return [f"{indent}function {name}_{draw(st.integers(0, 9))}() {{", *inner, f"{indent}}}"]


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def js_body(draw: st.DrawFn, indent: str, depth: int) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 6 if depth < 1 else 3))):
        lines += draw(js_statement(indent, depth))
    return lines


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def js_function(draw: st.DrawFn, indent: str, method: bool) -> list[str]:
    name = f"{draw(words)}{draw(st.integers(0, 999))}"
    doc = [f"{indent}/** {draw(strings)} */"] if draw(st.booleans()) else []
    head = f"{indent}{name}(a, b) {{" if method else f"{indent}function {name}(a, b) {{"
    return [*doc, head, *draw(js_body(indent + "  ", 0)), f"{indent}}}"]


@st.composite
def js_source(draw: st.DrawFn) -> str:
    lines: list[str] = []
    if draw(st.booleans()):
        lines += [f'import {{ {w} }} from "./{w}";' for w in draw(st.lists(words, max_size=4))]
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["function", "class", "code", "arrow"]))
        lines.append("")
        if kind == "function":
            lines += draw(js_function("", False))
        elif kind == "class":
            lines.append(f"// The {draw(words)} class.")
            lines.append(f"export class C{draw(st.integers(0, 99))} extends Base {{")
            for _ in range(draw(st.integers(1, 5))):
                lines += draw(js_function("  ", True))
                lines.append("")
            lines.append("}")
        elif kind == "arrow":
            lines += [f"const {draw(words)}Fn = (x) => {{", *draw(js_body("  ", 0)), "};"]
        else:
            lines += draw(js_body("", 1))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + newline


@functools.cache  # one strategy per arguments: building them is what costs
@st.composite
def rust_function(draw: st.DrawFn, indent: str) -> list[str]:
    name = f"f_{draw(st.integers(0, 999))}"
    doc = [f"{indent}/// {draw(strings)}"] * draw(st.integers(0, 2))
    attr = [f"{indent}#[inline]"] if draw(st.booleans()) else []
    body = [
        f'{indent}    let {draw(st.sampled_from(["x", "y", "données"]))} = "{draw(strings)}";'
        for _ in range(draw(st.integers(1, 12)))
    ]
    return [
        *doc,
        *attr,
        f"{indent}pub fn {name}(&self) -> usize {{",
        *body,
        f"{indent}    0",
        f"{indent}}}",
    ]


@st.composite
def rust_source(draw: st.DrawFn) -> str:
    lines = [
        f"use std::{m};" for m in draw(st.lists(st.sampled_from(["fmt", "io", "fs"]), max_size=3))
    ]
    for _ in range(draw(st.integers(1, 6))):
        lines.append("")
        if draw(st.booleans()):
            lines += draw(rust_function(""))
        else:
            name = f"S{draw(st.integers(0, 99))}"
            lines += [f"/// The {name}.", f"impl {name} {{"]
            for _ in range(draw(st.integers(1, 5))):
                lines += [*draw(rust_function("    ")), ""]
            lines.append("}")
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + newline


GENERATED = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@GENERATED
@given(text=js_source(), chunk_size=st.integers(32, 400), overlap=st.sampled_from([0, 20, 50]))
def test_generated_javascript_keeps_fitting_functions_whole(
    text: str, chunk_size: int, overlap: int
):
    check_file(text, "javascript", chunk_size, overlap)


@GENERATED
@given(text=rust_source(), chunk_size=st.integers(32, 400), overlap=st.sampled_from([0, 20, 50]))
def test_generated_rust_keeps_fitting_functions_whole(text: str, chunk_size: int, overlap: int):
    check_file(text, "rust", chunk_size, overlap)


# Braces, quotes and comment marks of every family, with Unicode and odd line breaks: what
# a half-written file or a stray binary-ish text gives each grammar.
CODE_CHARS = "{}()[]<>;:,.=+-*/%&|!?#@$\\'\"`\n\r\t abcxyzABC019_éλ名😀\u200b\x0c"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    text=st.one_of(
        st.text(alphabet=CODE_CHARS, min_size=1, max_size=2000),
        st.text(min_size=1, max_size=500),
    ),
    language=st.sampled_from(sorted(GRAMMARS)),
    chunk_size=st.integers(32, 300),
    overlap=st.sampled_from([0, 20, 50]),
)
def test_any_text_holds_the_invariants_in_every_language(
    text: str, language: str, chunk_size: int, overlap: int
):
    chunks = split_code(text, language=language, chunk_size=chunk_size, overlap_percent=overlap)
    assert_invariants(text, chunks, chunk_size, overlap)
    again = split_code(text, language=language, chunk_size=chunk_size, overlap_percent=overlap)
    assert again == chunks  # the same text and settings, the same chunks
