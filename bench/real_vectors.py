"""Embed a real corpus for `search_bench.py --real DIR`: DIR/facts.npy and DIR/queries.npy.

The vectors whose nearest neighbours the quantized search must find are a real model's:
by default the passages of shared/retrieval-dev's corpus (its paragraphs, up to
`--passages`, in file order) and its queries, embedded by any OpenAI-compatible
endpoint, such as shared/retrieval-dev/embed_server.py (all-MiniLM-L6-v2, 384
dimensions). Float32, one row a text.

Run from the repository root::

    (cd ../shared/retrieval-dev && bash setup.sh /tmp/embvenv &&
     /tmp/embvenv/bin/python embed_server.py 19401 &)
    python bench/real_vectors.py http://127.0.0.1:19401/v1 /tmp/real
    python bench/search_bench.py --real /tmp/real
"""

from __future__ import annotations

import argparse
import json
import re
import urllib.request
from pathlib import Path

import numpy as np

DEV = Path(__file__).resolve().parent.parent.parent / "shared" / "retrieval-dev"


def passages(corpus: Path, limit: int) -> list[str]:
    """The corpus's paragraphs of at least 40 characters, file by file, up to `limit`."""
    out: list[str] = []
    for path in sorted(corpus.rglob("*")):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            out.extend(p.strip() for p in re.split(r"\n\s*\n", text) if len(p.strip()) >= 40)
        if len(out) >= limit:
            break
    return out[:limit]


def embed(base_url: str, model: str, texts: list[str], batch: int = 64) -> np.ndarray:
    rows: list[list[float]] = []
    for first in range(0, len(texts), batch):
        body = json.dumps({"model": model, "input": texts[first : first + batch]}).encode()
        request = urllib.request.Request(
            base_url.rstrip("/") + "/embeddings",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": "Bearer sk-local"},
        )
        with urllib.request.urlopen(request, timeout=600) as answer:
            data = json.load(answer)["data"]
        rows.extend(item["embedding"] for item in sorted(data, key=lambda d: d["index"]))
        print(f"\r  {len(rows):,}/{len(texts):,} embedded", end="", flush=True)
    print()
    return np.asarray(rows, dtype=np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base_url", help="an OpenAI-compatible endpoint, e.g. .../v1")
    parser.add_argument("out", help="folder to write facts.npy and queries.npy to")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--passages", type=int, default=20_000)
    parser.add_argument("--dev", default=str(DEV), help="the retrieval set's folder")
    args = parser.parse_args()
    dev = Path(args.dev)
    texts = passages(dev / "corpus", args.passages)
    with open(dev / "queries.jsonl", encoding="utf-8") as f:
        queries = [json.loads(line)["query"] for line in f if line.strip()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{len(texts):,} passages and {len(queries)} queries from {dev}")
    np.save(out / "facts.npy", embed(args.base_url, args.model, texts))
    np.save(out / "queries.npy", embed(args.base_url, args.model, queries))
    print(f"wrote {out / 'facts.npy'} and {out / 'queries.npy'}")


if __name__ == "__main__":
    main()
