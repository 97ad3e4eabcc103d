"""The SQLite schema: versioned migrations, applied on open (sqlite.connect.open_db).

`MIGRATIONS[n - 1]` takes the schema from version n - 1 to n. Each step runs in its own
transaction that also records it in `gb_migrations` and sets `PRAGMA user_version`, so a
crash leaves the file at a whole version. Never edit a released step: append a new one.

The per-dataset sqlite-vec tables are not here: their dimension is only known once a
dataset's embedding model is set (see vectors.ensure_vector_tables).
"""

from __future__ import annotations

from gligabao.store.connection import Connection
from gligabao.store.db import now_iso, scalar, transaction
from gligabao.store.errors import SchemaTooNew

_NOW = "(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"
_FTS = "tokenize = 'porter unicode61 remove_diacritics 2'"

_V1 = f"""
CREATE TABLE gb_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
);

CREATE TABLE gb_datasets (
    id                   INTEGER PRIMARY KEY,
    name                 TEXT NOT NULL UNIQUE CHECK (name <> ''),
    embedding_model      TEXT,
    embedding_dimensions INTEGER CHECK (embedding_dimensions IS NULL OR embedding_dimensions > 0),
    created_at           TEXT NOT NULL DEFAULT {_NOW}
);

CREATE TABLE gb_models (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

-- One row per LLM call. request_hash + answer let a rerun reuse a paid answer;
-- no API key or header is ever stored here.
CREATE TABLE gb_inferences (
    id            INTEGER PRIMARY KEY,
    stage         TEXT NOT NULL,
    model_id      INTEGER NOT NULL REFERENCES gb_models(id),
    reasoning     TEXT NOT NULL DEFAULT 'none'
                  CHECK (reasoning IN ('none', 'low', 'medium', 'high')),
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    cost          REAL,
    duration_ms   INTEGER,
    created_at    TEXT NOT NULL DEFAULT {_NOW},
    request_hash  TEXT,
    answer        TEXT,
    dataset_id    INTEGER REFERENCES gb_datasets(id) ON DELETE SET NULL
);
CREATE INDEX gb_inferences_request_hash ON gb_inferences(request_hash);

-- Documents (parent_id NULL), their chunks (children, same kind) and the chunks'
-- summaries (kind 'chunk_summary', children of the chunk).
CREATE TABLE gb_artifacts (
    id             INTEGER PRIMARY KEY,
    dataset_id     INTEGER NOT NULL REFERENCES gb_datasets(id) ON DELETE CASCADE,
    kind           TEXT NOT NULL CHECK (kind <> ''),
    session_id     TEXT,
    valid_at       TEXT NOT NULL,
    created_at     TEXT NOT NULL DEFAULT {_NOW},
    parent_id      INTEGER REFERENCES gb_artifacts(id) ON DELETE CASCADE,
    text           TEXT NOT NULL,
    chunk_index    INTEGER CHECK (chunk_index IS NULL OR chunk_index >= 0),
    start_offset   INTEGER,
    end_offset     INTEGER,
    tokens         INTEGER,
    inference_id   INTEGER REFERENCES gb_inferences(id) ON DELETE SET NULL,
    query          TEXT,
    series_id      TEXT,
    source         TEXT,
    content_sha256 TEXT,
    reference_time TEXT,
    mode           TEXT,
    overlap_tokens INTEGER,
    section        TEXT,
    anchor         TEXT,
    context        TEXT,
    chunk_count    INTEGER,
    settings       TEXT,
    status         TEXT CHECK (status IS NULL OR status IN ('storing', 'complete')),
    pending        TEXT NOT NULL DEFAULT '',
    superseded_by  INTEGER REFERENCES gb_artifacts(id) ON DELETE SET NULL,
    CHECK (start_offset IS NULL OR end_offset IS NULL OR end_offset >= start_offset)
);
CREATE INDEX gb_artifacts_parent ON gb_artifacts(parent_id);
CREATE INDEX gb_artifacts_sha ON gb_artifacts(dataset_id, content_sha256);
CREATE INDEX gb_artifacts_source ON gb_artifacts(dataset_id, source);
CREATE INDEX gb_artifacts_superseded_by ON gb_artifacts(superseded_by);
-- A resumed document must never get a chunk or a summary twice.
CREATE UNIQUE INDEX gb_artifacts_chunk_once ON gb_artifacts(parent_id, chunk_index)
    WHERE chunk_index IS NOT NULL;
CREATE UNIQUE INDEX gb_artifacts_summary_once ON gb_artifacts(parent_id)
    WHERE kind = 'chunk_summary';

CREATE TABLE gb_entities (
    id         INTEGER PRIMARY KEY,
    dataset_id INTEGER NOT NULL REFERENCES gb_datasets(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    type       TEXT NOT NULL DEFAULT '',
    summary    TEXT NOT NULL DEFAULT '',
    name_norm  TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT {_NOW},
    UNIQUE (dataset_id, name_norm, type)
);

CREATE TABLE gb_edges (
    id                     INTEGER PRIMARY KEY,
    dataset_id             INTEGER NOT NULL REFERENCES gb_datasets(id) ON DELETE CASCADE,
    source_entity_id       INTEGER NOT NULL REFERENCES gb_entities(id) ON DELETE CASCADE,
    target_entity_id       INTEGER NOT NULL REFERENCES gb_entities(id) ON DELETE CASCADE,
    relation               TEXT NOT NULL,
    fact                   TEXT NOT NULL,
    valid_at               TEXT,
    invalid_at             TEXT,
    created_at             TEXT NOT NULL DEFAULT {_NOW},
    expired_at             TEXT,
    artifact_id            INTEGER REFERENCES gb_artifacts(id) ON DELETE SET NULL,
    invalidated_by_edge_id INTEGER REFERENCES gb_edges(id) ON DELETE SET NULL,
    invalidation_reason    TEXT
);
CREATE INDEX gb_edges_source ON gb_edges(source_entity_id);
CREATE INDEX gb_edges_target ON gb_edges(target_entity_id);
CREATE INDEX gb_edges_artifact ON gb_edges(artifact_id);
CREATE INDEX gb_edges_invalidated_by ON gb_edges(invalidated_by_edge_id);

-- Provenance: to the chunk an entity or edge was extracted from (or to the artifact
-- itself for a short text that was not chunked).
CREATE TABLE gb_entity_artifacts (
    entity_id   INTEGER NOT NULL REFERENCES gb_entities(id) ON DELETE CASCADE,
    artifact_id INTEGER NOT NULL REFERENCES gb_artifacts(id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, artifact_id)
) WITHOUT ROWID;
CREATE INDEX gb_entity_artifacts_artifact ON gb_entity_artifacts(artifact_id);

CREATE TABLE gb_edge_artifacts (
    edge_id     INTEGER NOT NULL REFERENCES gb_edges(id) ON DELETE CASCADE,
    artifact_id INTEGER NOT NULL REFERENCES gb_artifacts(id) ON DELETE CASCADE,
    PRIMARY KEY (edge_id, artifact_id)
) WITHOUT ROWID;
CREATE INDEX gb_edge_artifacts_artifact ON gb_edge_artifacts(artifact_id);

CREATE TABLE gb_session_entities (
    dataset_id INTEGER NOT NULL REFERENCES gb_datasets(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    entity_id  INTEGER NOT NULL REFERENCES gb_entities(id) ON DELETE CASCADE,
    PRIMARY KEY (dataset_id, session_id, entity_id)
) WITHOUT ROWID;
CREATE INDEX gb_session_entities_entity ON gb_session_entities(entity_id);

CREATE TABLE gb_session_edges (
    dataset_id INTEGER NOT NULL REFERENCES gb_datasets(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    edge_id    INTEGER NOT NULL REFERENCES gb_edges(id) ON DELETE CASCADE,
    PRIMARY KEY (dataset_id, session_id, edge_id)
) WITHOUT ROWID;
CREATE INDEX gb_session_edges_edge ON gb_session_edges(edge_id);

-- Keyword indexes. rowid = the id of the row indexed, so a delete is by rowid.
-- gb_fts_artifacts holds a chunk's text as embedded (context included), a summary, or
-- an unchunked document; it is written explicitly (artifacts.index_artifact_text).
CREATE VIRTUAL TABLE gb_fts_artifacts USING fts5(
    text, kind UNINDEXED, dataset_id UNINDEXED, {_FTS}
);
CREATE VIRTUAL TABLE gb_fts_entities USING fts5(
    name, summary, dataset_id UNINDEXED, {_FTS}
);
CREATE VIRTUAL TABLE gb_fts_edges USING fts5(
    fact, dataset_id UNINDEXED, {_FTS}
);

-- Triggers keep the keyword index in step with any delete (cascades fire them too),
-- and with entities and edges on insert and update.
CREATE TRIGGER gb_artifacts_fts_delete AFTER DELETE ON gb_artifacts BEGIN
    DELETE FROM gb_fts_artifacts WHERE rowid = old.id;
END;
CREATE TRIGGER gb_entities_fts_insert AFTER INSERT ON gb_entities BEGIN
    INSERT INTO gb_fts_entities(rowid, name, summary, dataset_id)
    VALUES (new.id, new.name, new.summary, new.dataset_id);
END;
CREATE TRIGGER gb_entities_fts_update AFTER UPDATE OF name, summary ON gb_entities BEGIN
    UPDATE gb_fts_entities SET name = new.name, summary = new.summary WHERE rowid = new.id;
END;
CREATE TRIGGER gb_entities_fts_delete AFTER DELETE ON gb_entities BEGIN
    DELETE FROM gb_fts_entities WHERE rowid = old.id;
END;
CREATE TRIGGER gb_edges_fts_insert AFTER INSERT ON gb_edges BEGIN
    INSERT INTO gb_fts_edges(rowid, fact, dataset_id) VALUES (new.id, new.fact, new.dataset_id);
END;
CREATE TRIGGER gb_edges_fts_update AFTER UPDATE OF fact ON gb_edges BEGIN
    UPDATE gb_fts_edges SET fact = new.fact WHERE rowid = new.id;
END;
CREATE TRIGGER gb_edges_fts_delete AFTER DELETE ON gb_edges BEGIN
    DELETE FROM gb_fts_edges WHERE rowid = old.id;
END;
"""

