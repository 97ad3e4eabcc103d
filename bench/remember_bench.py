"""Benchmark `gb remember` against the test LLM server: wall time beside the sequential design.

The seed makes its LLM and embeddings calls one after another; `gb remember` overlaps
them. This script measures how much that buys. It builds a
document of real text that nobody on this team wrote (the licence texts under
/usr/share/common-licenses, then the Debian `copyright` files under /usr/share/doc, each
paragraph once), ending at a paragraph or word boundary such that `gligabao.chunk.cut`
makes N chunks at the configured chunk size, starts the deterministic OpenAI-compatible server of
tests/support/llm_server.py in this process with a fixed latency per call, and runs:

- the real CLI, `python -m gligabao remember DOC --json --db DB`, as a subprocess: the
  wall time is what a user sees, process start and imports included;
- the same pipeline in a second process through the library (`gligabao.remember.document`),
  with the phases and `Writer.store` (one transaction per chunk) timed by wrapping them:
  the library time, the database time per chunk of the store phase, and where the time
  goes. Each run gets a fresh database, so no stored answer is reused.

From the server's records of every request it reports: the sequential design time (the
sum of every request's served duration, i.e. every call one after another: calls x
latency plus serving time), wall / sequential, the peak of requests in flight, chat
calls and embeddings requests per chunk. Two scenarios: the main one (`--chunks`,
`--latency`; default 100 chunks at 300 ms per call) and the target one (60
chunks at 250 ms per call, with its three checks printed). `--compare-concurrency`
adds runs of the main scenario at `--concurrency 1` (about 4 minutes more at the
defaults). The test server
sends with TCP_NODELAY, so no Nagle delay on loopback is counted in.

Run from the repository root::

    . .venv/bin/activate
    python bench/remember_bench.py [--chunks N] [--latency S] [--compare-concurrency] [--json]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib
import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

API_KEY = "sk-bench-not-a-real-key"
CHAT_STAGES = ("extract_graph", "summarize_chunk", "resolve", "contextualize_chunk")
EMBED_STAGE = "embed"
DONE_WHEN = {"chunks": 60, "latency": 0.25, "min_in_flight": 4, "max_ratio": 0.25, "max_cpc": 2.5}
# The throughput target: wall within 1.10x the throughput bound (answered calls /
# concurrency x latency), at each of these (chunks, seconds per call) and concurrencies (--bound).
BOUND_LIMIT = 1.10
# The process start's share, judged apart: importing the SDK is a fixed cost.
FIRST_REQUEST_LIMIT_S = 0.6
BOUND_SCENARIOS = ((60, 0.25), (100, 0.3), (100, 1.0))
BOUND_CONCURRENCY = (8, 32)
RUN_TIMEOUT_S = 900
TEXT_SOURCES = ("/usr/share/common-licenses/*", "/usr/share/doc/*/copyright")


# --------------------------------------------------------------------------- the document


@dataclass
class Document:
    path: Path
    chars: int
    nbytes: int
    tokens: int
    chunks: int
    distinct_chunks: int
    files: int
    chunk_size: int
    overlap_percent: int


def _source_texts() -> list[tuple[str, str]]:
    """(path, text) of every distinct readable UTF-8 file of TEXT_SOURCES, in a fixed order."""
    import glob

    seen: set[str] = set()
    out = []
    for pattern in TEXT_SOURCES:
        for path in sorted(glob.glob(pattern)):
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                text = Path(path).read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            if text.strip() and digest not in seen:
                seen.add(digest)
                out.append((path, text.strip()))
    return out


def _smallest(lo: int, hi: int, enough: Any) -> int:
    """The smallest k in [lo, hi] with enough(k), for enough monotone (enough(hi) holds)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def build_document(n_chunks: int, env: dict[str, str], folder: Path) -> Document:
    """The shortest prefix of the source texts that cuts into N chunks.

    Paragraphs seen before (licence boilerplate repeated across copyright files) are
    dropped, so that no two chunks are the same text. The prefix ends at a paragraph
    boundary when that gives exactly N chunks, otherwise at a word boundary inside the
    last paragraph.
    """
    from gligabao.chunk import cut
    from gligabao.config import load_config

    settings = load_config(env=env).chunk_settings()
    paragraphs: list[str] = []
    file_of: list[int] = []
    seen: set[str] = set()
    for i, (_, text) in enumerate(_source_texts()):
        for para in text.split("\n\n"):
            key = " ".join(para.split())
            if key and key not in seen:
                seen.add(key)
                paragraphs.append(para.strip("\n"))
                file_of.append(i)

    def chunks_of(text: str) -> int:
        return len(cut(text, settings).chunks)

    def prefix(k: int) -> str:
        return "\n\n".join(paragraphs[:k])

    if chunks_of(prefix(len(paragraphs))) < n_chunks:
        raise SystemExit(
            f"error: the texts under {' and '.join(TEXT_SOURCES)} make fewer than "
            f"{n_chunks} chunks at chunk_size {settings.chunk_size}; ask for fewer --chunks "
            "or a smaller --chunk-size"
        )
    k = _smallest(1, len(paragraphs), lambda k: chunks_of(prefix(k)) >= n_chunks)
    text = prefix(k)
    if chunks_of(text) > n_chunks:  # the last paragraph overshoots: end it at a word
        head = prefix(k - 1) + "\n\n"
        last = paragraphs[k - 1]
        cuts = [m.start() for m in re.finditer(r"\s+", last)] + [len(last)]
        j = _smallest(0, len(cuts) - 1, lambda j: chunks_of(head + last[: cuts[j]]) >= n_chunks)
        text = head + last[: cuts[j]]
    text += "\n"
    result = cut(text, settings)
    path = folder / "document.txt"
    path.write_text(text, encoding="utf-8")
    return Document(
        path=path,
        chars=len(text),
        nbytes=len(text.encode("utf-8")),
        tokens=result.tokens,
        chunks=len(result.chunks),
        distinct_chunks=len({c.text for c in result.chunks}),
        files=len(set(file_of[:k])),
        chunk_size=settings.chunk_size,
        overlap_percent=settings.overlap_percent,
    )


