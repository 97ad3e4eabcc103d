"""Evidence to the line against whole-chunk provenance: how often an extraction's quote is
found in its chunk, and how much narrower the evidence a user is shown becomes.

Cuts a real document (default: the Apache License 2.0 shipped in tests/support/corpus) as `gb
remember` would, asks an OpenAI-compatible server for each chunk's `extract_graph`, as
gb does (the same request, prompt and schema), and locates each fact's quote in its
chunk with `gligabao.base.evidence.locate_quote`. Prints the share of quotes found exactly,
found only tolerantly (case, spacing), and not found (the chunk stands for them), and
the mean evidence length in bytes beside the mean chunk length.

Without OPENAI_BASE_URL the deterministic test server of tests/support/llm_server.py answers
(its quotes are the sentences themselves: a check of the bench, not a figure); point it
at a real model for the figure, e.g. ../shared/realllm:

    OPENAI_BASE_URL=http://127.0.0.1:18790/v1 OPENAI_API_KEY=sk-local \\
        python bench/evidence_bench.py --chunks 8 --timeout 600
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gligabao.base.evidence import locate_quote  # noqa: E402
from gligabao.chunk import cut  # noqa: E402
from gligabao.config import load_config  # noqa: E402
from gligabao.llm import LLM, LLMError, extract_graph_request  # noqa: E402


async def _extract_all(llm: LLM, texts: list[str]) -> list[dict | None]:
    async def one(text: str) -> dict | None:
        try:
            return (await llm.chat(extract_graph_request(text, "2026-01-01T00:00:00Z"))).value
        except LLMError as exc:
            print(f"  a chunk failed: {exc}", file=sys.stderr)
            return None

    return list(await asyncio.gather(*(one(t) for t in texts)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "document", nargs="?", default=str(ROOT / "tests/support/corpus/Apache-2.0")
    )
    parser.add_argument("--chunk-size", type=int, default=256)
    parser.add_argument("--chunks", type=int, default=0, help="only the first N chunks")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--show", type=int, default=0, help="print N quotes not found exactly")
    args = parser.parse_args()

    server = None
    env = dict(os.environ)
    if not env.get("OPENAI_BASE_URL"):
        from tests.support.llm_server import LLMServer

        server = LLMServer().start()
        env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-bench")
    flags = {
        "chunk_size": args.chunk_size,
        "llm.timeout": args.timeout,
        "concurrency": args.concurrency,
    }
    config = load_config(None, flags, env)
    text = Path(args.document).read_text(encoding="utf-8")
    chunks = cut(text, config.chunk_settings(), args.document).chunks
    if args.chunks:
        chunks = chunks[: args.chunks]
    started = time.monotonic()
    answers = asyncio.run(_extract_all(LLM(config, env=env), [c.text for c in chunks]))
    wall = time.monotonic() - started
    if server is not None:
        server.stop()

    found = {"exact": 0, "tolerant": 0, "not found": 0}
    shown = 0
    evidence, chunk_bytes = [], []
    for chunk, answer in zip(chunks, answers, strict=True):
        if answer is None:
            continue
        size = chunk.end_offset - chunk.start_offset
        for edge in answer.get("edges", ()):
            located = locate_quote(edge.get("quote"), chunk.text, chunk.start_offset)
            if not located.exact and shown < args.show:
                shown += 1
                print(f"  not exact: quote {edge.get('quote')!r} for fact {edge.get('fact')!r}")
            if located.start_offset is None:
                found["not found"] += 1
                evidence.append(size)
            else:
                found["exact" if located.exact else "tolerant"] += 1
                evidence.append(located.end_offset - located.start_offset)
            chunk_bytes.append(size)
    facts = sum(found.values())
    print(f"document: {args.document} ({len(text.encode())} bytes)")
    print(f"server: {'the test server' if server else env['OPENAI_BASE_URL']}")
    print(
        f"chunks: {len(chunks)} of {args.chunk_size} tokens; answered: "
        f"{sum(a is not None for a in answers)}; wall {wall:.1f} s"
    )
    print(f"facts: {facts}")
    for label, n in found.items():
        print(f"  quote {label:<10} {n:5d}  {100 * n / facts if facts else 0:5.1f}%")
    if facts:
        print(
            f"mean evidence: {statistics.mean(evidence):.0f} bytes "
            f"(whole-chunk provenance: {statistics.mean(chunk_bytes):.0f} bytes, "
            f"{statistics.mean(evidence) / statistics.mean(chunk_bytes):.0%} of it)"
        )


if __name__ == "__main__":
    main()