# Evidence, to the line: each (fact, chunk) link keeps the quote the
# extraction gave for the fact, its UTF-8 byte span in the document, and whether the quote
# was found in the chunk as given (exact) or only the chunk's span is known. Links of
# documents remembered before this step have none: their evidence is the chunk's span.
_V2 = """
ALTER TABLE gb_edge_artifacts ADD COLUMN quote TEXT;
ALTER TABLE gb_edge_artifacts ADD COLUMN start_offset INTEGER;
ALTER TABLE gb_edge_artifacts ADD COLUMN end_offset INTEGER;
ALTER TABLE gb_edge_artifacts ADD COLUMN exact INTEGER NOT NULL DEFAULT 0;
-- gb facts lists the newest first: in this order, read off the index, not sorted.
CREATE INDEX gb_edges_dataset_time ON gb_edges(dataset_id, coalesce(valid_at, created_at));
"""

# One run at a time per text: a remember claims (dataset, sha256) before its
# first call, and the claim keeps the moment that run's prompts are written against, so a
# rerun after a failure before anything was stored sends the same requests. `owner`
# is the run holding it ("host:pid:token"), NULL once released; `heartbeat_at` is renewed
# while it works, so a claim of a run that died is taken over.
_V3 = """
CREATE TABLE gb_claims (
    dataset_id     INTEGER NOT NULL REFERENCES gb_datasets(id) ON DELETE CASCADE,
    content_sha256 TEXT NOT NULL,
    valid_at       TEXT NOT NULL,
    reference_time TEXT NOT NULL,
    owner          TEXT,
    heartbeat_at   TEXT,
    PRIMARY KEY (dataset_id, content_sha256)
) WITHOUT ROWID;
"""

