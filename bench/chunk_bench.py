"""Benchmark gligabao's text chunker against other Python chunkers.

Corpora are built at run time from texts already on the machine that nobody on this
team wrote (licence texts, third-party markdown, the Python standard library), each
cut to about 1 MiB of UTF-8. Every method is timed at a chunk size of 1024 tokens with
20% overlap where it supports overlap (4096 / 819 characters for character-sized runs),
as the median of ``--runs`` runs after one warm-up run. Each timed run builds its
splitter afresh, so no cache (semchunk's memoised counter, for one) carries over from
one run to the next.

The markdown and Python corpora also get a table for our markdown and code modes
against semantic-text-splitter's MarkdownSplitter / CodeSplitter and chonkie's
CodeChunker, and the time of each mode over our text mode's on the same corpus.

Run from the repository root::

    . .venv/bin/activate
    pip install -e '.[bench]'   # or: pip install semchunk langchain-text-splitters \
                                #     semantic-text-splitter chonkie
    pip install tree-sitter-python  # CodeSplitter's grammar; chonkie[code] for CodeChunker
    python bench/chunk_bench.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import ast
import gc
import glob
import gzip
import hashlib
import importlib.metadata
import inspect
import json
import os
import platform
import statistics
import sys
import sysconfig
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1 << 20
CHUNK_TOKENS = 1024
OVERLAP_PERCENT = 20
OVERLAP_TOKENS = CHUNK_TOKENS * OVERLAP_PERCENT // 100  # 204
CHUNK_CHARS = CHUNK_TOKENS * 4  # 4096: about 4 characters per token
OVERLAP_CHARS = CHUNK_CHARS * OVERLAP_PERCENT // 100  # 819
SLOW_RUN_S = 20.0  # a method whose warm-up run takes longer is timed over 3 runs only
SLOW_RUNS = 3
MARKDOWN_LIMIT = 3.0  # our markdown mode at most 3x the time of our text mode
# The chunker's speed targets: cut(mode=text) counts nothing split_text does not, and
# split_text is within 1.6x one estimator pass over the prose corpus.
CUT_LIMIT = 1.05
FLOOR_LIMIT = 1.6

REPO_ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- corpora


@dataclass
class Corpus:
    name: str
    text: str
    source: str
    files: int
    passes: int

    @property
    def nbytes(self) -> int:
        return len(self.text.encode("utf-8"))


def _read_text(path: str) -> str | None:
    try:
        if os.path.islink(path) or not os.path.isfile(path):
            return None
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                data = fh.read(8 * MIB)
        else:
            with open(path, "rb") as fh:
                data = fh.read(8 * MIB)
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
        return None


def _unique_texts(paths: Iterable[str], limit_bytes: int | None = None) -> list[tuple[str, str]]:
    """Read ``paths`` in order, skipping symlinks, unreadable files and duplicates."""
    seen_paths: set[str] = set()
    seen_hashes: set[str] = set()
    out: list[tuple[str, str]] = []
    total = 0
    for path in paths:
        real = os.path.realpath(path)
        if real in seen_paths:
            continue
        seen_paths.add(real)
        text = _read_text(path)
        if not text or not text.strip():
            continue
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if digest in seen_hashes:
            continue
        seen_hashes.add(digest)
        out.append((path, text))
        total += len(text.encode("utf-8"))
        if limit_bytes is not None and total >= limit_bytes:
            break
    return out


def _fill(name: str, texts: list[tuple[str, str]], source: str, size: int) -> Corpus:
    """Concatenate ``texts`` (repeating the list as needed) and cut to ``size`` bytes."""
    if not texts:
        raise RuntimeError(f"no input files found for the {name} corpus ({source})")
    parts: list[str] = []
    total = 0
    passes = 0
    while total < size:
        passes += 1
        for _, text in texts:
            piece = text if text.endswith("\n") else text + "\n"
            parts.append(piece + "\n")
            total += len(piece.encode("utf-8")) + 1
            if total >= size:
                break
    # Cut at a character boundary: 'ignore' only drops a trailing partial character.
    whole = "".join(parts).encode("utf-8")[:size].decode("utf-8", "ignore")
    used = min(len(texts), len(parts))
    return Corpus(name=name, text=whole, source=source, files=used, passes=passes)


def prose_corpus(size: int) -> Corpus:
    root = "/usr/share/common-licenses"
    texts = _unique_texts(sorted(glob.glob(os.path.join(root, "*"))))
    return _fill("prose", texts, f"{root}/* (no symlinks, no duplicates)", size)


def _markdown_roots() -> list[str]:
    roots = ["/usr/share/doc"]
    for key in ("purelib", "platlib"):
        for vars_ in (None, {"base": sys.base_prefix, "platbase": sys.base_prefix}):
            try:
                path = sysconfig.get_paths(vars=vars_)[key] if vars_ else sysconfig.get_path(key)
            except KeyError:
                continue
            roots.append(path)
    roots += sorted(glob.glob("/usr/lib/python3*"))
    roots.append(os.path.dirname(os.__file__))
    unique: list[str] = []
    for root in roots:
        if root and os.path.isdir(root) and root not in unique:
            unique.append(root)
    return unique


def markdown_corpus(size: int) -> Corpus:
    # Bounded globs: at most three directory levels below each root.
    patterns = ["*.md", "*/*.md", "*/*/*.md", "*/*/*/*.md"]
    roots = _markdown_roots()
    paths: list[str] = []
    for root in roots:
        found: list[str] = []
        for pattern in patterns:
            found += glob.glob(os.path.join(root, pattern))
            if root == "/usr/share/doc":
                found += glob.glob(os.path.join(root, pattern + ".gz"))
        # Nothing this project's team wrote: skip our own package if it is installed.
        paths += sorted(p for p in found if "gligabao" not in p)
    texts = _unique_texts(paths, limit_bytes=size)
    used_roots = sorted({r for r in roots if any(p.startswith(r + os.sep) for p, _ in texts)})
    source = "*.md (and *.md.gz in /usr/share/doc), up to 3 levels under " + ", ".join(
        used_roots or roots
    )
    return _fill("markdown", texts, source, size)


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _statement_prefix(text: str, budget: int) -> str:
    """The longest prefix of ``text`` (one Python file) within ``budget`` UTF-8 bytes that
    ends just before a top-level statement (its decorators included), so it still parses."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    lines = text.split("\n")
    line_starts = [0]  # byte offset of each line
    for line in lines:
        line_starts.append(line_starts[-1] + len(line.encode("utf-8")) + 1)
    cut = 0  # lines kept
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if line_starts[first - 1] <= budget:
            cut = first - 1
    return "".join(line + "\n" for line in lines[:cut])


