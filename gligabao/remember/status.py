"""The in-sync check: are a file's stored chunks what it would be cut into now?

A file is `in sync` when its latest stored version has the file's current content and
its chunks are exactly those the current settings cut from it; `changed` when the
content differs; `settings changed` when the content is the same but the cut would
differ (another chunk size, overlap, mode or tokenizer); `incomplete` when a run left
it halfway or offline; `not remembered` when no document came from that path. A file
remembered from a folder that is gone from it is `deleted` (`gb status -r`, `gb remember
-r`); `gb remember -r --prune` marks its document removed and expires its facts (`prune`).

The same check tells `gb chunk-preview --json` whether the chunks it previews are the
ones stored, so it can show each one's Contextual Retrieval context:
`stored_contexts`, which reads an existing database and never creates or changes one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gligabao.base.words import plural, real_text
from gligabao.chunk import ChunkSettings, Cut
from gligabao.read.files import shown_name
from gligabao.read.sources import Source
from gligabao.remember import diff
from gligabao.remember.cut import cut_source
from gligabao.store import Connection, artifacts, datasets, graph, peek_db, versions
from gligabao.store.db import transaction
from gligabao.store.opening import DEFAULT_SCHEMA

IN_SYNC = "in sync"
CHANGED = "changed"
SETTINGS_CHANGED = "settings changed"
INCOMPLETE = "incomplete"
NOT_REMEMBERED = "not remembered"
DELETED = "deleted"


# The stage a document has pending for each stage a user chooses (config `stages`) that
# a run did not do.
_PENDING_OF = {"graph": "extract_graph", "summaries": "summarize_chunk", "embed": "embed"}
ALL_STAGES = tuple(_PENDING_OF)


@dataclass(frozen=True, slots=True)
class SyncStatus:
    source: str
    state: str
    document_id: int | None
    detail: str
    # The chunks of real text whose extraction gave no entity and no fact (`index`,
    # `artifact_id`): stored whole, but a sign the model was too small for the graph.
    empty_extractions: list[dict[str, int]] = field(default_factory=list)
    # The chunks whose graph a run left to do, and why (`index`, `artifact_id`, `reason`):
    # their extraction was cut off even in its smallest parts.
    graph_left: list[dict[str, Any]] = field(default_factory=list)


def still_to_do(document: dict[str, Any], stages: Iterable[str] = ALL_STAGES) -> list[str]:
    """The stages pending on a document that a run of `stages` (the configured ones)
    would do: the graph and summaries an embeddings-only setup leaves are not owed."""
    not_run = {_PENDING_OF[s] for s in _PENDING_OF if s not in stages}
    return [s for s in artifacts.pending_stages(document) if s not in not_run]


def sync_status(
    conn: Connection,
    source: Source,
    dataset_id: int | None,
    settings: ChunkSettings,
    stages: Iterable[str] = ALL_STAGES,
) -> SyncStatus:
    """How a file stands against what is stored of it, judged by the `stages` a run of
    this configuration does."""
    document = remembered_document(conn, source, dataset_id)
    if document is None:
        return SyncStatus(source.label, NOT_REMEMBERED, None, "no document from this path")
    doc_id = document["id"]
    if document["content_sha256"] != source.sha256:
        return SyncStatus(source.label, CHANGED, doc_id, _changed(conn, document, source, settings))
    owed = still_to_do(document, tuple(stages))
    if document["status"] != "complete" or owed:
        left = graph_left(conn, doc_id)
        said = f"still to do: {' '.join(owed) or 'chunks'}{_left_words(left)}"
        return SyncStatus(source.label, INCOMPLETE, doc_id, said, graph_left=left)
    stored = artifacts.chunk_layout(conn, doc_id)
    current = layout(cut_source(source, settings))
    if stored != current:
        return SyncStatus(
            source.label,
            SETTINGS_CHANGED,
            doc_id,
            f"stored {len(stored)} {plural(len(stored), 'chunk')}; the current settings cut "
            f"{len(current)}",
        )
    empty = empty_extractions(conn, document, source.text)
    said = f"{len(stored)} {plural(len(stored), 'chunk')}" if stored else "not chunked"
    if empty and not stored:
        said += "; its text gave no entity and no fact"
    elif empty:
        numbers = ", ".join(str(e["index"] + 1) for e in empty)
        said += f"; {plural(len(empty), 'chunk')} {numbers} gave no entity and no fact"
    return SyncStatus(source.label, IN_SYNC, doc_id, said, empty)


def empty_extractions(
    conn: Connection, document: dict[str, Any], text: str
) -> list[dict[str, int]]:
    """The chunks of real text stored whole with no entity and no fact linked to them:
    those whose extraction found nothing (`index`, `artifact_id`). A document too short
    to be chunked (its `text`) is its own one piece."""
    doc_id = document["id"]
    if not document["chunk_count"]:
        if document["pending"] or not real_text(text):
            return []
        if graph.entities_for_artifacts(conn, [doc_id]) or graph.edges_for_artifacts(
            conn, [doc_id]
        ):
            return []
        return [{"index": 0, "artifact_id": doc_id}]
    return [
        {"index": row["chunk_index"], "artifact_id": row["id"]}
        for row in artifacts.chunks_with_summaries(conn, doc_id)
        if not row["pending"]
        and not row["entity_links"]
        and not row["edge_links"]
        and real_text(row["text"])
    ]


def graph_left(conn: Connection, document_id: int) -> list[dict[str, Any]]:
    """The chunks of a document whose graph a run left to do, with why (`index`,
    `artifact_id`, `reason`)."""
    return [
        {"index": row["index"], "artifact_id": row["artifact_id"], "reason": row["reason"]}
        for row in artifacts.left_reasons(conn, document_id)
        if "extract_graph" in artifacts.pending_stages(row)
    ]


def _left_words(left: list[dict[str, Any]]) -> str:
    """`; the graph of chunk 2 is left (why)`, for the status line."""
    if not left:
        return ""
    numbers = ", ".join(str(e["index"] + 1) for e in left)
    return f"; the graph of {plural(len(left), 'chunk')} {numbers} is left ({left[0]['reason']})"


def _changed(
    conn: Connection, document: dict[str, Any], source: Source, settings: ChunkSettings
) -> str:
    """What remembering a changed file would cost: its chunks that are not stored ones
    (only those are extracted again)."""
    said = "the file's content differs"
    result = cut_source(source, settings)
    if not result.chunks or not document["chunk_count"] or document["status"] != "complete":
        return said
    rows, reusable = versions.reusable_chunks(conn, document["dataset_id"], document["id"])
    redo = len(result.chunks) - len(diff.match(result.chunks, rows, reusable))
    n = len(result.chunks)
    return f"{said}: {redo} of {n} {plural(n, 'chunk')} to extract again"


def deleted_files(
    conn: Connection,
    dataset_id: int | None,
    folders: Iterable[str],
    present: Iterable[str],
) -> list[SyncStatus]:
    """The files remembered from under `folders` that are gone: not among the `present`
    paths found there now, and not on disk. Each is `deleted`, with its document."""
    if dataset_id is None:
        return []
    seen = {shown_name(os.path.abspath(p)) for p in present}
    gone: dict[int, SyncStatus] = {}
    for folder in folders:
        under = shown_name(os.path.abspath(folder))
        for row in artifacts.documents_under(conn, dataset_id, under):
            if row["source"] not in seen and not os.path.lexists(row["source"]):
                gone[row["id"]] = SyncStatus(
                    row["source"],
                    DELETED,
                    row["id"],
                    "the file is gone; gb remember -r --prune expires its facts",
                )
    return list(gone.values())


def prune(conn: Connection, deleted: SyncStatus) -> int:
    """Mark a deleted file's document removed (superseded by nothing) and expire the facts
    that no current version states any more; returns how many were expired."""
    assert deleted.document_id is not None
    with transaction(conn):
        artifacts.set_removed(conn, deleted.document_id)
        return versions.expire_unstated(
            conn, [deleted.document_id], f"no longer stated in {deleted.source}: it was deleted"
        )


def remembered_document(
    conn: Connection, source: Source, dataset_id: int | None
) -> dict[str, Any] | None:
    """The latest, not superseded document remembered from this file (never stdin)."""
    if dataset_id is None or source.path is None:
        return None
    return artifacts.find_by_source(conn, dataset_id, source.stored_source())


def layout(result: Cut) -> list[dict[str, Any]]:
    """What identifies each chunk of a cut, as the store keeps it."""
    return [
        {
            "start_offset": c.start_offset,
            "end_offset": c.end_offset,
            "tokens": c.tokens,
            "section": c.section,
            "anchor": c.anchor,
            "context": c.context or None,
        }
        for c in result.chunks
    ]


def chunk_contexts(
    conn: Connection, source: Source, dataset_id: int | None, result: Cut
) -> dict[int, str]:
    """Each chunk's stored Contextual Retrieval context, by chunk index, when the file's
    remembered document has `source`'s content and its stored chunks are exactly
    `result`'s (same cut: same settings); empty otherwise, and for chunks without one."""
    if not result.chunks:
        return {}
    document = remembered_document(conn, source, dataset_id)
    if document is None or document["content_sha256"] != source.sha256:
        return {}
    if artifacts.chunk_layout(conn, document["id"]) != layout(result):
        return {}
    return artifacts.chunk_contexts(conn, document["id"])


def stored_contexts(
    database: str | os.PathLike[str],
    source: Source,
    dataset: str,
    result: Cut,
    *,
    busy_timeout_ms: int = 1_000,
    schema: str = DEFAULT_SCHEMA,
) -> dict[int, str]:
    """`chunk_contexts` read from the database file at `database`, if there is one.

    Never creates the file (missing: empty result) and never writes to it (store.peek_db).
    Standard input is never remembered under a path, so it gets nothing. A file that
    cannot be read (locked past `busy_timeout_ms`, not a database, another schema)
    raises DatabaseError (DatabaseBusy when locked), with one line saying why.
    """
    if source.path is None or not result.chunks:
        return {}
    with peek_db(database, busy_timeout_ms=busy_timeout_ms, schema=schema) as conn:
        if conn is None:
            return {}
        found = datasets.find_dataset(conn, dataset)
        return chunk_contexts(conn, source, found and found.id, result)
