"""Benchmark `gb search` (hybrid, k=20): p50 and p95 latency as the dataset grows.

For each size N (`--sizes`, default 10000) the script builds a fresh database directly
through the store (no LLM): N chunks of about 1,024 estimated tokens each, cut from the
licence texts under /usr/share/common-licenses (paragraphs shuffled and repeated, so the
vocabulary is real and every chunk differs), 100 chunks a document, each chunk with a
random 1,536-dimension unit vector in the dataset's vec0 index and its text in the FTS5
index, as `gb remember` leaves them. The tests' OpenAI-compatible server
(tests/llm_server.py) runs on 127.0.0.1 to embed the queries. Two figures per size:

- search: `gligabao.search.search(...)` in this process, method hybrid, k=20, default
  depth and fusion constant, over `--queries` queries (default 60) of 2-4 real words,
  each embedded by its own request to the server (as `gb search` does), after a few
  warm-up queries; bm25 and vector alone are timed too, to show which part grows.
- command: `gb search QUERY -k 20 --json` as a fresh process, `--runs` times (default
  30), against `gb --version` (process start and imports only) to show the fixed cost
  every command pays.

It prints p50 / p95 per size, the database size, and the growth from the smallest size.

Run from the repository root::

    . .venv/bin/activate
    python bench/search_bench.py [--sizes 10000,100000] [--queries 60] [--keep DIR]
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from gligabao.chunk.tokens import ESTIMATOR  # noqa: E402
from gligabao.config import load_config  # noqa: E402
from gligabao.llm.query import embed_query  # noqa: E402
from gligabao.search import search  # noqa: E402
from gligabao.store import open_db, transaction  # noqa: E402
from gligabao.store.artifacts import insert_chunk, insert_document  # noqa: E402
from gligabao.store.datasets import get_or_create_dataset, set_embedding  # noqa: E402
from gligabao.store.vectors import chunk_row, upsert_vectors  # noqa: E402
from tests.llm_server import LLMServer  # noqa: E402

LICENSES = Path("/usr/share/common-licenses")
DIMENSIONS = 1536
CHUNK_TOKENS = 1024
CHUNKS_PER_DOCUMENT = 100
MODEL = "bench-embedding"


def _paragraphs() -> list[str]:
    out: list[str] = []
    for path in sorted(LICENSES.iterdir()):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            out.extend(p.strip() for p in re.split(r"\n\s*\n", text) if p.strip())
    if not out:
        raise SystemExit(f"no licence texts under {LICENSES}")
    return out


def _chunk_texts(paragraphs: list[str], rng: random.Random):
    """Endless texts of about CHUNK_TOKENS estimated tokens: shuffled paragraphs, cut at
    a word boundary, each starting at a random paragraph of a fresh shuffle."""
    words: list[str] = []
    while True:
        while len(words) < 4 * CHUNK_TOKENS:
            order = paragraphs[:]
            rng.shuffle(order)
            words.extend(" ".join(order).split())
        # ~0.55 estimated tokens a word in these texts; fix up by measuring.
        take = int(CHUNK_TOKENS / 0.55)
        text = " ".join(words[:take])
        tokens = ESTIMATOR.count(text)
        while tokens > CHUNK_TOKENS and take > 10:
            take -= max(1, (tokens - CHUNK_TOKENS) // 2)
            text = " ".join(words[:take])
            tokens = ESTIMATOR.count(text)
        while tokens < CHUNK_TOKENS - 16 and take < len(words):
            take += max(1, (CHUNK_TOKENS - tokens) // 2)
            text = " ".join(words[:take])
            tokens = ESTIMATOR.count(text)
        del words[:take]
        yield text, tokens


def _unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIMENSIONS), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def build(path: str, n: int, seed: int = 7) -> tuple[float, list[int]]:
    """A database of n chunks at `path`; returns the build seconds and chunk tokens."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    texts = _chunk_texts(_paragraphs(), rng)
    conn = open_db(path)
    ds = get_or_create_dataset(conn, "bench")
    set_embedding(conn, ds.id, MODEL, DIMENSIONS)
    started = time.perf_counter()
    token_counts: list[int] = []
    made = 0
    while made < n:
        count = min(CHUNKS_PER_DOCUMENT, n - made)
        pieces = [next(texts) for _ in range(count)]
        doc_text = "\n\n".join(t for t, _ in pieces)
        vecs = _unit_vectors(nrng, count)
        with transaction(conn):
            doc = insert_document(
                conn,
                dataset_id=ds.id,
                text=doc_text,
                source=f"/bench/doc-{made // CHUNKS_PER_DOCUMENT:05d}.txt",
                chunk_count=count,
                status="complete",
                tokens=sum(t for _, t in pieces),
            )
            rows = []
            offset = 0
            for index, (text, tokens) in enumerate(pieces):
                size = len(text.encode("utf-8"))
                chunk = insert_chunk(
                    conn,
                    document_id=doc,
                    text=text,
                    chunk_index=index,
                    start_offset=offset,
                    end_offset=offset + size,
                    tokens=tokens,
                )
                rows.append(chunk_row(chunk, doc, index, vecs[index].tobytes()))
                token_counts.append(tokens)
                offset += size + 2
            upsert_vectors(conn, ds.id, "chunks", rows)
        made += count
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.perf_counter() - started, token_counts