def python_corpus(size: int) -> Corpus:
    """Whole standard-library modules, the last one cut before a top-level statement, so
    that the corpus parses as one module and code mode cuts it along its syntax tree (a
    cut inside a string or block would send the whole corpus to code mode's fallback)."""
    root = os.path.dirname(os.__file__)
    texts = _unique_texts(sorted(glob.glob(os.path.join(root, "*.py"))), limit_bytes=size)
    source = f"{root}/*.py (sorted)"
    corpus = _fill("python", texts, source, size)
    if not texts or _parses(corpus.text):
        return corpus
    parts: list[str] = []
    total = 0
    passes = 0
    while passes < corpus.passes:
        passes += 1
        for _, text in texts:
            piece = (text if text.endswith("\n") else text + "\n") + "\n"
            nbytes = len(piece.encode("utf-8"))
            if total + nbytes > size:
                parts.append(_statement_prefix(text, size - total))
                break
            parts.append(piece)
            total += nbytes
        else:
            continue
        break
    whole = "".join(parts)
    if not _parses(whole):  # keep the byte cut, which code mode cuts as text
        corpus.source += "; does NOT parse as one module"
        return corpus
    source += ", the last module cut before a top-level statement"
    return Corpus("python", whole, source, min(len(texts), len(parts)), passes)


# --------------------------------------------------------------------------- methods


@dataclass
class Method:
    name: str
    sizing: str  # "estimator" or "chars"
    overlap: str
    run: Callable[[str], object]  # chunks the text; its output is left untouched while timed
    texts: Callable[[object], list[str]] | None = list  # output -> chunk texts (None: floor)
    ours: bool = False
    floor: bool = False


