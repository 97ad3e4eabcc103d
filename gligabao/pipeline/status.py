"""The in-sync check (SPEC Q3): are a file's stored chunks what it would be cut into now?

A file is `in sync` when its latest stored version has the file's current content and
its chunks are exactly those the current settings cut from it; `changed` when the
content differs; `settings changed` when the content is the same but the cut would
differ (another chunk size, overlap, mode or tokenizer); `incomplete` when a run left
it halfway or offline; `not remembered` when no document came from that path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import apsw

from gligabao.chunk import ChunkSettings, cut
from gligabao.inputs import Source
from gligabao.store import artifacts
from gligabao.store.db import query

IN_SYNC = "in sync"
CHANGED = "changed"
SETTINGS_CHANGED = "settings changed"
INCOMPLETE = "incomplete"
NOT_REMEMBERED = "not remembered"


@dataclass(frozen=True, slots=True)
class SyncStatus:
    source: str
    state: str
    document_id: int | None
    detail: str


def sync_status(
    conn: apsw.Connection, source: Source, dataset_id: int | None, settings: ChunkSettings
) -> SyncStatus:
    path = None if source.path is None else os.path.abspath(source.name)
    document = None
    if dataset_id is not None and path is not None:
        document = artifacts.find_by_source(conn, dataset_id, path)
    if document is None:
        return SyncStatus(source.name, NOT_REMEMBERED, None, "no document from this path")
    doc_id = document["id"]
    if document["content_sha256"] != source.sha256:
        return SyncStatus(source.name, CHANGED, doc_id, "the file's content differs")
    if document["status"] != "complete" or artifacts.pending_stages(document):
        stages = " ".join(artifacts.pending_stages(document)) or "chunks"
        return SyncStatus(source.name, INCOMPLETE, doc_id, f"still to do: {stages}")
    now = cut(source.text, settings, source.name)
    stored = query(
        conn,
        """SELECT start_offset, end_offset, tokens, section, anchor, context FROM gb_artifacts
           WHERE parent_id = ? AND chunk_index IS NOT NULL ORDER BY chunk_index""",
        (doc_id,),
    )
    current = [
        {
            "start_offset": c.start_offset,
            "end_offset": c.end_offset,
            "tokens": c.tokens,
            "section": c.section,
            "anchor": c.anchor,
            "context": c.context or None,
        }
        for c in now.chunks
    ]
    if stored != current:
        return SyncStatus(
            source.name,
            SETTINGS_CHANGED,
            doc_id,
            f"stored {len(stored)} chunks; the current settings cut {len(current)}",
        )
    return SyncStatus(
        source.name, IN_SYNC, doc_id, f"{len(stored)} chunks" if stored else "not chunked"
    )
