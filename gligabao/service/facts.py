"""The temporal graph read back as every face reads it: facts, entities and one entity,
searched by BM25 and by meaning (BM25 alone, with a notice, where vectors cannot be
used), and a fact with why it is held; the types they answer."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from gligabao.errors import UsageError
from gligabao.graph import paths, queries
from gligabao.graph.merges import Merge
from gligabao.graph.paths import Paths
from gligabao.graph.queries import AmbiguousEntity, Entity, EntityView, Evidence, Fact
from gligabao.service.searching import Notice, or_bm25, query_vector

if TYPE_CHECKING:
    from gligabao.config import Config
    from gligabao.llm.float32 import Float32
    from gligabao.store import Connection
    from gligabao.store.datasets import Dataset

T = TypeVar("T")

__all__ = [
    "AmbiguousEntity",
    "Entity",
    "EntityView",
    "Evidence",
    "Fact",
    "Merge",
    "Why",
    "entities",
    "entity",
    "evidence_lines",
    "facts",
    "path",
    "why",
]


@dataclass(frozen=True)
class Why(Fact):
    """A fact with each place that states it and, when closed, the fact that closed it
    (with its own evidence): what `gb why --json` prints."""

    closer: Fact | None = None

    def as_json(self) -> dict[str, Any]:
        return {**super().as_json(), "closer": self.closer.as_json() if self.closer else None}


def facts(
    config: Config,
    conn: Connection,
    dataset: Dataset,
    query: str | None,
    *,
    about: str | None,
    at: str | None,
    known_at: str | None,
    closed: bool,
    relation: str | None,
    session: str | None,
    limit: int,
    notice: Notice,
) -> list[Fact]:
    """The facts of `dataset` (gb facts): `about` names an entity (name or id)."""
    entity_ids = [e["id"] for e in queries.find_entities(conn, dataset, about)] if about else None
    vector = query_vector(config, conn, dataset, query, "edges", notice) if query else None

    def run(with_vectors: bool) -> list[Fact]:
        return queries.facts(
            conn,
            dataset,
            query,
            about=entity_ids,
            at=at,
            known_at=known_at,
            closed=closed,
            relation=relation.upper() if relation else None,
            session=session,
            limit=limit,
            query_vector=vector if with_vectors else None,
            depth=config["search.depth"],
            rrf_k=config["search.rrf_k"],
        )

    return _searched(run, vector, notice)


def entity(
    config: Config, conn: Connection, dataset: Dataset, name: str, *, at: str | None, depth: int
) -> EntityView:
    """One entity by name or id (gb entity)."""
    # Only for a name no entity has: no word on how it was looked up.
    vector = query_vector(config, conn, dataset, name, "entities", None)

    def run(with_vectors: bool) -> EntityView:
        near = vector if with_vectors else None
        return queries.entity(conn, dataset, name, at=at, depth=depth, query_vector=near)

    return _searched(run, vector, None)


def entities(
    config: Config,
    conn: Connection,
    dataset: Dataset,
    query: str | None,
    *,
    limit: int,
    notice: Notice,
) -> list[Entity]:
    """Entities by name, or searched by `query` (gb entities)."""
    vector = query_vector(config, conn, dataset, query, "entities", notice) if query else None

    def run(with_vectors: bool) -> list[Entity]:
        return queries.entities(
            conn,
            dataset,
            query,
            limit=limit,
            query_vector=vector if with_vectors else None,
            depth=config["search.depth"],
            rrf_k=config["search.rrf_k"],
        )

    return _searched(run, vector, notice)


def path(
    conn: Connection,
    dataset: Dataset,
    first: str,
    second: str,
    *,
    at: str | None,
    known_at: str | None,
    max_depth: int,
) -> Paths:
    """The shortest chains of facts between two entities named or by id (gb path). No
    model is asked anything: a name no entity has is not looked up by meaning."""
    source = queries.find_entity(conn, dataset, first)
    target = queries.find_entity(conn, dataset, second)
    if source["id"] == target["id"]:
        raise UsageError(
            f"{first!r} and {second!r} are one entity ({source['id']} {source['name']}): name two"
        )
    return paths.shortest_paths(
        conn, dataset, source, target, at=at, known_at=known_at, max_depth=max_depth
    )


def why(conn: Connection, dataset: Dataset, fact_id: int) -> Why | None:
    """A fact with its evidence and what closed it (gb why), or None when there is none."""
    fact = queries.get_fact(conn, dataset, fact_id)
    if fact is None:
        return None
    closer = queries.get_fact(conn, dataset, fact.closed_by["id"]) if fact.closed_by else None
    shown = {f.name: getattr(fact, f.name) for f in dataclasses.fields(fact)}
    return Why(**shown, closer=closer)


def evidence_lines(conn: Connection, document_id: int, start: int, end: int) -> tuple[bytes, int]:
    """The document's bytes from the line before `start` to the line after `end`, and the
    offset they begin at: the lines a quote is shown in."""
    from gligabao.store.facts import document_bytes

    data = document_bytes(conn, document_id, end + 4096)
    first = data.rfind(b"\n", 0, max(0, data.rfind(b"\n", 0, start))) + 1
    after = data.find(b"\n", end)
    after = data.find(b"\n", after + 1) if after >= 0 else -1
    return data[first : after if after >= 0 else len(data)], first


def _searched(
    run: Callable[[bool], T], vector: Callable[[], Float32] | None, notice: Notice | None
) -> T:
    """`run` with the query's vector when it can be compared, falling back to BM25 alone
    (said to `notice`) when it cannot be had; by BM25 alone when there is none."""
    return or_bm25(run, notice)[0] if vector is not None else run(False)
