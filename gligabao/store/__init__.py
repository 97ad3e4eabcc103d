"""The store: one SQLite file holding documents, chunks, summaries, the graph, the record
of every LLM call, FTS5 keyword indexes and sqlite-vec vector indexes (SPEC S1-S5).

    from gligabao.store import open_db, transaction, artifacts, graph, vectors
    conn = open_db("gligabao.db")
    with transaction(conn):
        ...

Nothing here calls the network. Table rows come back as dicts keyed by column name;
computed results are small frozen dataclasses.

The submodules are imported where they are used (`from gligabao.store import graph`
imports graph.py then), so a command loads the parts of the store it needs only.
"""

from __future__ import annotations

from types import ModuleType

from gligabao.store.db import Connection, integrity_problems, open_db, transaction
from gligabao.store.errors import (
    DatabaseBusy,
    DatabaseError,
    EmbeddingMismatch,
    NotFound,
    SchemaTooNew,
)

# Imported where they are used: see __getattr__.
_SUBMODULES = (
    "artifacts",
    "datasets",
    "db",
    "forget",
    "fts",
    "graph",
    "hits",
    "inferences",
    "migrations",
    "stats",
    "vectors",
)

__all__ = [
    "Connection",
    "DatabaseBusy",
    "DatabaseError",
    "EmbeddingMismatch",
    "NotFound",
    "SchemaTooNew",
    "integrity_problems",
    "open_db",
    "transaction",
    *_SUBMODULES,
]


def __getattr__(name: str) -> ModuleType:  # `store.graph` after `from gligabao import store`
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"gligabao.store.{name}")
    raise AttributeError(f"module 'gligabao.store' has no attribute {name!r}")
