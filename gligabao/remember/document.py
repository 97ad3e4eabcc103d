"""`remember`: one document in, chunks, graph, summaries and vectors stored.

    split -> fetch (concurrent) -> store the parent -> store each chunk, in order

Fetch: every chunk's extraction and summary run at once, bounded by `concurrency`;
if one fails nothing is stored. Each chunk's one embeddings request starts as soon as
its own two answers are back; once all are, the batched resolve calls start (their
candidates are the stored graph plus what earlier chunks extracted, all known by
now), and the store phase takes the chunks in order as their answers arrive: it does
database work only. A failure at chunk k leaves the parent and the chunks before k
stored; running the same input again finds the document by its sha256 and completes
it from chunk k, cut with the settings it was first cut with, reusing every answer
already paid for. A text already stored whole is `unchanged` and costs nothing.
A changed file is cut anew and its chunks matched to its previous version's
(remember/diff.py): a chunk that is one of them is copied with all it was given, no call
made; once the new version is whole, the facts only the old one stated are expired.
Without an endpoint the text and its chunks are stored with the stages still to do
marked on them, and a later run with one completes exactly those. So is a chunk whose
extraction is cut off at its output limit even when asked in halves down to a floor
(`_extract`): stored with its summary and vectors, its graph left to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gligabao.base.lines import LineIndex
from gligabao.base.stopping import Stop
from gligabao.base.words import plural, real_text
from gligabao.calls import Budget, Calls, Spend
from gligabao.chunk import ESTIMATOR, ChunkSettings, get_tokenizer
from gligabao.config import Config
from gligabao.errors import ConfigError, GbError, Stopped, UsageError
from gligabao.llm import (
    EMBED_STAGE,
    ChatRequest,
    LLMError,
    contextualize_chunk_request,
    extract_graph_request,
    resolve_request,
    summarize_chunk_request,
)
from gligabao.llm.split import combine, halves
from gligabao.read.sources import Source
from gligabao.remember import diff
from gligabao.remember.cut import chunk_lines, cut_source, said_when
from gligabao.remember.loops import in_flight, running, stored_generation, turn
from gligabao.remember.planning import EarlyPlan
from gligabao.remember.resolve import (
    Extraction,
    Resolver,
    apply_answer,
    batches,
    merge_answers,
    split_items,
    with_inference,
)
from gligabao.remember.result import PENDING, Remembered
from gligabao.remember.summaries import follow_facts
from gligabao.remember.write import Piece, Writer, Written, pause
from gligabao.store import (
    Connection,
    artifacts,
    claims,
    datasets,
    graph,
    inferences,
    vectors,
    versions,
)
from gligabao.store.db import now_iso, transaction

if TYPE_CHECKING:  # the client imports the openai SDK; it is passed in, not made here
    from gligabao.llm.client import LLM

OFFLINE_STAGES = ("extract_graph", "summarize_chunk", EMBED_STAGE)
OFFLINE_NOTICE = (
    "no LLM endpoint is configured: the text and its chunks are stored and "
    "keyword-indexed; extraction, summaries and embeddings were skipped. Set "
    "OPENAI_API_KEY (or OPENAI_BASE_URL / [llm] base_url in gligabao.toml) and run "
    "the same command again to complete them."
)
OFFLINE_CHUNKS_PER_TRANSACTION = 500  # a 1 MiB text cut small is ~15,000 chunks
# The stages a user chooses (config `stages`, --stages); contextualize stays on `contextual`.
CHOOSABLE_STAGES = ("graph", "summaries", "embed")
EMBED_ONLY = ("embed",)
# What a run without the graph and summaries leaves pending on each chunk, for a later run.
EMBED_ONLY_LEFT = ("extract_graph", "summarize_chunk")
EMBED_ONLY_NOTICE = (
    "only an embeddings endpoint is configured: chunks are stored and embedded, the graph "
    "and summaries left to do; configure [llm] and run the same command again for them"
)
EMBED_BATCH = 64  # chunk texts per embeddings request in an embed-only run
CLAIM_POLL_S = 0.25  # how often a run waiting on another's claim looks again


class GraphLeft(GbError):
    """A chunk's extraction was cut off at its output limit even in its smallest parts:
    its graph is left to do, the rest of it stored."""


def empty_notice(model: str) -> str:
    """The warning of a run whose extraction found nothing in some chunk of real text: one
    a run, whatever the documents, since it is about the model."""
    return (
        f"extract_graph ({model}) found no entity and no fact in some chunks of real text "
        "(empty_extractions in --json; gb status names them): the model may be too small "
        "to extract a graph"
    )


class ChunkFailed(GbError):
    """A chunk failed after the document was stored; a rerun completes it."""

    def __init__(self, source: str, index: int, total: int, document_id: int, cause: str):
        # "its first 0 chunks" reads as a slip: a document with none stored says so.
        stored = (
            f"Document {document_id} and its first {index} {plural(index, 'chunk')} are stored"
            if index
            else f"Document {document_id} is stored, none of its chunks yet"
        )
        super().__init__(
            f"{source}: chunk {index + 1} of {total} failed: {cause.rstrip('. ')}. "
            f"{stored}; run the same command again to finish it"
        )
        self.document_id = document_id


class FetchFailed(GbError):
    """An extraction or summary failed before anything of the document was stored."""

    def __init__(self, source: str, where: str, cause: str):
        super().__init__(f"{source}: {where}{cause}; nothing of it was stored")


@dataclass(frozen=True)
class Options:
    dataset: str = "default"
    kind: str = "document"
    session: str | None = None
    valid_at: str | None = None
    reference_time: str | None = None
    trace: bool = False
    force: bool = False  # remember again even when the same text is already stored whole
    stages: tuple[str, ...] | None = None  # None: config `stages` (see parse_stages)
    all_branches: bool = False  # a chat export's other branches too, each a document
    stdin_name: str | None = None  # what standard input is stored and shown as (else `-`)
    # Told, as it happens, what a user waiting on the run should know (a wait on another run).
    on_notice: Callable[[str], None] | None = field(default=None, compare=False)
    # Told each step of each input as it happens (source name, step, its data): a batch's
    # progress in chunks, not only in whole files.
    on_step: Callable[[str, str, dict[str, Any]], None] | None = field(default=None, compare=False)
    # Asked from another thread to stop the run as Ctrl-C does (gb serve, its client gone).
    stop: Stop | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.kind.strip():
            raise UsageError("--kind must not be empty")
        if self.kind in artifacts.DERIVED_KINDS:
            raise UsageError(
                f"--kind {self.kind} is made only by gb itself, about a chunk; "
                "name the kind of the document (default: document)"
            )


def remember(
    conn: Connection, source: Source, config: Config, llm: LLM, options: Options
) -> Remembered:
    """Remember one input: see the module docstring for the order of things."""

    stop = options.stop

    async def run() -> Remembered:
        try:
            with stop.watching() if stop is not None else contextlib.nullcontext():
                return await remember_async(conn, source, config, llm, options)
        finally:
            await llm.aclose()

    try:
        return asyncio.run(run())
    except asyncio.CancelledError:
        if stop is None or not stop.requested:
            raise
        raise Stopped(
            f"{source.name}: stopped, {stop.reason}; the answers paid for are kept: "
            "remember the same text again to go on from them"
        ) from None


async def remember_async(
    conn: Connection,
    source: Source,
    config: Config,
    llm: LLM,
    options: Options,
    budget: Budget | None = None,
    spend: Spend | None = None,
) -> Remembered:
    """`remember` inside a running event loop, so that many documents can share it (and
    the LLM's limiter) at once; a `budget` shared by them stops new calls at --max-cost."""
    require_embeddings(llm)
    return await _Run(conn, source, config, llm, options, budget, spend).run()


def parse_stages(text: str, where: str = "stages") -> tuple[str, ...]:
    """The stages named in a comma-separated list, in their canonical order; only all of
    them or `embed` alone can be run today (summaries need the chat endpoint the graph does)."""
    named = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in named if s not in CHOOSABLE_STAGES]
    if unknown or not named:
        raise UsageError(
            f"{where}: unknown stage {', '.join(unknown) or '(none given)'}; "
            f"valid stages: {', '.join(CHOOSABLE_STAGES)} (comma-separated)"
        )
    stages = tuple(s for s in CHOOSABLE_STAGES if s in named)
    if stages not in (CHOOSABLE_STAGES, EMBED_ONLY):
        raise UsageError(
            f"{where}: {','.join(stages)} cannot be run yet; choose "
            f"{','.join(CHOOSABLE_STAGES)} (all) or embed (vectors only, no chat calls)"
        )
    return stages