# --------------------------------------------------------------------------- the worker


def worker(doc: str, db: str, concurrency: int | None) -> int:
    """Run the pipeline through the library with its phases timed; print the marks as JSON.

    Runs in its own process (started by `run_inprocess`), so the test server's threads do
    not share its interpreter lock. Every mark is time.monotonic(), the clock the server
    stamps its requests with (CLOCK_MONOTONIC is system-wide on Linux).
    """
    t_start = time.monotonic()
    from gligabao.calls import Calls
    from gligabao.config import load_config
    from gligabao.llm import LLM
    from gligabao.read.sources import read_source
    from gligabao.remember.document import Options, remember
    from gligabao.remember.resolve import Resolver
    from gligabao.remember.write import Writer
    from gligabao.store import open_db

    remember_module = importlib.import_module("gligabao.remember.document")
    marks: dict[str, Any] = {
        "stores": [],
        "plan_s": 0.0,
        "record_s": 0.0,
        "records": 0,
        "missing": [],
    }

    def missing(cls: Any, name: str) -> bool:
        """The pipeline is still changing: a hook that is gone is skipped and reported."""
        if cls is None or not callable(getattr(cls, name, None)):
            marks["missing"].append(f"{getattr(cls, '__name__', '?')}.{name}")
            return True
        return False

    def timed_sync(cls: Any, name: str, on_done: Any) -> None:
        if missing(cls, name):
            return
        original = getattr(cls, name)

        @functools.wraps(original)
        def wrapper(*a: Any, **kw: Any) -> Any:
            t0 = time.monotonic()
            try:
                return original(*a, **kw)
            finally:
                on_done(t0, time.monotonic())

        setattr(cls, name, wrapper)

    def timed_async(cls: Any, name: str, key: str) -> None:
        if missing(cls, name):
            return
        original = getattr(cls, name)

        @functools.wraps(original)
        async def wrapper(*a: Any, **kw: Any) -> Any:
            t0 = time.monotonic()
            try:
                return await original(*a, **kw)
            finally:
                marks[key] = (t0, time.monotonic())

        setattr(cls, name, wrapper)

    def add(key: str, count: str | None = None) -> Any:
        def done(t0: float, t1: float) -> None:
            marks[key] += t1 - t0
            if count:
                marks[count] += 1

        return done

    timed_sync(Writer, "store", lambda t0, t1: marks["stores"].append((t0, t1)))
    timed_sync(Resolver, "plan", add("plan_s"))
    timed_sync(Calls, "_record", add("record_s", "records"))
    run_class = getattr(remember_module, "_Run", None)
    timed_async(run_class, "_fetch", "fetch")
    timed_async(run_class, "_store", "store_phase")

    flags = {"database": db, "concurrency": concurrency}
    config = load_config(None, flags)
    conn = open_db(config["database"])
    llm = LLM(config)
    source = read_source(doc)
    t0 = time.monotonic()
    outcome = remember(conn, source, config, llm, Options(dataset=config["dataset"]))
    t1 = time.monotonic()
    marks.update(
        process_start=t_start,
        remember=(t0, t1),
        status=outcome.status,
        chunks=len(outcome.response.get("chunks") or []),
        spend_by_stage=outcome.spend.by_stage,
        reused=outcome.spend.reused,
        embedded={
            k: outcome.response[f"embedded_{k}"]
            for k in ("entities", "edges", "chunks", "summaries")
        },
    )
    json.dump(marks, sys.stdout)
    sys.stdout.write("\n")
    return 0


