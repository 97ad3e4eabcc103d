"""The LLM cost of a document token: what `gb remember` spends, by stage, on a real document.

Remembers one document (default: the Apache License 2.0 under /usr/share/common-licenses)
at default settings into a fresh database, as a user would (`python -m gligabao remember
FILE --json`), against the OpenAI-compatible server of OPENAI_BASE_URL (for the figure:
../shared/realllm, a real local model), then reads gb's own record of every call (`gb
inferences --json`) and prints, by stage: calls, prompt and completion tokens as the
server counted them, and their sum per document token. The document's tokens are counted
by the same server's tokenizer (llama.cpp's POST /tokenize) where it has one, else by
gb's estimator (said so). Embedding tokens are shown apart: they are not chat tokens.

It also prints the share of prompt tokens that repeat across calls: for each call, the
longest prefix of its messages that an earlier call already sent (the system prompt of a
stage, first in every call), counted by the server's tokenizer. A provider's prompt
cache serves those.

Target: LLM tokens (prompt + completion, all chat stages) <= 3.0 x the document's tokens
at the default 1024-token chunks, without --contextual. For comparison, cognee measured
5.7-12.0 x at 8,191-token chunks.

Run from the repository root, with the real model serving on 18790::

    OPENAI_BASE_URL=http://127.0.0.1:18790/v1 OPENAI_API_KEY=sk-local \\
        python bench/token_bench.py --model /tmp/realllm/qwen.gguf --dimensions 896

`--keep DIR` keeps the database; `--keep DIR --reuse` reads its figures again without
remembering anything.

Without OPENAI_BASE_URL the tests' deterministic server answers (a check of the bench,
not a figure).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_FILE = Path("/usr/share/common-licenses/Apache-2.0")
TARGET = 3.0


def _gb(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gligabao", *args], capture_output=True, text=True, env=env
    )


class Tokenizer:
    """The server's own token counts (llama.cpp's /tokenize), else gb's estimator."""

    def __init__(self, base_url: str) -> None:
        root = base_url.rstrip("/")
        self._url = (root[: -len("/v1")] if root.endswith("/v1") else root) + "/tokenize"
        self.exact = self._ask("probe") is not None
        self.cache: dict[str, int] = {}

    def _ask(self, text: str) -> int | None:
        request = urllib.request.Request(
            self._url,
            data=json.dumps({"content": text}).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return len(json.load(answer)["tokens"])
        except (OSError, ValueError, KeyError):
            return None

    def count(self, text: str) -> int:
        if text not in self.cache:
            counted = self._ask(text) if self.exact else None
            if counted is None:
                from gligabao.chunk.tokens import Estimator

                counted = Estimator().count(text)
            self.cache[text] = counted
        return self.cache[text]


def _add_field_costs(costs: dict[str, int], answer: object, tokenizer: Tokenizer) -> None:
    """What each field of an extraction answer took: its key and value as the answer
    writes them (`"quote": "..."`), by the server's tokenizer; `entities.name` and so on."""
    if isinstance(answer, str):
        try:
            answer = json.loads(answer)
        except ValueError:
            return
    if not isinstance(answer, dict):
        return
    for kind in ("entities", "edges"):
        for item in answer.get(kind) or ():
            for key, value in item.items() if isinstance(item, dict) else ():
                piece = f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}"
                costs[f"{kind}.{key}"] += tokenizer.count(piece)


