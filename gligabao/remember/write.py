"""The store phase: one transaction per chunk, in document order, database work only.

A chunk's transaction holds its artifact (unless an offline run stored it already), its
summary, its entities and edges with their provenance links, the facts it closes, and
its vectors; either all of it is stored or none. What earlier chunks of the document
stored is looked up through the ids this writer hands out as it goes.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from gligabao.base.evidence import locate_quote
from gligabao.base.lines import LineIndex
from gligabao.llm.float32 import Float32
from gligabao.remember.cut import chunk_lines
from gligabao.remember.resolve import Extraction, Plan, Ref
from gligabao.store import Connection, artifacts, graph, merges, vectors
from gligabao.store.db import transaction

# Test-only, for tests/remember/test_batch_processes.py, which kills -9 a run at exact points of
# its store phase: GB_TEST_PAUSE_AT="POINT" or "POINT:CHUNK" stops the run the first time
# a piece (chunk index CHUNK; any, without it) reaches POINT: it writes "POINT:CHUNK:DOC"
# to the file GB_TEST_PAUSE_FILE and waits, the whole process still, while that file
# exists. POINT is "chunk" (before the chunk's transaction: between the document row and
# its first chunk, or between two chunks), "chunk-row" (in it, after the chunk's row),
# "chunk-graph" (after its summary and graph, before its vectors) or "chunk-commit" (all
# of it written, not yet committed) or "offline-chunk" (an offline run, before a chunk,
# inside the transaction of up to 500 it is stored in). Read once, here; unset, as it is outside the
# tests, each point costs one test of an empty string.
_PAUSE_AT = os.environ.get("GB_TEST_PAUSE_AT", "")


def pause(point: str, piece: Piece, document_id: int) -> None:
    global _PAUSE_AT
    if not _PAUSE_AT:
        return
    name, _, index = _PAUSE_AT.partition(":")
    if name != point or (index and int(index) != piece.index):
        return
    _PAUSE_AT = ""  # once
    marker = os.environ["GB_TEST_PAUSE_FILE"]
    with open(marker + ".new", "w") as out:
        out.write(f"{point}:{piece.index}:{document_id}\n")
    os.replace(marker + ".new", marker)
    while os.path.exists(marker):
        time.sleep(0.01)


@dataclass
class Piece:
    """What the network gave one chunk (or the whole of an unchunked text)."""

    index: int
    text: str
    chunk: Any | None  # gligabao.chunk.Chunk, None for an unchunked text
    extraction: Extraction | None = None
    summary: str | None = None
    summary_inference: int | None = None
    situating: str | None = None  # Contextual Retrieval's context, when asked for
    situating_inference: int | None = None
    plan: Plan | None = None
    # Its chunk vectors are stored already (an embed-only run): completing it embeds only
    # the new texts (entities, edges, summary), not the chunk again.
    chunk_embedded: bool = False
    # Its summary (and context) are stored already (a run that left its graph to do):
    # completing it stores its graph, and embeds only the graph's new texts.
    summary_stored: bool = False
    # Why its graph is left to do (its extraction cut off even in the smallest parts):
    # it is stored without, the stage pending on it, for a later run.
    graph_left: str | None = None
    # Its extraction gave no entity and no fact from a text of real prose.
    empty_extraction: bool = False
    # float32, as stored: one a key, but "chunk" has a list, one a piece of its text.
    vectors: dict[str, Float32 | list[Float32]] = field(default_factory=dict)

    @property
    def embedding_context(self) -> str:
        """What goes before the chunk's text when it is embedded and keyword-indexed: its
        place in the structure (section, class, table header), then the LLM's context."""
        parts = [self.chunk.context.strip() if self.chunk else "", self.situating or ""]
        return "\n".join(p for p in parts if p)


@dataclass
class Written:
    """What storing one piece did, for the response object."""

    artifact_id: int
    summary_id: int | None
    entities: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    invalidated: list[dict[str, Any]]
    embedded: dict[str, int]


