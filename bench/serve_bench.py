"""Load on `gb serve`: 50 concurrent searches while a 100-chunk remember runs.

On loopback, bounded: the test LLM server (tests/support/llm_server.py, `--latency`
seconds a request, default 0.05) in this process, `gb serve` a process of its own on a
fresh database (64-dimension vectors, 128-token chunks). One short text is remembered
first so the dataset exists; then a text of about 100 chunks is posted, and while it
runs `--searches` searches (default 50) are sent at once from as many threads. Prints
each search's p50 and p95 and whether every one answered while the remember ran, then
checks that the remember completed and that nothing was stored twice. Run from the
repository root::

    .venv/bin/python bench/serve_bench.py [--searches 50] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.helpers import story
from tests.support.llm_server import LLMServer


def call(url: str, path: str, body: object = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as answer:
        return answer.status, json.loads(answer.read())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--searches", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    with LLMServer(latency=args.latency) as llm, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        env = {
            **os.environ,
            "OPENAI_BASE_URL": llm.base_url,
            "OPENAI_API_KEY": "sk-bench",
            "GB_EMBEDDINGS_DIMENSIONS": "64",
            "GB_CHUNK_SIZE": "128",
        }
        command = [sys.executable, "-m", "gligabao", "serve", "--db", str(folder / "gb.db")]
        log = open(folder / "serve.log", "wb")  # noqa: SIM115
        server = subprocess.Popen([*command, "--http", f"127.0.0.1:{port}"], stderr=log, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.05)
            call(url, "/v1/gb/remember", {"user_id": "bench", "text": story(1)})
            text = story(2, paragraphs=100)
            done: dict = {}
            remembering = threading.Thread(
                target=lambda: done.update(
                    call(url, "/v1/gb/remember", {"user_id": "bench", "text": text})[1]
                )
            )
            remembering.start()
            time.sleep(1.0)  # the remember under way
            query = "/v1/gb/search?user_id=bench&query=met+in+Rome&method=bm25"

            def search(_: int) -> tuple[float, bool]:
                started = time.monotonic()
                status, _hits = call(url, query)
                return time.monotonic() - started, status == 200 and remembering.is_alive()

            with ThreadPoolExecutor(args.searches) as pool:
                timed = list(pool.map(search, range(args.searches)))
            remembering.join()
            took = sorted(t for t, _ in timed)
            during = sum(ok for _, ok in timed)
            p95 = took[int(len(took) * 0.95) - 1]
            print(
                f"{len(took)} searches: p50 {statistics.median(took) * 1000:.0f} ms, "
                f"p95 {p95 * 1000:.0f} ms; {during} answered while the remember ran"
            )
            print(f"remember: {done.get('status')}, {len(done.get('chunks', []))} chunks")
            _, listed = call(url, "/v1/gb/documents?user_id=bench")
            stored = [d["id"] for d in listed["documents"]]
            print(f"documents stored: {len(stored)} (expected 2)")
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()


if __name__ == "__main__":
    main()
