"""Benchmark batch imports: `gb remember -r DIR` over many short files, then again unchanged.

The batch targets: 1,000 short files remember in one run against the test server
at 0 ms latency at 100 files per second or more; a second run reports all 1,000 unchanged
at 2,000 files per second or more; the peak memory for 1,000 files is within 20% of that
for 100. This script measures exactly that and prints the figures with a PASS/FAIL line each.

It builds N short files of real text that nobody on this team wrote (the licence texts
under /usr/share/common-licenses, then the Debian `copyright` files under /usr/share/doc,
each paragraph once): every file a different piece of 300-1500 characters, below gb's
chunk size so that none is chunked, laid out 100 to a sub-folder. It starts the
deterministic OpenAI-compatible server of tests/support/llm_server.py in this process at 0 ms per
call, with embeddings of 1536 dimensions by default (as text-embedding-3-small gives), and
runs the real CLI as a subprocess, process start and imports included, as cron would::

    python -m gligabao remember -r DIR --quiet --db DB

with OPENAI_BASE_URL and OPENAI_API_KEY pointing at the server. The runs, each under a
fresh server so that its requests are its own:

1. N files, fresh database: wall time, files/s, LLM requests per file, peak in flight;
2. the same command again on the same folder and database: wall time and files/s;
3. once more with `--json`, to check that every one of the N lines says `unchanged`
   (which also proves that run 1 stored every file whole);
4. the first 100 of the same files into a fresh database, then again (memory baseline).

The peak memory of a run is the maximum resident set size of the gb process, as
`/usr/bin/time -v` reports it (where that is missing, a tiny Python launcher reads it with
`os.wait4`); the CPU time is that process's too. Neither includes this process, which
holds the server.

Run from the repository root::

    . .venv/bin/activate
    python bench/batch_bench.py [--files N] [--small N] [--dimensions D] [--json]
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

API_KEY = "sk-bench-not-a-real-key"
TEXT_SOURCES = ("/usr/share/common-licenses/*", "/usr/share/doc/*/copyright")
MIN_CHARS, MAX_CHARS = 300, 1500
PER_FOLDER = 100
TARGETS = {"first_files_per_s": 100.0, "unchanged_files_per_s": 2000.0, "rss_ratio": 1.20}
RUN_TIMEOUT_S = 600


# --------------------------------------------------------------------------- the files


def _source_texts() -> list[str]:
    """The text of every distinct readable UTF-8 file of TEXT_SOURCES, in a fixed order."""
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
            if text.strip() and "\x00" not in text and digest not in seen:
                seen.add(digest)
                out.append(text)
    return out


def _units() -> list[str]:
    """Distinct paragraphs, each at most MAX_CHARS (a longer one is cut at lines, then words)."""
    seen: set[str] = set()
    out: list[str] = []

    def add(unit: str) -> None:
        key = " ".join(unit.split())
        if key and key not in seen:
            seen.add(key)
            out.append(unit)

    for text in _source_texts():
        for para in text.replace("\r\n", "\n").split("\n\n"):
            para = para.strip("\n")
            if len(para) <= MAX_CHARS:
                add(para)
                continue
            piece = ""
            for line in para.split("\n"):
                while len(line) > MAX_CHARS:  # a very long line: at a space, else anywhere
                    at = line.rfind(" ", 0, MAX_CHARS)
                    at = at if at > 0 else MAX_CHARS
                    add(line[:at])
                    line = line[at:].lstrip()
                if piece and len(piece) + 1 + len(line) > MAX_CHARS:
                    add(piece)
                    piece = ""
                piece = f"{piece}\n{line}" if piece else line
            add(piece)
    return out


def build_pieces(n: int, env: dict[str, str]) -> list[str]:
    """N different pieces of 300-1500 characters, each below gb's chunk size (not chunked).

    Consecutive distinct paragraphs are packed up to a length drawn (seeded) between the
    bounds, so the files are of varied sizes; the same N pieces come out on every run.
    """
    from gligabao.chunk import cut
    from gligabao.config import load_config

    settings = load_config(env=env).chunk_settings()
    rng = random.Random(4)
    pieces: list[str] = []
    seen: set[str] = set()
    target = rng.randint(MIN_CHARS, MAX_CHARS)
    current = ""

    def emit(text: str) -> None:
        nonlocal target
        text = text.strip() + "\n"
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if (
            MIN_CHARS <= len(text) <= MAX_CHARS
            and digest not in seen
            and not cut(text, settings).chunked
        ):
            seen.add(digest)
            pieces.append(text)
        target = rng.randint(MIN_CHARS, MAX_CHARS)

    for unit in _units():
        if len(pieces) >= n:
            break
        if current and len(current) + 2 + len(unit) > MAX_CHARS:
            emit(current)
            current = ""
        current = f"{current}\n\n{unit}" if current else unit
        if len(current) >= target:
            emit(current)
            current = ""
    if len(pieces) < n:
        raise SystemExit(
            f"error: the texts under {' and '.join(TEXT_SOURCES)} give only {len(pieces)} "
            f"distinct pieces of {MIN_CHARS}-{MAX_CHARS} characters; ask for fewer --files"
        )
    return pieces[:n]


def write_corpus(folder: Path, pieces: list[str]) -> int:
    """Write the pieces as folder/part-KK/doc-NNNN.txt; the total size in bytes."""
    total = 0
    for i, text in enumerate(pieces):
        part = folder / f"part-{i // PER_FOLDER:02d}"
        part.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        (part / f"doc-{i:04d}.txt").write_bytes(data)
        total += len(data)
    return total


# --------------------------------------------------------------------------- one gb run


@dataclass
class Run:
    label: str
    files: int
    db: str
    json_lines: bool = False
    rc: int | None = None
    wall_s: float = 0.0
    max_rss_kib: int = 0
    user_s: float = 0.0
    sys_s: float = 0.0
    requests: int = 0
    failed_requests: int = 0
    by_stage: dict[str, int] = field(default_factory=dict)
    peak_in_flight: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    error: str = ""

    @property
    def files_per_s(self) -> float:
        return self.files / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.error


def _env(base_url: str, work: Path, args: argparse.Namespace) -> dict[str, str]:
    # As search_bench.py: PYTHONDONTWRITEBYTECODE (set on some build machines) would have
    # every gb process compile gligabao anew (~25-45 ms); an installed gb has its bytecode.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GB_", "OPENAI_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    config = work / "gligabao.toml"
    if not config.exists():
        config.write_text("# empty: every setting from its default or the environment\n")
    env.update(
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY=API_KEY,
        GB_CONFIG=str(config),
        GB_EMBEDDINGS_DIMENSIONS=str(args.dimensions),
    )
    return env


# A tiny launcher, used where /usr/bin/time is missing: it runs the command and writes the
# child's own peak RSS (KiB) and CPU seconds, from os.wait4, to the file named first.
LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
proc.returncode = code = os.waitstatus_to_exitcode(status)
with open(sys.argv[1], "w") as f:
    f.write(f"{usage.ru_maxrss} {usage.ru_utime} {usage.ru_stime} {code}")
sys.exit(code if code >= 0 else 128 - code)
"""
TIME = "/usr/bin/time"