# --------------------------------------------------------------------------- one run


@dataclass
class Run:
    label: str
    kind: str  # "cli" | "inprocess"
    concurrency: int | None
    wall_s: float = 0.0
    ok: bool = True
    error: str = ""
    requests: int = 0
    failed_requests: int = 0
    by_stage: dict[str, int] = field(default_factory=dict)
    sequential_s: float = 0.0
    peak_in_flight: int = 0
    mean_in_flight: float = 0.0
    idle_s: float = 0.0  # between the first request and the last, time with none in flight
    served_ms: dict[str, float] = field(default_factory=dict)  # mean per stage
    phases: dict[str, tuple[float, float]] = field(default_factory=dict)  # from spawn, s
    library_s: float | None = None
    store_ms: list[float] = field(default_factory=list)
    plan_s: float | None = None
    record_s: float | None = None
    reused: int | None = None
    embedded: dict[str, int] | None = None
    bound_s: float = 0.0  # answered calls / concurrency x latency: no run can be faster
    # ... nor faster than whole rounds of `concurrency` calls, the longest chain of calls
    # that wait on one another, and a process that must import the SDK before it asks.
    rounds_s: float = 0.0  # ceil(answered calls / concurrency) x latency
    chain_s: float = 0.0  # the longest chain of dependent calls x latency
    floor_s: float = 0.0  # start-up floor + max(rounds_s, chain_s) (--bound only)
    # From the first request to the last answer = bound_s + serve_s + slots_idle_s: the
    # server's time beyond the latency, and the time request slots stood empty, each as
    # wall time (slot-seconds / concurrency).
    serve_s: float = 0.0
    slots_idle_s: float = 0.0
    first_request_s: float | None = None  # from spawn
    last_answer_s: float | None = None  # from spawn
    # The document's own pipeline, from the first request to the last answer sent before
    # the rewrite of the entity summaries its stores left stale (which needs every chunk
    # stored, then two calls one after the other), and the bound of the calls in it.
    stored_s: float | None = None
    stored_bound_s: float = 0.0
    cpu_s: float = 0.0  # user + system CPU of the gb process (on a shared machine: < wall)

    def chat_calls(self) -> int:
        return sum(self.by_stage.get(s, 0) for s in CHAT_STAGES)


def _env(base_url: str, folder: Path, args: argparse.Namespace) -> dict[str, str]:
    # As search_bench.py: PYTHONDONTWRITEBYTECODE (set on some build machines) would have
    # every gb process compile gligabao anew (~25-45 ms); an installed gb has its bytecode.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GB_", "OPENAI_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    config = folder / "gligabao.toml"
    config.write_text("# empty: every setting from its default or the environment\n")
    env.update(
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY=API_KEY,
        GB_CONFIG=str(config),
        GB_EMBEDDINGS_DIMENSIONS=str(args.dimensions),
    )
    if args.chunk_size:
        env["GB_CHUNK_SIZE"] = str(args.chunk_size)
    return env


def _span(records: list[Any], stages: tuple[str, ...], t0: float) -> tuple[float, float] | None:
    chosen = [r for r in records if r.stage in stages and r.ended is not None]
    if not chosen:
        return None
    return (min(r.started for r in chosen) - t0, max(r.ended for r in chosen) - t0)


def _chain(by_stage: dict[str, int]) -> int:
    """Calls in the longest chain of them that wait on one another: an embeddings request
    waits for its chunk's extraction and summary (contextualize too), a resolve call for
    every extraction; nothing waits on an embeddings request or a resolve call but the
    stores."""
    first = 1 if any(by_stage.get(s) for s in CHAT_STAGES if s != "resolve") else 0
    second = 1 if by_stage.get("resolve") or by_stage.get(EMBED_STAGE) else 0
    return first + second