class Writer:
    def __init__(
        self,
        conn: Connection,
        dataset_id: int,
        document: dict[str, Any],
        lines: LineIndex,
    ) -> None:
        self.conn = conn
        self.dataset_id = dataset_id
        self.document = document
        self.lines = lines  # of the document's text: each chunk's lines, kept with it
        self._entity_ids: dict[tuple[int, int], int] = {}
        self._edge_ids: dict[tuple[int, int], int] = {}

    def _id(self, ref: Ref, ids: dict[tuple[int, int], int]) -> int | None:
        if ref.kind == "db":
            return ref.key
        if ref.kind == "doc":
            return ids.get(ref.key)
        return None

    def store(self, piece: Piece) -> Written:
        doc = self.document
        plan = piece.plan
        assert plan is not None and piece.extraction is not None
        session = doc["session_id"]
        pause("chunk", piece, doc["id"])
        # Whole: nothing below catches an error to go on, so no savepoint is needed.
        with transaction(self.conn, whole=True):
            summary_id = None
            if piece.chunk is None:
                artifact_id = doc["id"]
            else:
                stored = artifacts.chunk_at(self.conn, doc["id"], piece.chunk.index)
                if stored is not None and not stored["pending"]:
                    # Another gb process completing the same document stored it first.
                    return self._already_stored(piece, stored["id"])
                artifact_id = (
                    stored["id"]
                    if stored
                    # With a context, indexed once below, context first.
                    else artifacts.insert_cut_chunk(
                        self.conn,
                        doc["id"],
                        piece.chunk,
                        index_text=not piece.situating,
                        lines=chunk_lines(piece.chunk, self.lines),
                    )
                )
                if piece.situating and not piece.summary_stored:
                    artifacts.insert_derived(
                        self.conn,
                        chunk_id=artifact_id,
                        kind=artifacts.CONTEXT_KIND,
                        text=piece.situating,
                        inference_id=piece.situating_inference,
                        index_text=False,  # it is indexed with the chunk, below
                    )
                    artifacts.index_artifact_text(
                        self.conn,
                        artifact_id,
                        artifacts.embedded_text(piece.text, piece.embedding_context),
                        doc["kind"],
                        self.dataset_id,
                    )
                pause("chunk-row", piece, doc["id"])
                if not piece.summary_stored:
                    summary_id = artifacts.insert_summary(
                        self.conn,
                        chunk_id=artifact_id,
                        text=piece.summary or "",
                        inference_id=piece.summary_inference,
                    )
            entities, new_entities, linked = self._entities(piece, plan, artifact_id, session)
            edges, invalidated, new_edges = self._edges(piece, plan, artifact_id, session)
            self._merges(piece, plan, artifact_id, entities, edges, linked)
            pause("chunk-graph", piece, doc["id"])
            embedded = self._vectors(piece, artifact_id, summary_id, new_entities, new_edges)
            left = ("extract_graph",) if piece.graph_left else ()
            artifacts.set_pending(self.conn, artifact_id, left, reason=piece.graph_left)
            pause("chunk-commit", piece, doc["id"])
        return Written(artifact_id, summary_id, entities, edges, invalidated, embedded)

    def _already_stored(self, piece: Piece, chunk_id: int) -> Written:
        """A chunk some other run stored whole: take its graph ids for later chunks, whose
        decisions may point at its entities and facts. An entity is found by its exact
        name and type, a fact among those linked to the chunk by its relation and words;
        what is not found is stored anew by the chunk that names it."""
        for i, entity in enumerate(piece.extraction.entities):
            found = graph.entity_exact(self.conn, self.dataset_id, entity.name, entity.type)
            if found is not None:
                self._entity_ids[(piece.index, i)] = found["id"]
        linked = {
            (row["relation"], row["fact"]): row["id"]
            for row in graph.edges_for_artifacts(self.conn, [chunk_id])
        }
        for j, edge in enumerate(piece.extraction.edges):
            edge_id = linked.get((edge.relation, edge.fact))
            if edge_id is not None:
                self._edge_ids[(piece.index, j)] = edge_id
        return Written(chunk_id, None, [], [], [], {})

    def _entities(
        self, piece: Piece, plan: Plan, artifact_id: int, session: str | None
    ) -> tuple[list[dict[str, Any]], list[tuple[int, int]], set[int]]:
        out, new = [], []
        linked: set[int] = set()  # merged entities whose link to the chunk is the merge's
        for i, entity in enumerate(piece.extraction.entities):
            entity_id = self._id(plan.decisions.entities[i], self._entity_ids)
            created = False
            if entity_id is None:
                entity_id, created = graph.upsert_entity(
                    self.conn, self.dataset_id, entity.name, entity.type, entity.summary
                )
            self._entity_ids[(piece.index, i)] = entity_id
            if i in plan.merges and not merges.is_linked(self.conn, entity_id, artifact_id):
                linked.add(i)
            graph.link_entity(self.conn, entity_id, artifact_id, session)
            if created:
                new.append((i, entity_id))
            out.append(
                {"id": entity_id, "name": entity.name, "type": entity.type, "created": created}
            )
        return out, new, linked

    def _merges(
        self,
        piece: Piece,
        plan: Plan,
        artifact_id: int,
        entities: list[dict[str, Any]],
        edges: list[dict[str, Any]],
        linked: set[int],
    ) -> None:
        """A row for each entity of the chunk merged into one known by another name,
        with the facts it brought: what unmerging it puts back."""
        extracted = piece.extraction.entities
        for i, why in plan.merges.items():
            brought = [
                (
                    edges[j]["id"],
                    edges[j]["created"],
                    (merges.SOURCE if edge.source == i else 0)
                    | (merges.TARGET if edge.target == i else 0),
                    _bytes(piece.vectors.get(f"edge:{j}")),
                )
                for j, edge in enumerate(piece.extraction.edges)
                if i in (edge.source, edge.target)
            ]
            merges.record_merge(
                self.conn,
                self.dataset_id,
                entities[i]["id"],
                extracted[i].name,
                extracted[i].type,
                extracted[i].summary,
                artifact_id,
                why.rule,
                inference_id=why.inference_id,
                linked=i in linked,
                vector=_bytes(piece.vectors.get(f"entity:{i}")),
                edges=brought,
            )

    def _edges(
        self, piece: Piece, plan: Plan, artifact_id: int, session: str | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[tuple[int, int]]]:
        out, invalidated, new = [], [], []
        entities = piece.extraction.entities
        for j, edge in enumerate(piece.extraction.edges):
            edge_id = self._id(plan.decisions.edges[j], self._edge_ids)
            created = edge_id is None
            valid_at = edge.valid_at or self.document["valid_at"]
            if created:
                edge_id = graph.insert_edge(
                    self.conn,
                    self.dataset_id,
                    self._entity_ids[(piece.index, edge.source)],
                    self._entity_ids[(piece.index, edge.target)],
                    edge.relation,
                    edge.fact,
                    valid_at=valid_at,
                    invalid_at=edge.invalid_at,
                    artifact_id=artifact_id,
                )
                new.append((j, edge_id))
                if closes := plan.decisions.closes[j]:
                    invalidated += graph.settle_in_time(
                        self.conn,
                        edge_id,
                        [c for ref, _ in closes if (c := self._id(ref, self._edge_ids))],
                        "; ".join(dict.fromkeys(reason for _, reason in closes)),
                    )
            self._edge_ids[(piece.index, j)] = edge_id
            start = piece.chunk.start_offset if piece.chunk is not None else 0
            evidence = locate_quote(edge.quote, piece.text, start)
            graph.link_edge(self.conn, edge_id, artifact_id, session, evidence)
            out.append(
                {
                    "id": edge_id,
                    "source": entities[edge.source].name,
                    "target": entities[edge.target].name,
                    "relation": edge.relation,
                    "fact": edge.fact,
                    "valid_at": valid_at,
                    # Stored already over (older than the fact it contradicts): that end.
                    "invalid_at": next(
                        (c["invalid_at"] for c in invalidated if c["id"] == edge_id),
                        edge.invalid_at,
                    ),
                    "created": created,
                }
            )
        return out, invalidated, new

    def _vectors(
        self,
        piece: Piece,
        artifact_id: int,
        summary_id: int | None,
        new_entities: list[tuple[int, int]],
        new_edges: list[tuple[int, int]],
    ) -> dict[str, int]:
        got = piece.vectors
        rows: dict[str, list[vectors.VectorRow]] = {i: [] for i in vectors.INDEXES}
        for i, entity_id in new_entities:
            rows["entities"].append(vectors.entity_row(entity_id, got[f"entity:{i}"]))
        for j, edge_id in new_edges:
            rows["edges"].append(vectors.edge_row(edge_id, got[f"edge:{j}"]))
        doc_id = self.document["id"]
        if piece.chunk is not None:
            index = piece.chunk.index
            if "chunk" in got:  # else kept from an embed-only run
                rows["chunks"] += vectors.chunk_rows(artifact_id, doc_id, index, got["chunk"])
            if summary_id is not None:  # else stored with its vector by an earlier run
                rows["summaries"].append(
                    vectors.summary_row(summary_id, artifact_id, doc_id, index, got["summary"])
                )
        elif "chunk" in got:  # a document too short to chunk: its own vector
            rows["chunks"] += vectors.chunk_rows(doc_id, doc_id, 0, got["chunk"])
        for index, index_rows in rows.items():
            if index_rows:
                vectors.upsert_vectors(self.conn, self.dataset_id, index, index_rows)
        return {index: len(index_rows) for index, index_rows in rows.items()}


def _bytes(vector: Any) -> bytes | None:
    """A vector as the float32 bytes a merge keeps for its undoing (None: not embedded)."""
    return vector.tobytes() if isinstance(vector, Float32) else None