@dataclass
class Result:
    name: str
    sizing: str
    overlap: str
    chunks: int | None = None
    max_tokens: int | None = None  # largest chunk by Estimator().count
    seconds: float | None = None
    runs: int = 0
    note: str = ""
    error: str | None = None
    times: list[float] = field(default_factory=list)


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= 90 else text[:87] + "..."


def build_methods(
    count: Callable[[str], int], split_text: Callable[..., list], peers: bool = True
) -> list[Method]:
    """Every method as a (lazy) callable; imports happen on first call so that a missing
    peer only marks its own rows as unavailable. ``peers`` False: ours and the floor only."""
    from gligabao.chunk import ChunkSettings, cut

    ov_tok = f"{OVERLAP_TOKENS} tok"
    ov_chr = f"{OVERLAP_CHARS} ch"
    text_mode = ChunkSettings(CHUNK_TOKENS, OVERLAP_PERCENT, "text")
    methods = [
        Method(
            "ours: split_text",
            "estimator",
            f"{OVERLAP_PERCENT}%",
            lambda t: split_text(t, chunk_size=CHUNK_TOKENS, overlap_percent=OVERLAP_PERCENT),
            texts=lambda out: [c.text for c in out],  # type: ignore[attr-defined]
            ours=True,
        ),
        Method(
            "cut(mode=text)",  # what gb remember calls: counts the text, and cuts it
            "estimator",
            f"{OVERLAP_PERCENT}%",
            lambda t: cut(t, text_mode),
            texts=lambda out: [c.text for c in out.chunks],  # type: ignore[attr-defined]
        ),
        Method("floor: Estimator().count", "estimator", "-", lambda t: count(t), None, floor=True),
    ]
    if not peers:
        return methods

    # semchunk ----------------------------------------------------------------------
    def semchunk_run(counter: Callable[[str], int], size: int) -> Callable[[str], object]:
        def run(text: str) -> object:
            import semchunk

            chunker = semchunk.chunkerify(counter, chunk_size=size)
            if "overlap" in inspect.signature(chunker.__call__).parameters:
                return chunker(text, overlap=OVERLAP_PERCENT / 100)
            return chunker(text)

        return run

    methods += [
        Method("semchunk", "estimator", "0.2", semchunk_run(count, CHUNK_TOKENS)),
        Method("semchunk", "chars", "0.2", semchunk_run(len, CHUNK_CHARS)),
    ]

    # langchain-text-splitters --------------------------------------------------------
    def langchain_run(length: Callable[[str], int], size: int, ov: int) -> Callable[[str], object]:
        def run(text: str) -> object:
            from langchain_text_splitters import RecursiveCharacterTextSplitter

            splitter = RecursiveCharacterTextSplitter(
                chunk_size=size, chunk_overlap=ov, length_function=length
            )
            return splitter.split_text(text)

        return run

    methods += [
        Method(
            "langchain Recursive",
            "estimator",
            ov_tok,
            langchain_run(count, CHUNK_TOKENS, OVERLAP_TOKENS),
        ),
        Method(
            "langchain Recursive", "chars", ov_chr, langchain_run(len, CHUNK_CHARS, OVERLAP_CHARS)
        ),
    ]

    # semantic-text-splitter ----------------------------------------------------------
    def sts_chars(text: str) -> object:
        from semantic_text_splitter import TextSplitter

        try:
            splitter = TextSplitter(CHUNK_CHARS, overlap=OVERLAP_CHARS)
        except TypeError:  # an old version without overlap
            splitter = TextSplitter(CHUNK_CHARS)
        return splitter.chunks(text)

    def sts_callback(text: str) -> object:
        from semantic_text_splitter import TextSplitter

        if not hasattr(TextSplitter, "from_callback"):
            raise RuntimeError("this version has no TextSplitter.from_callback")
        splitter = TextSplitter.from_callback(count, CHUNK_TOKENS, overlap=OVERLAP_TOKENS)
        return splitter.chunks(text)

    methods += [
        Method("semantic-text-splitter", "chars", ov_chr, sts_chars),
        Method("semantic-text-splitter cb", "estimator", ov_tok, sts_callback),
    ]

    # chonkie -------------------------------------------------------------------------
    def chonkie_recursive(tokenizer: object, size: int) -> Callable[[str], object]:
        def run(text: str) -> object:
            from chonkie import RecursiveChunker

            return RecursiveChunker(tokenizer=tokenizer, chunk_size=size).chunk(text)

        return run

    def chonkie_token(tokenizer: object, size: int, ov: int) -> Callable[[str], object]:
        def run(text: str) -> object:
            from chonkie import TokenChunker

            return TokenChunker(tokenizer=tokenizer, chunk_size=size, chunk_overlap=ov).chunk(text)

        return run

    def chonkie_texts(out: object) -> list[str]:
        return [c.text for c in out]  # type: ignore[attr-defined]

    methods += [
        Method(
            "chonkie Recursive",
            "chars",
            "none",
            chonkie_recursive("character", CHUNK_CHARS),
            chonkie_texts,
        ),
        Method(
            "chonkie Token",
            "chars",
            ov_chr,
            chonkie_token("character", CHUNK_CHARS, OVERLAP_CHARS),
            chonkie_texts,
        ),
        # chonkie wraps a plain callable as a token counter (CallableAutoTokenizer).
        Method(
            "chonkie Recursive",
            "estimator",
            "none",
            chonkie_recursive(count, CHUNK_TOKENS),
            chonkie_texts,
        ),
        # TokenChunker needs encode/decode, which a callable counter lacks: expected to be
        # reported unavailable, kept so that a future chonkie that supports it is timed.
        Method(
            "chonkie Token",
            "estimator",
            ov_tok,
            chonkie_token(count, CHUNK_TOKENS, OVERLAP_TOKENS),
            chonkie_texts,
        ),
    ]
    return methods