def _measured(cmd: list[str], usage_path: Path) -> list[str]:
    """cmd run under /usr/bin/time -v, else under LAUNCHER, writing its rusage to usage_path.

    Why not os.wait4 on gb straight from here: Linux starts a child's peak RSS at that of
    the process it was forked from (exec keeps the larger), and this process holds the
    server and the texts, so gb's peak would read as this process's. /usr/bin/time and
    the launcher are small, well below gb.
    """
    if os.access(TIME, os.X_OK):
        return [TIME, "-v", "-o", str(usage_path), *cmd]
    return [sys.executable, "-c", LAUNCHER, str(usage_path), *cmd]


def _read_usage(usage_path: Path) -> tuple[int, float, float]:
    """(peak RSS KiB, user s, system s) from what _measured wrote; zeros when it is missing."""
    try:
        text = usage_path.read_text()
    except OSError:
        return 0, 0.0, 0.0
    if not text.lstrip()[:1].isdigit():  # /usr/bin/time -v: "Label: value" lines
        values = dict(
            (k.strip(), v.strip()) for k, _, v in (ln.rpartition(":") for ln in text.splitlines())
        )
        return (
            int(values.get("Maximum resident set size (kbytes)", 0)),
            float(values.get("User time (seconds)", 0)),
            float(values.get("System time (seconds)", 0)),
        )
    rss, user, system, _ = text.split()
    return int(rss), float(user), float(system)


