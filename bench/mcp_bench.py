"""Benchmark `gb mcp`: p50 and p95 of a tool call over stdio, as an agent makes it.

The database is built directly through the store, as the other benches build theirs:
`bench/search_bench.py`'s 10,000 chunks (`--chunks`) of ~1,024 estimated tokens (licence
texts, shuffled) with 1,536-dimension vectors, then `bench/graph_bench.py`'s graph
(`--facts` facts, default 20,000, over `--entities` entities, with their evidence
chunks) in the same dataset. `gb mcp --db PATH --dataset bench` is started as a process
of its own with no LLM endpoint, and the SDK's own client (`mcp.ClientSession` over
`stdio_client`) calls, `--calls` times each (default 100) after 5 warm-up calls:

- search: method bm25, k=10, 2-4 real words;
- facts: the current facts, k=20;
- facts about: the facts of one entity (by id) true at a date;
- facts query: facts searched by words (BM25, no endpoint), k=20.

Each call is timed from the request sent to the result parsed (the client validates
structured content against the output schema, as every client may), so the figure is
what an agent waits; beside it, the same calls of `gligabao.Memory` in the bench's own
process, gb's share of that wait. Run from the repository root::

    .venv/bin/python bench/mcp_bench.py [--chunks 10000] [--facts 20000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
for folder in (REPO_ROOT, BENCH):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import graph_bench  # noqa: E402
import search_bench  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

WARM_UP = 5
Plans = dict[str, list[tuple[str, dict[str, Any]]]]


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _environment(folder: str) -> dict[str, str]:
    """No endpoint (BM25, graph reads), no config file: what a laptop offline has."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GB_", "OPENAI_"))}
    env.update(XDG_CONFIG_HOME=folder, GB_EMBEDDINGS_MODEL=search_bench.MODEL)
    env.update(GB_EMBEDDINGS_DIMENSIONS=str(search_bench.DIMENSIONS))
    return env


def _plans(path: str, calls: int) -> Plans:
    """Each workload's tool calls, the warm-up ones first: (tool, arguments)."""
    total = calls + WARM_UP
    work = graph_bench.Workload(path, total, seed=17)
    words = search_bench._queries(total, seed=11)
    rng = random.Random(5)
    return {
        "search (bm25, k=10)": [("search", {"query": q, "k": 10, "method": "bm25"}) for q in words],
        "facts (current, k=20)": [("facts", {"k": 20})] * total,
        "facts (about, at)": [
            ("facts", {"about": str(entity), "at": at, "k": 20}) for entity, at in work.about
        ][:total],
        "facts (query, k=20)": [
            ("facts", {"query": rng.choice(work.questions), "k": 20}) for _ in range(total)
        ],
    }


async def _over_stdio(path: str, plans: Plans, folder: str) -> dict[str, list[float]]:
    """Each call timed from the request sent to the result parsed and checked."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gligabao", "mcp", "--db", path, "--dataset", graph_bench.DATASET],
        env=_environment(folder),
        cwd=folder,
    )
    timings: dict[str, list[float]] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()  # the output schemas, cached by the client
        for label, plan in plans.items():
            times = []
            for n, (tool, arguments) in enumerate(plan):
                started = time.perf_counter()
                result = await session.call_tool(tool, arguments)
                elapsed = time.perf_counter() - started
                if result.is_error:
                    raise SystemExit(f"{tool} {arguments}: {result.content[0].text}")
                if n >= WARM_UP:
                    times.append(elapsed * 1000)
            timings[label] = times
    return timings


def _in_process(path: str, plans: Plans, folder: str) -> dict[str, list[float]]:
    """The same calls of gligabao.Memory in this process: the part of a tool call that
    is gb's own work, the rest being the protocol, the two processes and the client."""
    os.environ.clear()
    os.environ.update(_environment(folder))
    from gligabao import Memory

    memory = Memory(path, graph_bench.DATASET)
    methods = {
        "search": lambda a: memory.search(a["query"], a["k"], method=a["method"]),
        "facts": lambda a: memory.facts(
            a.get("query"), about=a.get("about"), at=a.get("at"), k=a["k"]
        ),
    }
    timings: dict[str, list[float]] = {}
    for label, plan in plans.items():
        times = []
        for n, (tool, arguments) in enumerate(plan):
            started = time.perf_counter()
            methods[tool](arguments)
            if n >= WARM_UP:
                times.append((time.perf_counter() - started) * 1000)
        timings[label] = times
    memory.close()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--facts", type=int, default=20_000)
    parser.add_argument("--entities", type=int, default=2_000)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--keep", help="build the database in this folder and keep it")
    args = parser.parse_args()

    folder = args.keep or tempfile.mkdtemp(prefix="gb-mcp-bench-")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "bench.db")
    if not os.path.exists(path):
        seconds, _ = search_bench.build(path, args.chunks)
        graph = graph_bench.build(path, args.entities, args.facts)
        print(
            f"built {path}: {args.chunks:,} chunks in {seconds:.1f} s, then "
            f"{args.facts:,} facts in {graph.get('seconds', 0):.1f} s"
        )
    plans = _plans(path, args.calls)
    timings = anyio.run(_over_stdio, path, plans, folder)
    own = _in_process(path, plans, folder)
    print(f"gb mcp over stdio, {args.calls} calls each after {WARM_UP} warm-up calls:")
    for label, times in timings.items():
        print(
            f"  {label:<24} p50 {statistics.median(times):6.1f} ms   p95 "
            f"{_pct(times, 95):6.1f} ms   (in process: p50 {statistics.median(own[label]):5.1f} ms)"
        )
    if not args.keep:
        for name in os.listdir(folder):
            os.remove(os.path.join(folder, name))
        os.rmdir(folder)


if __name__ == "__main__":
    main()