# --------------------------------------------------------------------------- modes

MODE_CORPORA = {"markdown": "markdown", "python": "code"}  # corpus name -> our mode
TREE_SITTER_HINT = "pip install tree-sitter-python"
CHONKIE_CODE_HINT = "pip install 'chonkie[code]'"  # it then downloads grammars from GitHub


def _split_markdown(text: str) -> object:
    from gligabao.chunk.markdown import split_markdown

    return split_markdown(text, chunk_size=CHUNK_TOKENS, overlap_percent=OVERLAP_PERCENT)


def _split_code(text: str) -> object:
    from gligabao.chunk.code import split_code

    return split_code(text, chunk_size=CHUNK_TOKENS, overlap_percent=OVERLAP_PERCENT)


def _python_language() -> object:
    """The tree-sitter grammar semantic-text-splitter's CodeSplitter takes."""
    try:
        import tree_sitter_python
    except ImportError as exc:
        raise RuntimeError(f"{exc.msg} ({TREE_SITTER_HINT})") from exc
    return tree_sitter_python.language()


def build_mode_methods(corpus: str, count: Callable[[str], int]) -> list[Method]:
    """The structure-aware methods for ``corpus`` ("markdown" or "python"): our mode
    first, then its peers, each import deferred to its first call as in build_methods."""
    ov_tok = f"{OVERLAP_TOKENS} tok"
    ov_chr = f"{OVERLAP_CHARS} ch"

    def ours_texts(out: object) -> list[str]:
        return [c.text for c in out]  # type: ignore[attr-defined]

    if corpus == "markdown":

        def sts_md_chars(text: str) -> object:
            from semantic_text_splitter import MarkdownSplitter

            try:
                splitter = MarkdownSplitter(CHUNK_CHARS, overlap=OVERLAP_CHARS)
            except TypeError:  # an old version without overlap
                splitter = MarkdownSplitter(CHUNK_CHARS)
            return splitter.chunks(text)

        def sts_md_callback(text: str) -> object:
            from semantic_text_splitter import MarkdownSplitter

            if not hasattr(MarkdownSplitter, "from_callback"):
                raise RuntimeError("this version has no MarkdownSplitter.from_callback")
            splitter = MarkdownSplitter.from_callback(count, CHUNK_TOKENS, overlap=OVERLAP_TOKENS)
            return splitter.chunks(text)

        return [
            Method(
                "ours: split_markdown",
                "estimator",
                f"{OVERLAP_PERCENT}%",
                _split_markdown,
                ours_texts,
                ours=True,
            ),
            Method("semantic-text-splitter Markdown", "chars", ov_chr, sts_md_chars),
            Method("semantic-text-splitter Markdown cb", "estimator", ov_tok, sts_md_callback),
        ]

    def sts_code_chars(text: str) -> object:
        from semantic_text_splitter import CodeSplitter

        language = _python_language()
        try:
            splitter = CodeSplitter(language, CHUNK_CHARS, overlap=OVERLAP_CHARS)
        except TypeError:  # an old version without overlap
            splitter = CodeSplitter(language, CHUNK_CHARS)
        return splitter.chunks(text)

    def sts_code_callback(text: str) -> object:
        from semantic_text_splitter import CodeSplitter

        if not hasattr(CodeSplitter, "from_callback"):
            raise RuntimeError("this version has no CodeSplitter.from_callback")
        splitter = CodeSplitter.from_callback(
            _python_language(), count, CHUNK_TOKENS, overlap=OVERLAP_TOKENS
        )
        return splitter.chunks(text)

    def chonkie_code(tokenizer: object, size: int) -> Callable[[str], object]:
        def run(text: str) -> object:
            from chonkie import CodeChunker

            try:
                chunker = CodeChunker(tokenizer=tokenizer, chunk_size=size, language="python")
            except ImportError as exc:
                raise RuntimeError(f"needs {exc.name}: {CHONKIE_CODE_HINT}") from exc
            return chunker.chunk(text)

        return run

    def chonkie_texts(out: object) -> list[str]:
        return [c.text for c in out]  # type: ignore[attr-defined]

    return [
        Method(
            "ours: split_code",
            "estimator",
            f"{OVERLAP_PERCENT}%",
            _split_code,
            ours_texts,
            ours=True,
        ),
        Method("semantic-text-splitter Code", "chars", ov_chr, sts_code_chars),
        Method("semantic-text-splitter Code cb", "estimator", ov_tok, sts_code_callback),
        Method(
            "chonkie Code", "chars", "none", chonkie_code("character", CHUNK_CHARS), chonkie_texts
        ),
        Method(
            "chonkie Code", "estimator", "none", chonkie_code(count, CHUNK_TOKENS), chonkie_texts
        ),
    ]