def require_embeddings(llm: LLM) -> None:
    """Refuse an endpoint for chat with none for embeddings (`embeddings.api_key_env` names
    a variable that is not set): the graph would be paid for and stored without vectors."""
    if llm.available and not llm.embeddings_available:
        variable = llm.config["embeddings.api_key_env"]
        raise ConfigError(
            f"embeddings.api_key_env names {variable}, which is not set: set it, or unset "
            "embeddings.api_key_env to send the LLM's key to the same server"
        )


class _Run:
    def __init__(
        self,
        conn: Connection,
        source: Source,
        config: Config,
        llm: LLM,
        options: Options,
        budget: Budget | None,
        spend: Spend | None = None,
    ) -> None:
        self.conn = conn
        self.source = source
        self.config = config
        self.llm = llm
        self.options = options
        self.trajectory: list[dict[str, Any]] = []
        self.dataset = datasets.get_or_create_dataset(conn, options.dataset)
        self.calls = Calls(conn, llm, self.dataset.id, budget, spend)
        self.settings = config.chunk_settings()
        # Versions of a file are matched by where it lives, whatever the working folder.
        self.stored_source = source.stored_source()
        self.embedding: dict[int, asyncio.Future[None]] = {}  # started as extractions land
        # A changed file: the version it replaces, the chunks taken over from it (new
        # index -> its stored row), how many were extracted anew, and the facts expired.
        self.previous: dict[str, Any] | None = None
        self.reused: dict[int, Any] = {}
        self.extracted = 0
        self.expired = 0
        self.notices: list[str] = []
        self._line_index: LineIndex | None = None
        self.early: EarlyPlan | None = None  # resolution planned as extractions land

    def _lines(self) -> LineIndex:
        """The lines of the text stored as the document, found once a run."""
        if self._line_index is None:
            self._line_index = LineIndex(self.source.text)
        return self._line_index

    def step(self, name: str, message: str, **data: Any) -> None:
        if self.options.on_step is not None:
            self.options.on_step(self.source.name, name, data)
        if self.options.trace:
            self.trajectory.append({"step": name, "message": message, **data})

    async def run(self) -> Remembered:
        documents = running()
        documents[self.dataset.id] += 1
        try:
            done = await self._remembered_or_found()
        finally:
            documents[self.dataset.id] -= 1
        return await self._following_facts(done)

    async def _remembered_or_found(self) -> Remembered:
        found = self._find()
        if found is not None and self._whole(found):
            # Remembered whole already: no claim, no cut, no call (nightly re-imports).
            return self._unchanged(found)
        held = await self._claim()
        renewing = asyncio.ensure_future(self._renew(held.owner))
        done: Remembered | None = None
        try:
            done = await self._claimed(held)
        finally:
            await _cancel([renewing])
            if done is not None:  # stored whole: the moment lives on with the document
                claims.drop(self.conn, self.dataset.id, self.source.sha256)
            else:
                claims.release(self.conn, self.dataset.id, self.source.sha256, held.owner)
        return done

    async def _following_facts(self, done: Remembered) -> Remembered:
        """The dataset's stale entity summaries rewritten from their facts, in a run with
        the graph on and a chat endpoint, by the last of its documents to end: what they
        closed or expired, and what earlier changes left (a forgotten document, an
        offline run). A failure leaves them stale and this document remembered."""
        if not self.llm.available or "graph" not in self._stages():
            return done
        if running()[self.dataset.id]:
            # Other documents of the dataset are still running in this event loop (a
            # batch): the last one to end rewrites what they all left stale, each entity
            # once, not once a document.
            return done
        async with turn("entity summaries", self.dataset.id):
            followed = await follow_facts(self.conn, self.dataset.id, self.calls, self.step)
        if done.document_id is not None:  # its calls name the run's document, as the rest
            inferences.link_document(self.conn, self.calls.served, done.document_id)
        if followed.changed:
            done.response["summaries_rewritten"] = followed.changed
        if followed.left:
            what = plural(followed.left, "entity summary", "entity summaries")
            done.notices.append(
                f"{followed.left} {what} whose facts changed could not be rewritten "
                f"({followed.failure}); they are marked stale and the next run rewrites them"
            )
        return done

    def _find(self) -> dict[str, Any] | None:
        document = artifacts.find_document(self.conn, self.dataset.id, self.source.sha256)
        if document is not None and self.options.force and document["status"] == "complete":
            return None  # a new version of the same text
        return document

    @staticmethod
    def _whole(document: dict[str, Any]) -> bool:
        return document["status"] == "complete" and not artifacts.pending_stages(document)

    def _unchanged(self, document: dict[str, Any]) -> Remembered:
        self.step("unchanged", f"already stored whole as document {document['id']}")
        return self._remembered(document, [], "unchanged")

    async def _claim(self) -> claims.Claim:
        """Claim the text for this run, waiting while another live run works on it (a
        second cron process on the same file): one document, one set of facts."""
        options = self.options
        valid_at = options.valid_at or now_iso()
        reference = options.reference_time or valid_at
        owner = claims.new_owner()
        waited = False
        while True:
            held = claims.claim(
                self.conn,
                self.dataset.id,
                self.source.sha256,
                owner,
                valid_at,
                reference,
                fresh=options.valid_at is not None,
            )
            if isinstance(held, claims.Claim):
                if waited:
                    self.step("claimed", "the other run is over; going on")
                return held
            if not waited:
                pid = f" (process {held.pid})" if held.pid else ""
                said = f"{self.source.name}: another gb run{pid} is storing the same text; waiting"
                self.step("wait", said)
                if options.on_notice is not None:
                    options.on_notice(said)
                waited = True
            await asyncio.sleep(CLAIM_POLL_S)

    async def _renew(self, owner: str) -> None:
        while True:
            await asyncio.sleep(claims.STALE_AFTER_S / 4)
            claims.renew(self.conn, self.dataset.id, self.source.sha256, owner)

    async def _claimed(self, held: claims.Claim) -> Remembered:
        # Found again under the claim: another run may have stored it while this one waited.
        document = self._find()
        if document is not None and self._whole(document):
            return self._unchanged(document)
        # One moment per document: the stored valid_at / reference_time, and the reference
        # time in every extraction prompt. A rerun reads it back, from the stored parent or,
        # when nothing was stored, from the claim, so its requests hash the same and the
        # answers already paid for are reused (each is kept with its request's hash).
        self.valid_at = held.valid_at
        self.reference = held.reference_time
        stored = {}
        if document is not None:
            self.valid_at = document["valid_at"]
            self.reference = document["reference_time"] or document["valid_at"]
            stored = {
                row["chunk_index"]: row
                for row in artifacts.chunks_with_summaries(self.conn, document["id"])
            }
        if document is not None and document["settings"]:
            # Completing a document: cut it exactly as its first run did.
            self.settings = _stored_settings(document)
        result = cut_source(self.source, self.settings)
        n = len(result.chunks)
        said = f"{result.tokens} {plural(result.tokens, 'token')} in {n} {plural(n, 'chunk')}"
        self.step("chunk_text", said, chunks=n)
        for notice in result.notices:  # code that could not be cut by its syntax
            self.step("chunk_notice", notice)
        pieces = [Piece(c.index, c.text, c) for c in result.chunks] or [
            Piece(0, self.source.text, None)
        ]
        todo = [p for p in pieces if p.chunk is None or _needs_work(stored.get(p.index))]
        for piece in todo:
            row = stored.get(piece.index) if piece.chunk is not None else document
            left = artifacts.pending_stages(row) if row is not None else []
            piece.chunk_embedded = bool(left) and EMBED_STAGE not in left
            piece.summary_stored = bool(left) and "summarize_chunk" not in left
        self.reused = self._diff(document, result, todo)
        fetch = [p for p in todo if p.index not in self.reused]
        stages = self._stages()
        if not self.llm.available and not (stages == EMBED_ONLY and self.llm.embeddings_available):
            return self._offline(document, result, pieces, stored, OFFLINE_NOTICE, "offline")
        if stages == EMBED_ONLY:
            return await self._embed_only(document, result, pieces, stored)
        # Before any call: a dataset embedded with another model is refused for free.
        datasets.set_embedding(
            self.conn,
            self.dataset.id,
            self.config["embeddings.model"],
            self.config["embeddings.dimensions"],
        )
        flying = in_flight()
        flying[self.dataset.id] += 1
        try:
            if flying[self.dataset.id] == 1:  # alone: its plans will hold at its turn
                resolver = Resolver(self.conn, self.dataset.id, self.valid_at)
                self.early = EarlyPlan(resolver, fetch, self._resolve, self.dataset.id)
            try:
                await self._fetch(fetch, n)
            except FetchFailed as exc:
                cause = exc.__cause__
                if not (isinstance(cause, LLMError) and cause.unreachable and not self.answered):
                    raise
                # Nothing answered at all: the server is down, not this text. A nightly
                # import keeps the text, searchable by keyword, with its stages left for
                # the next run.
                notice = (
                    f"{cause}: the text and its chunks are stored and keyword-indexed, with "
                    "extraction, summaries and embeddings still to do; run the same command "
                    "again once the server answers"
                )
                return self._offline(self._find(), result, pieces, stored, notice, PENDING)
            async with turn("store", self.dataset.id):
                try:
                    return await self._store(document, result, todo, n)
                finally:  # a plan made before this, by another document, is stale
                    stored_generation()[self.dataset.id] += 1
        finally:
            flying[self.dataset.id] -= 1

    def _stages(self) -> tuple[str, ...]:
        """The stages this run does: --stages, else config `stages`; with only an
        embeddings endpoint configured and none named, embeddings alone (with a notice)."""
        if self.options.stages is not None:
            return self.options.stages
        stages = parse_stages(self.config["stages"], "config stages")
        if not self.llm.available and self.llm.embeddings_available:
            self.notices.append(EMBED_ONLY_NOTICE)
            return EMBED_ONLY
        return stages

    async def _embed_only(self, document, result, pieces: list[Piece], stored) -> Remembered:
        """Store the text and its chunks, embed the chunks not embedded yet, and leave the
        graph and summaries pending for a run with a chat endpoint: search without a graph,
        paying for embeddings only. Asked before anything is stored: all or nothing."""
        datasets.set_embedding(
            self.conn,
            self.dataset.id,
            self.config["embeddings.model"],
            self.config["embeddings.dimensions"],
        )
        wanted = [
            p
            for p in pieces
            if p.index not in self.reused
            and (
                p.index not in stored
                or EMBED_STAGE in artifacts.pending_stages(stored[p.index])
                or p.chunk is None  # an unchunked text: its document's pending says
            )
        ]
        if document is not None and not result.chunks:
            wanted = [p for p in wanted if EMBED_STAGE in artifacts.pending_stages(document)]
        texts = [artifacts.embedded_text(p.text, p.embedding_context) for p in wanted]
        got: list[Any] = []
        for start in range(0, len(texts), EMBED_BATCH):
            got += await self.calls.embed(texts[start : start + EMBED_BATCH])
        self.step("embed", f"{len(texts)} chunk texts, no chat calls", texts=len(texts))
        done = self._offline(document, result, pieces, stored, "", "embedded")
        done.notices.clear()
        document = artifacts.get_artifact(self.conn, done.response["artifact_id"])
        by_index = {
            row["chunk_index"]: row
            for row in artifacts.chunks_with_summaries(self.conn, document["id"])
        }
        with transaction(self.conn):
            rows = []
            for piece, vecs in zip(wanted, got, strict=True):
                if piece.chunk is None:
                    rows += vectors.chunk_rows(document["id"], document["id"], 0, vecs)
                    continue
                row = by_index[piece.index]
                rows += vectors.chunk_rows(row["id"], document["id"], piece.index, vecs)
                artifacts.set_pending(self.conn, row["id"], EMBED_ONLY_LEFT)
            if rows:
                vectors.upsert_vectors(self.conn, self.dataset.id, "chunks", rows)
            artifacts.set_pending(self.conn, document["id"], EMBED_ONLY_LEFT)
        document = artifacts.get_artifact(self.conn, document["id"])
        done = self._remembered(document, [], "embedded")
        done.response["embedded_chunks"] = len(rows)
        done.notices += self.notices
        return done

    def _diff(self, document, result, todo: list[Piece]) -> dict[int, Any]:
        """The pieces to do that are chunks the file's previous version stored whole (by
        their text, else their text after the overlap): copied, not fetched. None with
        --force, which extracts everything again."""
        if self.source.path is None:
            return {}
        self.previous = versions.previous_version(
            self.conn,
            self.dataset.id,
            self.stored_source,
            self.source.sha256,
            document and document["id"],
        )
        if self.previous is None or self.options.force or not result.chunks:
            return {}
        rows, reusable = versions.reusable_chunks(self.conn, self.dataset.id, self.previous["id"])
        # A chunk situated by Contextual Retrieval is reused only where contexts are asked.
        contextual = bool(self.config["contextual"])
        reusable = {
            r["id"] for r in rows if r["id"] in reusable and bool(r["situating"]) == contextual
        }
        wanted = {p.index for p in todo}
        found = {
            index: row
            for index, row in diff.match(result.chunks, rows, reusable).items()
            if index in wanted
        }
        self.step(
            "diff",
            f"{len(found)} of {len(todo)} {plural(len(todo), 'chunk')} to store "
            f"{'is a chunk' if len(found) == 1 else 'are chunks'} of document "
            f"{self.previous['id']}: reused",
            reused=len(found),
            previous=self.previous["id"],
        )
        return found

    def _reuse(self, document, piece: Piece, n: int) -> None:
        """Store a piece the previous version stored whole, as its copy (one transaction)."""
        pause("chunk", piece, document["id"])
        chunk = piece.chunk
        chunk_id = versions.copy_chunk(
            self.conn,
            self.dataset.id,
            document,
            self.reused[piece.index],
            chunk,
            chunk_lines(chunk, self._lines()),
        )
        self.step("reuse", f"artifact {chunk_id}, as stored before{_of(piece, n)}")

    def _expire(self, document) -> None:
        """Once a new version is whole: the facts only the versions it replaced stated are
        no longer stated, and expire."""
        replaced = versions.replaced_by(self.conn, document["id"])
        if replaced:
            reason = f"no longer stated in {self.stored_source}"
            self.expired = versions.expire_unstated(self.conn, replaced, reason)
            said = f"{self.expired} {plural(self.expired, 'fact')} no longer stated"
            self.step("expire", said, expired=self.expired)

    @property
    def answered(self) -> bool:
        """Whether any call of this run got an answer from the server."""
        return self.calls.spend.calls > 0

    # ---- offline

    def _offline(self, document, result, pieces, stored, notice: str, status: str) -> Remembered:
        """Store the text and every chunk not stored yet, keyword-indexed, with the stages
        left to do marked on them (and on the document), for a run with an endpoint. A
        document an earlier run left halfway (killed, a full disk) is completed so too."""
        if document is None:
            whole = bool(result.chunks) and len(self.reused) == len(result.chunks)
            document = self._store_parent(result, pending=() if whole else OFFLINE_STAGES)
        # Chunks the previous version stored whole need no endpoint: copied, complete.
        missing = [
            p
            for p in pieces
            if p.chunk is not None and (p.index not in stored or p.index in self.reused)
        ]
        for start in range(0, len(missing), OFFLINE_CHUNKS_PER_TRANSACTION):
            with transaction(self.conn):
                for piece in missing[start : start + OFFLINE_CHUNKS_PER_TRANSACTION]:
                    pause("offline-chunk", piece, document["id"])
                    chunk = piece.chunk
                    lines = chunk_lines(chunk, self._lines())
                    if piece.index in self.reused:
                        versions.copy_chunk(
                            self.conn,
                            self.dataset.id,
                            document,
                            self.reused[piece.index],
                            chunk,
                            lines,
                        )
                    else:
                        artifacts.insert_cut_chunk(
                            self.conn, document["id"], chunk, OFFLINE_STAGES, lines=lines
                        )
        left = not result.chunks or any(
            artifacts.pending_stages(row)
            for row in artifacts.chunks_with_summaries(self.conn, document["id"])
        )
        if left or document["status"] != "complete":
            artifacts.set_pending(
                self.conn, document["id"], OFFLINE_STAGES if left else document["pending"]
            )
        # Stored whole: what is left is marked in `pending`, for a run with an endpoint.
        document = self._complete(document, whole=not left and not document["pending"])
        done = self._remembered(document, [], status)
        done.notices.append(notice)
        return done

    # ---- fetch

    async def _fetch(self, todo: list[Piece], n: int) -> None:
        """Extraction and summaries of every piece at once; nothing is stored if one fails."""
        reference = self.reference

        async def ask(piece: Piece, request):
            try:
                return await self.calls.ask(request)
            except LLMError as exc:  # name the input and the chunk, not only the call
                where = f"chunk {piece.index + 1} of {n}: " if piece.chunk is not None else ""
                raise FetchFailed(self.source.name, where, str(exc)) from exc

        async def extract(piece: Piece) -> None:
            # A chat chunk's relative dates count from its first message's time.
            said_at = said_when(piece.chunk) or reference
            try:
                value = await self._extract(piece, piece.text, said_at, n)
            except GraphLeft as left:
                piece.graph_left = str(left)
                value = {"entities": [], "edges": []}
                self.step("graph_left", f"{left}; left to do{_of(piece, n)}")
            except LLMError as exc:  # name the input and the chunk, not only the call
                where = f"chunk {piece.index + 1} of {n}: " if piece.chunk is not None else ""
                raise FetchFailed(self.source.name, where, str(exc)) from exc
            piece.extraction = got = Extraction.from_answer(value)
            if self.early is not None:
                self.early.landed()  # its resolve calls go out as their chunks are planned
            piece.empty_extraction = (
                piece.graph_left is None
                and not got.entities
                and not got.edges
                and real_text(piece.text)
            )
            unreadable = (
                f", {got.unreadable_dates} {plural(got.unreadable_dates, 'date')} unreadable "
                "(stored unknown)"
                if got.unreadable_dates
                else ""
            )
            self.step(
                "extract_graph",
                f"{len(got.entities)} {plural(len(got.entities), 'entity')}, "
                f"{len(got.edges)} {plural(len(got.edges), 'fact')}{unreadable}{_of(piece, n)}",
                unreadable_dates=got.unreadable_dates,
            )

        async def summarize(piece: Piece) -> None:
            asked = await ask(piece, summarize_chunk_request(piece.text))
            piece.summary = asked.value["summary"].strip()
            piece.summary_inference = asked.inference_id
            self.step(
                "summarize_chunk",
                f"summary by {asked.model}{_of(piece, n)}",
                summary=piece.summary,
                model=asked.model,
                reasoning=asked.reasoning,
            )

        async def contextualize(piece: Piece) -> None:
            # The whole document first, the chunk last: a provider's prompt cache then
            # serves the document to every chunk after the first.
            asked = await ask(piece, contextualize_chunk_request(self.source.text, piece.text))
            piece.situating = asked.value["context"].strip()
            piece.situating_inference = asked.inference_id
            self.step(
                "contextualize_chunk",
                f"context by {asked.model}{_of(piece, n)}",
                context=piece.situating,
            )

        contextual = self.config["contextual"]

        async def fetch(piece: Piece) -> None:
            jobs = [extract(piece)]
            if piece.chunk is not None and not piece.summary_stored:
                jobs.append(summarize(piece))
                if contextual:
                    jobs.append(contextualize(piece))
            await asyncio.gather(*jobs)
            # Its embeddings need nothing from other chunks: ask now, not after all.
            self.embedding[piece.index] = asyncio.ensure_future(self._embed(piece))

        try:
            await _all_or_nothing([fetch(p) for p in todo])
        except BaseException as exc:
            early = self.early.resolving.values() if self.early is not None else ()
            await self._stop([*self.embedding.values(), *early], exc)
            raise

    async def _extract(self, piece: Piece, text: str, said_at: str, n: int) -> dict[str, Any]:
        """The extraction of ``text``. One cut off at its output limit after its retry (a
        small model that rambles on a dense chunk) is asked again as two halves of it, as
        a resolve batch is, down to `HALVING_FLOOR`; each half its own request, recorded
        and reused by a rerun like any other, its facts the chunk's. A text an earlier
        run had to halve goes to its halves at once. Raises GraphLeft when even a part at
        the floor is cut off."""
        request = extract_graph_request(text, said_at)
        if self._halved_before(request, text, said_at):
            parts = halves(text)
        else:
            try:
                return (await self.calls.ask(request, contains_cut_off=True)).value
            except LLMError as exc:
                if not exc.cut_off:
                    raise
                parts = halves(text)
                if parts is None:
                    tokens = ESTIMATOR.count(text)
                    raise GraphLeft(
                        f"{exc.stage} ({exc.model}): the answer was cut off at its output "
                        f"limit even for {tokens} {plural(tokens, 'token')} of the chunk"
                    ) from exc
            # Its own step: progress counts each chunk's one "extract_graph" step.
            self.step("extract_halved", f"the answer was cut off; halved{_of(piece, n)}")
        assert parts is not None
        done = await asyncio.gather(
            *(self._extract(piece, part, said_at, n) for part in parts),
            return_exceptions=True,  # both halves are asked (and kept) either way
        )
        answers = []
        for outcome in done:
            if isinstance(outcome, BaseException):
                raise outcome
            answers.append(outcome)
        return {
            "entities": [e for value in answers for e in value["entities"]],
            "edges": [e for value in answers for e in value["edges"]],
        }

    def _halved_before(self, request: ChatRequest, text: str, said_at: str) -> bool:
        """Whether an earlier run asked for ``text`` without an answer, then for parts of
        it: it was cut off then, and asking for all of it again would pay for that again."""
        if self.calls.asked_before(request) is not False:
            return False
        return self._parts_asked(text, said_at)

    def _parts_asked(self, text: str, said_at: str) -> bool:
        parts = halves(text)
        for part in parts or ():
            asked = self.calls.asked_before(extract_graph_request(part, said_at))
            if asked or (asked is False and self._parts_asked(part, said_at)):
                return True
        return False

    # ---- store

    async def _store(self, document, result, todo: list[Piece], n: int) -> Remembered:
        fetched = [p for p in todo if p.index not in self.reused]
        self.extracted = sum(1 for p in fetched if p.chunk is not None)
        resolving = await self._planned(fetched)
        embedding = self.embedding
        written: list[Written] = []
        stored_pieces: list[Piece] = []  # written's pieces, in its order
        try:
            if document is None:
                document = self._store_parent(result, pending=())
            self.step(
                "store_parent_artifact", f"document {document['id']}", artifact_id=document["id"]
            )
            writer = Writer(self.conn, self.dataset.id, document, self._lines())
            for piece in todo:
                if piece.index in self.reused:
                    await asyncio.sleep(0)  # a signal lands between two chunks here too
                    self._reuse(document, piece, n)
                    continue
                try:
                    if piece.index in resolving:
                        await resolving[piece.index]
                    if piece.index in embedding:
                        await embedding[piece.index]
                except GbError as exc:
                    raise ChunkFailed(
                        self.source.name, piece.index, max(n, 1), document["id"], str(exc)
                    ) from exc
                # The trajectory tells each chunk's story in the order `--trace` promises
                # (candidates, embed, store), whenever its network answers actually arrived.
                self.step(
                    "load_candidates",
                    f"{piece.plan.undecided} {plural(piece.plan.undecided, 'item')} left for "
                    f"the LLM{_of(piece, n)}",
                    undecided=piece.plan.undecided,
                )
                if piece.index in resolving:
                    self.step("resolve", f"decided by a batched resolve call{_of(piece, n)}")
                if piece.index in embedding:
                    texts = len(piece.vectors)
                    self.step("embed", f"{texts} {plural(texts, 'text')}{_of(piece, n)}")
                # A few steps of the loop between chunks, even when their answers are all
                # in: a SIGINT lands between two chunks, not only after the whole document,
                # and an answer that came during the last store is read and its slot's next
                # request sent before this store holds the loop again.
                await _network_turn()
                written.append(writer.store(piece))
                stored_pieces.append(piece)
                self.step(
                    "store_artifact",
                    f"artifact {written[-1].artifact_id}{_of(piece, n)}",
                    artifact_id=written[-1].artifact_id,
                )
        except BaseException as exc:
            await self._stop([*resolving.values(), *embedding.values()], exc)
            raise
        left = [p for p in todo if p.graph_left]
        status = "remembered" if not todo or len(todo) == max(n, 1) else "completed"
        # One commit, not three a document: a kill before it leaves the document as its
        # last chunk left it, which the next run completes all the same.
        with transaction(self.conn):
            artifacts.set_pending(self.conn, document["id"], ("extract_graph",) if left else ())
            # Facts only an older version stated expire once this one's graph is all stored.
            document = self._complete(document, whole=not left)
            done = self._remembered(document, written, PENDING if left else status)
        by_index = {p.index: w.artifact_id for p, w in zip(stored_pieces, written, strict=True)}
        if left:
            done.response["graph_left"] = [
                {"index": p.index, "artifact_id": by_index[p.index], "reason": p.graph_left}
                for p in left
            ]
            said = ", ".join(str(p.index + 1) for p in left)
            done.notices.append(
                f"{self.source.name}: the graph of {plural(len(left), 'chunk')} {said} of "
                f"{max(n, 1)} is left to do ({left[0].graph_left}); the rest is stored: "
                "run the same command again to complete it"
            )
        empty = [p for p in todo if p.empty_extraction]
        if empty:
            done.response["empty_extractions"] = [
                {"index": p.index, "artifact_id": by_index[p.index]} for p in empty
            ]
            done.notices.append(empty_notice(self.config.model_for("extract_graph")))
        return done

    async def _stop(self, tasks, exc: BaseException) -> None:
        """Cancel `tasks`. After a failure (not when the run itself is cancelled, as by
        Ctrl-C) wait for the requests already out: they are paid for, and recorded."""
        await _cancel(tasks)
        if not isinstance(exc, asyncio.CancelledError):
            await self.calls.finish()

    async def _planned(self, fetched: list[Piece]) -> dict[int, asyncio.Future[None]]:
        """Each piece's plan, and the resolve call deciding it by piece index: those made
        as the extractions landed while they still hold, else made now."""
        early, self.early = self.early, None
        if early is not None and early.current:
            return early.resolving
        if early is not None:  # another document was stored meanwhile
            await _cancel(early.resolving.values())
        resolver = Resolver(self.conn, self.dataset.id, self.valid_at)
        for piece in fetched:
            piece.plan = resolver.plan(piece.index, piece.extraction)
        resolving = {}
        for batch in batches([p.plan for p in fetched]):
            task = asyncio.ensure_future(self._resolve(batch))
            for plan in batch.plans:
                resolving[plan.index] = task
        return resolving

    async def _resolve(self, batch) -> None:
        apply_answer(batch, await self._decide(batch.items))

    async def _decide(self, items) -> dict[str, Any]:
        """The resolve answer for ``items``. One cut off at its output limit (an answer
        that ran on past what its items need) is asked again as two halves, down to
        single items; each part is its own request, recorded and reused by a rerun like
        any other."""
        halves = split_items(items)
        try:
            asked = await self.calls.ask(resolve_request(items), contained=len(halves) > 1)
        except LLMError as exc:
            if not exc.cut_off or len(halves) < 2:
                raise
            said = f"{_count(items)} {plural(_count(items), 'item')}"
            self.step("resolve", f"the answer for {said} was cut off; halved")
            return merge_answers(list(await asyncio.gather(*map(self._decide, halves))))
        return with_inference(asked.value, asked.inference_id)

    async def _embed(self, piece: Piece) -> None:
        """One request for everything a piece yields; new items' vectors are kept."""
        keys, texts = [], []
        for i, entity in enumerate(piece.extraction.entities):
            keys.append(f"entity:{i}")
            texts.append(f"{entity.name}: {entity.summary}" if entity.summary else entity.name)
        for j, edge in enumerate(piece.extraction.edges):
            keys.append(f"edge:{j}")
            texts.append(edge.fact)
        if piece.chunk is not None and not piece.summary_stored:
            keys.append("summary")
            texts.append(piece.summary or "")
        if not piece.chunk_embedded:  # else stored by an embed-only run: not asked again
            keys.append("chunk")
            # A document too short to be chunked is searched by its own vector.
            texts.append(
                artifacts.embedded_text(piece.text, piece.embedding_context)
                if piece.chunk is not None
                else piece.text
            )
        answered = dict(zip(keys, await self.calls.embed(texts), strict=True)) if texts else {}
        # The chunk keeps a vector per piece the server read (small-to-big retrieval:
        # docs/search.md, "The two methods"); everything else one vector, the mean of its pieces'.
        piece.vectors = {key: combine(vecs) for key, vecs in answered.items()}
        if "chunk" in answered:
            piece.vectors["chunk"] = answered["chunk"]

    def _store_parent(self, result, pending) -> dict[str, Any]:
        options = self.options
        where = self.source.locations()
        if where and result.chunks:
            # A chunked page's chunks keep the file's lines of their text: not the document.
            where.pop("line_map", None)
        doc_id = artifacts.insert_document(
            self.conn,
            dataset_id=self.dataset.id,
            text=self.source.text,
            kind=options.kind,
            session_id=options.session or self.source.session,
            locations=where,
            valid_at=self.valid_at,
            reference_time=self.reference,
            source=self.stored_source,
            content_sha256=self.source.sha256,
            tokens=result.tokens,
            mode=result.mode,
            settings={**self.settings.fingerprint(), "mode": result.mode},
            chunk_count=len(result.chunks),
            status="storing",
            pending=pending,
        )
        return artifacts.get_artifact(self.conn, doc_id)

    def _complete(self, document: dict[str, Any], *, whole: bool) -> dict[str, Any]:
        """Mark the document stored whole; it supersedes the earlier version of its file.
        When nothing is left to do on it (`whole`), the facts only the versions it replaced
        stated expire, in the same transaction: a kill between the two would leave them
        current for good, since a rerun finds the document whole and does nothing."""
        with transaction(self.conn):
            artifacts.update_status(self.conn, document["id"], "complete")
            if self.source.path is not None:
                for older in versions.older_current_versions(
                    self.conn, self.dataset.id, self.stored_source, document["id"]
                ):
                    artifacts.set_superseded(self.conn, older, document["id"])
            if whole:
                self._expire(document)
        return artifacts.get_artifact(self.conn, document["id"])

    # ---- response

    def _remembered(self, document, written: list[Written], status: str) -> Remembered:
        inferences.link_document(self.conn, self.calls.served, document["id"])
        response = _response(self.conn, document, written)
        if self.previous is not None:
            # A new version of a changed file: what it cost against the one it replaces.
            response["previous_version"] = {
                "artifact_id": self.previous["id"],
                "chunks_reused": len(self.reused),
                "chunks_extracted": self.extracted,
                "facts_expired": self.expired,
            }
        if left := artifacts.pending_stages(document):
            # What a later run (with the stages on) still has to do: the stored stage names.
            response["stages_left"] = left
        if self.options.trace:
            response["trajectory"] = self.trajectory
        return Remembered(
            self.source.label, status, response, spend=self.calls.spend, trajectory=self.trajectory
        )