# The document each LLM call served (gb inferences ID): set once the document is stored,
# by the first run whose call it was or that reused its answer.
_V4 = """
ALTER TABLE gb_inferences ADD COLUMN
    document_id INTEGER REFERENCES gb_artifacts(id) ON DELETE SET NULL;
CREATE INDEX gb_inferences_document ON gb_inferences(document_id);
"""

# Where each chunk comes from in a file that is not plain text (a PDF's pages, a chat's
# messages: JSON, see read/documents.py), and the search settings learnt for a dataset
# from its own gold queries (gb eval --tune: JSON, see search.hybrid.Fusion).
_V5 = """
ALTER TABLE gb_artifacts ADD COLUMN locations TEXT;
ALTER TABLE gb_datasets ADD COLUMN search_settings TEXT;
"""

# Whether a dataset's chunks index holds pieces (a chunk embedded as several vectors):
# every vector search asks, and probing the ids reads them all (~4 ms at 100,000). NULL
# where not known yet (a dataset from before V6): probed then, and set by the next write
# of chunk vectors (store/sqlite/vectors.py).
_V6 = """
ALTER TABLE gb_datasets ADD COLUMN chunk_pieces INTEGER;
"""

# The request each LLM call sent (gb inferences ID shows it beside the answer): JSON,
# {"messages": [...]} for a chat, {"input": [...]} for embeddings, keys never in it. NULL
# for the calls recorded before this step.
_V7 = """
ALTER TABLE gb_inferences ADD COLUMN request TEXT;
"""