# --------------------------------------------------------------------------- timing


def time_method(
    method: Method,
    text: str,
    runs: int,
    count: Callable[[str], int],
    log: Callable[[str], None],
) -> Result:
    result = Result(method.name, method.sizing, method.overlap)
    try:
        gc.collect()
        t0 = time.perf_counter()
        output = method.run(text)  # warm-up (also imports the library)
        warm = time.perf_counter() - t0
        if method.texts is not None:
            texts = method.texts(output)
            result.chunks = len(texts)
            result.max_tokens = max((count(t) for t in texts), default=0)
        del output
        if warm > SLOW_RUN_S and runs > SLOW_RUNS:
            runs = SLOW_RUNS
            result.note = f"slow ({warm:.0f} s/run): {SLOW_RUNS} runs"
        for _ in range(runs):
            gc.collect()
            t0 = time.perf_counter()
            output = method.run(text)
            result.times.append(time.perf_counter() - t0)  # before the output is freed
            del output
    except Exception as exc:  # a peer that is missing or fails must not stop the run
        result.error = _short(exc)
        log(f"    {method.name} [{method.sizing}]: unavailable: {result.error}")
        return result
    result.runs = runs
    result.seconds = statistics.median(result.times)
    log(
        f"    {method.name} [{method.sizing}]: {result.seconds:.3f} s median of {runs}"
        + (f" ({result.note})" if result.note else "")
    )
    return result


