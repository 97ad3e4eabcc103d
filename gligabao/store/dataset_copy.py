"""One dataset of a store copied into a new dataset of another (gb copy --into), beside
whatever that one holds already: documents, chunks and summaries, the graph with every
temporal field and its evidence, the LLM calls the dataset made or reused (so a later
run finds their answers by request hash and pays for nothing again), its search
settings and embedding model, its keyword rows and its vectors.

The destination numbers its own rows, so every row gets a new id. The rows of a table
are shifted past the destination's largest id (new = old + offset), keeping their order
and gaps, and each reference is shifted with the row it names: listings that sort ties
by id sort the copy as they sorted the source, and no map of millions of ids is held.

All of it is one transaction on the destination (its other writers wait): a copy cut
short leaves nothing behind, and is run again from the start. The source is read in one
snapshot, a page at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gligabao.store import copying, dialect, fts, vectors
from gligabao.store.connection import Connection
from gligabao.store.copying import UNKNOWN, CopyReport, NotEmpty, Progress
from gligabao.store.datasets import find_dataset, require_dataset
from gligabao.store.db import insert, query, query_one, read_transaction, scalar, transaction
from gligabao.store.errors import Conflict
from gligabao.store.inferences import model_id
from gligabao.store.vector_rows import INDEXES, VectorRow, parse_vector_id, vector_id

__all__ = ["copy_dataset"]

_DATASET = "gb_datasets"  # a reference to the dataset copied: the new one
_MODEL = "gb_models"  # a model, by its name in the destination
# Tables shifted.
_IDS = ("gb_inferences", "gb_artifacts", "gb_entities", "gb_edges", "gb_merges")


@dataclass(frozen=True)
class _Table:
    """A table's rows of the dataset: `where` picks them (each `?` the dataset's id),
    `refs` names what each id column points at, `later` the references forward (written
    once every row is in), `cleared` what means nothing in another store."""

    name: str
    key: tuple[str, ...]
    where: str
    refs: Mapping[str, str]
    later: Mapping[str, str] | None = None
    cleared: tuple[str, ...] = ()

    @property
    def marks(self) -> int:
        return self.where.count("?")


_OWN = "dataset_id = ?"
# The calls the dataset made, and those whose answers it reused (stored with another
# dataset's, or with none once that one was deleted): every answer its rows point at.
_CALLS = (
    "dataset_id = ? OR id IN (SELECT inference_id FROM gb_artifacts WHERE dataset_id = ?)"
    " OR document_id IN (SELECT id FROM gb_artifacts WHERE dataset_id = ?)"
)
_TABLES: Sequence[_Table] = (
    _Table(
        "gb_inferences",
        ("id",),
        _CALLS,
        {"id": "gb_inferences", "model_id": _MODEL, "dataset_id": _DATASET},
        later={"document_id": "gb_artifacts"},
    ),
    _Table(
        "gb_artifacts",
        ("id",),
        _OWN,
        {
            "id": "gb_artifacts",
            "dataset_id": _DATASET,
            "parent_id": "gb_artifacts",
            "inference_id": "gb_inferences",
        },
        later={"superseded_by": "gb_artifacts"},
    ),
    _Table("gb_entities", ("id",), _OWN, {"id": "gb_entities", "dataset_id": _DATASET}),
    _Table(
        "gb_edges",
        ("id",),
        _OWN,
        {
            "id": "gb_edges",
            "dataset_id": _DATASET,
            "source_entity_id": "gb_entities",
            "target_entity_id": "gb_entities",
            "artifact_id": "gb_artifacts",
        },
        later={"invalidated_by_edge_id": "gb_edges"},
    ),
    _Table(
        "gb_entity_artifacts",
        ("entity_id", "artifact_id"),
        "entity_id IN (SELECT id FROM gb_entities WHERE dataset_id = ?)",
        {"entity_id": "gb_entities", "artifact_id": "gb_artifacts"},
    ),
    _Table(
        "gb_edge_artifacts",
        ("edge_id", "artifact_id"),
        "edge_id IN (SELECT id FROM gb_edges WHERE dataset_id = ?)",
        {"edge_id": "gb_edges", "artifact_id": "gb_artifacts"},
    ),
    _Table(
        "gb_session_entities",
        ("dataset_id", "session_id", "entity_id"),
        _OWN,
        {"dataset_id": _DATASET, "entity_id": "gb_entities"},
    ),
    _Table(
        "gb_session_edges",
        ("dataset_id", "session_id", "edge_id"),
        _OWN,
        {"dataset_id": _DATASET, "edge_id": "gb_edges"},
    ),
    # A claim keeps the moment a text cut short was being remembered against; its run
    # is one of the other store's, so it is copied released.
    _Table(
        "gb_claims",
        ("dataset_id", "content_sha256"),
        _OWN,
        {"dataset_id": _DATASET},
        cleared=("owner", "heartbeat_at"),
    ),
    _Table(
        "gb_merges",
        ("id",),
        _OWN,
        {
            "id": "gb_merges",
            "dataset_id": _DATASET,
            "entity_id": "gb_entities",
            "artifact_id": "gb_artifacts",
            "inference_id": "gb_inferences",
            "restored_id": "gb_entities",
        },
    ),
    _Table(
        "gb_merge_edges",
        ("merge_id", "edge_id"),
        "merge_id IN (SELECT id FROM gb_merges WHERE dataset_id = ?)",
        {"merge_id": "gb_merges", "edge_id": "gb_edges"},
    ),
    _Table(
        "gb_kept_apart",
        ("entity_id", "other_id"),
        "entity_id IN (SELECT id FROM gb_entities WHERE dataset_id = ?)",
        {"entity_id": "gb_entities", "other_id": "gb_entities"},
    ),
)
_VECTOR_ROWS = {
    "entities": "gb_entities",
    "edges": "gb_edges",
    "chunks": "gb_artifacts",
    "summaries": "gb_artifacts",
}


@dataclass
class _Shift:
    """Where each source row lands in the destination."""

    source_dataset: int
    dataset: int
    offsets: dict[str, int]
    models: dict[int, int]

    def __call__(self, target: str, value: Any) -> Any:
        if value is None:
            return None
        if target == _DATASET:  # a call stored with another dataset keeps none here
            return self.dataset if value == self.source_dataset else None
        if target == _MODEL:
            return self.models[value]
        return value + self.offsets[target]


def copy_dataset(
    source: Connection,
    destination: Connection,
    *,
    dataset: str,
    into: str,
    source_name: str,
    on_progress: Progress | None = None,
) -> CopyReport:
    """Copy the dataset `dataset` of `source` into a new dataset `into` of `destination`
    (see the module's docstring). NotFound when the source has no such dataset, Conflict
    when the destination has one called `into`: nothing is written then."""
    progress = on_progress or (lambda what, done, total: None)
    report = CopyReport(source_name, destination.path, dataset=dataset, into=into)
    with read_transaction(source):
        found = require_dataset(source, dataset)
        with transaction(destination):
            _refuse(destination, into)
            shift = _plan(source, destination, found.id, into)
            report.rows[_DATASET] = 1
            for table in _TABLES:
                report.rows[table.name] = _copy_rows(source, destination, table, shift, progress)
            for table in _TABLES:
                for column, target in (table.later or {}).items():
                    _point_forward(source, destination, table, column, target, shift, progress)
            for name in _IDS:
                follow = dialect.of(destination).ids_given(name)
                if follow is not None:
                    destination.execute(follow)
            report.keyword_rows = _copy_keywords(source, destination, shift, progress)
            report.vectors = _copy_vectors(source, destination, found, shift, progress)
    return report


def _refuse(destination: Connection, into: str) -> None:
    """Conflict when `into` is taken; NotEmpty when a whole copy into the destination was
    cut short (it would go on with the ids it had, some of them this copy's)."""
    if find_dataset(destination, into) is not None:
        raise Conflict(
            f"{destination.path} has a dataset named {into!r} already; "
            "copy --into a new name (nothing was written)"
        )
    unfinished = query_one(
        destination, "SELECT source FROM gb_copies WHERE finished_at IS NULL LIMIT 1"
    )
    if unfinished is not None:
        raise NotEmpty(
            f"{destination.path} holds a copy of {unfinished['source']} cut short; "
            "finish it first (gb copy --from it again), then copy --into"
        )


def _plan(source: Connection, destination: Connection, dataset_id: int, into: str) -> _Shift:
    """The new dataset, made, and how each table's ids shift into the destination."""
    shift = _Shift(dataset_id, _new_dataset(source, destination, dataset_id, into), {}, {})
    for table in _TABLES:
        if table.name not in _IDS:
            continue
        first = scalar(
            source,
            f"SELECT min(id) FROM {table.name} WHERE {table.where}",
            (dataset_id,) * table.marks,
        )
        last = scalar(destination, f"SELECT coalesce(max(id), 0) FROM {table.name}")
        shift.offsets[table.name] = 0 if first is None else int(last) + 1 - int(first)
    models = query(
        source,
        f"SELECT id, name FROM gb_models WHERE id IN "
        f"(SELECT model_id FROM gb_inferences WHERE {_CALLS})",
        (dataset_id,) * _CALLS.count("?"),
    )
    shift.models = {m["id"]: model_id(destination, m["name"]) for m in models}
    return shift


def _new_dataset(source: Connection, destination: Connection, dataset_id: int, into: str) -> int:
    """The dataset's row under its new name: its embedding model and dimensions, its
    learnt search settings, all it says of itself."""
    row = query_one(source, "SELECT * FROM gb_datasets WHERE id = ?", (dataset_id,))
    assert row is not None  # found in this snapshot already
    values = {**{k: v for k, v in row.items() if k != "id"}, "name": into}
    names = ", ".join(f'"{c}"' for c in values)
    marks = ", ".join("?" for _ in values)
    return insert(
        destination, f"INSERT INTO gb_datasets({names}) VALUES ({marks})", list(values.values())
    )


def _copy_rows(
    source: Connection, destination: Connection, table: _Table, shift: _Shift, progress: Progress
) -> int:
    params = (shift.source_dataset,) * table.marks
    total = int(scalar(source, f"SELECT count(*) FROM {table.name} WHERE {table.where}", params))
    columns = copying.table_columns(source, table.name)
    if not total or not columns:
        return 0
    names = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" for _ in columns)
    sql = f"INSERT INTO {table.name}({names}) VALUES ({marks})"
    blank = {*table.cleared, *(table.later or {})}
    done = 0
    for rows in copying.batches(source, table.name, table.key, table.where, params):
        destination.executemany(
            sql, [[_value(table, c, row[c], shift, blank) for c in columns] for row in rows]
        )
        done += len(rows)
        progress(table.name, done, total)
    return done


def _value(table: _Table, column: str, value: Any, shift: _Shift, blank: set[str]) -> Any:
    if column in blank:
        return None
    target = table.refs.get(column)
    return value if target is None else shift(target, value)


def _point_forward(
    source: Connection,
    destination: Connection,
    table: _Table,
    column: str,
    target: str,
    shift: _Shift,
    progress: Progress,
) -> None:
    """Write the references forward; only to rows of the dataset (a reused call may have
    served another dataset's document, which is not here)."""
    where = f"({table.where}) AND {column} IN (SELECT id FROM {target} WHERE dataset_id = ?)"
    params = (shift.source_dataset,) * (table.marks + 1)
    done = 0
    for rows in copying.batches(source, table.name, ("id",), where, params):
        destination.executemany(
            f"UPDATE {table.name} SET {column} = ? WHERE id = ?",
            [(shift(target, r[column]), shift(table.name, r["id"])) for r in rows],
        )
        done += len(rows)
    progress(f"{table.name}.{column}", done, done)


def _copy_keywords(
    source: Connection, destination: Connection, shift: _Shift, progress: Progress
) -> int:
    """The dataset's rows of the artifacts' keyword index, written again from their texts
    (the entities' and facts' rows follow their rows by themselves)."""
    done, after = 0, 0
    while rows := fts.artifact_rows(source, after, copying.BATCH):
        for row in rows:
            if row["dataset_id"] == shift.source_dataset:
                new = shift("gb_artifacts", row["id"])
                fts.index_artifact_text(destination, new, row["text"], row["kind"], shift.dataset)
                done += 1
        after = rows[-1]["id"]
        progress("keyword index", done, UNKNOWN)
    return done


def _copy_vectors(
    source: Connection, destination: Connection, found: Any, shift: _Shift, progress: Progress
) -> int:
    if found.embedding_dimensions is None:
        return 0
    vectors.ensure_vector_tables(destination, shift.dataset, found.embedding_dimensions)
    copied = 0
    for index in INDEXES:
        after = ""
        while rows := vectors.all_vectors(source, found.id, index, after, copying.BATCH):
            vectors.upsert_vectors(
                destination, shift.dataset, index, [_shifted(row, index, shift) for row in rows]
            )
            copied, after = copied + len(rows), rows[-1].vector_id
            progress(f"{index} vectors", copied, UNKNOWN)
    return copied


def _shifted(row: VectorRow, index: str, shift: _Shift) -> VectorRow:
    """A vector under its row's new id: `chunk-12.3` (a chunk's fourth piece) as
    `chunk-<new>.3`; the rows its metadata names shifted too, its chunk index kept."""
    _, old = parse_vector_id(row.vector_id)
    piece = row.vector_id[len(vector_id(index, old)) :]
    new = vector_id(index, shift(_VECTOR_ROWS[index], old)) + piece
    metadata = {k: v if k == "index" else shift("gb_artifacts", v) for k, v in row.metadata.items()}
    return VectorRow(new, row.embedding, metadata)
