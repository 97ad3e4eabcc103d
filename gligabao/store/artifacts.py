"""Artifacts: documents (parents), their chunks, and the chunks' summaries.

The chain is document -> chunk -> summary, by parent_id with ON DELETE CASCADE. A chunk
copies its document's kind, session, valid_at and created_at; a summary copies its
chunk's. A chunk's stored `text` is the exact slice of the document; what is embedded
and keyword-indexed is `embedded_text(text, context)`, the context first (section path,
table header, situating context).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from gligabao.base.lines import line_range
from gligabao.store import dialect, fts
from gligabao.store.connection import Connection
from gligabao.store.db import insert, now_iso, transaction, write
from gligabao.store.db import query as _rows
from gligabao.store.db import query_one as _row
from gligabao.store.errors import NotFound

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "COMPLETE",
    "CONTEXT_KIND",
    "DERIVED_KINDS",
    "INCOMPLETE",
    "REMOVED",
    "SUMMARY_KIND",
    "SUPERSEDED",
    "add_pending",
    "artifact_place",
    "chunk_at",
    "chunk_contexts",
    "chunk_layout",
    "chunks_as_gold",
    "chunks_with_role",
    "chunks_with_summaries",
    "document_state",
    "documents_under",
    "embedded_text",
    "find_by_source",
    "find_document",
    "get_artifact",
    "get_chunk",
    "get_document",
    "gold_pool",
    "index_artifact_text",
    "insert_chunk",
    "insert_cut_chunk",
    "insert_derived",
    "insert_document",
    "insert_summary",
    "left_reasons",
    "list_documents",
    "locations_of",
    "pending_documents",
    "pending_stages",
    "remove_pending",
    "search_artifacts_fts",
    "session_documents",
    "set_pending",
    "set_removed",
    "set_superseded",
    "stored_locations",
    "tokens_of",
    "update_status",
]

SUMMARY_KIND = "chunk_summary"
CONTEXT_KIND = "chunk_context"  # Contextual Retrieval: situates a chunk in its document
DERIVED_KINDS = (SUMMARY_KIND, CONTEXT_KIND)  # written by the pipeline about a chunk, only

# A document's state, the one word every command shows for it (list, show, stats).
COMPLETE = "complete"
INCOMPLETE = "incomplete"
SUPERSEDED = "superseded"
REMOVED = "removed"  # its file was deleted and `gb remember --prune` said so: superseded by nothing

# `query` is also a column (and a parameter) of artifacts, hence the helpers' names
# _rows / _row here.


def insert_cut_chunk(
    conn: Connection,
    document_id: int,
    chunk: Any,
    pending: tuple[str, ...] = (),
    *,
    index_text: bool = True,
    lines: tuple[int, int] | None = None,
) -> int:
    """Store one chunk of a cut (gligabao.chunk.Chunk) under its document; `lines`, the
    lines it spans there (LineIndex.span), are kept so that a hit need not count them."""
    return insert_chunk(
        conn,
        document_id=document_id,
        text=chunk.text,
        chunk_index=chunk.index,
        start_offset=chunk.start_offset,
        end_offset=chunk.end_offset,
        tokens=chunk.tokens,
        overlap_tokens=chunk.overlap_tokens,
        section=chunk.section,
        anchor=chunk.anchor,
        context=chunk.context or None,
        pending=pending,
        index_text=index_text,
        locations=getattr(chunk, "locations", None),
        lines=lines,
    )


def _set_locations(conn: Connection, artifact_id: int, locations: Mapping[str, Any] | None) -> None:
    # Only where there are some: plain text stores as it did before schema 5.
    if locations:
        conn.execute(
            "UPDATE gb_artifacts SET locations = ? WHERE id = ?",
            (json.dumps(locations, sort_keys=True), artifact_id),
        )


def locations_of(artifact: Mapping[str, Any]) -> dict[str, Any]:
    """An artifact row's stored locations (`gligabao.read.documents.describe`), ``{}`` for
    none; a web page's ``line_map`` is left to `line_map_of`."""
    where = stored_locations(artifact)
    return {key: value for key, value in where.items() if key != "line_map"}