# A whole memory copied in from another store (gb copy): where from, and whether it is
# done, so that a copy cut short goes on from where it stopped rather than start again.
_V8 = """
CREATE TABLE gb_copies (
    source      TEXT PRIMARY KEY,
    started_at  TEXT NOT NULL,
    finished_at TEXT
);
"""

# The lines a chunk spans in its document, counted when it is stored: a hit shows them
# without reading the document up to the chunk (a long document's text, every hit).
# NULL for the chunks stored before this step, whose lines are counted as before.
_V9 = """
ALTER TABLE gb_artifacts ADD COLUMN line_start INTEGER;
ALTER TABLE gb_artifacts ADD COLUMN line_end INTEGER;
"""

# The key names are compared in by deterministic resolution (gligabao/base/names.py),
# NULL for the entities stored before this step until resolution next fills it. Each
# merge of an extracted entity into another, with what unmerging it puts back: the
# facts the merged extraction brought (gb_merge_edges: made by its chunk or restated,
# at which end: 1 source, 2 target, 3 both, and a restated one's vector), the merged
# entity's vector, and whether the kept entity's link to the chunk came through the
# merge alone. A pair unmerged is kept apart: never merged again by rule.
_V10 = f"""
ALTER TABLE gb_entities ADD COLUMN name_key TEXT;
CREATE INDEX gb_entities_key ON gb_entities(dataset_id, name_key);

CREATE TABLE gb_merges (
    id           INTEGER PRIMARY KEY,
    dataset_id   INTEGER NOT NULL REFERENCES gb_datasets(id) ON DELETE CASCADE,
    entity_id    INTEGER NOT NULL REFERENCES gb_entities(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    type         TEXT NOT NULL DEFAULT '',
    summary      TEXT NOT NULL DEFAULT '',
    artifact_id  INTEGER REFERENCES gb_artifacts(id) ON DELETE CASCADE,
    rule         TEXT NOT NULL,
    inference_id INTEGER REFERENCES gb_inferences(id) ON DELETE SET NULL,
    score        REAL,
    linked       INTEGER NOT NULL DEFAULT 1,
    created_at   TEXT NOT NULL DEFAULT {_NOW},
    undone_at    TEXT,
    restored_id  INTEGER REFERENCES gb_entities(id) ON DELETE SET NULL,
    vector       BLOB
);
CREATE INDEX gb_merges_entity ON gb_merges(entity_id);
CREATE INDEX gb_merges_dataset ON gb_merges(dataset_id, created_at);
CREATE INDEX gb_merges_artifact ON gb_merges(artifact_id);
CREATE INDEX gb_merges_restored ON gb_merges(restored_id);

CREATE TABLE gb_merge_edges (
    merge_id INTEGER NOT NULL REFERENCES gb_merges(id) ON DELETE CASCADE,
    edge_id  INTEGER NOT NULL REFERENCES gb_edges(id) ON DELETE CASCADE,
    created  INTEGER NOT NULL,
    ends     INTEGER NOT NULL,
    vector   BLOB,
    PRIMARY KEY (merge_id, edge_id)
) WITHOUT ROWID;
CREATE INDEX gb_merge_edges_edge ON gb_merge_edges(edge_id);

CREATE TABLE gb_kept_apart (
    entity_id  INTEGER NOT NULL REFERENCES gb_entities(id) ON DELETE CASCADE,
    other_id   INTEGER NOT NULL REFERENCES gb_entities(id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, other_id)
) WITHOUT ROWID;
CREATE INDEX gb_kept_apart_other ON gb_kept_apart(other_id);
"""

