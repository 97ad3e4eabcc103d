"""The store: one database holding documents, chunks, summaries, the graph, the record
of every LLM call, keyword indexes and vector indexes. Today that is one SQLite file
(FTS5 for keywords, sqlite-vec for vectors).

    from gligabao.store import open_db, transaction, artifacts, graph, vectors
    conn = open_db("gligabao.db")
    with transaction(conn):
        ...

Nothing here calls the network. Table rows come back as dicts keyed by column name;
computed results are small frozen dataclasses (or records, base/record.py, on a search's
path).

Cut for a second database (PostgreSQL with pgvector) beside SQLite: most of the store's
SQL reads the same in both, so it is written once (artifacts, graph, facts and the rest)
over a thin facade, `Connection` (connection.py: `?` placeholders, dict rows,
transactions that nest as savepoints, the dialect's name). What truly differs lives in a
package per database, `sqlite/`: connecting and locking, the schema, keyword search
(FTS5), vectors (sqlite-vec). A protocol of every store function per database would copy
the common SQL into each. Above the store, code names only `Connection`, the store's
errors (errors.py) and `store.vectors`, whichever database is behind them.

The submodules are imported where they are used (`from gligabao.store import graph`
imports graph.py then), so a command loads the parts of the store it needs only.
"""

from __future__ import annotations

from gligabao.base.lazy import exports
from gligabao.store.connection import Connection
from gligabao.store.db import integrity_problems, transaction
from gligabao.store.errors import (
    Conflict,
    DatabaseBusy,
    DatabaseError,
    EmbeddingMismatch,
    NoDatabase,
    NotFound,
    SchemaTooNew,
)
from gligabao.store.opening import open_db, peek_db

# Imported where they are used: see __getattr__. Each name is a module of the store, or
# of the database's own package where each database does it its own way.
_SUBMODULES = {
    "artifacts": "gligabao.store.artifacts",
    "datasets": "gligabao.store.datasets",
    "db": "gligabao.store.db",
    "forget": "gligabao.store.forget",
    "fts": "gligabao.store.fts",
    "graph": "gligabao.store.graph",
    "hits": "gligabao.store.hits",
    "inferences": "gligabao.store.inferences",
    "migrations": "gligabao.store.sqlite.migrations",
    "stats": "gligabao.store.stats",
    "vectors": "gligabao.store.vectors",
}

__all__ = [
    "Conflict",
    "Connection",
    "DatabaseBusy",
    "DatabaseError",
    "EmbeddingMismatch",
    "NoDatabase",
    "NotFound",
    "SchemaTooNew",
    "integrity_problems",
    "open_db",
    "peek_db",
    "transaction",
    *_SUBMODULES,
]


# `store.graph` after `from gligabao import store`, loaded then.
__getattr__, __dir__ = exports(__name__, _SUBMODULES, listed=__all__)