def _response(conn, document: dict[str, Any], written: list[Written]) -> dict[str, Any]:
    """The response object of `--json`. What this run wrote comes from ``written``; chunks
    stored by an earlier run (a resumed or unchanged document) are read back from the
    database."""
    entities: dict[int, dict[str, Any]] = {}
    edges: dict[int, dict[str, Any]] = {}
    invalidated: list[dict[str, Any]] = []
    embedded = dict.fromkeys(("entities", "edges", "chunks", "summaries"), 0)
    by_artifact = {w.artifact_id: w for w in written}
    for w in written:
        for entity in w.entities:
            entities.setdefault(entity["id"], entity)
        for edge in w.edges:
            edges.setdefault(edge["id"], edge)
        invalidated += w.invalidated
        for index, count in w.embedded.items():
            embedded[index] += count
    chunk_rows = (
        artifacts.chunks_with_summaries(conn, document["id"]) if document["chunk_count"] else []
    )
    earlier = [a for a in (document["id"], *(r["id"] for r in chunk_rows)) if a not in by_artifact]
    if earlier:
        for row in graph.entities_for_artifacts(conn, earlier):
            entities.setdefault(
                row["id"],
                {"id": row["id"], "name": row["name"], "type": row["type"], "created": False},
            )
        for row in graph.edges_for_artifacts(conn, earlier):
            edges.setdefault(row["id"], _stored_edge(row))
    response: dict[str, Any] = {
        "artifact_id": document["id"],
        "entities": list(entities.values()),
        "edges": list(edges.values()),
        "invalidated_edges": invalidated,
    }
    if document.get("locations"):  # a PDF's pages, a conversation's messages
        response["locations"] = artifacts.locations_of(document)
    if document["chunk_count"]:
        chunks = []
        for row in chunk_rows:
            w = by_artifact.get(row["id"])
            chunks.append(
                {
                    "artifact_id": row["id"],
                    "index": row["chunk_index"],
                    "tokens": row["tokens"],
                    "overlap_tokens": row["overlap_tokens"],
                    "start_offset": row["start_offset"],
                    "end_offset": row["end_offset"],
                    # A PDF's pages, a conversation's messages; plain text has none.
                    **({"locations": where} if (where := artifacts.locations_of(row)) else {}),
                    "entities": len(w.entities) if w else row["entity_links"],
                    "edges": len(w.edges) if w else row["edge_links"],
                    "summary": _summary_view(row),
                }
            )
        response["chunks"] = chunks
    response.update({f"embedded_{k}": v for k, v in embedded.items()})
    return response