# Why a stage was left pending on a chunk (an extraction cut off down to its floor), for
# gb status; and since when an entity's summary states facts gb no longer holds (closed,
# expired or forgotten): NULL while it follows the facts, rewritten by the next online run.
_V11 = """
ALTER TABLE gb_artifacts ADD COLUMN left_reason TEXT;
ALTER TABLE gb_entities ADD COLUMN summary_stale_at TEXT;
CREATE INDEX gb_entities_stale ON gb_entities(dataset_id) WHERE summary_stale_at IS NOT NULL;
"""

# An end's facts, current first and newest first, in index order; and the facts from one
# entity to another, so. The candidates of an extracted fact are read from these without
# reading, or sorting, all the facts of a hub with thousands.
_V12 = """
DROP INDEX gb_edges_source;
DROP INDEX gb_edges_target;
CREATE INDEX gb_edges_source ON gb_edges(
    source_entity_id, (invalid_at IS NULL AND expired_at IS NULL));
CREATE INDEX gb_edges_target ON gb_edges(
    target_entity_id, (invalid_at IS NULL AND expired_at IS NULL));
CREATE INDEX gb_edges_pair ON gb_edges(
    source_entity_id, target_entity_id, (invalid_at IS NULL AND expired_at IS NULL));
"""

MIGRATIONS: list[str] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9, _V10, _V11, _V12]

SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: Connection) -> int:
    return int(scalar(conn, "PRAGMA user_version"))


def migrate(conn: Connection) -> int:
    """Apply the steps the file lacks; return the version it is at afterwards."""
    path = conn.path
    current = schema_version(conn)
    if current > SCHEMA_VERSION:
        raise SchemaTooNew(path, current, SCHEMA_VERSION)
    # Reading first means an up-to-date file is opened without taking the write lock.
    while current < SCHEMA_VERSION:
        with transaction(conn):
            # Re-read under the lock: another process may have migrated meanwhile.
            current = schema_version(conn)
            if current > SCHEMA_VERSION:
                raise SchemaTooNew(path, current, SCHEMA_VERSION)
            if current == SCHEMA_VERSION:
                break
            target = current + 1
            conn.execute(MIGRATIONS[current])
            conn.execute(
                "INSERT INTO gb_migrations(version, applied_at) VALUES (?, ?)",
                (target, now_iso()),
            )
            conn.execute(f"PRAGMA user_version = {target}")
        current = target
    return current
