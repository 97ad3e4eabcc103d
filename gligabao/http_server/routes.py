"""The endpoints: each parses its arguments, calls the service and answers the object
`--json` prints for the same call."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gligabao.base.stopping import Stop
from gligabao.http_server.app import LIMIT, Server
from gligabao.http_server.errors import Refusal
from gligabao.http_server.openapi import describe
from gligabao.http_server.requests import Args, read_args, remember_call
from gligabao.service.memory import Memory

__all__ = ["build_app"]

Endpoint = Callable[[Server, Request, Args], Awaitable[Any]]


async def remember(server: Server, request: Request, args: Args) -> Any:
    call = remember_call(args)
    config = server.config.overridden({"dataset": call.dataset, **call.settings}, "the request")
    notices: list[str] = []
    memory = Memory.of(config, on_notice=notices.append)
    if call.settings and memory.offline:
        asked = ", ".join(sorted(call.settings))
        raise Refusal(
            503,
            "no_endpoint",
            f"no LLM endpoint is configured for the stages this request names ({asked}); "
            "start gb serve with one (llm.base_url, OPENAI_BASE_URL or an API key)",
        )

    def work(stop: Stop) -> Any:
        try:
            return memory.remember_text(
                call.text, valid_at=call.valid_at, kind=call.kind, stop=stop
            )
        finally:
            memory.close()

    done = await server.write(request.receive, work)
    if done.failure is not None:
        raise done.failure
    shown = done.as_json()
    said = list(dict.fromkeys([*notices, *done.notices]))
    if said:  # offline: stored with its stages pending, and what to do
        shown["notices"] = said
    return shown


async def chunk_preview(server: Server, request: Request, args: Args) -> Any:
    text = args.text("text", required=True)
    name = args.text("name")
    args.done()
    return (await server.read(lambda m: m.preview_text(text, name=name))).as_json()


async def stored_chunks(server: Server, request: Request, args: Args) -> Any:
    dataset = args.dataset()
    args.done()
    document_id = int(request.path_params["document_id"])
    return await server.read(lambda m: m.stored_chunks(document_id, dataset=dataset))


async def search(server: Server, request: Request, args: Args) -> Any:
    dataset = args.dataset()
    query = args.text("query", required=True)
    k = args.whole("k", 10)
    method = args.text("method", "hybrid")
    session = args.text("session")
    args.done()
    hits = await server.read(
        lambda m: m.search(query, k, method=method, dataset=dataset, session=session)
    )
    return {"hits": hits.as_json()}


async def facts(server: Server, request: Request, args: Args) -> Any:
    dataset = args.dataset()
    how = {
        "about": args.text("about"),
        "at": args.text("at"),
        "known_at": args.text("known_at"),
        "include_closed": args.flag("include_closed"),
        "relation": args.text("relation"),
        "session": args.text("session"),
        "k": args.whole("k", 20),
    }
    query = args.text("query")
    args.done()
    found = await server.read(lambda m: m.facts(query, dataset=dataset, **how))
    return {"facts": [f.as_json() for f in found]}


async def entity(server: Server, request: Request, args: Args) -> Any:
    dataset = args.dataset()
    name = args.text("name", required=True)
    depth, at = args.whole("depth", 1), args.text("at")
    args.done()
    view = await server.read(lambda m: m.entity(name, depth=depth, at=at, dataset=dataset))
    return view.as_json()


async def why(server: Server, request: Request, args: Args) -> Any:
    dataset = args.dataset()
    fact_id = args.whole("fact_id", required=True)
    args.done()
    return (await server.read(lambda m: m.why(fact_id, dataset=dataset))).as_json()


async def documents(server: Server, request: Request, args: Args) -> Any:
    dataset = args.dataset()
    limit = args.whole("limit", 50)
    args.done()
    rows = await server.read(lambda m: m.documents(dataset=dataset, limit=limit))
    return {"documents": rows}


async def stats(server: Server, request: Request, args: Args) -> Any:
    dataset = args.dataset()
    args.done()
    return dataclasses.asdict(await server.read(lambda m: m.stats(dataset=dataset)))


def _endpoint(server: Server, handler: Endpoint) -> Callable[[Request], Awaitable[Response]]:
    async def answer(request: Request) -> Response:
        try:
            args = await read_args(request, LIMIT)
            return JSONResponse(await handler(server, request, args))
        except Exception as exc:  # every error is an answer; the server stays up
            return server.failure(exc)

    return answer


# path -> (methods, handler, summary): what /openapi.json describes too.
ROUTES: dict[str, tuple[tuple[str, ...], Endpoint, str]] = {
    "/v1/gb/remember": (("POST",), remember, "Remember a text (gb remember - --json)"),
    "/v1/gb/chunk-preview": (("POST",), chunk_preview, "How a text would be cut, nothing stored"),
    "/v1/gb/documents/{document_id:int}/chunks": (
        ("GET",),
        stored_chunks,
        "A document's stored chunks, with in_sync",
    ),
    "/v1/gb/search": (("GET", "POST"), search, "Search chunks (gb search --json)"),
    "/v1/gb/facts": (("GET", "POST"), facts, "Facts of the graph (gb facts --json)"),
    "/v1/gb/entity": (("GET", "POST"), entity, "One entity (gb entity --json)"),
    "/v1/gb/why": (("GET", "POST"), why, "Why a fact is held (gb why --json)"),
    "/v1/gb/documents": (("GET", "POST"), documents, "Documents (gb list --json)"),
    "/v1/gb/stats": (("GET", "POST"), stats, "Counts (gb stats --json)"),
}


def build_app(server: Server) -> Starlette:
    routes = [
        Route(path, _endpoint(server, handler), methods=list(methods))
        for path, (methods, handler, _) in ROUTES.items()
    ]
    spec = describe({path: (methods, summary) for path, (methods, _, summary) in ROUTES.items()})

    async def openapi(request: Request) -> Response:
        return JSONResponse(spec)

    routes.append(Route("/openapi.json", openapi, methods=["GET"]))

    async def missing(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        code = "not_found" if status == 404 else "method_not_allowed"
        said = "method not allowed"
        if status == 404:
            said = "no such endpoint; /openapi.json lists them"
        return JSONResponse({"error": {"code": code, "message": said}}, status_code=status)

    return Starlette(routes=routes, exception_handlers={404: missing, 405: missing})