def stored_locations(artifact: Mapping[str, Any]) -> dict[str, Any]:
    """An artifact row's stored locations whole, a web page's ``line_map`` with them (the
    file's lines of each line of its text: `gligabao.base.lines.mapped_lines`)."""
    stored = artifact.get("locations")
    if isinstance(stored, dict):  # read back already
        return stored
    return json.loads(stored) if stored else {}


def chunks_with_role(conn: Connection, dataset_id: int, role: str) -> list[int]:
    """The ids of the current chunks of a dataset that hold a message by ``role`` (a
    chat export's), for `gb search --role`: a hit is kept if its chunk is one."""
    roles = dialect.of(conn).json_texts("c.locations", "messages", "roles")
    rows = _rows(
        conn,
        f"""SELECT c.id FROM gb_artifacts c JOIN gb_artifacts d ON d.id = c.parent_id
           WHERE c.dataset_id = ? AND c.chunk_index IS NOT NULL AND d.superseded_by IS NULL
             AND c.locations IS NOT NULL AND ? IN {roles}
           ORDER BY c.id""",
        (dataset_id, role),
    )
    return [r["id"] for r in rows]


def embedded_text(text: str, context: str | None) -> str:
    """What is embedded and keyword-indexed for a chunk: its context, then its text."""
    return f"{context}\n\n{text}" if context else text


def _pending(stages: Iterable[str] | str) -> str:
    words = stages.split() if isinstance(stages, str) else list(stages)
    return " ".join(dict.fromkeys(w for w in words if w))  # unique, order kept


def pending_stages(artifact: Mapping[str, Any]) -> list[str]:
    return artifact["pending"].split()


def document_state(
    document: Mapping[str, Any], chunk_pending: Iterable[str] = ()
) -> dict[str, Any]:
    """How a document stands, as every face shows it: `status`, one word (`complete`,
    `incomplete`, `superseded` or `removed`), and `pending`, the stages still to do on it
    or on any of its chunks (`chunks` first when a run left some unstored)."""
    todo = [] if document["status"] == COMPLETE else ["chunks"]
    todo += _pending(" ".join([document["pending"], *chunk_pending])).split()
    if document.get("superseded_by") is not None:
        status = REMOVED if document["superseded_by"] == document["id"] else SUPERSEDED
    else:
        status = INCOMPLETE if todo else COMPLETE
    return {"status": status, "pending": todo}


def _chunks_pending(conn: Connection, document_id: int) -> list[str]:
    rows = _rows(
        conn,
        "SELECT pending FROM gb_artifacts WHERE parent_id = ? AND pending != '' ORDER BY id",
        (document_id,),
    )
    return [r["pending"] for r in rows]


def index_artifact_text(
    conn: Connection, artifact_id: int, text: str, kind: str, dataset_id: int
) -> None:
    """Put (or replace) the artifact's row in the keyword index."""
    fts.index_artifact_text(conn, artifact_id, text, kind, dataset_id)


def get_artifact(conn: Connection, artifact_id: int) -> dict[str, Any] | None:
    return _row(conn, "SELECT * FROM gb_artifacts WHERE id = ?", (artifact_id,))


def _require(conn: Connection, artifact_id: int) -> dict[str, Any]:
    row = get_artifact(conn, artifact_id)
    if row is None:
        raise NotFound(f"no artifact with id {artifact_id}")
    return row


