"""`gb mcp`: the memory served to agents (Claude Desktop, Claude Code, Cursor...) over the
Model Context Protocol, with the official SDK (the `mcp` package).

Each tool is a thin call of `gligabao.service.memory.Memory`, answering structured content (the
objects `--json` prints, declared as the tool's output schema) and a short text with
`path:LINE-LINE` places to cite. Read tools are always listed; the write tools
(`remember_text`, `remember_file`, `forget`) only with `allow_write`, and
`remember_file` reads only files under a `--root` folder, symlinks resolved. A bad call
(arguments against the schema, an unknown id, a database locked past its busy timeout) is
an MCP error and the server stays up; no answer carries the API key. With no LLM endpoint
it works offline: BM25 search, graph reads, texts stored with their stages pending.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, Field, ValidationError
from typing_extensions import NotRequired, TypedDict  # pydantic: not typing's, before 3.12

from gligabao import __version__
from gligabao.base.redact import scrub
from gligabao.base.words import counted, plural
from gligabao.errors import GbError, UsageError
from gligabao.service.memory import Memory
from gligabao.service.results import (
    Answered,
    EntityView,
    Evidence,
    Fact,
    ForgetReport,
    Hit,
    Paths,
    Remembered,
    Stats,
    Why,
)

__all__ = ["READ_TOOLS", "WRITE_TOOLS", "build_server", "parse_http", "serve"]

READ_TOOLS = (
    "search",
    "facts",
    "entity",
    "path",
    "why",
    "ask",
    "get_document",
    "list_documents",
    "stats",
)
WRITE_TOOLS = ("remember_text", "remember_file", "forget")

INSTRUCTIONS = """\
gb is a memory of documents: their chunks, summaries and a temporal knowledge graph
(facts with the time they held and the lines that state them). Use `search` for passages,
`facts` and `entity` for what is (or was) true, `path` for how two entities are linked,
`why` for the evidence of a fact, `ask` for an answer whose every citation was checked
against its source, and cite the `path:LINE-LINE` places the answers give."""

# ---- what each tool answers: the objects --json prints, declared as output schemas


@dataclasses.dataclass(frozen=True)
class HitOutput:
    """One search result: a chunk (or an unchunked document) with where it comes from."""

    # The schema of search.hybrid.Hit, which is no dataclass (the pydantic the SDK uses
    # could not read it): `gb search` loads no dataclasses (see base/record.py). A test
    # holds the two to the same fields.
    __pydantic_config__ = ConfigDict(title="Hit")

    score: float
    ranks: dict[str, int]
    artifact_id: int
    document_id: int
    source: str | None
    start_offset: int | None
    end_offset: int | None
    line_start: int | None
    line_end: int | None
    section: str | None
    text: str
    summary: str | None
    kind: str = "chunk"
    locations: dict[str, Any] = dataclasses.field(default_factory=dict)
    line_map: list[list[int]] = dataclasses.field(default_factory=list)


class SearchOutput(TypedDict):
    hits: list[HitOutput]


class FactsOutput(TypedDict):
    facts: list[Fact]


class EntityRef(TypedDict):
    id: int
    name: str
    type: str


class HopOutput(TypedDict):
    """A fact of a chain, as `gb facts --json` prints it, and whether the chain crosses
    it from its target to its source."""

    id: int
    source: str
    relation: str
    target: str
    fact: str
    valid_at: str | None
    invalid_at: str | None
    created_at: str
    expired_at: str | None
    status: str
    closed_by: dict[str, Any] | None
    evidence: list[Evidence]
    reversed: bool


# `from` is a Python keyword: the functional form.
PathOutput = TypedDict(
    "PathOutput",
    {
        "from": EntityRef,
        "to": EntityRef,
        "at": str | None,
        "known_at": str | None,
        "max_depth": int,
        "found": bool,
        "paths": list[list[HopOutput]],
    },
)


class AskOutput(TypedDict):
    """`gb ask --json`: the answer, the citations that hold and those dropped."""

    question: str
    at: str | None
    known_at: str | None
    answer: str
    citations: list[dict[str, Any]]
    dropped_citations: list[dict[str, Any]]
    unsupported_sentences: list[str]
    supported: bool
    inference_id: int | None
    cost: float | None
    reused: bool
    sources: list[dict[str, Any]]


class ChunkOutput(TypedDict):
    id: int
    chunk_index: int
    start_offset: int | None
    end_offset: int | None
    section: str | None
    text: str
    summary: dict[str, Any] | None


class DocumentOutput(TypedDict):
    """`gb show --json` of a document (more keys than these: every column it has)."""

    id: int
    kind: str
    source: str | None
    status: str
    pending: list[str]
    text: str
    chunks: list[ChunkOutput]
    entities: list[dict[str, Any]]
    edges: list[dict[str, Any]]


class DocumentRow(TypedDict):
    """`gb list --json` of a document."""

    id: int
    dataset: str
    kind: str
    source: str | None
    status: str
    pending: list[str]
    created_at: str
    chunk_count: int | None
    preview: str


class DocumentsOutput(TypedDict):
    documents: list[DocumentRow]


class RememberOutput(TypedDict):
    """`gb remember --json` of one input (and the rest of its response)."""

    source: str
    status: str
    artifact_id: int
    notices: NotRequired[list[str]]


# ---- the tools' arguments, validated by the SDK against the schemas they make

Count = Annotated[int, Field(ge=1, le=1000)]
Query = Annotated[str, Field(min_length=1, max_length=10_000)]
Moment = Annotated[
    str | None, Field(description="An ISO-8601 time, e.g. 2024-05-01 or 2024-05-01T09:30:00Z.")
]
Id = Annotated[int, Field(ge=1, le=2**63 - 1)]
Kind = Annotated[str, Field(min_length=1, max_length=100)]
Session = Annotated[str | None, Field(max_length=1000)]


def build_server(
    memory: Memory, *, allow_write: bool = False, roots: Sequence[str] = ()
) -> MCPServer:
    """The MCP server of `memory`: the read tools, and the write tools when `allow_write`."""
    server = MCPServer("gb", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    secrets = memory.secrets
    folders = [Path(os.path.realpath(r)) for r in roots]
    one_call = threading.Lock()  # calls take turns: each hears its own notices

    def answer(call: Callable[[], tuple[Any, str]]) -> CallToolResult:
        """Run one call: its structured content and text, or a ToolError (an MCP error
        result) saying what was wrong, the key masked; notices end the text."""
        notices: list[str] = []
        with one_call:
            memory.on_notice = notices.append
            try:
                structured, text = call()
            except GbError as exc:
                raise ToolError(scrub(str(exc), secrets)) from None
            except Exception as exc:  # not foreseen: said, not a crash of the server
                raise ToolError(scrub(f"{type(exc).__name__}: {exc}", secrets)) from None
            finally:
                memory.on_notice = None
        said = "".join(f"\nnote: {n}" for n in dict.fromkeys(notices))
        return CallToolResult(
            content=[TextContent(type="text", text=scrub(text + said, secrets))],
            structured_content=structured,
        )

    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=reading)
    def search(
        query: Query,
        k: Count = 10,
        method: Literal["hybrid", "bm25", "vector"] = "hybrid",
        dataset: str | None = None,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Search the remembered documents' chunks by keywords (BM25) and by meaning
        (vectors), fused; BM25 alone without vectors or an embeddings endpoint. Each hit
        has its file and lines (path:LINE-LINE), section, score, text and summary."""

        def run() -> tuple[Any, str]:
            hits = memory.search(query, k, method=method, dataset=dataset)
            return {"hits": [h.as_json() for h in hits]}, _hits_text(hits, query)

        return answer(run)

    @server.tool(annotations=reading)
    def facts(
        query: Query | None = None,
        about: Annotated[str | None, Field(description="An entity's name or id.")] = None,
        at: Moment = None,
        include_closed: bool = False,
        k: Count = 20,
    ) -> Annotated[CallToolResult, FactsOutput]:
        """Facts of the knowledge graph, each `source -RELATION-> target` with when it
        held and the lines that state it: current ones, newest first; `query` searches
        them, `about` keeps those touching an entity, `at` asks what was true then,
        `include_closed` adds facts that no longer hold."""

        def run() -> tuple[Any, str]:
            found = memory.facts(query, about=about, at=at, include_closed=include_closed, k=k)
            return {"facts": [f.as_json() for f in found]}, _facts_text(found)

        return answer(run)

    @server.tool(annotations=reading)
    def entity(
        name: Annotated[str, Field(min_length=1, description="The entity's name, or its id.")],
        depth: Annotated[int, Field(ge=0, le=10)] = 1,
        at: Moment = None,
    ) -> Annotated[CallToolResult, EntityView]:
        """One entity: its type and summary, its facts as a timeline (closed ones with
        what closed them), its neighbours up to `depth` facts away and the documents that
        mention it. Several close names: an error listing them with their ids."""

        def run() -> tuple[Any, str]:
            view = memory.entity(name, depth=depth, at=at)
            return view.as_json(), _entity_text(view)

        return answer(run)

    @server.tool(annotations=reading)
    def path(
        a: Annotated[str, Field(min_length=1, description="One entity's name, or its id.")],
        b: Annotated[str, Field(min_length=1, description="The other's name, or its id.")],
        at: Moment = None,
        known_at: Moment = None,
        max_depth: Annotated[int, Field(ge=1, le=10)] = 4,
    ) -> Annotated[CallToolResult, PathOutput]:
        """How two entities are linked: the shortest chains of facts between them (a few
        at most), each fact with when it held and the lines that state it. Facts current
        now, or true `at` a time, or held by the graph `known_at` one; a fact links its
        entities either way. `found` is false when no chain of `max_depth` facts links
        them. Several close names: an error listing them with their ids."""

        def run() -> tuple[Any, str]:
            found = memory.path(a, b, at=at, known_at=known_at, max_depth=max_depth)
            return found.as_json(), _paths_text(found)

        return answer(run)

    @server.tool(annotations=reading)
    def why(fact_id: Id) -> Annotated[CallToolResult, Why]:
        """Why the graph holds a fact: each place that states it (path:LINE-LINE and the
        quote) and, for a closed fact, the fact that closed it and the reason."""

        def run() -> tuple[Any, str]:
            found = memory.why(fact_id)
            return found.as_json(), _why_text(found)

        return answer(run)

    @server.tool(annotations=reading)
    def ask(
        question: Query,
        at: Moment = None,
        known_at: Moment = None,
        k: Annotated[int, Field(ge=1, le=50)] = 6,
        dataset: str | None = None,
    ) -> Annotated[CallToolResult, AskOutput]:
        """Answer a question from the memory with the chat model: from the facts that
        match it and those of the entities it names (current ones; `at` those true then,
        `known_at` those the graph held then) and the best chunks. Each citation is
        checked against its source (path:LINE and the words quoted); those that fail are
        dropped. `supported` false: nothing in the memory supports an answer."""

        def run() -> tuple[Any, str]:
            answered = memory.ask(question, at=at, known_at=known_at, k=k, dataset=dataset)
            return answered.as_json(), _answer_text(answered)

        return answer(run)

    @server.tool(annotations=reading)
    def get_document(document_id: Id) -> Annotated[CallToolResult, DocumentOutput]:
        """A remembered document: its text, its chunks with their byte offsets, sections
        and summaries, and the entities and facts drawn from it."""

        def run() -> tuple[Any, str]:
            view = memory.document(document_id)
            if "place" in view:  # a chunk's id: ids are shared by documents and chunks
                raise UsageError(
                    f"{document_id} is {view['place']['words']}; get_document "
                    f"{view['place']['document_id']} gives its document"
                )
            return view, _document_text(view)

        return answer(run)

    @server.tool(annotations=reading)
    def list_documents(
        dataset: str | None = None, limit: Count = 50
    ) -> Annotated[CallToolResult, DocumentsOutput]:
        """The remembered documents, newest first, with their state (complete, or the
        stages still to do) and the first words of each."""

        def run() -> tuple[Any, str]:
            rows = memory.documents(dataset=dataset, limit=limit)
            return {"documents": rows}, _documents_text(rows)

        return answer(run)

    @server.tool(annotations=reading)
    def stats() -> Annotated[CallToolResult, Stats]:
        """Counts: documents (and those incomplete), chunks, summaries, entities, facts
        current and closed, LLM calls, tokens and cost."""

        def run() -> tuple[Any, str]:
            counts = memory.stats()
            return dataclasses.asdict(counts), _stats_text(counts)

        return answer(run)

    if not allow_write:
        return _strict(server)

    @server.tool(annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False))
    def remember_text(
        text: Annotated[str, Field(min_length=1, max_length=1 << 20)],
        name: Annotated[str | None, Field(max_length=1000)] = None,
        session: Session = None,
        valid_at: Moment = None,
        kind: Kind = "document",
    ) -> Annotated[CallToolResult, RememberOutput]:
        """Remember a text: cut into chunks, its knowledge graph extracted, summarized and
        embedded (or, without an LLM endpoint, stored keyword-indexed with those stages
        pending). `valid_at` is when what it says holds from (default now)."""

        def run() -> tuple[Any, str]:
            done = memory.remember_text(
                text, name=name, session=session, valid_at=valid_at, kind=kind
            )
            return _remembered(done)

        return answer(run)

    @server.tool(annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False))
    def remember_file(
        path: Annotated[str, Field(min_length=1, max_length=4096)],
        session: Session = None,
        valid_at: Moment = None,
        kind: Kind = "document",
    ) -> Annotated[CallToolResult, RememberOutput]:
        """Remember a file under one of the server's --root folders (a relative path is
        taken in the first), as `remember_text` does; a changed file supersedes its older
        version, an unchanged one costs nothing."""

        def run() -> tuple[Any, str]:
            real = inside(folders, path)
            [done] = memory.remember(real, session=session, valid_at=valid_at, kind=kind)
            return _remembered(done)

        return answer(run)

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, open_world_hint=False))
    def forget(document_id: Id) -> Annotated[CallToolResult, ForgetReport]:
        """Delete a document with its chunks, summaries, keyword rows and vectors, and the
        entities and facts no other document supports."""

        def run() -> tuple[Any, str]:
            report = memory.forget(document_id)
            return dataclasses.asdict(report), _forget_text(report)

        return answer(run)

    return _strict(server)