def _queries(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    vocabulary = sorted({w.lower() for p in _paragraphs() for w in re.findall(r"[A-Za-z]{4,}", p)})
    return [" ".join(rng.sample(vocabulary, rng.randint(2, 4))) for _ in range(n)]


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def _env(base_url: str, folder: str) -> dict[str, str]:
    """The environment of the timed searches: the test server, the bench's dataset, and
    a config dir (with the processes run in `folder`) that holds no gligabao.toml."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GB_", "OPENAI_"))}
    env.update(
        OPENAI_BASE_URL=base_url,
        GB_EMBEDDINGS_MODEL=MODEL,
        GB_EMBEDDINGS_DIMENSIONS=str(DIMENSIONS),
        GB_DATASET="bench",
        XDG_CONFIG_HOME=folder,
    )
    return env


def measure(path: str, queries: int, base_url: str, seed: int = 11) -> dict[str, dict]:
    """In-process search latency per method, each query embedded by the server."""
    config = load_config(None, {"database": path}, env=_env(base_url, os.path.dirname(path)))
    conn = open_db(path)
    from gligabao.store.datasets import find_dataset

    ds = find_dataset(conn, "bench")
    assert ds is not None
    texts = _queries(queries + 5, seed)
    out: dict[str, dict[str, float]] = {}
    for method in ("hybrid", "bm25", "vector"):
        times = []
        found = 0
        for i in range(queries + 5):
            t0 = time.perf_counter()
            hits = search(
                conn,
                ds,
                texts[i],
                method=method,
                k=20,
                query_vector=None
                if method == "bm25"
                else functools.partial(embed_query, config, texts[i]),
            )
            if i >= 5:  # the first five warm up the page cache and the statements
                times.append((time.perf_counter() - t0) * 1000)
                found += len(hits)
        out[method] = {"p50": statistics.median(times), "p95": _pct(times, 95)}
        out[method]["hits"] = found / queries
    conn.close()
    return out


def _run(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = (time.perf_counter() - t0) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:4])} failed: {done.stderr.strip()}")
    return elapsed, done.stdout


def command(path: str, runs: int, base_url: str, seed: int = 13) -> dict[str, float]:
    """Wall time of `gb search` as a fresh process, and of `gb --version`."""
    folder = os.path.dirname(path)
    env = _env(base_url, folder)
    gb = [sys.executable, "-m", "gligabao"]
    searched, baseline = [], []
    for i, text in enumerate(_queries(runs + 2, seed)):
        elapsed, out = _run([*gb, "search", text, "-k", "20", "--json", "--db", path], env, folder)
        if not out.strip():
            raise SystemExit(f"gb search found nothing for {text!r}")
        started, _ = _run([*gb, "--version"], env, folder)
        if i >= 2:  # two warm-up runs: the page cache, Python's bytecode cache
            searched.append(elapsed)
            baseline.append(started)
    return {
        "p50": statistics.median(searched),
        "p95": _pct(searched, 95),
        "baseline": statistics.median(baseline),
    }


def _size(path: str) -> int:
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000", help="chunk counts, comma-separated")
    parser.add_argument("--queries", type=int, default=60, help="timed queries per method")
    parser.add_argument("--runs", type=int, default=30, help="timed `gb search` processes")
    parser.add_argument("--keep", help="folder to keep the databases in (default: temporary)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.queries < 50:
        parser.error("--queries must be at least 50 for a p95")
    if args.runs < 20:
        parser.error("--runs must be at least 20 for a p95")
    folder = args.keep or tempfile.mkdtemp(prefix="gb-search-bench-")
    os.makedirs(folder, exist_ok=True)
    results = []
    with LLMServer() as server:
        for n in sizes:
            path = os.path.join(folder, f"search-{n}.db")
            for p in (path, path + "-wal", path + "-shm"):
                if os.path.exists(p):
                    os.remove(p)
            print(f"building {n:,} chunks of ~{CHUNK_TOKENS} tokens, {DIMENSIONS}-d vectors ...")
            seconds, tokens = build(path, n)
            size = _size(path)
            print(
                f"  built in {seconds:.1f} s; mean {statistics.mean(tokens):.0f} tokens a "
                f"chunk; database {size / 2**20:,.0f} MiB"
            )
            timing = measure(path, args.queries, server.base_url)
            timing["command"] = command(path, args.runs, server.base_url)
            results.append((n, size, timing))
            if not args.keep:
                for p in (path, path + "-wal", path + "-shm"):
                    if os.path.exists(p):
                        os.remove(p)

    print()
    print(
        f"search, in process, query embedded over HTTP: {args.queries} queries per method; "
        f"gb search as a process: {args.runs} runs (ms)"
    )
    head = (
        f"{'chunks':>9} {'db MiB':>7} {'hybrid p50':>10} {'p95':>6} {'bm25 p50':>8} "
        f"{'vector p50':>10} {'gb search p50':>13} {'p95':>6} {'gb --version':>12}"
    )
    print(head)
    print("-" * len(head))
    for n, size, t in results:
        c = t["command"]
        print(
            f"{n:>9,} {size / 2**20:>7,.0f} {t['hybrid']['p50']:>10.1f} "
            f"{t['hybrid']['p95']:>6.1f} {t['bm25']['p50']:>8.1f} {t['vector']['p50']:>10.1f} "
            f"{c['p50']:>13.1f} {c['p95']:>6.1f} {c['baseline']:>12.1f}"
        )
    if len(results) > 1:
        n0, s0, t0 = results[0]
        for n, size, t in results[1:]:
            f = n / n0
            grow = t["hybrid"]["p50"] / t0["hybrid"]["p50"]
            print(
                f"\n{n0:,} -> {n:,} chunks (x{f:g}): hybrid p50 x{grow:.1f}, "
                f"p95 x{t['hybrid']['p95'] / t0['hybrid']['p95']:.1f}, bm25 p50 "
                f"x{t['bm25']['p50'] / t0['bm25']['p50']:.1f}, vector p50 "
                f"x{t['vector']['p50'] / t0['vector']['p50']:.1f}, size x{size / s0:.1f}"
            )


if __name__ == "__main__":
    main()