def insert_document(
    conn: Connection,
    *,
    dataset_id: int,
    text: str,
    kind: str = "document",
    session_id: str | None = None,
    valid_at: str | None = None,
    reference_time: str | None = None,
    created_at: str | None = None,
    source: str | None = None,
    content_sha256: str | None = None,
    tokens: int | None = None,
    mode: str | None = None,
    settings: Mapping[str, Any] | str | None = None,
    chunk_count: int | None = None,
    status: str | None = "storing",
    pending: Iterable[str] | str = (),
    query: str | None = None,
    series_id: str | None = None,
    context: str | None = None,
    index_text: bool | None = None,
    locations: Mapping[str, Any] | None = None,
) -> int:
    """Store a document (a parent artifact); returns its id.

    `chunk_count` is the number of chunks planned (0 or None: not chunked). An unchunked
    document is keyword-indexed itself unless `index_text` is False; a chunked one is
    found through its chunks. `content_sha256` defaults to the hash of the UTF-8 text.
    """
    if kind in DERIVED_KINDS:
        raise ValueError(f"kind {kind!r} is made only by the pipeline, about a chunk")
    valid_at = valid_at or now_iso()
    if isinstance(settings, Mapping):
        settings = json.dumps(settings, sort_keys=True)
    sha = content_sha256
    if not sha:
        import hashlib  # OpenSSL's ~3 ms load: for writes only, not every reading command

        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    with transaction(conn):
        doc_id = insert(
            conn,
            """INSERT INTO gb_artifacts(dataset_id, kind, session_id, valid_at, created_at, text,
                   tokens, query, series_id, source, content_sha256, reference_time, mode,
                   context, chunk_count, settings, status, pending)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                dataset_id,
                kind,
                session_id,
                valid_at,
                created_at or now_iso(),
                text,
                tokens,
                query,
                series_id,
                source,
                sha,
                reference_time or valid_at,
                mode,
                context,
                chunk_count,
                settings,
                status,
                _pending(pending),
            ),
        )
        _set_locations(conn, doc_id, locations)
        if index_text if index_text is not None else not chunk_count:
            index_artifact_text(conn, doc_id, embedded_text(text, context), kind, dataset_id)
    return doc_id


def insert_chunk(
    conn: Connection,
    *,
    document_id: int,
    text: str,
    chunk_index: int,
    start_offset: int,
    end_offset: int,
    tokens: int,
    overlap_tokens: int | None = None,
    section: str | None = None,
    anchor: str | None = None,
    context: str | None = None,
    pending: Iterable[str] | str = (),
    index_text: bool = True,
    locations: Mapping[str, Any] | None = None,
    lines: tuple[int, int] | None = None,
) -> int:
    """Store chunk `chunk_index` of a document, keyword-indexed as embedded_text();
    ``locations`` (a PDF's pages, a chat's messages) in the ``locations`` column only,
    never in the indexed text; ``lines``, the first and last line it spans."""
    with transaction(conn):
        # What a chunk takes from its document, not the document's whole text: read once
        # a chunk, that was the document's size again for every chunk stored.
        doc = _row(
            conn,
            """SELECT dataset_id, kind, session_id, valid_at, created_at, parent_id,
                      reference_time, mode
               FROM gb_artifacts WHERE id = ?""",
            (document_id,),
        )
        if doc is None:
            raise NotFound(f"no artifact with id {document_id}")
        if doc["parent_id"] is not None:
            raise ValueError(f"artifact {document_id} is not a document; chunks hang off one")
        chunk_id = insert(
            conn,
            """INSERT INTO gb_artifacts(dataset_id, kind, session_id, valid_at, created_at,
                   parent_id, text, chunk_index, start_offset, end_offset, tokens,
                   overlap_tokens, reference_time, mode, section, anchor, context, pending,
                   line_start, line_end)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                doc["dataset_id"],
                doc["kind"],
                doc["session_id"],
                doc["valid_at"],
                doc["created_at"],
                document_id,
                text,
                chunk_index,
                start_offset,
                end_offset,
                tokens,
                overlap_tokens,
                doc["reference_time"],
                doc["mode"],
                section,
                anchor,
                context,
                _pending(pending),
                *(lines or (None, None)),
            ),
        )
        _set_locations(conn, chunk_id, locations)
        if index_text:
            indexed = embedded_text(text, context)
            index_artifact_text(conn, chunk_id, indexed, doc["kind"], doc["dataset_id"])
    return chunk_id


def insert_summary(
    conn: Connection,
    *,
    chunk_id: int,
    text: str,
    inference_id: int | None = None,
    index_text: bool = True,
) -> int:
    """Store a chunk's summary: kind 'chunk_summary', a child of the chunk."""
    return insert_derived(
        conn,
        chunk_id=chunk_id,
        kind=SUMMARY_KIND,
        text=text,
        inference_id=inference_id,
        index_text=index_text,
    )