def run_gb(run: Run, corpus: Path, work: Path, args: argparse.Namespace) -> Run:
    """`python -m gligabao remember -r CORPUS --quiet --db DB` under a fresh test server."""
    from tests.support.llm_server import LLMServer

    cmd = [sys.executable, "-m", "gligabao", "remember", "-r", str(corpus), "--quiet"]
    cmd += ["--db", run.db]
    if run.json_lines:
        cmd.append("--json")
    if args.concurrency:
        cmd += ["--concurrency", str(args.concurrency)]
    name = re.sub(r"[^A-Za-z0-9]+", "-", run.label).strip("-")
    out_path, err_path = work / f"{name}.out", work / f"{name}.err"
    usage_path = work / f"{name}.usage"
    with LLMServer(latency=0.0) as server:
        env = _env(server.base_url, work, args)
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            t0 = time.monotonic()
            try:
                rc = subprocess.run(
                    _measured(cmd, usage_path),
                    env=env,
                    cwd=work,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    timeout=RUN_TIMEOUT_S,
                ).returncode
            except subprocess.TimeoutExpired:
                rc = 124
            t1 = time.monotonic()
        records = list(server.requests)
        run.peak_in_flight = server.max_in_flight
    run.rc = rc
    run.wall_s = t1 - t0
    run.max_rss_kib, run.user_s, run.sys_s = _read_usage(usage_path)
    run.requests = len(records)
    run.failed_requests = sum(1 for r in records if r.status != 200 or r.fault)
    run.by_stage = dict(Counter(str(r.stage) for r in records))
    stderr = err_path.read_text(errors="replace").strip()
    if run.rc != 0:
        run.error = f"exit {run.rc}: {stderr[-600:]}"
    elif not run.max_rss_kib:
        run.error = f"no peak memory figure in {usage_path.name}"
    if run.json_lines:
        statuses: Counter[str] = Counter()
        for line in out_path.read_text(errors="replace").splitlines():
            if line.strip():
                try:
                    statuses[json.loads(line).get("status", "?")] += 1
                except ValueError:
                    statuses["(unreadable line)"] += 1
        run.statuses = dict(statuses)
    return run


# --------------------------------------------------------------------------- output


def _mib(kib: int) -> str:
    return f"{kib / 1024:.1f}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)
        ).rstrip()

    return [fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)]


def _row(run: Run) -> list[str]:
    return [
        run.label,
        str(run.files),
        f"{run.wall_s:.2f}",
        f"{run.files_per_s:.1f}",
        f"{run.user_s + run.sys_s:.2f}",
        f"{run.requests} ({run.failed_requests})",
        f"{run.requests / run.files:.2f}",
        str(run.peak_in_flight),
        _mib(run.max_rss_kib),
        str(run.rc),
    ]


HEADERS = [
    "run",
    "files",
    "wall s",
    "files/s",
    "CPU s",
    "requests (failed)",
    "req/file",
    "peak in flight",
    "max RSS MiB",
    "exit",
]


