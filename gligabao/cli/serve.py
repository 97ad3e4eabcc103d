"""`gb serve`: the memory over HTTP and JSON, for the published client and any program."""

from __future__ import annotations

import typer

from gligabao.cli import options
from gligabao.cli.app import command, configure, log_warnings
from gligabao.errors import UsageError

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@command("serve")
def serve_command(
    http: str = typer.Option(
        "127.0.0.1:7878",
        "--http",
        metavar="HOST:PORT",
        help="Address to listen on (default host 127.0.0.1).",
    ),
    db: options.Db = None,
    schema: options.Schema = None,
    token: str = typer.Option(
        None,
        "--token",
        metavar="TOKEN",
        envvar="GB_SERVE_TOKEN",
        show_envvar=False,
        help="Bearer token every request must carry (else GB_SERVE_TOKEN); "
        "required to listen beyond loopback.",
    ),
    config_path: options.ConfigPath = None,
) -> None:
    """Serve this memory over HTTP and JSON.

    Serve POST /v1/gb/remember (the published gligabao client's API), chunk-preview,
    a document's stored chunks, and search, facts, entity, why, documents and stats as
    the JSON --json prints; /openapi.json describes them. Each user_id has its own
    datasets (stored as USER_ID/DATASET). One access-log line a request on stderr.

    \b
    Example: gb serve --db ~/notes.db --http 127.0.0.1:7878
    """
    # Here, not at the top: the server's stack (starlette, uvicorn) is for this command only.
    from gligabao.mcp_server import parse_http

    host, port = parse_http(http)
    if token is not None and not token.strip():
        raise UsageError("--token must not be blank")
    if token is None and host not in LOOPBACK:
        raise UsageError(
            f"--http {http}: listening beyond loopback needs a token; "
            "give --token TOKEN (or GB_SERVE_TOKEN)"
        )
    config = configure(config_path, {"database": db, "schema": schema})
    from gligabao.http_server import serve

    log_warnings(alone=True)
    serve(config, host=host, port=port, token=token)