def _serialized(request: dict) -> str:
    """A chat request's messages as one text, in the order a model reads them."""
    return "".join(f"<{m['role']}>{m['content']}" for m in request.get("messages", []))


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--model", default=None, help="the chat model (gb -m)")
    parser.add_argument("--dimensions", type=int, default=None, help="embedding dimensions")
    parser.add_argument("--keep", type=Path, default=None, help="keep the database here")
    parser.add_argument(
        "--reuse", action="store_true", help="read the figures of the database in --keep again"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    env = dict(os.environ)
    server = None
    if not env.get("OPENAI_BASE_URL"):
        from tests.support.llm_server import LLMServer

        server = LLMServer().start()
        env["OPENAI_BASE_URL"] = server.base_url
        env["OPENAI_API_KEY"] = "sk-bench-not-a-real-key"
    if args.dimensions:
        env["GB_EMBEDDINGS_DIMENSIONS"] = str(args.dimensions)
    env.setdefault("OPENAI_API_KEY", "sk-local")
    base_url = env["OPENAI_BASE_URL"]

    folder = args.keep or Path(tempfile.mkdtemp(prefix="token-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "tokens.db"
    common = ["--db", str(db)]
    wall = 0.0
    if not (args.reuse and db.exists()):
        if db.exists():
            db.unlink()
        remember = ["remember", str(args.file), "--json", *common]
        if args.model:
            remember += ["-m", args.model]
        started = time.perf_counter()
        proc = _gb(remember, env)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            sys.exit(f"gb remember exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")

    listed = _gb(["inferences", "--json", "-n", "100000", *common], env)
    calls = [json.loads(line) for line in listed.stdout.splitlines() if line.strip()]
    calls.sort(key=lambda c: c["id"])
    tokenizer = Tokenizer(base_url)

    by_stage: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    sent: list[str] = []
    field_costs: dict[str, int] = defaultdict(int)
    repeated = prompt_total = 0
    for call in calls:
        stage = by_stage[call["stage"]]
        stage["calls"] += 1
        stage["prompt"] += call.get("input_tokens") or 0
        stage["completion"] += call.get("output_tokens") or 0
        if call["stage"] == "embed":
            continue
        prompt_total += call.get("input_tokens") or 0
        detail = json.loads(_gb(["inferences", str(call["id"]), "--json", *common], env).stdout)
        if call["stage"] == "extract_graph":
            _add_field_costs(field_costs, detail.get("answer"), tokenizer)
        text = _serialized(detail.get("request") or {})
        shared = max((_common_prefix(text, earlier) for earlier in sent), default=0)
        if shared:
            prefix = text[:shared]
            for role in ("system", "user", "assistant"):
                prefix = prefix.replace(f"<{role}>", "")
            repeated += tokenizer.count(prefix)
        sent.append(text)

    document = args.file.read_text(encoding="utf-8")
    doc_tokens = tokenizer.count(document)
    chat = {s: v for s, v in by_stage.items() if s != "embed"}
    chat_tokens = sum(v["prompt"] + v["completion"] for v in chat.values())
    figures = {
        "file": str(args.file),
        "document_tokens": doc_tokens,
        "tokenizer": "server" if tokenizer.exact else "gb estimator",
        "wall_s": round(wall, 1),
        "stages": {
            s: {**v, "per_document_token": round((v["prompt"] + v["completion"]) / doc_tokens, 3)}
            for s, v in sorted(by_stage.items())
        },
        "llm_tokens": chat_tokens,
        "llm_tokens_per_document_token": round(chat_tokens / doc_tokens, 3),
        "prompt_tokens_repeated_share": round(repeated / prompt_total, 3) if prompt_total else None,
        "extract_graph_field_tokens": dict(sorted(field_costs.items(), key=lambda kv: -kv[1])),
    }
    if server is not None:
        server.stop()
    if args.json:
        print(json.dumps(figures))
        return
    print(f"{args.file} : {doc_tokens} tokens ({figures['tokenizer']}), remembered in {wall:.1f} s")
    print(f"{'stage':<20}{'calls':>6}{'prompt':>9}{'completion':>12}{'per doc token':>15}")
    for name, v in figures["stages"].items():
        print(
            f"{name:<20}{v['calls']:>6}{v['prompt']:>9}{v['completion']:>12}"
            f"{v['per_document_token']:>15.3f}"
        )
    fields = figures["extract_graph_field_tokens"]
    if fields:
        print(
            "extract_graph answers, tokens by field: "
            + ", ".join(f"{k} {v}" for k, v in fields.items())
        )
    ratio = figures["llm_tokens_per_document_token"]
    print(f"LLM tokens (chat stages) per document token: {ratio:.3f}")
    print(f"prompt tokens repeated across calls: {figures['prompt_tokens_repeated_share']}")
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    print(f"{verdict}: LLM tokens per document token {ratio:.2f} <= {TARGET}")


if __name__ == "__main__":
    main()