def checks(first: Run, second: Run, verify: Run, small: Run, n: int) -> list[tuple[str, bool, str]]:
    unchanged = verify.statuses.get("unchanged", 0)
    ratio = first.max_rss_kib / small.max_rss_kib if small.max_rss_kib else float("inf")
    return [
        (
            f"first run of {n} files >= {TARGETS['first_files_per_s']:.0f} files/s",
            first.ok and first.files_per_s >= TARGETS["first_files_per_s"],
            f"{first.files_per_s:.1f} files/s ({first.wall_s:.2f} s wall, "
            f"{first.user_s + first.sys_s:.2f} s CPU of gb, exit {first.rc})",
        ),
        (
            f"second run reports all {n} unchanged, with no request, >= "
            f"{TARGETS['unchanged_files_per_s']:.0f} files/s",
            second.ok
            and second.requests == 0
            and verify.ok
            and unchanged == n
            and sum(verify.statuses.values()) == n
            and second.files_per_s >= TARGETS["unchanged_files_per_s"],
            f"{second.files_per_s:.1f} files/s ({second.wall_s:.2f} s wall, "
            f"{second.user_s + second.sys_s:.2f} s CPU of gb, exit {second.rc}, "
            f"{second.requests} requests); --json: {unchanged} of "
            f"{sum(verify.statuses.values())} lines unchanged",
        ),
        (
            f"peak memory for {n} files within {TARGETS['rss_ratio'] - 1:.0%} of that for "
            f"{small.files}",
            first.ok and small.ok and ratio <= TARGETS["rss_ratio"],
            f"{_mib(first.max_rss_kib)} MiB vs {_mib(small.max_rss_kib)} MiB, ratio {ratio:.3f}",
        ),
    ]


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000, help="files (default 1000)")
    parser.add_argument(
        "--small", type=int, default=100, help="files of the memory baseline (default 100)"
    )
    parser.add_argument(
        "--dimensions", type=int, default=1536, help="embedding dimensions (default 1536)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=None, help="--concurrency for gb (default: gb's, 8)"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary folder (files, databases, logs)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if args.files < 1 or not 1 <= args.small <= args.files:
        parser.error("need --files >= 1 and 1 <= --small <= --files")
    out = sys.stderr if args.json else sys.stdout

    def log(line: str) -> None:
        print(line, file=out, flush=True)

    from gligabao import __version__

    log(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"gligabao {__version__}; test server tests/support/llm_server.py in this process, "
        f"0 ms per call, {args.dimensions}-dimension embeddings"
    )
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="gb-batch-bench-"))
    try:
        work = tmp / "work"
        work.mkdir()
        pieces = build_pieces(args.files, _env("http://127.0.0.1:9/v1", work, args))
        big, small_dir = tmp / f"files-{args.files}", tmp / f"files-{args.small}"
        nbytes = write_corpus(big, pieces)
        write_corpus(small_dir, pieces[: args.small])
        sizes = sorted(len(p) for p in pieces)
        log(
            f"{args.files} files of {sizes[0]}-{sizes[-1]} chars (median "
            f"{sizes[len(sizes) // 2]}, {nbytes:,} bytes in all), all different, none chunked; "
            f"in {tmp}"
        )
        db_big, db_small = str(work / "big.db"), str(work / "small.db")
        plan = [
            Run(f"{args.files} files, first run", args.files, db_big),
            Run(f"{args.files} files, second run", args.files, db_big),
            Run(f"{args.files} files, --json check", args.files, db_big, json_lines=True),
            Run(f"{args.small} files, first run", args.small, db_small),
            Run(f"{args.small} files, second run", args.small, db_small),
        ]
        for run in plan:
            corpus = big if run.db == db_big else small_dir
            log(f"{run.label} ...")
            run_gb(run, corpus, work, args)
            log(
                f"{run.label}: {run.wall_s:.2f} s, {run.files_per_s:.1f} files/s, "
                f"{run.requests} requests, max RSS {_mib(run.max_rss_kib)} MiB, exit {run.rc}"
                + (f"; statuses {run.statuses}" if run.statuses else "")
                + (f"; FAILED {run.error}" if run.error else "")
            )
        first, second, verify, small, small_second = plan
        results = checks(first, second, verify, small, args.files)
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    total = time.monotonic() - started
    stages = sorted(first.by_stage)
    if args.json:
        report = {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "gligabao": __version__,
            "files": args.files,
            "small": args.small,
            "dimensions": args.dimensions,
            "latency_s": 0.0,
            "chars": {"min": sizes[0], "median": sizes[len(sizes) // 2], "max": sizes[-1]},
            "bytes": nbytes,
            "runs": [
                {
                    **{k: v for k, v in asdict(r).items() if k != "db"},
                    "files_per_s": r.files_per_s,
                    "requests_per_file": r.requests / r.files,
                }
                for r in plan
            ],
            "rss_ratio": first.max_rss_kib / small.max_rss_kib if small.max_rss_kib else None,
            "checks": [{"check": t, "pass": ok, "value": v} for t, ok, v in results],
            "total_s": total,
        }
        print(json.dumps(report, indent=2))
    else:
        print()
        for line in _table(HEADERS, [_row(r) for r in plan]):
            print(line)
        print(
            f"requests per file by stage ({first.label}): "
            + ", ".join(f"{s} {first.by_stage[s] / first.files:.2f}" for s in stages)
        )
        print(
            f"peak memory: {args.files} files {_mib(first.max_rss_kib)} MiB, {args.small} files "
            f"{_mib(small.max_rss_kib)} MiB (unchanged runs: {_mib(second.max_rss_kib)} / "
            f"{_mib(small_second.max_rss_kib)} MiB)"
        )
        print("checks (batch targets):")
        for text, ok, value in results:
            print(f"  [{'PASS' if ok else 'FAIL'}] {text}: {value}")
        print(f"\ntotal benchmark time {total:.1f} s")
    failed = any(r.error for r in plan)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
