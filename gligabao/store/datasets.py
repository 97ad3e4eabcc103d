"""Datasets: the namespaces (`--dataset NAME`) and the embedding space of each.

All of a dataset's vectors share one model and dimension; mixing two would make every
distance meaningless, so a different one is refused rather than silently stored.
"""

from __future__ import annotations

import json
import weakref

from gligabao.base.record import Frozen
from gligabao.store import vectors
from gligabao.store.connection import Connection
from gligabao.store.db import query, query_one, transaction
from gligabao.store.errors import EmbeddingMismatch, NotFound
from gligabao.store.vector_rows import INDEXES

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Dataset",
    "delete_dataset",
    "find_dataset",
    "get_dataset",
    "get_or_create_dataset",
    "list_datasets",
    "set_embedding",
    "set_search_settings",
]


# (dataset id, model, dimensions) that set_embedding stored, with the dataset's vector
# tables, on each open connection: asking again reads the row and nothing more.
_embedding_set: weakref.WeakKeyDictionary[Connection, set[tuple[int, str, int]]] = (
    weakref.WeakKeyDictionary()
)


class Dataset(Frozen):
    id: int
    name: str
    embedding_model: str | None
    embedding_dimensions: int | None
    created_at: str
    # What `gb eval --tune` learnt for this dataset's search (search.Fusion's fields).
    search_settings: dict[str, Any] | None

    def __init__(
        self,
        id: int,
        name: str,
        embedding_model: str | None,
        embedding_dimensions: int | None,
        created_at: str,
        search_settings: dict[str, Any] | None = None,
    ) -> None:
        self._fill(id, name, embedding_model, embedding_dimensions, created_at, search_settings)


def _dataset(row: dict[str, Any]) -> Dataset:
    learnt = row.get("search_settings")
    return Dataset(
        id=row["id"],
        name=row["name"],
        embedding_model=row["embedding_model"],
        embedding_dimensions=row["embedding_dimensions"],
        created_at=row["created_at"],
        search_settings=json.loads(learnt) if learnt else None,
    )


def set_search_settings(conn: Connection, dataset_id: int, settings: dict[str, Any] | None) -> None:
    """Store (None: forget) the search settings learnt for a dataset."""
    conn.execute(
        "UPDATE gb_datasets SET search_settings = ? WHERE id = ?",
        (None if settings is None else json.dumps(settings, sort_keys=True), dataset_id),
    )


def find_dataset(conn: Connection, name: str) -> Dataset | None:
    row = query_one(conn, "SELECT * FROM gb_datasets WHERE name = ?", (name,))
    return None if row is None else _dataset(row)


def require_dataset(conn: Connection, name: str) -> Dataset:
    """The dataset called `name`; if there is none, NotFound names the ones there are."""
    found = find_dataset(conn, name)
    if found is not None:
        return found
    names = [d.name for d in list_datasets(conn)]
    there = (
        "it has " + ", ".join(repr(n) for n in names)
        if names
        else "it has none yet (gb remember --dataset NAME makes one)"
    )
    raise NotFound(f"no dataset named {name!r} in {conn.path}; {there}")


def get_dataset(conn: Connection, dataset_id: int) -> Dataset:
    row = query_one(conn, "SELECT * FROM gb_datasets WHERE id = ?", (dataset_id,))
    if row is None:
        raise NotFound(f"no dataset with id {dataset_id}")
    return _dataset(row)


def get_or_create_dataset(conn: Connection, name: str) -> Dataset:
    if not name or not name.strip():
        raise ValueError("a dataset name cannot be empty")
    # Read first: a batch asks once a file, and a write transaction each time would cost
    # a BEGIN IMMEDIATE and a COMMIT for nothing.
    found = find_dataset(conn, name)
    if found is not None:
        return found
    with transaction(conn):
        conn.execute("INSERT INTO gb_datasets(name) VALUES (?) ON CONFLICT DO NOTHING", (name,))
        found = find_dataset(conn, name)
    assert found is not None
    return found


def list_datasets(conn: Connection) -> list[Dataset]:
    return [_dataset(r) for r in query(conn, "SELECT * FROM gb_datasets ORDER BY id")]


def set_embedding(conn: Connection, dataset_id: int, model: str, dimensions: int) -> Dataset:
    """Record the dataset's embedding model and dimension, and create its vector tables.

    Setting the same values again is a no-op; different ones raise EmbeddingMismatch
    once the dataset holds a vector. Until then they replace the recorded ones: a first
    run that stored no vector (its model made another size) does not bind the next.
    """
    if not model:
        raise ValueError("an embedding model name cannot be empty")
    if dimensions <= 0:
        raise ValueError(f"embedding dimensions must be positive, not {dimensions}")
    done = _embedding_set.setdefault(conn, set())
    if (dataset_id, model, dimensions) in done:
        # Set and its tables made on this connection already (a batch asks once a file):
        # read, not written; a mismatch is refused below as ever.
        ds = get_dataset(conn, dataset_id)
        if (ds.embedding_model, ds.embedding_dimensions) == (model, dimensions):
            return ds
    with transaction(conn):
        ds = get_dataset(conn, dataset_id)
        recorded = (ds.embedding_model, ds.embedding_dimensions)
        if recorded != (model, dimensions) and not vectors.has_vectors(conn, dataset_id, INDEXES):
            # Nothing made with the recorded ones: tables of their size go with them.
            vectors.drop_vector_tables(conn, dataset_id)
            conn.execute(
                "UPDATE gb_datasets SET embedding_model = ?, embedding_dimensions = ? WHERE id = ?",
                (model, dimensions, dataset_id),
            )
        elif recorded != (model, dimensions):
            raise EmbeddingMismatch(
                f"dataset '{ds.name}' holds vectors made with {ds.embedding_model} "
                f"({ds.embedding_dimensions} dimensions), not {model} ({dimensions}); "
                "set embeddings.model and embeddings.dimensions back, or use another --dataset"
            )
        vectors.ensure_vector_tables(conn, dataset_id, dimensions)
        ds = get_dataset(conn, dataset_id)
    if not conn.in_transaction:  # committed, not a savepoint that may yet roll back
        done.add((dataset_id, model, dimensions))
    return ds


def delete_dataset(conn: Connection, dataset_id: int) -> None:
    """Delete a dataset with everything in it, vector tables included."""
    with transaction(conn):
        get_dataset(conn, dataset_id)
        vectors.drop_vector_tables(conn, dataset_id)
        conn.execute("DELETE FROM gb_datasets WHERE id = ?", (dataset_id,))
    done = _embedding_set.get(conn, set())
    done -= {key for key in done if key[0] == dataset_id}
