"""PostgreSQL alone at a size that store_bench.py's row-by-row load cannot reach.

store_bench.py stores each chunk in a transaction of its own with every index in place,
as `gb remember` does: ~120 chunks/s on PostgreSQL here, 2.3 hours for a million. This
script loads the same chunks (store_bench's generator, the same seed) the way one loads a
big corpus into a server database, then times the same reads:

1. the chunks, through the store's own `insert_document`/`insert_chunk`/`upsert_vectors`
   (so every column, keyword row and vector is what gb writes), a transaction per
   document of 100 chunks, with the three things that cost per row set aside: the
   chunks' HNSW index, the triggers that keep the keyword statistics and postings, and
   the postings' primary key;
2. what was set aside, built once over the whole load and timed each: the postings
   (one row per word of each chunk), the keyword statistics, the postings' key, the
   HNSW index (`maintenance_work_mem` 1GB, the server's parallel maintenance workers),
   then VACUUM ANALYZE (index-only scans of the postings need the visibility map);
3. the triggers back on, so the database is as gb keeps it: a chunk remembered after
   the load is indexed as usual (the script stores one and checks bm25 finds it);
4. store_bench's figures on PostgreSQL: hybrid, bm25-only and vector-only search
   p50/p95 (each query embedded by its own request to the tests' LLM server), facts
   hybrid and bm25 on a graph of `--facts` facts (default 20,000, as the 100,000-chunk
   run: `facts` reads the graph, which does not grow with the chunks), recall@20 of the
   approximate knn against an exact scan, and with `--real DIR` on a real model's
   vectors; the sizes of the database and of its largest relations.

Run from the repository root::

    . .venv/bin/activate
    python bench/pg_scale_bench.py --chunks 20000                       # a quick look
    python bench/pg_scale_bench.py --chunks 500000 --real /tmp/benchreal --keep
    python bench/pg_scale_bench.py --chunks 500000 --real /tmp/benchreal --reuse  # reads again
    python bench/pg_scale_bench.py --chunks 1000000 --grow 500000 --real /tmp/benchreal --keep

`--grow N` takes a kept N-chunk database and loads only the chunks past N (the same
generator: the result is the database a whole load would give), then builds the postings
of the new chunks and, over all of them, the postings' key and the HNSW index: the build
figures are those of the whole size, the load rate that of a database already holding N.

The disk a size needs: ~48 KiB a chunk (the postings two thirds of it; 100,000 chunks
took 4.7 GiB), plus room for sorting the postings' key and the HNSW index as they build.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import store_bench as stb  # noqa: E402  (puts the repository on sys.path)

from gligabao.search.hybrid import search  # noqa: E402
from gligabao.store import open_db, transaction  # noqa: E402
from gligabao.store.artifacts import insert_chunk, insert_document  # noqa: E402
from gligabao.store.datasets import find_dataset  # noqa: E402
from gligabao.store.db import scalar  # noqa: E402
from tests.support.llm_server import LLMServer  # noqa: E402

MiB = 2**20


def _timed(conn, label: str, sql: str, out: dict) -> None:
    print(f"  {label} ({stb._load()}) ...", flush=True)
    t0 = time.perf_counter()
    conn.execute(sql)
    out[label] = time.perf_counter() - t0
    print(f"    {out[label]:,.1f} s", flush=True)


def set_aside(url: str) -> dict[str, str]:
    """The dataset and its vector tables made as gb makes them, then the per-row costs
    dropped: the chunks' HNSW index, the keyword triggers, the postings' key. Returns
    the statements that build each back."""
    conn = open_db(url)
    ds = stb.get_or_create_dataset(conn, stb.CHUNKS)
    stb.set_embedding(conn, ds.id, stb.MODEL, stb.DIMENSIONS)
    hnsw = f"gb_vec_{ds.id}_chunks_hnsw"
    create_hnsw = scalar(conn, "SELECT indexdef FROM pg_indexes WHERE indexname = ?", (hnsw,))
    key = scalar(
        conn,
        """SELECT conname FROM pg_constraint
           WHERE conrelid = CAST('gb_fts_postings' AS regclass) AND contype = 'p'""",
    )
    key_def = scalar(
        conn, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = ?", (key,)
    )
    with transaction(conn):
        conn.execute(f"DROP INDEX {hnsw}")
        conn.execute("ALTER TABLE gb_fts_artifacts DISABLE TRIGGER gb_fts_artifacts_count")
        conn.execute("ALTER TABLE gb_fts_artifacts DISABLE TRIGGER gb_fts_artifacts_post")
        conn.execute(f"ALTER TABLE gb_fts_postings DROP CONSTRAINT {key}")
    conn.close()
    return {"hnsw": create_hnsw, "key": f"ALTER TABLE gb_fts_postings ADD {key_def}"}


def load_chunks(url: str, n: int, skip: int = 0) -> dict[str, float]:
    """store_bench's chunks (the same texts and vectors), a transaction per document;
    the first `skip` already stored."""
    built = stb.build_chunks(url, n, per_document=True, skip=skip)
    return {"seconds": built["stored"]}


def last_keyword_row(url: str) -> int:
    """The newest row of the keyword index: postings past it are what a grow adds."""
    conn = open_db(url)
    last = scalar(conn, "SELECT coalesce(max(id), 0) FROM gb_fts_artifacts")
    conn.close()
    return int(last)


def build_back(url: str, statements: dict[str, str], after: int = 0) -> dict[str, float]:
    """What set_aside dropped, built once over the whole load, each step timed; the
    postings and statistics only of keyword rows past `after` (a grown database has
    the others)."""
    conn = open_db(url)
    out: dict[str, float] = {}
    _timed(
        conn,
        "postings",
        f"""INSERT INTO gb_fts_postings(dataset_id, term, id, tf, length)
           SELECT f.dataset_id, w.lexeme, f.id, coalesce(array_length(w.positions, 1), 1),
                  f.length
           FROM gb_fts_artifacts f, unnest(f.words) AS w WHERE f.id > {int(after)}""",
        out,
    )
    with transaction(conn):
        # As the triggers would have counted them, one row at a time.
        _timed(
            conn,
            "keyword statistics",
            f"""INSERT INTO gb_fts_terms(index_name, term, rows)
               SELECT 'artifacts', term, count(*) FROM gb_fts_postings
               WHERE id > {int(after)} GROUP BY term
               ON CONFLICT (index_name, term) DO UPDATE
                   SET rows = gb_fts_terms.rows + excluded.rows""",
            out,
        )
        conn.execute(
            """INSERT INTO gb_fts_totals(index_name, rows, words)
               SELECT 'artifacts', count(*), coalesce(sum(length), 0) FROM gb_fts_artifacts
               ON CONFLICT (index_name) DO UPDATE
                   SET rows = excluded.rows, words = excluded.words"""
        )
    conn.execute("SET maintenance_work_mem = '1GB'")
    _timed(conn, "postings key", statements["key"], out)
    _timed(conn, "HNSW index", statements["hnsw"], out)
    conn.execute("RESET maintenance_work_mem")
    with transaction(conn):
        conn.execute("ALTER TABLE gb_fts_artifacts ENABLE TRIGGER gb_fts_artifacts_count")
        conn.execute("ALTER TABLE gb_fts_artifacts ENABLE TRIGGER gb_fts_artifacts_post")
    _timed(conn, "VACUUM ANALYZE", "VACUUM ANALYZE", out)
    ds = find_dataset(conn, stb.CHUNKS)
    out["hnsw_bytes"] = float(
        scalar(
            conn,
            "SELECT pg_relation_size(CAST(? AS regclass))",
            (f"gb_vec_{ds.id}_chunks_hnsw",),
        )
    )
    conn.close()
    return out


def remembered_after(url: str, n: int) -> bool:
    """A chunk stored after the load is found by bm25: the triggers are back."""
    conn = open_db(url)
    ds = find_dataset(conn, stb.CHUNKS)
    # A word of its own for each size: a grown database holds the smaller run's.
    word = "zyxquokka" + "".join(chr(ord("a") + int(d)) for d in str(n))
    with transaction(conn):
        doc = insert_document(
            conn, dataset_id=ds.id, text=f"a {word} here", chunk_count=1, status="complete"
        )
        insert_chunk(
            conn,
            document_id=doc,
            text=f"a {word} here",
            chunk_index=0,
            start_offset=0,
            end_offset=len(word) + 7,
            tokens=3,
        )
    found = search(conn, ds, word, method="bm25", k=5)
    conn.close()
    return any(word in (h.text or "") for h in found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=500_000, help="chunks to load")
    parser.add_argument("--queries", type=int, default=60, help="timed queries per method")
    parser.add_argument("--facts", type=int, default=20_000, help="facts in the graph")
    parser.add_argument("--entities", type=int, default=4_000, help="entities in the graph")
    parser.add_argument("--real", help="folder with facts.npy and queries.npy: real vectors")
    parser.add_argument("--pgdata", default="/tmp/scalepg/pgdata", help="PostgreSQL data folder")
    parser.add_argument("--keep", action="store_true", help="keep the database and the server")
    parser.add_argument(
        "--reuse", action="store_true", help="time the reads again on a --keep run's database"
    )
    parser.add_argument(
        "--grow", type=int, metavar="N", help="grow a kept N-chunk database to --chunks"
    )
    args = parser.parse_args()
    n = args.chunks
    pgdata = Path(args.pgdata)
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="gb-scale-bench-", dir=str(pgdata.parent))
    free = shutil.disk_usage(pgdata.parent).free
    print(
        f"{dt.datetime.now():%H:%M:%S} PostgreSQL in {pgdata}; {n:,} chunks, "
        f"{stb.DIMENSIONS}-d; {free / 2**30:,.0f} GiB free"
    )
    server = stb.start_postgres(pgdata)
    name = f"gb_scale_{n}"
    out: dict = {}
    try:
        if args.reuse:  # the reads again, on the database a --keep run left
            url = str(server.get_uri(name))
            settings = stb.pg_settings(url)
            loaded, built, after = None, None, None
        else:
            if args.grow:
                stb._admin(server, f"ALTER DATABASE gb_scale_{args.grow} RENAME TO {name}")
                url = str(server.get_uri(name))
            else:
                url = stb.fresh_pg(server, name)
            settings = stb.pg_settings(url)
            statements = set_aside(url)
            last_row = last_keyword_row(url)
            skip = args.grow or 0
            print(f"loading, a transaction per 100-chunk document ({stb._load()}) ...")
            loaded = load_chunks(url, n, skip)
            rate = (n - skip) / loaded["seconds"]
            print(f"  {rate:,.0f} chunks/s ({loaded['seconds']:,.0f} s)")
            print("building what was set aside:", flush=True)
            built = build_back(url, statements, last_row)
            after = remembered_after(url, n)
            print(f"  a chunk stored after the load is found by bm25: {after}")
        with LLMServer() as llm:
            print(f"timing searches, {args.queries} a method ({stb._load()}) ...", flush=True)
            out["search"] = stb.measure_search(
                {"postgres": url}, args.queries, llm.base_url, folder
            )
            out[("postgres", "recall")] = stb.recall(
                url, stb.CHUNKS, stb.sb.model_queries(args.queries)
            )
            stb._partial(out, "search")
            print(f"graph: {args.entities:,} entities, {args.facts:,} facts ...", flush=True)
            graph_s = None
            if not args.reuse and not args.grow:
                graph_s = stb.build_graph(url, args.entities, args.facts)["seconds"]
            stb.pg_analyze(url)
            out["facts_q"] = stb.measure_facts(
                {"postgres": url}, args.queries, llm.base_url, folder
            )
            stb._partial(out, "facts_q")
        if args.real:
            real_q = np.load(os.path.join(args.real, "queries.npy")).astype(np.float32)
            if not args.reuse and not args.grow:
                stb.build_real(url, args.real)
            count = len(np.load(os.path.join(args.real, "facts.npy"), mmap_mode="r"))
            real = stb.recall(url, stb.REAL, [q.tobytes() for q in real_q])
        sizes = stb.pg_sizes(url)
        end_load = stb._load()
    finally:
        if not args.keep and not args.reuse:
            stb._admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        if not args.keep:
            stb.stop_postgres(server, pgdata)
            shutil.rmtree(folder, ignore_errors=True)

    print()
    print("PostgreSQL " + ", ".join(f"{k} {v}" for k, v in settings.items()))
    print(f"{n:,} chunks ({stb.DIMENSIONS}-d); ms unless said; {end_load} at the end")
    rows = []
    if loaded and built:
        grown = f", chunks {args.grow:,} to {n:,}" if args.grow else ""
        rows.append(
            (
                f"load, chunks/s (a transaction per document{grown})",
                f"{(n - (args.grow or 0)) / loaded['seconds']:,.0f}",
            )
        )
        rows.append(("load, s", f"{loaded['seconds']:,.0f}"))
        for step in (
            "postings",
            "keyword statistics",
            "postings key",
            "HNSW index",
            "VACUUM ANALYZE",
        ):
            rows.append((f"  build: {step}, s", f"{built[step]:,.1f}"))
        rows.append(("chunks HNSW index, MiB", f"{built['hnsw_bytes'] / MiB:,.0f}"))
    for m, label in (("hybrid", "hybrid"), ("bm25", "bm25 only"), ("vector", "vector only")):
        t = out["search"][("postgres", m)]
        rows.append((f"{label} k=20 p50 / p95", f"{t['p50']:.1f} / {t['p95']:.1f}"))
    for m, label in (("facts", "facts(QUERY) hybrid"), ("facts_bm25", "facts(QUERY) bm25")):
        t = out["facts_q"][("postgres", m)]
        rows.append((f"{label} p50 / p95", f"{t['p50']:.1f} / {t['p95']:.1f}"))
    if graph_s is not None:
        rows.append((f"graph build ({args.facts:,} facts), s", f"{graph_s:,.0f}"))
    r = out[("postgres", "recall")]
    rows.append(("recall@20 vs exact (topic vectors)", f"{r['at20']:.3f} (worst {r['min']:.2f})"))
    rows.append(("knn(50) p50, default / exact", f"{r['knn_ms']:.1f} / {r['exact_ms']:.1f}"))
    if args.real:
        rows.append(
            (
                f"recall@20 ({count:,} real MiniLM vectors)",
                f"{real['at20']:.3f} (worst {real['min']:.2f})",
            )
        )
    rows.append(("size on disk, MiB", f"{sizes['database'] / MiB:,.0f}"))
    if after is not None:
        rows.append(("stored after the load, found by bm25", str(after)))
    for label, value in rows:
        print(f"{label:<48} {value:>20}")
    print(
        "largest relations (with TOAST and indexes), MiB: "
        + ", ".join(f"{k} {v / MiB:,.0f}" for k, v in sizes.items() if k != "database")
    )


if __name__ == "__main__":
    main()
