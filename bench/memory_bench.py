"""Peak memory of `gb remember` on a document of (just under) 1 MiB, the largest gb takes.

Builds the document as `remember_bench.py` does (real text nobody on this team wrote, cut
into `--chunks` chunks at gb's default size; 415 make just under 1 MiB), starts the tests'
deterministic OpenAI-compatible server in this process at 0 ms a call, with embeddings of
1,536 dimensions (as text-embedding-3-small gives), and runs the real CLI as a subprocess
under /usr/bin/time -v (else a tiny launcher reading os.wait4), `--runs` times, each into
a fresh database::

    python -m gligabao remember DOC --quiet --db DB

It prints each run's maximum resident set size of the gb process and wall time, and the
median peak.

Run from the repository root::

    . .venv/bin/activate
    python bench/memory_bench.py [--chunks 415] [--runs 3] [--dimensions 1536]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from batch_bench import _measured, _read_usage  # noqa: E402
from remember_bench import build_document  # noqa: E402

from tests.support.llm_server import LLMServer  # noqa: E402

LIMIT = 1 << 20  # the largest text gb remembers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=415, help="chunks (default 415)")
    parser.add_argument("--runs", type=int, default=3, help="runs (default 3)")
    parser.add_argument("--dimensions", type=int, default=1536, help="embedding dimensions")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    with LLMServer() as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-bench-not-a-real-key",
            "GB_EMBEDDINGS_DIMENSIONS": str(args.dimensions),
        }
        env.pop("GB_CHUNK_SIZE", None)
        document = build_document(args.chunks, env, folder)
        if document.nbytes > LIMIT:
            sys.exit(f"{document.nbytes} bytes is over 1 MiB: ask for fewer --chunks")
        print(
            f"document: {document.nbytes:,} bytes, {document.chunks} chunks, "
            f"{args.dimensions} dimensions; test server at 0 ms a call"
        )
        peaks = []
        for run in range(1, args.runs + 1):
            db, usage = folder / f"run{run}.db", folder / f"run{run}.usage"
            command = [sys.executable, "-m", "gligabao", "remember", str(document.path)]
            command += ["--quiet", "--db", str(db)]
            started = time.perf_counter()
            proc = subprocess.run(_measured(command, usage), env=env, capture_output=True)
            wall = time.perf_counter() - started
            if proc.returncode != 0:
                sys.exit(f"gb exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
            rss_kib, user, system = _read_usage(usage)
            peaks.append(rss_kib / 1024)
            print(
                f"run {run}: peak RSS {rss_kib / 1024:.0f} MiB, wall {wall:.1f} s, "
                f"CPU {user + system:.1f} s"
            )
    print(f"peak memory, median of {args.runs}: {statistics.median(peaks):.0f} MiB")


if __name__ == "__main__":
    main()