@functools.cache
def startup_floor() -> float:
    """Seconds before any gb process can send its first request: the interpreter's start
    and the openai SDK's import (chat goes through the SDK), and nothing of gb itself; the
    fastest of three fresh processes."""
    times = []
    for _ in range(3):
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", "import openai"], check=True)
        times.append(time.monotonic() - t0)
    return min(times)


def run_once(
    label: str,
    kind: str,
    doc: Document,
    latency: float,
    concurrency: int | None,
    folder: Path,
    args: argparse.Namespace,
) -> Run:
    """Start a fresh server, run `gb remember` (CLI) or the instrumented worker, measure."""
    from tests.support.llm_server import LLMServer

    run = Run(label, kind, concurrency)
    db = folder / f"{label.replace(' ', '-').replace('=', '')}.db"
    with LLMServer(latency=latency) as server:
        env = _env(server.base_url, folder, args)
        if kind == "cli":
            cmd = [sys.executable, "-m", "gligabao", "remember", str(doc.path), "--json"]
            cmd += ["--db", str(db)]
            if concurrency is not None:
                cmd += ["--concurrency", str(concurrency)]
        else:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(doc.path)]
            cmd += [str(db), str(concurrency or 0)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        proc = subprocess.run(
            cmd,
            env=env,
            cwd=folder,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        t1 = time.monotonic()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        run.cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        records = list(server.requests)
        run.peak_in_flight = server.max_in_flight
    run.wall_s = t1 - t0
    if proc.returncode != 0:
        run.ok = False
        run.error = f"exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-600:]}"
    run.requests = len(records)
    run.failed_requests = sum(1 for r in records if r.status != 200 or r.fault)
    run.by_stage = dict(Counter(str(r.stage) for r in records if r.status == 200))
    run.sequential_s = sum(r.duration or 0.0 for r in records)
    answered = sum(1 for r in records if r.status == 200 and not r.fault)
    run.bound_s = answered / (concurrency or 8) * latency
    run.rounds_s = math.ceil(answered / (concurrency or 8)) * latency
    run.chain_s = _chain(run.by_stage) * latency
    done = sorted((r.started, r.ended) for r in records if r.ended is not None)
    if done:
        run.first_request_s = done[0][0] - t0
        run.last_answer_s = max(e for _, e in done) - t0
        rewrites = [r.started for r in records if r.stage == "summarize_entity"]
        before = [
            r
            for r in records
            if r.status == 200
            and r.ended is not None
            and (not rewrites or r.started < min(rewrites))
        ]
        run.stored_s = max(r.ended for r in before) - done[0][0]
        run.stored_bound_s = len(before) / (concurrency or 8) * latency
    if done:
        span = max(e for _, e in done) - done[0][0]
        run.mean_in_flight = run.sequential_s / span if span > 0 else 0.0
        run.serve_s = run.sequential_s / (concurrency or 8) - run.bound_s
        run.slots_idle_s = span - run.sequential_s / (concurrency or 8)
        reach = done[0][1]
        for a, b in done[1:]:
            run.idle_s += max(0.0, a - reach)
            reach = max(reach, b)
    for stage in run.by_stage:
        served = [r.duration for r in records if str(r.stage) == stage and r.duration]
        run.served_ms[stage] = statistics.fmean(served) * 1000 if served else 0.0
    for name, stages in (
        ("extract+summary", ("extract_graph", "summarize_chunk")),
        ("resolve", ("resolve",)),
        ("embeddings", (EMBED_STAGE,)),
        ("all requests", (*CHAT_STAGES, EMBED_STAGE)),
    ):
        span = _span(records, stages, t0)
        if span:
            run.phases[name] = span
    if run.ok and kind == "cli":
        try:
            response = json.loads(proc.stdout.strip().splitlines()[-1])
            run.embedded = {
                k: response[f"embedded_{k}"] for k in ("entities", "edges", "chunks", "summaries")
            }
            if len(response.get("chunks") or []) != doc.chunks:
                run.error = f"the response lists {len(response.get('chunks') or [])} chunks"
        except (ValueError, IndexError, KeyError) as exc:
            run.ok, run.error = False, f"unreadable --json output: {exc}"
    if run.ok and kind == "inprocess":
        marks = json.loads(proc.stdout.strip().splitlines()[-1])
        r0, r1 = marks["remember"]
        run.library_s = r1 - r0
        run.phases["process start -> remember()"] = (0.0, r0 - t0)
        run.phases["remember()"] = (r0 - t0, r1 - t0)
        for key, name in (("fetch", "fetch phase"), ("store_phase", "store phase")):
            if key in marks:
                run.phases[name] = (marks[key][0] - t0, marks[key][1] - t0)
        stores = marks["stores"]
        run.store_ms = [(b - a) * 1000 for a, b in stores]
        if stores:
            run.phases["Writer.store calls"] = (stores[0][0] - t0, stores[-1][1] - t0)
        run.plan_s, run.record_s = marks["plan_s"], marks["record_s"]
        gone = marks.get("missing") or []
        if "Resolver.plan" in gone:
            run.plan_s = None
        if "Calls._record" in gone:
            run.record_s = None
        if gone:
            run.error = "not timed (the pipeline changed): " + ", ".join(gone)
        run.reused, run.embedded = marks["reused"], marks["embedded"]
    return run


# --------------------------------------------------------------------------- scenarios


@dataclass
class Scenario:
    name: str
    chunks: int
    latency: float
    doc: Document | None = None
    runs: list[Run] = field(default_factory=list)
    checks: list[tuple[str, bool, str]] = field(default_factory=list)


def run_scenario(
    sc: Scenario, args: argparse.Namespace, folder: Path, log: Any, compare: bool
) -> None:
    from tests.support.llm_server import LLMServer

    with LLMServer() as probe:  # the document is sized with the environment the runs get
        sc.doc = build_document(sc.chunks, _env(probe.base_url, folder, args), folder)
    doc = sc.doc
    log(
        f"[{sc.name}] document: {doc.chars:,} chars, {doc.tokens:,} tokens, {doc.chunks} chunks "
        f"({doc.distinct_chunks} distinct) at chunk_size {doc.chunk_size}, from {doc.files} files"
    )
    plan = [("gb remember (CLI)", "cli", args.concurrency)]
    if not args.no_inprocess:
        plan.append(("in-process (timed)", "inprocess", args.concurrency))
    if compare:
        plan.append(("CLI --concurrency 1", "cli", 1))
        if not args.no_inprocess:
            plan.append(("in-process c=1", "inprocess", 1))
    for label, kind, conc in plan:
        log(f"[{sc.name}] {label} at {sc.latency:g} s per call ...")
        run = run_once(label, kind, doc, sc.latency, conc, folder, args)
        sc.runs.append(run)
        log(
            f"[{sc.name}] {label}: {run.wall_s:.2f} s wall, {run.requests} requests, "
            f"peak {run.peak_in_flight} in flight" + (f"; FAILED {run.error}" if not run.ok else "")
        )
    cli = sc.runs[0]
    if cli.ok:
        cpc = cli.chat_calls() / doc.chunks
        sc.checks = [
            (
                f"peak requests in flight >= {DONE_WHEN['min_in_flight']}",
                cli.peak_in_flight >= DONE_WHEN["min_in_flight"],
                f"{cli.peak_in_flight}",
            ),
            (
                "wall < 1/4 of the sequential sum",
                cli.wall_s < DONE_WHEN["max_ratio"] * cli.sequential_s,
                f"{cli.wall_s:.2f} s vs {cli.sequential_s:.2f} / 4 = "
                f"{cli.sequential_s / 4:.2f} s (ratio {cli.wall_s / cli.sequential_s:.3f})",
            ),
            (
                f"LLM chat calls per chunk <= {DONE_WHEN['max_cpc']}",
                cpc <= DONE_WHEN["max_cpc"],
                f"{cpc:.2f}",
            ),
        ]


# --------------------------------------------------------------------------- output


def run_bound(args: argparse.Namespace, folder: Path, log: Any) -> list[tuple[Scenario, Run]]:
    """The throughput-bound matrix: the CLI at each BOUND_SCENARIOS x BOUND_CONCURRENCY,
    one run each."""
    from tests.support.llm_server import LLMServer

    rows = []
    log(f"start-up floor (a fresh python importing the openai SDK): {startup_floor():.2f} s")
    for chunks, latency in BOUND_SCENARIOS:
        sc = Scenario(f"bound {chunks}x{latency * 1000:.0f}ms", chunks, latency)
        sub = folder / f"{chunks}-{latency}"
        sub.mkdir()
        with LLMServer() as probe:
            sc.doc = build_document(chunks, _env(probe.base_url, sub, args), sub)
        for conc in BOUND_CONCURRENCY:
            run = run_once(f"c={conc}", "cli", sc.doc, latency, conc, sub, args)
            run.floor_s = startup_floor() + max(run.rounds_s, run.chain_s)
            log(
                f"[{sc.name}] c={conc}: {run.wall_s:.2f} s wall, bound {run.bound_s:.2f} s, "
                f"ratio {run.wall_s / run.bound_s if run.bound_s else 0:.3f}"
                + (f"; FAILED {run.error}" if not run.ok else "")
            )
            rows.append((sc, run))
    return rows


def print_bound(rows: list[tuple[Scenario, Run]]) -> None:
    print()
    print(
        "== gb remember (CLI) against its throughput bound (answered calls / concurrency x "
        f"latency); targets: first request -> last answer <= {BOUND_LIMIT:.2f}x bound, "
        f"first request <= {FIRST_REQUEST_LIMIT_S:.1f} s after the process starts"
    )
    headers = ["scenario", "conc", "calls", "bound s", "first->last s", "active/bound"]
    headers += ["wall s", "wall/bound", "gb CPU s", "first req s", "serve s"]
    headers += ["slots idle s", "exit after last s", "stored/bound", "verdict"]
    table = []
    for sc, r in rows:
        active = (
            r.last_answer_s - r.first_request_s
            if r.last_answer_s is not None and r.first_request_s is not None
            else float("inf")
        )
        ratio = active / r.bound_s if r.bound_s else float("inf")
        started = r.first_request_s is not None and r.first_request_s <= FIRST_REQUEST_LIMIT_S
        if not r.ok:
            verdict = "FAILED"
        elif ratio > BOUND_LIMIT:
            verdict = "FAIL"
        else:
            verdict = "PASS" if started else "FAIL (start)"
        table.append(
            [
                sc.name,
                str(r.concurrency),
                str(sum(r.by_stage.values())),
                f"{r.bound_s:.2f}",
                f"{active:.2f}",
                f"{ratio:.3f}",
                f"{r.wall_s:.2f}",
                f"{r.wall_s / r.bound_s:.3f}" if r.bound_s else "-",
                f"{r.cpu_s:.2f}",
                "-" if r.first_request_s is None else f"{r.first_request_s:.2f}",
                f"{r.serve_s:.2f}",
                f"{r.slots_idle_s:.2f}",
                "-" if r.last_answer_s is None else f"{r.wall_s - r.last_answer_s:.2f}",
                f"{r.stored_s / r.stored_bound_s:.3f}"
                if r.stored_s is not None and r.stored_bound_s
                else "-",
                verdict,
            ]
        )
    for line in _table(headers, table):
        print(line)
    print(
        "first->last s: from the first request sent to the last answer (the pipeline's own "
        "time, judged against the bound);\n  first req s: from the process's start (the "
        f"start-up floor, a fresh python importing the openai SDK, is {startup_floor():.2f} s)"
    )
    print(
        "wall = first req + bound + serve + slots idle + exit after last. serve s: the "
        "server's time beyond the latency\n  (sum of served durations / concurrency - "
        "bound); slots idle s: the time request slots stood empty between the first\n  "
        "request and the last answer (as wall time: slot-seconds / concurrency)"
    )
    print(
        "gb CPU s: the gb process's user + system time; where the machine is shared, wall "
        "exceeds what its own CPU and the bound need"
    )
    print(
        "stored/bound: the same ratio up to the last answer sent before the rewrite of the "
        "entity summaries the document\n  left stale, against the bound of the calls before "
        "it: the rewrite needs every chunk stored, then a summarize_entity\n  call and its "
        "embeddings one after the other, two rounds with few calls in flight"
    )


def _ms(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    return {
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "max": ordered[-1],
        "total_s": sum(values) / 1000,
    }


def _cells(run: Run, doc: Document) -> dict[str, str]:
    n = doc.chunks
    chat = run.chat_calls()
    store = _ms(run.store_ms)
    conc = run.concurrency or 8
    return {
        "concurrency": str(conc),
        "wall time s": f"{run.wall_s:.2f}",
        "library time s (remember())": "-" if run.library_s is None else f"{run.library_s:.2f}",
        "throughput bound s (calls / conc. x latency)": f"{run.bound_s:.2f}",
        "wall / bound": f"{run.wall_s / run.bound_s:.3f}" if run.bound_s else "-",
        "library / bound": "-"
        if run.library_s is None or not run.bound_s
        else f"{run.library_s / run.bound_s:.3f}",
        "first request s (from spawn)": "-"
        if run.first_request_s is None
        else f"{run.first_request_s:.2f}",
        "last answer -> exit s": "-"
        if run.last_answer_s is None
        else f"{run.wall_s - run.last_answer_s:.2f}",
        "sequential design s": f"{run.sequential_s:.2f}",
        "wall / sequential": f"{run.wall_s / run.sequential_s:.3f}" if run.sequential_s else "-",
        "speed-up (sequential / wall)": f"{run.sequential_s / run.wall_s:.1f}x",
        "requests (failed)": f"{run.requests} ({run.failed_requests})",
        "peak requests in flight": str(run.peak_in_flight),
        "mean requests in flight": f"{run.mean_in_flight:.2f}",
        "time with none in flight s": f"{run.idle_s:.2f}",
        "mean served ms extract/summ/resolve/embed": "/".join(
            f"{run.served_ms.get(s, 0):.0f}" for s in (*CHAT_STAGES[:3], EMBED_STAGE)
        ),
        "chat calls / chunk": f"{chat / n:.2f}",
        "  extract_graph": str(run.by_stage.get("extract_graph", 0)),
        "  summarize_chunk": str(run.by_stage.get("summarize_chunk", 0)),
        "  resolve": str(run.by_stage.get("resolve", 0)),
        "embeddings requests / chunk": f"{run.by_stage.get(EMBED_STAGE, 0) / n:.2f}",
        "DB time / chunk ms (Writer.store)": "-"
        if not store
        else f"{store['mean']:.1f} (median {store['median']:.1f}, max {store['max']:.1f})",
        "DB time in store phase s": "-" if not store else f"{store['total_s']:.2f}",
        "resolve planning s (Resolver.plan)": "-" if run.plan_s is None else f"{run.plan_s:.2f}",
        "inference rows s (Calls._record)": "-" if run.record_s is None else f"{run.record_s:.2f}",
    }


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)
        ).rstrip()

    return [fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)]