def _stored_edge(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "source": row["source_name"],
        "target": row["target_name"],
        "relation": row["relation"],
        "fact": row["fact"],
        "valid_at": row["valid_at"],
        "invalid_at": row["invalid_at"],
        "created": False,
    }


def _stored_settings(document: dict[str, Any]) -> ChunkSettings:
    recorded = json.loads(document["settings"])
    return ChunkSettings(
        chunk_size=recorded["chunk_size"],
        overlap_percent=recorded["overlap_percent"],
        mode=document["mode"] or recorded["mode"],
        tokenizer=get_tokenizer(recorded["tokenizer"]),
        chat_window=recorded.get("chat_window", "multi"),
        min_section_tokens=recorded.get("min_section_tokens", 0),
    )


def _summary_view(row: dict[str, Any]) -> dict[str, Any] | None:
    if row["summary_id"] is None:
        return None
    return {
        "artifact_id": row["summary_id"],
        "text": row["summary_text"],
        "model": row["summary_model"],
        "reasoning": row["summary_reasoning"],
        "inference_id": row["summary_inference"],
    }


def _needs_work(chunk_row: dict[str, Any] | None) -> bool:
    return chunk_row is None or bool(artifacts.pending_stages(chunk_row))


def _count(items: dict[str, list[Any]]) -> int:
    return sum(len(v) for v in items.values())


def _of(piece: Piece, n: int) -> str:
    return f" (chunk {piece.index + 1} of {n})" if piece.chunk is not None else ""


# Loop steps from an answer's bytes to the next request sent: the socket read, the task
# reading the answer (which frees its slot), the task the slot goes to.
_NETWORK_STEPS = 3


async def _network_turn() -> None:
    """Let the answers that arrived be read, and the requests they make room for be sent."""
    for _ in range(_NETWORK_STEPS):
        await asyncio.sleep(0)


async def _cancel(tasks) -> None:
    """Cancel what is still running and wait for it, so no request outlives the run."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _all_or_nothing(jobs) -> None:
    """Run jobs at once; on the first failure cancel the rest and raise it."""
    tasks = [asyncio.ensure_future(job) for job in jobs]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        await _cancel(tasks)
        raise
