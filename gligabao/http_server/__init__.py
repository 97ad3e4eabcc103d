"""`gb serve`: the memory over HTTP and JSON, as the published `gligabao` client and any
program speak to it (`POST /v1/gb/remember` and the reads), on Starlette and uvicorn
(which the `mcp` dependency brings).

A face like the CLI and `gb mcp`: each endpoint parses its request, calls the service
(`gligabao.service.memory.Memory`) and answers the object `--json` prints. The ASGI
plumbing (token, body limit, errors, access log, worker threads) is in `app.py`, the
request bodies in `requests.py`, the endpoints in `routes.py`.
"""

from __future__ import annotations

import sys

from gligabao.config import Config
from gligabao.http_server.app import LIMIT, Guard, Server
from gligabao.http_server.routes import build_app

__all__ = ["LIMIT", "Server", "build_app", "serve"]


def serve(config: Config, *, host: str, port: int, token: str | None) -> None:
    """Serve until Ctrl-C (or SIGTERM)."""
    import uvicorn

    server = Server(config, token)
    app = Guard(build_app(server), server)
    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(f"gb serve: listening on http://{shown}:{port}; Ctrl-C stops it\n")
    sys.stderr.flush()
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