def print_scenario(sc: Scenario) -> None:
    doc = sc.doc
    assert doc is not None
    print()
    print(
        f"== {sc.name}: {doc.chunks} chunks at {sc.latency * 1000:.0f} ms per call  "
        f"(document {doc.chars:,} chars / {doc.tokens:,} tokens from {doc.files} files; "
        f"chunk_size {doc.chunk_size}, overlap {doc.overlap_percent}%)"
    )
    if doc.distinct_chunks != doc.chunks:
        print(
            f"WARNING: only {doc.distinct_chunks} distinct chunk texts: identical chunks may "
            "share one stored answer, so fewer calls may be made"
        )
    good = [r for r in sc.runs if r.ok]
    for r in sc.runs:
        if not r.ok:
            print(f"FAILED: {r.label}: {r.error}")
    if good:
        cells = [_cells(r, doc) for r in good]
        rows = [[k, *(c[k] for c in cells)] for k in cells[0]]
        for line in _table(["", *(r.label for r in good)], rows):
            print(line)
    for r in good:
        if r.error:
            print(f"WARNING: {r.label}: {r.error}")
    print("timeline, seconds from process spawn (server clock for requests):")
    for r in good:
        parts = [f"{k} {a:.2f}-{b:.2f}" for k, (a, b) in r.phases.items()]
        print(f"  {r.label}: " + "; ".join(parts) + f"; exit {r.wall_s:.2f}")
    if sc.checks:
        what = (
            "the overlap targets"
            if sc.name == "done-when"
            else "the overlap targets' thresholds, applied to this scenario"
        )
        print(f"checks ({what}) on {sc.runs[0].label}:")
        for text, ok, value in sc.checks:
            print(f"  [{'PASS' if ok else 'FAIL'}] {text}: {value}")


