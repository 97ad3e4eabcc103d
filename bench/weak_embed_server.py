"""A weak embedding model behind an OpenAI-compatible /v1/embeddings, for measuring search
on a model it was never tuned on.

The model is `tokenlearn-static-model` (PyPI; in the `bench` extra): a static,
Model2Vec-style table of 10,000 tokens x 64 dimensions, int8, baked into its wheel, so it
runs offline and embeds a text in microseconds. Beside all-MiniLM-L6-v2 (384 dimensions,
a transformer) it is the kind of cheap model a user may bring, and the one that shows
whether the fusion of BM25 and vectors holds when the vectors are poor.

    python bench/weak_embed_server.py 19402          # then, in gb.toml:
    # [embeddings] model = "static-64" dimensions = 64 base_url = "http://127.0.0.1:19402/v1"

Serves POST /v1/embeddings ({"input": str | [str], "model", "encoding_format": "float" |
"base64"}), GET /v1/models and GET /health; errors as the API shapes them.
"""

from __future__ import annotations

import argparse
import base64
import json
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "static-64"
DIMENSIONS = 64


class Embedder:
    """The model, loaded once; one request computed at a time (its encoder holds state)."""

    def __init__(self) -> None:
        from static_model import get_embeddings

        self._embed = get_embeddings
        self._lock = threading.Lock()
        self.texts = 0
        self(["warm up"])  # its first call loads the table: not on a user's clock

    def __call__(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            self.texts += len(texts)
            return [list(v) for v in self._embed(texts)]


class Handler(BaseHTTPRequestHandler):
    embedder: Embedder

    def log_message(self, format: str, *args: object) -> None:  # quiet: a bench reads stdout
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, param: str | None = None) -> None:
        self._send(
            status,
            {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": param,
                    "code": None,
                }
            },
        )

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        elif self.path == "/health":
            self._send(200, {"ok": True, "texts": self.embedder.texts})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
            self._error(404, f"no route {self.path}")
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        except ValueError:
            self._error(400, "the body is not JSON")
            return
        given = body.get("input")
        texts = [given] if isinstance(given, str) else given
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            self._error(400, "input must be a string or a non-empty list of strings", "input")
            return
        if body.get("dimensions") not in (None, DIMENSIONS):
            self._error(400, f"this model has {DIMENSIONS} dimensions", "dimensions")
            return
        vectors = self.embedder(texts)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, v in enumerate(vectors):
            value: object = v
            if as_base64:
                value = base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode()
            data.append({"object": "embedding", "index": i, "embedding": value})
        words = sum(len(t.split()) for t in texts)
        self._send(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model") or MODEL,
                "usage": {"prompt_tokens": words, "total_tokens": words},
            },
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    Handler.embedder = Embedder()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"{MODEL} ({DIMENSIONS}-d) on http://{args.host}:{args.port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