def _strict(server: MCPServer) -> MCPServer:
    """Refuse an argument a tool does not take (a typo, `kk` for `k`), rather than drop it
    silently as the SDK's argument models do, and say so in the input schemas; declare
    each output schema in its plain form (see _plain)."""
    manager = server._tool_manager
    for tool in manager.list_tools():  # the SDK has no public way to say it
        arguments = tool.fn_metadata.arg_model
        arguments.model_config["extra"] = "forbid"
        arguments.model_rebuild(force=True)
        tool.parameters["additionalProperties"] = False
        if tool.fn_metadata.output_schema is not None:
            tool.fn_metadata.output_schema = _plain(tool.fn_metadata.output_schema)
    taken = {
        tool.name: list(tool.parameters.get("properties", {})) for tool in manager.list_tools()
    }
    call_tool = manager.call_tool

    async def checked(name: str, arguments: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        # An argument the schema refuses: one short line naming it, as gb says a bad
        # option, rather than pydantic's report of every error with its web addresses.
        try:
            return await call_tool(name, arguments, *args, **kwargs)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            said = "; ".join(_refusal(error, taken.get(name, [])) for error in cause.errors())
            raise ToolError(f"Error executing tool {name}: {said}") from cause

    manager.call_tool = checked
    return server


def _refusal(error: Any, taken: list[str]) -> str:
    """One error of an argument model as a few words that name the argument."""
    where = ".".join(str(part) for part in error["loc"]) or "the arguments"
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"{where} is not an argument of this tool; it takes {', '.join(taken)}"
    if kind == "missing":
        return f"{where} is required"
    message = str(error["msg"])
    message = message[:1].lower() + message[1:]
    given = error.get("input")
    shown = repr(given) if len(repr(given)) <= 60 else repr(given)[:57] + "..."
    return f"{where}: {message}, not {shown}"


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema with its `$ref`s written out (our types do not recur) and each
    `anyOf` of bare types as one list of types (`"type": ["string", "null"]`): what a
    client validates each answer against, 1.5x (facts) to 3x (search hits) faster with
    the `jsonschema` package that the Python SDK's client uses."""
    definitions = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:  # with what sits beside it (a description, a default)
            written = walk(definitions[node["$ref"].rpartition("/")[2]])
            return {**written, **walk({k: v for k, v in node.items() if k != "$ref"})}
        node = {key: walk(value) for key, value in node.items() if key != "$defs"}
        choices = node.get("anyOf")
        if choices and all(set(c) == {"type"} and isinstance(c["type"], str) for c in choices):
            del node["anyOf"]
            node["type"] = [c["type"] for c in choices]
        return node

    return walk(schema)


def inside(folders: Sequence[Path], path: str) -> str:
    """`path` with its symlinks resolved, if that is under one of `folders` (a relative
    path is taken in the first); else a UsageError: nothing else may be read."""
    if not folders:
        raise UsageError(
            "remember_file reads only files under a --root folder, and this server has none; "
            "start it with gb mcp --allow-write --root DIR"
        )
    real = Path(os.path.realpath(folders[0] / Path(path).expanduser()))
    if not any(real.is_relative_to(folder) for folder in folders):
        shown = ", ".join(str(f) for f in folders)
        raise UsageError(
            f"{path} is outside the --root folders ({shown}), symlinks resolved; "
            "only files under them can be remembered"
        )
    return str(real)


def _remembered(done: Remembered) -> tuple[dict[str, Any], str]:
    if done.error is not None:
        raise GbError(done.error)
    shown = done.as_json()
    if done.notices:
        shown["notices"] = list(done.notices)
    response = done.response
    chunks = counted(len(response["chunks"]), "chunk") if "chunks" in response else "not chunked"
    text = (
        f"{done.status}: {done.source} -> document {done.document_id} ({chunks}, "
        f"{counted(len(response.get('entities', ())), 'entity')}, "
        f"{counted(len(response.get('edges', ())), 'fact')})"
    )
    return shown, "\n".join([text, *done.notices])


# ---- the short texts beside the structured content


def _where(source: str | None, document_id: int, first: int | None, last: int | None) -> str:
    place = source or f"document {document_id}"
    if first is None:
        return place
    return f"{place}:{first}" + (f"-{last}" if last is not None and last != first else "")


def _words(text: str, limit: int = 240) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _hits_text(hits: list[Hit], query: str) -> str:
    if not hits:
        return f"no hits for {query!r}"
    lines = []
    for n, hit in enumerate(hits, 1):
        where = _where(hit.source, hit.document_id, hit.line_start, hit.line_end)
        section = f"  [{hit.section}]" if hit.section else ""
        lines.append(f"{n}. {where}{section} (document {hit.document_id}, {hit.score:.4f})")
        lines.append(f"   {_words(hit.text)}")
    return "\n".join(lines)


def _fact_line(fact: Fact) -> str:
    end = fact.invalid_at or ("now" if fact.status == "current" else "?")
    held = f"{fact.valid_at or '?'} .. {end}"
    where = "; ".join(e.where for e in fact.evidence[:3])
    return (
        f"[{fact.id}] {fact.source} -{fact.relation}-> {fact.target}: {fact.fact} "
        f"({held}, {fact.status})" + (f" — {where}" if where else "")
    )


def _facts_text(found: list[Fact]) -> str:
    return "\n".join(_fact_line(f) for f in found) if found else "no facts"


def _entity_text(view: EntityView) -> str:
    stale = " (summary stale: facts it may state changed)" if view.summary_stale_at else ""
    lines = [f"{view.name} ({view.type}, id {view.id}): {view.summary}".rstrip(": ") + stale]
    lines += [f"  {_fact_line(f)}" for f in view.facts]
    if view.neighbours:
        near = ", ".join(f"{n['name']} ({n['depth']})" for n in view.neighbours[:20])
        lines.append(f"neighbours: {near}")
    if view.documents:
        lines.append("documents: " + ", ".join(f"{d['id']} {d['source']}" for d in view.documents))
    return "\n".join(lines)


def _paths_text(found: Paths) -> str:
    ends = f"{found.source['name']} and {found.target['name']}"
    if not found.found:
        return f"no chain of at most {counted(found.max_depth, 'fact')} links {ends}"
    lines = [f"{counted(len(found.paths), 'chain')} of facts link {ends}:"]
    for number, hops in enumerate(found.paths, 1):
        lines.append(f"chain {number}:")
        lines += [f"  {_fact_line(hop.fact)}" for hop in hops]
    return "\n".join(lines)


def _why_text(found: Why) -> str:
    lines = [_fact_line(found)]
    lines += [f"  {e.where}: {_words(e.quote or '')}" for e in found.evidence]
    if found.closer is not None:
        reason = (found.closed_by or {}).get("reason") or "no reason given"
        lines.append(f"closed by: {_fact_line(found.closer)} ({reason})")
    return "\n".join(lines)


def _answer_text(answered: Answered) -> str:
    """The answer and its citations, or, unsupported, the closest sources."""
    lines = []
    if answered.dropped:
        lines.append(f"({counted(len(answered.dropped), 'citation')} dropped: not in its source)")
    if not answered.supported:
        lines.append("no support in the memory for an answer; the closest sources:")
        lines += [f"[{s.n}] {s.where}: {_words(s.text)}" for s in answered.sources[:5]]
        return "\n".join(lines)
    lines.insert(0, answered.answer)
    for c in answered.citations:
        held = f" ({c.interval})" if c.interval else ""
        lines.append(f'[{c.n}] {c.where}{held}: "{_words(c.quote)}"')
    return "\n".join(lines)


def _state(document: dict[str, Any]) -> str:
    """A document's status with the stages it still waits for: `incomplete: embed`."""
    if document["status"] == "incomplete":
        return f"incomplete: {', '.join(document['pending'])}"
    return document["status"]


def _document_text(view: dict[str, Any]) -> str:
    chunks = view.get("chunks") or []
    lines = [
        f"document {view['id']} {view['source'] or '-'} ({_state(view)}), "
        f"{counted(len(chunks), 'chunk')}"
    ]
    for chunk in chunks:
        summary = (chunk.get("summary") or {}).get("text")
        lines.append(
            f"  chunk {chunk['chunk_index'] + 1} (id {chunk['id']}, bytes "
            f"{chunk['start_offset']}-{chunk['end_offset']}): {_words(summary or chunk['text'])}"
        )
    if not chunks:
        lines.append(_words(view["text"], 2000))
    return "\n".join(lines)


def _documents_text(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no documents"
    return "\n".join(
        f"{r['id']}\t{r['dataset']}\t{_state(r)}\t{r['source'] or '-'}\t{_words(r['preview'], 60)}"
        for r in rows
    )


def _stats_text(counts: Stats) -> str:
    return (
        f"{counted(counts.documents, 'document')} ({counts.incomplete} incomplete), "
        f"{counted(counts.chunks, 'chunk')}, {counted(counts.summaries, 'summary')}, "
        f"{counted(counts.entities, 'entity')}, {counts.edges_valid} current "
        f"{plural(counts.edges_valid, 'fact')} and {counts.edges_closed} closed, "
        f"{counted(counts.inferences, 'LLM call')}"
    )


def _forget_text(report: ForgetReport) -> str:
    return (
        f"forgot document {report.artifact_id}: {counted(report.chunks, 'chunk')}, "
        f"{counted(report.summaries, 'summary')}, {counted(report.entities, 'entity')}, "
        f"{counted(report.edges, 'fact')}"
    )


# ---- serving


def parse_http(value: str) -> tuple[str, int]:
    """HOST:PORT (or :PORT, or PORT: on 127.0.0.1), else a UsageError."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]") if sep else ""
    if not port.isdecimal() or not 0 < int(port) < 65536:
        raise UsageError(f"--http {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host or "127.0.0.1", int(port)


def serve(
    memory: Memory,
    *,
    allow_write: bool = False,
    roots: Sequence[str] = (),
    http: tuple[str, int] | None = None,
) -> None:
    """Serve over stdio until the client closes it, or over streamable HTTP at `http`."""
    server = build_server(memory, allow_write=allow_write, roots=roots)
    if http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host=http[0], port=http[1])