def scenario_json(sc: Scenario) -> dict[str, Any]:
    doc = sc.doc
    assert doc is not None
    runs = []
    for r in sc.runs:
        n = doc.chunks
        runs.append(
            {
                "label": r.label,
                "kind": r.kind,
                "concurrency": r.concurrency or 8,
                "ok": r.ok,
                "error": r.error or None,
                "wall_s": r.wall_s,
                "library_s": r.library_s,
                "sequential_s": r.sequential_s,
                "wall_over_sequential": r.wall_s / r.sequential_s if r.sequential_s else None,
                "requests": r.requests,
                "failed_requests": r.failed_requests,
                "requests_by_stage": r.by_stage,
                "peak_in_flight": r.peak_in_flight,
                "mean_in_flight": r.mean_in_flight,
                "idle_s": r.idle_s,
                "served_ms_by_stage": r.served_ms,
                "chat_calls_per_chunk": r.chat_calls() / n,
                "embeddings_requests_per_chunk": r.by_stage.get(EMBED_STAGE, 0) / n,
                "store_ms": _ms(r.store_ms),
                "resolve_plan_s": r.plan_s,
                "inference_record_s": r.record_s,
                "reused_answers": r.reused,
                "embedded": r.embedded,
                "phases_s": {k: list(v) for k, v in r.phases.items()},
            }
        )
    return {
        "name": sc.name,
        "chunks_asked": sc.chunks,
        "latency_s": sc.latency,
        "document": {
            "chars": doc.chars,
            "bytes": doc.nbytes,
            "tokens": doc.tokens,
            "chunks": doc.chunks,
            "distinct_chunks": doc.distinct_chunks,
            "files": doc.files,
            "chunk_size": doc.chunk_size,
            "overlap_percent": doc.overlap_percent,
        },
        "runs": runs,
        "checks": [{"check": t, "pass": ok, "value": v} for t, ok, v in sc.checks],
    }


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:  # internal: the instrumented in-process run
        doc, db, conc = argv[1:4]
        return worker(doc, db, int(conc) or None)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100, help="chunks (default 100)")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds per call (default 0.3)")
    parser.add_argument(
        "--concurrency", type=int, default=None, help="--concurrency for gb (default: gb's, 8)"
    )
    parser.add_argument(
        "--chunk-size", type=int, default=None, help="chunk size in tokens (default: gb's, 1024)"
    )
    parser.add_argument(
        "--dimensions", type=int, default=1536, help="embedding dimensions (default 1536)"
    )
    parser.add_argument(
        "--compare-concurrency",
        action="store_true",
        help="also run the main scenario at --concurrency 1 (about 4 minutes more)",
    )
    parser.add_argument(
        "--no-done-when", action="store_true", help="skip the 60-chunk / 250 ms scenario"
    )
    parser.add_argument(
        "--no-inprocess", action="store_true", help="skip the instrumented in-process runs"
    )
    parser.add_argument(
        "--bound",
        action="store_true",
        help="only the throughput-bound matrix: the CLI at 60x250ms, 100x300ms, 100x1s, "
        "concurrency 8 and 32, each against its throughput bound (about 2 minutes)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if args.chunks < 2:
        parser.error("--chunks must be at least 2")
    out = sys.stderr if args.json else sys.stdout

    def log(line: str) -> None:
        print(line, file=out, flush=True)

    from gligabao import __version__

    log(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"gligabao {__version__}; test server tests/support/llm_server.py in this process"
    )
    if args.bound:
        with tempfile.TemporaryDirectory(prefix="gb-remember-bench-") as tmp:
            rows = run_bound(args, Path(tmp), log)
        if args.json:
            print(
                json.dumps(
                    [
                        {
                            "scenario": sc.name,
                            "concurrency": r.concurrency,
                            "requests_by_stage": r.by_stage,
                            "bound_s": r.bound_s,
                            "wall_s": r.wall_s,
                            "wall_over_bound": r.wall_s / r.bound_s if r.bound_s else None,
                            "rounds_s": r.rounds_s,
                            "chain_s": r.chain_s,
                            "startup_floor_s": startup_floor(),
                            "floor_s": r.floor_s,
                            "floor_over_bound": r.floor_s / r.bound_s if r.bound_s else None,
                            "cpu_s": r.cpu_s,
                            "first_request_s": r.first_request_s,
                            "serve_s": r.serve_s,
                            "slots_idle_s": r.slots_idle_s,
                            "last_answer_s": r.last_answer_s,
                            "stored_s": r.stored_s,
                            "stored_bound_s": r.stored_bound_s,
                            "ok": r.ok,
                        }
                        for sc, r in rows
                    ],
                    indent=2,
                )
            )
        else:
            print_bound(rows)
        return 0 if all(r.ok for _, r in rows) else 1
    scenarios = [Scenario("main", args.chunks, args.latency)]
    if not args.no_done_when:
        scenarios.append(Scenario("done-when", DONE_WHEN["chunks"], DONE_WHEN["latency"]))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gb-remember-bench-") as tmp:
        for i, sc in enumerate(scenarios):
            folder = Path(tmp) / sc.name
            folder.mkdir()
            run_scenario(sc, args, folder, log, compare=args.compare_concurrency and i == 0)
            if not args.json:
                print_scenario(sc)
    total = time.monotonic() - started
    if args.json:
        report = {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "gligabao": __version__,
            "dimensions": args.dimensions,
            "sequential_design": "sum over every request of its served duration (server side)",
            "scenarios": [scenario_json(sc) for sc in scenarios],
            "total_s": total,
        }
        print(json.dumps(report, indent=2))
    else:
        print(f"\ntotal benchmark time {total:.1f} s")
    failed = any(not r.ok for sc in scenarios for r in sc.runs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