def insert_derived(
    conn: Connection,
    *,
    chunk_id: int,
    kind: str,
    text: str,
    inference_id: int | None = None,
    index_text: bool = True,
) -> int:
    """Store what an LLM wrote about a chunk (its summary, its situating context): a
    child of the chunk, of a derived kind, with the chunk's session, valid_at and
    created_at, and the inference that wrote it."""
    if kind not in DERIVED_KINDS:
        raise ValueError(f"{kind!r} is not a derived kind ({', '.join(DERIVED_KINDS)})")
    with transaction(conn):
        chunk = _require(conn, chunk_id)
        if chunk["chunk_index"] is None:
            raise ValueError(f"artifact {chunk_id} is not a chunk; only chunks have a {kind}")
        derived_id = insert(
            conn,
            """INSERT INTO gb_artifacts(dataset_id, kind, session_id, valid_at, created_at,
                   parent_id, text, inference_id)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                chunk["dataset_id"],
                kind,
                chunk["session_id"],
                chunk["valid_at"],
                chunk["created_at"],
                chunk_id,
                text,
                inference_id,
            ),
        )
        if index_text:
            index_artifact_text(conn, derived_id, text, kind, chunk["dataset_id"])
    return derived_id


def find_document(
    conn: Connection, dataset_id: int, sha256: str, *, status: str | None = None
) -> dict[str, Any] | None:
    """The latest document of the dataset with this content hash, not superseded;
    `status='complete'` finds only one remembered whole (a batch skips it as "unchanged")."""
    return _row(
        conn,
        """SELECT * FROM gb_artifacts
           WHERE dataset_id = ? AND content_sha256 = ? AND parent_id IS NULL
             AND superseded_by IS NULL AND (? IS NULL OR status = ?)
           ORDER BY id DESC LIMIT 1""",
        (dataset_id, sha256, status, status),
    )


def find_by_source(conn: Connection, dataset_id: int, source: str) -> dict[str, Any] | None:
    """The latest document of the dataset remembered from this source, not superseded."""
    return _row(
        conn,
        """SELECT * FROM gb_artifacts
           WHERE dataset_id = ? AND source = ? AND parent_id IS NULL AND superseded_by IS NULL
           ORDER BY id DESC LIMIT 1""",
        (dataset_id, source),
    )


def _summary_sql(conn: Connection) -> str:
    return f"""SELECT a.*, m.name AS model, i.reasoning AS reasoning
        FROM gb_artifacts a
        LEFT JOIN gb_inferences i ON i.id = a.inference_id
        LEFT JOIN gb_models m ON m.id = i.model_id
        WHERE a.parent_id IN {dialect.of(conn).id_list("?")} AND a.kind = 'chunk_summary'"""


def get_document(conn: Connection, artifact_id: int) -> dict[str, Any]:
    """An artifact with what hangs off it, as `gb show` needs it.

    Keys of the artifact row, plus `chunks` (each with its `summary`, or None, and its
    `situating_context` from Contextual Retrieval, or None),
    `summary` (the artifact's own summary when it is a chunk), and the `entities` and
    `edges` linked to it or to its chunks (edges with source_name and target_name).
    Summaries carry `model` and `reasoning` from their inference. A document also has
    its `status` and `pending` (document_state) in place of those columns.
    """
    doc = _require(conn, artifact_id)
    chunks = _rows(
        conn,
        """SELECT * FROM gb_artifacts WHERE parent_id = ? AND chunk_index IS NOT NULL
           ORDER BY chunk_index, id""",
        (artifact_id,),
    )
    ids = [artifact_id, *(c["id"] for c in chunks)]
    summaries = {s["parent_id"]: s for s in _rows(conn, _summary_sql(conn), (json.dumps(ids),))}
    contexts = {
        r["parent_id"]: r["text"]
        for r in _rows(
            conn,
            f"""SELECT parent_id, text FROM gb_artifacts
               WHERE kind = ? AND parent_id IN {dialect.of(conn).id_list("?")}""",
            (CONTEXT_KIND, json.dumps(ids)),
        )
    }
    for chunk in chunks:
        chunk["summary"] = summaries.get(chunk["id"])
        chunk["situating_context"] = contexts.get(chunk["id"])
        chunk["locations"] = locations_of(chunk) or None
    doc["locations"] = locations_of(doc) or None
    doc["chunks"] = chunks
    doc["summary"] = summaries.get(artifact_id)
    if doc["parent_id"] is None:
        doc.update(document_state(doc, _chunks_pending(conn, artifact_id)))
    from gligabao.store import graph  # here: a search, which never shows, is spared it

    doc["entities"] = graph.entities_for_artifacts(conn, ids)
    doc["edges"] = graph.edges_for_artifacts(conn, ids)
    return doc


_PLACE_SQL = """SELECT a.id, a.kind, a.parent_id, a.chunk_index,
    CASE WHEN a.chunk_index IS NOT NULL THEN a.id
         WHEN a.parent_id IS NOT NULL THEN p.id END AS chunk_id,
    CASE WHEN a.chunk_index IS NOT NULL THEN a.chunk_index ELSE p.chunk_index END AS idx,
    coalesce(g.id, p.id, a.id) AS document_id
    FROM gb_artifacts a
    LEFT JOIN gb_artifacts p ON p.id = a.parent_id
    LEFT JOIN gb_artifacts g ON g.id = p.parent_id
    WHERE a.id = ?"""


def artifact_place(conn: Connection, artifact_id: int) -> dict[str, Any]:
    """Where an artifact stands, since documents, chunks and what hangs off chunks share
    one id sequence: `role` ('document', 'chunk' or the derived kind), `document_id`,
    `chunk_id` and `chunk_index` (None for a document), `chunk_count` and `source` of its
    document, and `words`, how a message names it ("chunk 4 of 7 of document 12 (a.md)")."""
    row = _row(conn, _PLACE_SQL, (artifact_id,))
    if row is None:
        raise NotFound(f"no artifact with id {artifact_id}")
    doc = _row(
        conn, "SELECT source, chunk_count FROM gb_artifacts WHERE id = ?", (row["document_id"],)
    )
    assert doc is not None  # parents cascade: a child never outlives its document
    role = "document" if row["parent_id"] is None else row["kind"]
    if row["chunk_index"] is not None:
        role = "chunk"
    place = {
        "id": artifact_id,
        "role": role,
        "document_id": row["document_id"],
        "chunk_id": row["chunk_id"],
        "chunk_index": row["idx"],
        "chunk_count": doc["chunk_count"],
        "source": doc["source"],
    }
    place["words"] = _place_words(place)
    return place


_ROLE_WORDS = {SUMMARY_KIND: "the summary", CONTEXT_KIND: "the situating context"}


def _place_words(place: Mapping[str, Any]) -> str:
    """An artifact named for a person: chunks are counted from 1, as `gb remember` does."""
    document = f"document {place['document_id']}"
    if place["source"]:
        document += f" ({place['source']})"
    if place["role"] == "document":
        return document
    chunk = f"chunk {place['chunk_index'] + 1} of {place['chunk_count'] or '?'}"
    if place["role"] == "chunk":
        return f"{chunk} of {document}"
    role = _ROLE_WORDS.get(place["role"], place["role"])
    return f"{role} of {chunk} (id {place['chunk_id']}) of {document}"


def get_chunk(conn: Connection, artifact_id: int) -> dict[str, Any]:
    """A chunk, or what hangs off one (its summary, its situating context), as `gb show`
    needs it: the chunk row with `place` (artifact_place of the id asked for), `document`
    (id, source, status, pending), `line_start`/`line_end` (1-based lines of its byte span),
    `summary`, `situating_context`, and the `entities` and `edges` linked to it."""
    place = artifact_place(conn, artifact_id)
    if place["chunk_id"] is None:
        raise ValueError(f"artifact {artifact_id} is a document, not a chunk")
    view = get_document(conn, place["chunk_id"])
    view.pop("chunks")  # a chunk's children are its summary and context, not chunks
    document = _require(conn, place["document_id"])
    view["place"] = place
    located = locations_of(document)
    view["document"] = {
        "id": document["id"],
        "source": document["source"],
        **({"locations": located} if located else {}),  # a PDF's, a chat's: else none
        **document_state(document, _chunks_pending(conn, document["id"])),
    }
    # A web page's chunk: the lines of the file, kept with it; else its text's own.
    mapped = (locations_of(view) or {}).get("lines")
    view["line_start"], view["line_end"] = mapped or _line_span(
        document["text"], view["start_offset"], view["end_offset"]
    )
    contexts = _rows(
        conn,
        "SELECT text FROM gb_artifacts WHERE parent_id = ? AND kind = ? ORDER BY id",
        (place["chunk_id"], CONTEXT_KIND),
    )
    view["situating_context"] = contexts[0]["text"] if contexts else None
    return view


def _line_span(text: str, start: int, end: int) -> tuple[int, int]:
    return line_range(text.encode("utf-8"), start, end)


def list_documents(
    conn: Connection,
    dataset_id: int | None = None,
    include_superseded: bool = False,
    limit: int = 100,
    *,
    offset: int = 0,
    session: str | None = None,
) -> list[dict[str, Any]]:
    """Documents, newest first, without their text: a `preview` (first 120 characters),
    the `dataset` name, `chunks_stored`, and its `status` and `pending` (document_state)
    in place of those columns; only those of `session` when it is given."""
    where = ["a.parent_id IS NULL"]
    params: list[Any] = []
    if dataset_id is not None:
        where.append("a.dataset_id = ?")
        params.append(dataset_id)
    if session is not None:
        where.append("a.session_id = ?")
        params.append(session)
    if not include_superseded:
        where.append("a.superseded_by IS NULL")
    rows = _rows(
        conn,
        f"""SELECT a.id, a.dataset_id, d.name AS dataset, a.kind, a.session_id, a.source,
                   a.content_sha256, a.valid_at, a.created_at, a.tokens, a.mode,
                   a.chunk_count, a.status, a.pending, a.superseded_by,
                   substr(a.text, 1, 120) AS preview, length(a.text) AS length,
                   (SELECT count(*) FROM gb_artifacts c
                     WHERE c.parent_id = a.id AND c.chunk_index IS NOT NULL) AS chunks_stored,
                   (SELECT string_agg(c.pending, ' ') FROM gb_artifacts c
                     WHERE c.parent_id = a.id AND c.pending != '') AS chunks_pending
            FROM gb_artifacts a JOIN gb_datasets d ON d.id = a.dataset_id
            WHERE {" AND ".join(where)}
            ORDER BY a.id DESC LIMIT ? OFFSET ?""",
        [*params, limit, offset],
    )
    for row in rows:
        row.update(document_state(row, [row.pop("chunks_pending") or ""]))
    return rows


def update_status(conn: Connection, artifact_id: int, status: str) -> None:
    """'storing' while a document's chunks go in, 'complete' once all are stored."""
    if not write(conn, "UPDATE gb_artifacts SET status = ? WHERE id = ?", (status, artifact_id)):
        raise NotFound(f"no artifact with id {artifact_id}")


def set_pending(
    conn: Connection,
    artifact_id: int,
    stages: Iterable[str] | str,
    reason: str | None = None,
) -> None:
    """Replace the stages still to do on an artifact (e.g. ['embed'] when offline).

    A `reason` says why they were left, for gb status; without one the reason stored
    stays while a stage is pending, and goes once none is."""
    pending = _pending(stages)
    if reason is not None or not pending:
        sql = "UPDATE gb_artifacts SET pending = ?, left_reason = ? WHERE id = ?"
        params: tuple[Any, ...] = (pending, reason if pending else None, artifact_id)
    else:
        sql = "UPDATE gb_artifacts SET pending = ? WHERE id = ?"
        params = (pending, artifact_id)
    if not write(conn, sql, params):
        raise NotFound(f"no artifact with id {artifact_id}")


def left_reasons(conn: Connection, document_id: int) -> list[dict[str, Any]]:
    """The pieces of a document left with a stage pending and why, in order: `index`
    (the chunk's, 0 for an unchunked document), `artifact_id`, `reason` and `pending`."""
    return _rows(
        conn,
        """SELECT coalesce(chunk_index, 0) AS "index", id AS artifact_id,
                  left_reason AS reason, pending
           FROM gb_artifacts
           WHERE (id = ? OR parent_id = ?) AND left_reason IS NOT NULL AND pending != ''
           ORDER BY coalesce(chunk_index, 0)""",
        (document_id, document_id),
    )


def add_pending(conn: Connection, artifact_id: int, stage: str) -> list[str]:
    with transaction(conn):
        stages = pending_stages(_require(conn, artifact_id))
        set_pending(conn, artifact_id, [*stages, stage])
    return [*dict.fromkeys([*stages, stage])]


def remove_pending(conn: Connection, artifact_id: int, stage: str) -> list[str]:
    """Mark a stage done; returns the stages still pending."""
    with transaction(conn):
        left = [s for s in pending_stages(_require(conn, artifact_id)) if s != stage]
        set_pending(conn, artifact_id, left)
    return left


def pending_documents(
    conn: Connection, dataset_id: int, stage: str | None = None
) -> list[dict[str, Any]]:
    """Documents still `storing`, or with `stage` pending on them or on one of their chunks."""
    if stage is None:
        cond = "a.status = 'storing'"
        params: tuple[Any, ...] = (dataset_id,)
    else:
        # pending is words separated by spaces; a stage is one of them.
        cond = """(' ' || a.pending || ' ' LIKE '% ' || ? || ' %' OR EXISTS (
                     SELECT 1 FROM gb_artifacts c WHERE c.parent_id = a.id
                       AND ' ' || c.pending || ' ' LIKE '% ' || ? || ' %'))"""
        params = (stage, stage, dataset_id)
    return _rows(
        conn,
        f"""SELECT a.* FROM gb_artifacts a
            WHERE {cond} AND a.dataset_id = ? AND a.parent_id IS NULL ORDER BY a.id""",
        params,
    )


def set_superseded(conn: Connection, artifact_id: int, by_artifact_id: int | None) -> None:
    """Mark a document as replaced by a newer remembering of the same source."""
    sql = "UPDATE gb_artifacts SET superseded_by = ? WHERE id = ?"
    if not write(conn, sql, (by_artifact_id, artifact_id)):
        raise NotFound(f"no artifact with id {artifact_id}")


def set_removed(conn: Connection, artifact_id: int) -> None:
    """Mark a document whose file was deleted: superseded by nothing, which is stored as by
    itself, so that everything that skips superseded versions skips it too."""
    set_superseded(conn, artifact_id, artifact_id)


def documents_under(conn: Connection, dataset_id: int, folder: str) -> list[dict[str, Any]]:
    """The latest versions (not superseded) of the sources stored under `folder` (an
    absolute path, as sources are stored): `id` and `source`, by source."""
    prefix = folder.rstrip("/") + "/"
    return _rows(
        conn,
        """SELECT id, source FROM gb_artifacts
           WHERE dataset_id = ? AND parent_id IS NULL AND superseded_by IS NULL
             AND substr(source, 1, ?) = ?
           ORDER BY source, id""",
        (dataset_id, len(prefix), prefix),
    )


def search_artifacts_fts(
    conn: Connection,
    dataset_id: int,
    text: str,
    limit: int = 20,
    *,
    session: str | None = None,
) -> list[dict[str, Any]]:
    """Keyword hits over chunks (as embedded), summaries and unchunked documents:
    `artifact_id` and bm25 `rank` (lower is better), best first; only those of `session`
    when it is given."""
    return fts.search_artifacts(conn, dataset_id, text, limit, session)


def summary_ids(conn: Connection, chunk_ids: Sequence[int]) -> dict[int, int]:
    """summary id -> its chunk, for the chunks given that have a summary."""
    rows = _rows(
        conn,
        f"""SELECT id, parent_id FROM gb_artifacts WHERE kind = 'chunk_summary'
           AND parent_id IN {dialect.of(conn).id_list("?")}""",
        (json.dumps(list(chunk_ids)),),
    )
    return {r["id"]: r["parent_id"] for r in rows}


def chunks_with_summaries(conn: Connection, document_id: int) -> list[dict[str, Any]]:
    """A document's chunks in order, each with its summary (`summary_id`,
    `summary_text`, `summary_inference`, and the model and reasoning that made it) and
    how many entities and facts link to it (`entity_links`, `edge_links`)."""
    return _rows(
        conn,
        """SELECT c.*, s.id AS summary_id, s.text AS summary_text,
                  s.inference_id AS summary_inference, m.name AS summary_model,
                  i.reasoning AS summary_reasoning,
                  (SELECT count(*) FROM gb_entity_artifacts l WHERE l.artifact_id = c.id)
                      AS entity_links,
                  (SELECT count(*) FROM gb_edge_artifacts l WHERE l.artifact_id = c.id)
                      AS edge_links
           FROM gb_artifacts c
           LEFT JOIN gb_artifacts s ON s.parent_id = c.id AND s.kind = 'chunk_summary'
           LEFT JOIN gb_inferences i ON i.id = s.inference_id
           LEFT JOIN gb_models m ON m.id = i.model_id
           WHERE c.parent_id = ? AND c.chunk_index IS NOT NULL
           ORDER BY c.chunk_index""",
        (document_id,),
    )


def gold_pool(conn: Connection, dataset_id: int) -> list[int]:
    """The chunks a query can name as gold, by id: those of current documents whose
    source no other current document shares (the source names one document)."""
    rows = _rows(
        conn,
        """SELECT c.id FROM gb_artifacts c JOIN gb_artifacts d ON d.id = c.parent_id
           WHERE c.dataset_id = ? AND c.chunk_index IS NOT NULL AND d.superseded_by IS NULL
             AND d.source IS NOT NULL
             AND NOT EXISTS (SELECT 1 FROM gb_artifacts o
                             WHERE o.dataset_id = d.dataset_id AND o.source = d.source
                               AND o.parent_id IS NULL AND o.superseded_by IS NULL
                               AND o.id <> d.id)
           ORDER BY c.id""",
        (dataset_id,),
    )
    return [r["id"] for r in rows]


def chunks_as_gold(conn: Connection, ids: Sequence[int]) -> list[dict[str, Any]]:
    """These chunks, in the order given, with what a query written for one needs to name
    it as gold: `text`, `section`, `start_offset`, `end_offset`, its document's `source`
    and its `summary` (or None)."""
    rows = _rows(
        conn,
        f"""SELECT c.id, c.text, c.section, c.start_offset, c.end_offset, d.source,
                  s.text AS summary
           FROM gb_artifacts c JOIN gb_artifacts d ON d.id = c.parent_id
           LEFT JOIN gb_artifacts s ON s.parent_id = c.id AND s.kind = 'chunk_summary'
           WHERE c.id IN {dialect.of(conn).id_list("?")}""",
        (json.dumps(list(ids)),),
    )
    by_id = {r["id"]: r for r in rows}
    return [by_id[i] for i in ids if i in by_id]


def chunk_at(conn: Connection, document_id: int, chunk_index: int) -> dict[str, Any] | None:
    """The `id` and `pending` stages of a document's chunk at `chunk_index`, if stored."""
    return _row(
        conn,
        "SELECT id, pending FROM gb_artifacts WHERE parent_id = ? AND chunk_index = ?",
        (document_id, chunk_index),
    )


def tokens_of(conn: Connection, ids: Iterable[int]) -> dict[int, int | None]:
    """The token count stored with each of these artifacts, by id."""
    rows = _rows(
        conn,
        f"SELECT id, tokens FROM gb_artifacts WHERE id IN {dialect.of(conn).id_list('?')}",
        (json.dumps(sorted(set(ids))),),
    )
    return {r["id"]: r["tokens"] for r in rows}


def chunk_layout(conn: Connection, document_id: int) -> list[dict[str, Any]]:
    """How a document was cut: each chunk's offsets, tokens, section, anchor and context,
    in order."""
    return _rows(
        conn,
        """SELECT start_offset, end_offset, tokens, section, anchor, context FROM gb_artifacts
           WHERE parent_id = ? AND chunk_index IS NOT NULL ORDER BY chunk_index""",
        (document_id,),
    )


def chunk_contexts(conn: Connection, document_id: int) -> dict[int, str]:
    """The Contextual Retrieval context stored for each chunk of a document that has one,
    by chunk index."""
    rows = _rows(
        conn,
        """SELECT c.chunk_index, x.text FROM gb_artifacts c
           JOIN gb_artifacts x ON x.parent_id = c.id AND x.kind = ?
           WHERE c.parent_id = ? AND c.chunk_index IS NOT NULL
           ORDER BY c.chunk_index, x.id""",
        (CONTEXT_KIND, document_id),
    )
    return {row["chunk_index"]: row["text"] for row in rows}


def session_documents(conn: Connection, dataset_id: int, session: str) -> list[int]:
    """The ids of the documents (every version) remembered with `session`."""
    rows = _rows(
        conn,
        """SELECT id FROM gb_artifacts
           WHERE dataset_id = ? AND parent_id IS NULL AND session_id = ? ORDER BY id""",
        (dataset_id, session),
    )
    return [r["id"] for r in rows]