def sanity_check(
    text: str, split_text: Callable[..., list], count: Callable[[str], int]
) -> list[str]:
    """The chunking invariants on our chunks: exact slices (chars and UTF-8 bytes), size,
    full cover."""
    problems: list[str] = []
    chunks = split_text(text, chunk_size=CHUNK_TOKENS, overlap_percent=OVERLAP_PERCENT)
    data = text.encode("utf-8")
    bad_slice = bad_bytes = too_big = 0
    worst = 0
    for ch in chunks:
        if ch.text != text[ch.start : ch.end]:
            bad_slice += 1
        if data[ch.start_offset : ch.end_offset] != ch.text.encode("utf-8"):
            bad_bytes += 1
        n = count(ch.text)
        worst = max(worst, n)
        if n > CHUNK_TOKENS:
            too_big += 1
    if bad_slice:
        problems.append(f"{bad_slice} chunk(s) differ from text[start:end]")
    if bad_bytes:
        problems.append(f"{bad_bytes} chunk(s) differ from utf8[start_offset:end_offset]")
    if too_big:
        problems.append(f"{too_big} chunk(s) over {CHUNK_TOKENS} tokens (largest {worst})")
    if chunks and chunks[-1].end != len(text):
        problems.append(f"last chunk ends at {chunks[-1].end}, text length {len(text)}")
    if chunks and chunks[0].start != 0 and text[: chunks[0].start].strip():
        problems.append(f"first chunk starts at {chunks[0].start}, skipping text")
    return problems


def paired_ratios(text: str, runs: int, methods: list[Method]) -> dict[str, float] | None:
    """The two speed ratios we hold the chunker to, each the median of per-round ratios:
    every round runs split_text, cut(mode=text) and the floor one after another, so that
    on a busy machine the three runs of a round see about the same load, which medians
    taken a method at a time (minutes apart under a changing load) do not."""
    by_name = {m.name: m.run for m in methods}
    try:
        split = by_name["ours: split_text"]
        whole = by_name["cut(mode=text)"]
        floor = by_name["floor: Estimator().count"]
    except KeyError:
        return None
    rounds: list[tuple[float, float, float]] = []
    for _ in range(runs):
        times = []
        for run in (split, whole, floor):
            gc.collect()
            t0 = time.perf_counter()
            output = run(text)
            times.append(time.perf_counter() - t0)
            del output
        rounds.append((times[0], times[1], times[2]))
    return {
        "rounds": runs,
        "split_text_over_floor": statistics.median(s / f for s, _, f in rounds),
        "cut_over_split_text": statistics.median(c / s for s, c, _ in rounds),
    }


# --------------------------------------------------------------------------- output


def _mbps(nbytes: int, seconds: float | None) -> float | None:
    return None if not seconds else nbytes / MIB / seconds


