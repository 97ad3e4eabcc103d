"""The store: one database holding documents, chunks, summaries, the graph, the record
of every LLM call, keyword indexes and vector indexes. Today that is one SQLite file
(FTS5 for keywords, sqlite-vec for vectors).

    from gligabao.store import open_db, transaction, artifacts, graph, vectors
    conn = open_db("gligabao.db")
    with transaction(conn):
        ...

Nothing here calls the network. Table rows come back as dicts keyed by column name;
computed results are small frozen dataclasses.

How it is cut, so that a second database (PostgreSQL with pgvector) can be added beside
SQLite: most of the store's SQL reads the same in both, so it is written once, over a
thin connection facade (`Connection`: `?` placeholders, dict rows, transactions that nest
as savepoints, the dialect's name), in artifacts, graph, facts and the rest. What really
differs lives in one package per database, `sqlite/`: connecting and locking (connect),
the schema (migrations), keyword search (fts) and vectors (vectors). A protocol of every
store function per database would copy that common SQL into each; this keeps it single.
Above the store, code names only `Connection` and the store's errors (errors.py), and
reaches the vectors and the schema as `store.vectors` and `store.migrations`, whichever
database holds them.

The submodules are imported where they are used (`from gligabao.store import graph`
imports graph.py then), so a command loads the parts of the store it needs only.
"""

from __future__ import annotations

from types import ModuleType

from gligabao.store.connection import Connection
from gligabao.store.db import integrity_problems, transaction
from gligabao.store.errors import (
    DatabaseBusy,
    DatabaseError,
    EmbeddingMismatch,
    NotFound,
    SchemaTooNew,
)
from gligabao.store.sqlite.connect import open_db, peek_db

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
    "vectors": "gligabao.store.sqlite.vectors",
}

__all__ = [
    "Connection",
    "DatabaseBusy",
    "DatabaseError",
    "EmbeddingMismatch",
    "NotFound",
    "SchemaTooNew",
    "integrity_problems",
    "open_db",
    "peek_db",
    "transaction",
    *_SUBMODULES,
]


def __getattr__(name: str) -> ModuleType:  # `store.graph` after `from gligabao import store`
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(_SUBMODULES[name])
    raise AttributeError(f"module 'gligabao.store' has no attribute {name!r}")
