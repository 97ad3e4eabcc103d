"""Benchmark code mode in each language it cuts by a tree-sitter grammar.

For each language a corpus of about ``--kib`` KiB is built at run time from source files
of that language already on the machine (C headers, shell scripts, JavaScript, PHP, Go
under /usr) and, where the machine has none or too few, from copies of the test fixture
written for that language (tests/chunk/fixtures/). Each file is cut on its own, as
``gb remember`` cuts them, and each method is timed over all of a language's files at
1024 tokens with 20% overlap, as the median of ``--runs`` runs after one warm-up run:

- ours, code mode (``split_code`` with the language's grammar);
- ours, text mode (``split_text``), for comparison;
- semantic-text-splitter's ``CodeSplitter`` with the same grammar, sized by characters
  (4096, 819 overlap): a peer that also cuts code along its syntax tree;
- the grammar's parse alone (tree-sitter, the text encoded), the floor under both.

Figures are MB/s of UTF-8 (10^6 bytes a second). A ``tree`` column says whether our code
mode cut by the tree (the share of files; one that does not parse is cut as text).

Run from the repository root::

    . .venv/bin/activate
    pip install -e '.[bench]'      # semantic-text-splitter
    python bench/code_bench.py [--runs N] [--kib N] [--json]
"""

from __future__ import annotations

import argparse
import gc
import glob
import importlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from gligabao.chunk.code import split_code  # noqa: E402
from gligabao.chunk.cutting import code_language  # noqa: E402
from gligabao.chunk.syntax import GRAMMARS  # noqa: E402
from gligabao.chunk.text import split_text  # noqa: E402

CHUNK_TOKENS = 1024
OVERLAP_PERCENT = 20
CHUNK_CHARS = CHUNK_TOKENS * 4  # about 4 characters per token
OVERLAP_CHARS = CHUNK_CHARS * OVERLAP_PERCENT // 100
FIXTURES = REPO_ROOT / "tests" / "chunk" / "fixtures"

# Where the machine keeps source files of these languages (read only, never written).
SYSTEM_PATTERNS = [
    "/usr/include/**/*.h",
    "/usr/local/cuda*/include/**/*.hpp",
    "/usr/share/doc/git/contrib/**/*.*",
    "/usr/share/ucf/*.sh",
    "/usr/lib/node_modules/npm/lib/**/*.js",
    "/usr/lib/google-cloud-sdk/platform/google_appengine/php/sdk/google/**/*.php",
]


def _read(path: str) -> str | None:
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def corpora(limit: int) -> dict[str, tuple[list[str], str]]:
    """Language -> (files' texts, about ``limit`` bytes in all; where they came from)."""
    found: dict[str, list[str]] = {language: [] for language in GRAMMARS}
    sizes = dict.fromkeys(GRAMMARS, 0)
    for pattern in SYSTEM_PATTERNS:
        for path in sorted(glob.glob(pattern, recursive=True)):
            language = code_language(path)
            if language not in found or sizes[language] >= limit:
                continue
            text = _read(path)
            if text is None or len(text) < 1000:
                continue
            found[language].append(text)
            sizes[language] += len(text.encode())
    out = {}
    for language, texts in found.items():
        source = f"{len(texts)} files on this machine" if texts else ""
        if sizes[language] < limit:
            fixture = next(p for p in FIXTURES.iterdir() if code_language(str(p)) == language)
            text = fixture.read_text(encoding="utf-8")
            times = max(1, (limit - sizes[language]) // len(text.encode()))
            texts.extend([text] * times)
            source = (source + " + " if source else "") + f"{fixture.name} x{times}"
        out[language] = (texts, source)
    return out


def _grammar(language: str) -> object:
    module, function = GRAMMARS[language]
    return getattr(importlib.import_module(module), function)()


def methods(language: str) -> dict[str, Callable[[str], object]]:
    def ours_code(text: str) -> object:
        return split_code(
            text, language=language, chunk_size=CHUNK_TOKENS, overlap_percent=OVERLAP_PERCENT
        )

    def ours_text(text: str) -> object:
        return split_text(text, chunk_size=CHUNK_TOKENS, overlap_percent=OVERLAP_PERCENT)

    def sts_code(text: str) -> object:
        from semantic_text_splitter import CodeSplitter

        return CodeSplitter(_grammar(language), CHUNK_CHARS, overlap=OVERLAP_CHARS).chunks(text)

    def parse_only(text: str) -> object:
        import tree_sitter

        grammar = tree_sitter.Language(_grammar(language))
        return tree_sitter.Parser(grammar).parse(text.encode())

    return {
        "parse only": parse_only,
        "code mode": ours_code,
        "text mode": ours_text,
        "sts CodeSplitter": sts_code,
    }


def timed(run: Callable[[str], object], texts: list[str], runs: int) -> float | None:
    """The median seconds of ``runs`` runs over all the files, after a warm-up; None if
    the method fails."""
    try:
        for text in texts:
            run(text)
    except Exception as exc:  # a peer missing or refusing the text: reported, not fatal
        print(f"  unavailable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None
    times = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        for text in texts:
            run(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kib", type=int, default=512, help="corpus size per language")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, dict[str, object]] = {}
    for language, (texts, source) in corpora(args.kib * 1024).items():
        nbytes = sum(len(text.encode()) for text in texts)
        parsed = 0
        for text in texts:
            notices: list[str] = []
            split_code(text, language=language, chunk_size=CHUNK_TOKENS, notices=notices)
            parsed += not notices
        row: dict[str, object] = {
            "bytes": nbytes,
            "files": len(texts),
            "source": source,
            "tree": round(parsed / len(texts), 3),
        }
        for name, run in methods(language).items():
            seconds = timed(run, texts, args.runs)
            row[name] = None if seconds is None else round(nbytes / seconds / 1e6, 2)
        results[language] = row
        print(f"{language}: done", file=sys.stderr)
    if args.json:
        print(json.dumps({"python": platform.python_version(), "languages": results}, indent=1))
        return
    names = list(methods("c"))
    print(f"MB/s at {CHUNK_TOKENS} tokens, {OVERLAP_PERCENT}% overlap; median of {args.runs}")
    print(f"{'language':11} {'KiB':>5} {'tree':>4} " + " ".join(f"{n:>16}" for n in names))
    for language, row in results.items():
        cells = " ".join(f"{'-' if row[n] is None else format(row[n], '.2f'):>16}" for n in names)
        tree = f"{row['tree']:.0%}"
        print(f"{language:11} {row['bytes'] // 1024:>5} {tree:>4} {cells}   {row['source']}")
    print(f"({platform.python_version()} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