def print_table(
    corpus: Corpus,
    results: list[Result],
    problems: list[str],
    mode: str | None = None,
    paired: dict[str, float] | None = None,
) -> None:
    """One corpus's table; ``mode`` names a structure-aware table, whose "ours" row (and
    so its ``x ours``) is that mode. ``paired`` (`paired_ratios`) gives the two speed
    ratios; without it they are the ratios of the table's medians."""
    ours = next((r for r in results if r.name.startswith("ours")), None)
    floor = next((r for r in results if r.name.startswith("floor")), None)
    our_s = ours.seconds if ours else None
    headers = ["method", "sizing", "overlap", "chunks", "max tok", "median s", "MB/s", "x ours"]
    headers.append("note")
    rows: list[list[str]] = []
    for r in results:
        if r.error:
            rows.append([r.name, r.sizing, r.overlap, *["-"] * 5, f"unavailable: {r.error}"])
            continue
        assert r.seconds is not None
        ratio = f"{r.seconds / our_s:.2f}" if our_s else "-"
        rate = _mbps(corpus.nbytes, r.seconds)
        rows.append(
            [
                r.name,
                r.sizing,
                r.overlap,
                "-" if r.chunks is None else str(r.chunks),
                "-" if r.max_tokens is None else str(r.max_tokens),
                f"{r.seconds:.4f}",
                f"{rate:.2f}" if rate is not None else "-",
                ratio,
                r.note,
            ]
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    right = {3, 4, 5, 6, 7}

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)
        ).rstrip()

    print()
    if mode:
        print(f"-- {corpus.name}, {mode} mode (x ours = method time / our {mode} mode's time)")
    else:
        print(
            f"== {corpus.name}: {corpus.nbytes:,} bytes UTF-8, {len(corpus.text):,} chars  "
            f"(chunk_size {CHUNK_TOKENS} tokens / {CHUNK_CHARS} chars, "
            f"overlap {OVERLAP_PERCENT}%)"
        )
    print(fmt(headers))
    print(fmt(["-" * w for w in widths]))
    for row in rows:
        print(fmt(row))
    if not mode:
        print(
            "x ours = method time / our time (> 1: we are faster); "
            "max tok = largest chunk by Estimator().count"
        )
    how = f"median of {paired['rounds']:.0f} paired rounds; " if paired else ""
    if our_s and floor and floor.seconds:
        ratio = paired["split_text_over_floor"] if paired else our_s / floor.seconds
        target = ""
        if not mode and corpus.name == "prose":
            target = f"; target <= {FLOOR_LIMIT}x: {'PASS' if ratio <= FLOOR_LIMIT else 'FAIL'}"
        print(
            f"ours vs floor: {ratio:.2f}x the time of one estimator pass "
            f"({how}medians {our_s:.4f} s vs {floor.seconds:.4f} s{target})"
        )
    whole = next((r for r in results if r.name == "cut(mode=text)"), None)
    if our_s and whole and whole.seconds:
        ratio = paired["cut_over_split_text"] if paired else whole.seconds / our_s
        print(
            f"cut(mode=text) vs split_text: {ratio:.2f}x ({how}medians {whole.seconds:.4f} s "
            f"vs {our_s:.4f} s; target <= {CUT_LIMIT}x: {'PASS' if ratio <= CUT_LIMIT else 'FAIL'})"
        )
    peers = [
        r
        for r in results
        if r.sizing == "estimator"
        and r.seconds
        and not r.name.startswith(("ours", "floor", "cut("))
    ]
    overlapping = [r for r in peers if r.overlap != "none"]
    shown: list[Result] = []
    for label, group in (("", peers), (" with overlap", overlapping)):
        if not our_s or not group:
            continue
        best = min(group, key=lambda r: r.seconds or 0.0)
        if best in shown:
            continue
        shown.append(best)
        assert best.seconds is not None
        verdict = "faster" if our_s < best.seconds else "slower"
        print(
            f"ours{f' {mode} mode' if mode else ''} vs fastest estimator-sized peer{label} "
            f"({best.name}, overlap {best.overlap}): "
            f"{best.seconds / our_s:.2f}x (we are {verdict}: {our_s:.4f} s vs {best.seconds:.4f} s)"
        )
    for problem in problems:
        print(f"WARNING: ours{f' {mode} mode' if mode else ''} on {corpus.name}: {problem}")


def mode_vs_text(mode: str, results: list[Result], mode_results: list[Result]) -> float | None:
    """Our structure-aware mode's median time over our text mode's, on the same corpus."""
    text = next((r for r in results if r.name.startswith("ours")), None)
    ours = next((r for r in mode_results if r.name.startswith("ours")), None)
    if not (text and ours and text.seconds and ours.seconds):
        return None
    return ours.seconds / text.seconds


