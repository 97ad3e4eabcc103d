"""Benchmark re-remembering a changed file: what a one-paragraph edit costs.

Two parts:

1. **Chunks that survive a local edit.** For real texts nobody here wrote (tests/support/corpus:
   three licences cut as text, two Node.js API references cut as text and as markdown),
   one paragraph at each of `--positions` places is edited in turn (a sentence added to
   it), the text cut again, and the new chunks matched to the old ones as `gb remember`
   matches them (gligabao/remember/diff.py): by their whole text, or by their text after
   the overlap. Printed: chunks, and the mean share that survive each way.
2. **Calls and wall time.** A 100-chunk text (`--chunks`) is remembered with the real CLI
   (`python -m gligabao remember`, a subprocess) against the test LLM server of
   tests/support/llm_server.py in this process, `--latency` seconds a call; one paragraph in its
   middle is then replaced, and the new version remembered twice from copies of that
   database: as `gb remember` does now (the diff) and with `--force` (everything
   extracted again, as before changed files were diffed). Printed: requests by stage and
   wall time of each.

Run from the repository root::

    .venv/bin/python bench/reingest_bench.py [--chunks 100] [--latency 0.3] [--positions 9]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from gligabao.chunk import ChunkSettings, cut  # noqa: E402
from gligabao.remember.diff import surviving  # noqa: E402
from tests.support.helpers import story  # noqa: E402
from tests.support.llm_server import LLMServer  # noqa: E402

CORPUS = REPO_ROOT / "tests" / "support" / "corpus"
TEXTS = {
    "Apache-2.0": ("text",),
    "GPL-3": ("text",),
    "MPL-2.0": ("text",),
    "dns.md": ("text", "markdown"),
    "webcrypto.md": ("text", "markdown"),
}
ADDED = " This sentence was added by the edit, and says something new about it."
STAGES = ("extract_graph", "summarize_chunk", "resolve", "embed")


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each paragraph that is prose (no heading, list, fence or table)."""
    spans, at = [], 0
    for block in text.split("\n\n"):
        stripped = block.strip()
        if len(stripped) > 80 and stripped[0].isalpha() and "```" not in stripped:
            spans.append((at, at + len(block)))
        at += len(block) + 2
    return spans


def survival(chunk_size: int, positions: int) -> None:
    print(f"chunks surviving a one-paragraph edit (chunk_size {chunk_size}, overlap 20%)")
    print(f"{'text':<14} {'mode':<9} {'chunks':>6} {'same text':>10} {'matched':>8} {'redo':>6}")
    for name, modes in TEXTS.items():
        text = (CORPUS / name).read_text()
        spans = paragraph_spans(text)
        picks = [spans[len(spans) * (i + 1) // (positions + 1)] for i in range(positions)]
        for mode in modes:
            settings = ChunkSettings(chunk_size=chunk_size, overlap_percent=20, mode=mode)
            old = cut(text, settings, name).chunks
            exact, matched, redo = [], [], []
            for _, end in picks:
                edited = text[:end] + ADDED + text[end:]
                new = cut(edited, settings, name).chunks
                same, found = surviving(old, new)
                exact.append(same / len(new))
                matched.append(found / len(new))
                redo.append(len(new) - found)
            print(
                f"{name:<14} {mode:<9} {len(old):>6} {statistics.mean(exact):>9.1%} "
                f"{statistics.mean(matched):>7.1%} {statistics.mean(redo):>6.1f}"
            )
    print("(same text: matched by whole text; matched: also by text after the overlap;")
    print(" redo: chunks extracted again, mean over the edit positions)\n")


def remember(server: LLMServer, db: Path, path: Path, *extra: str) -> tuple[dict, float]:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-bench-not-a-real-key",
        "GB_DB": str(db),
        "GB_CHUNK_SIZE": "128",
        "GB_EMBEDDINGS_DIMENSIONS": "64",
    }
    server.reset()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "gligabao", "remember", str(path), "--json", *extra],
        env=env,
        capture_output=True,
        check=True,
    )
    wall = time.perf_counter() - started
    line = json.loads(done.stdout.decode().splitlines()[-1])
    line["requests"] = {stage: server.calls(stage) for stage in STAGES}
    return line, wall


def calls_and_time(chunks: int, latency: float) -> None:
    with tempfile.TemporaryDirectory() as tmp, LLMServer(latency=latency) as server:
        folder = Path(tmp)
        paragraphs = story(17, paragraphs=chunks).split("\n\n")
        path = folder / "report.txt"
        path.write_text("\n\n".join(paragraphs))
        first, first_wall = remember(server, folder / "v1.db", path)
        middle = len(paragraphs) // 2
        paragraphs[middle] = story(99, paragraphs=1).split("\n\n")[1]
        path.write_text("\n\n".join(paragraphs))
        runs = {}
        for label, extra in (("edit (diff)", ()), ("edit --force", ("--force",))):
            db = folder / f"{label.split()[-1].strip('()-')}.db"
            shutil.copy(folder / "v1.db", db)
            runs[label] = remember(server, db, path, *extra)
    print(
        f"one paragraph of {len(first['chunks'])} chunks replaced; test server, "
        f"{latency} s a call; real CLI, process start included"
    )
    print(f"{'run':<16} {'wall s':>7} " + " ".join(f"{s:>15}" for s in STAGES))
    rows = [("first remember", (first, first_wall)), *runs.items()]
    for label, (line, wall) in rows:
        counts = " ".join(f"{line['requests'][s]:>15}" for s in STAGES)
        print(f"{label:<16} {wall:>7.2f} {counts}")
    version = runs["edit (diff)"][0].get("previous_version", {})
    print(f"diff: {json.dumps(version)}")
    speedup = runs["edit --force"][1] / runs["edit (diff)"][1]
    print(f"wall time, --force / diff: {speedup:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--positions", type=int, default=9)
    parser.add_argument("--chunk-size", type=int, default=256)
    args = parser.parse_args()
    survival(args.chunk_size, args.positions)
    survival(1024, args.positions)
    calls_and_time(args.chunks, args.latency)


if __name__ == "__main__":
    main()
