"""Merges read back and undone: which extracted entity became which known one, why."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from gligabao.store import Connection
from gligabao.store import merges as store_merges
from gligabao.store.datasets import Dataset

__all__ = ["Merge", "list_merges", "merged_names", "unmerge"]


@dataclass(frozen=True)
class Merge:
    """An extracted entity (`name`, `type`, from chunk `artifact_id`) merged into the
    entity `entity_id`: by `rule` ("same normalized name", or "resolve": the LLM's
    answer of call `inference_id`), with a `score` where one exists. Undone, it names
    the entity it became again (`restored_id`)."""

    id: int
    entity_id: int
    entity_name: str
    entity_type: str
    name: str
    type: str
    artifact_id: int | None
    rule: str
    inference_id: int | None
    score: float | None
    created_at: str
    undone_at: str | None
    restored_id: int | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Merge:
        return cls(**{f.name: row[f.name] for f in fields(cls)})

    def as_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def list_merges(
    conn: Connection, dataset: Dataset, *, since: str | None = None, entity_id: int | None = None
) -> list[Merge]:
    """The dataset's merges, oldest first (from `since` on; into or out of one entity)."""
    rows = store_merges.list_merges(conn, dataset.id, since=since, entity_id=entity_id)
    return [Merge.from_row(r) for r in rows]


def merged_names(conn: Connection, dataset: Dataset) -> dict[str, list[str]]:
    """The names merged into each entity (merges not undone), by the entity's name as
    stored: what else the texts called it."""
    names: dict[str, list[str]] = {}
    for merge in list_merges(conn, dataset):
        if merge.undone_at is None and merge.name != merge.entity_name:
            names.setdefault(merge.entity_name, []).append(merge.name)
    return names


def unmerge(conn: Connection, merge_id: int) -> Merge:
    """Undo a merge (see store.merges.unmerge); NotFound, or CannotUnmerge once undone."""
    return Merge.from_row(store_merges.unmerge(conn, merge_id))