def print_mode_vs_text(
    mode: str, ratio: float | None, results: list[Result], mode_results: list[Result]
) -> None:
    if ratio is None:
        print(f"ours {mode} mode vs ours text mode: unavailable")
        return
    text = next(r for r in results if r.name.startswith("ours"))
    ours = next(r for r in mode_results if r.name.startswith("ours"))
    target = ""
    if mode == "markdown":  # markdown mode no more than 3x slower than text mode
        target = (
            f"; target <= {MARKDOWN_LIMIT:.0f}x: {'PASS' if ratio <= MARKDOWN_LIMIT else 'FAIL'}"
        )
    print(
        f"ours {mode} mode vs ours text mode: {ratio:.2f}x "
        f"({ours.seconds:.4f} s vs {text.seconds:.4f} s{target})"
    )


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _json_rows(corpus: Corpus, results: list[Result]) -> list[dict]:
    ours = next((r for r in results if r.name.startswith("ours")), None)
    base = ours.seconds if ours else None
    return [
        {
            "method": r.name,
            "sizing": r.sizing,
            "overlap": r.overlap,
            "chunks": r.chunks,
            "max_tokens": r.max_tokens,
            "median_s": r.seconds,
            "mb_per_s": _mbps(corpus.nbytes, r.seconds),
            "ratio_to_ours": r.seconds / base if r.seconds and base else None,
            "runs": r.runs,
            "times_s": r.times,
            "note": r.note,
            "unavailable": r.error,
        }
        for r in results
    ]


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per method (default 5)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument(
        "--mib", type=float, default=1.0, help="size of each corpus in MiB (default 1)"
    )
    parser.add_argument(
        "--ours", action="store_true", help="time only our methods and the floor, no peers"
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    size = int(args.mib * MIB)

    # Progress goes to stderr with --json so that stdout is exactly one JSON object.
    out = sys.stderr if args.json else sys.stdout

    def log(line: str) -> None:
        print(line, file=out, flush=True)

    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    try:
        from gligabao.chunk.text import split_text
        from gligabao.chunk.tokens import Estimator
    except ImportError as exc:
        print(f"error: cannot import gligabao's chunker: {exc}", file=sys.stderr)
        return 2
    count = Estimator().count

    versions = {
        d: _version(d)
        for d in (
            "semchunk",
            "langchain-text-splitters",
            "semantic-text-splitter",
            "chonkie",
            "tree-sitter-python",
            "tree-sitter-language-pack",
        )
    }
    log(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        + ", ".join(f"{d} {v}" for d, v in versions.items())
    )
    log(
        f"runs: {args.runs} after one warm-up (3 for a method whose run takes > {SLOW_RUN_S:.0f} s)"
    )

    corpora: list[Corpus] = []
    for build in (prose_corpus, markdown_corpus, python_corpus):
        try:
            corpus = build(size)
        except Exception as exc:
            log(f"corpus {build.__name__}: unavailable: {_short(exc)}")
            continue
        corpora.append(corpus)
        log(
            f"corpus {corpus.name}: {corpus.source}; {corpus.files} distinct files, "
            f"{corpus.passes} pass(es); {corpus.nbytes:,} bytes, {len(corpus.text):,} chars"
        )

    report: dict = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "versions": versions,
        "chunk_size_tokens": CHUNK_TOKENS,
        "overlap_percent": OVERLAP_PERCENT,
        "chunk_size_chars": CHUNK_CHARS,
        "overlap_chars": OVERLAP_CHARS,
        "runs": args.runs,
        "corpora": {},
    }
    started = time.perf_counter()
    for corpus in corpora:
        log(f"timing {corpus.name} ...")
        try:
            problems = sanity_check(corpus.text, split_text, count)
        except Exception as exc:
            problems = [f"sanity check failed: {_short(exc)}"]
        methods = build_methods(count, split_text, peers=not args.ours)
        results = [time_method(m, corpus.text, args.runs, count, log) for m in methods]
        paired = paired_ratios(corpus.text, args.runs, methods)
        if not args.json:
            print_table(corpus, results, problems, paired=paired)
        entry: dict = {
            "source": corpus.source,
            "bytes": corpus.nbytes,
            "chars": len(corpus.text),
            "files": corpus.files,
            "passes": corpus.passes,
            "sanity_problems": problems,
            "methods": _json_rows(corpus, results),
            "paired": paired,
        }
        mode = MODE_CORPORA.get(corpus.name)
        if mode:
            cut = _split_markdown if mode == "markdown" else _split_code
            try:
                mode_problems = sanity_check(corpus.text, lambda t, _cut=cut, **_: _cut(t), count)
            except Exception as exc:
                mode_problems = [f"sanity check failed: {_short(exc)}"]
            mode_results = [
                time_method(m, corpus.text, args.runs, count, log)
                for m in build_mode_methods(corpus.name, count)[: 1 if args.ours else None]
            ]
            ratio = mode_vs_text(mode, results, mode_results)
            if not args.json:
                print_table(corpus, mode_results, mode_problems, mode=mode)
                print_mode_vs_text(mode, ratio, results, mode_results)
            entry["mode"] = {
                "mode": mode,
                "sanity_problems": mode_problems,
                "methods": _json_rows(corpus, mode_results),
                "ratio_to_text_mode": ratio,
            }
            if mode == "markdown":
                entry["mode"]["within_limit"] = None if ratio is None else ratio <= MARKDOWN_LIMIT
        report["corpora"][corpus.name] = entry
    report["total_s"] = time.perf_counter() - started
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"\ntotal benchmark time {report['total_s']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
