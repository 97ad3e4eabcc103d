"""The shortest chains of facts linking two entities, as `gb path` shows them.

    from gligabao.graph.paths import shortest_paths
    found = shortest_paths(conn, dataset, alice_id, dmitri_id, at="2022-01-01")
    for hops in found.paths:
        print(" / ".join(f"{h.fact.source} {h.fact.relation} {h.fact.target}" for h in hops))

A breadth-first search from the first entity over the facts current now (or true `at` a
time, or held by the graph `known_at` one), each fact crossed either way, one query per
level for the whole frontier; it stops at the level that reaches the second entity, or at
`max_depth` facts. Only the facts of the chains kept are then read whole, with their
evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gligabao.graph.queries import Fact, attach_evidence
from gligabao.store import Connection
from gligabao.store import facts as store_facts
from gligabao.store.datasets import Dataset

__all__ = ["Hop", "Paths", "shortest_paths"]

# The most chains one answer shows: enough to see that there are several.
MOST_PATHS = 5

# One step of a chain: (entity it leaves, entity it reaches, fact id).
Step = tuple[int, int, int]


@dataclass(frozen=True)
class Hop:
    """One fact of a chain, shown in its own direction; `reversed` when the chain crosses
    it from its target to its source."""

    fact: Fact
    reversed: bool

    def as_json(self) -> dict[str, Any]:
        return {**self.fact.as_json(), "reversed": self.reversed}


@dataclass(frozen=True)
class Paths:
    """The shortest chains of facts from one entity to another (each entity `{id, name,
    type}`), at most MOST_PATHS of them, in the order of their facts' ids: what `gb path
    --json` prints. None found: `paths` is empty."""

    source: dict[str, Any]
    target: dict[str, Any]
    at: str | None
    known_at: str | None
    max_depth: int
    paths: list[list[Hop]]

    @property
    def found(self) -> bool:
        return bool(self.paths)

    def as_json(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "at": self.at,
            "known_at": self.known_at,
            "max_depth": self.max_depth,
            "found": self.found,
            "paths": [[hop.as_json() for hop in hops] for hops in self.paths],
        }


def shortest_paths(
    conn: Connection,
    dataset: Dataset,
    source: dict[str, Any],
    target: dict[str, Any],
    *,
    at: str | None = None,
    known_at: str | None = None,
    max_depth: int = 4,
    limit: int = MOST_PATHS,
) -> Paths:
    """The shortest chains of at most `max_depth` facts from entity `source` to entity
    `target` (rows of store.facts.entities), through current facts unless `at` or
    `known_at` say otherwise (as `gb facts` filters them)."""
    parents = _search(conn, dataset.id, source["id"], target["id"], at, known_at, max_depth)
    chains = _chains(parents, source["id"], target["id"], limit) if parents else []
    return Paths(
        source=_shown(source),
        target=_shown(target),
        at=at,
        known_at=known_at,
        max_depth=max_depth,
        paths=_hops(conn, dataset, chains),
    )


def _shown(entity: dict[str, Any]) -> dict[str, Any]:
    return {"id": entity["id"], "name": entity["name"], "type": entity["type"]}


def _search(
    conn: Connection,
    dataset_id: int,
    start: int,
    goal: int,
    at: str | None,
    known_at: str | None,
    max_depth: int,
) -> dict[int, list[tuple[int, int]]] | None:
    """Breadth first from `start`: each entity reached, with every (entity, fact) it is
    first reached by at its level, once `goal` is reached; None if it is not within
    `max_depth` facts."""
    level = {start: 0}
    parents: dict[int, list[tuple[int, int]]] = {}
    frontier = [start]
    for depth in range(1, max_depth + 1):
        here = set(frontier)
        for edge in store_facts.edge_ends(conn, dataset_id, frontier, at=at, known_at=known_at):
            ends = (edge["source_entity_id"], edge["target_entity_id"])
            for near, far in (ends, ends[::-1]):
                # Reached at this level (first, or again by another fact): a parent; an
                # entity reached at an earlier level is no shorter this way.
                if near in here and level.setdefault(far, depth) == depth:
                    parents.setdefault(far, []).append((near, edge["id"]))
        if goal in level:
            return parents
        frontier = [entity for entity, found in level.items() if found == depth]
        if not frontier:
            return None
    return None


def _chains(
    parents: dict[int, list[tuple[int, int]]], start: int, goal: int, limit: int
) -> list[list[Step]]:
    """The first `limit` chains from `start` to `goal` through `parents`, in the order of
    their facts' ids."""
    leads = _leading_to(parents, goal)
    onward: dict[int, list[tuple[int, int]]] = {}
    for entity in leads:
        for parent, edge in parents.get(entity, ()):
            onward.setdefault(parent, []).append((edge, entity))
    for steps in onward.values():
        steps.sort()

    # Depth first, without recursion (a chain may be longer than Python's stack is
    # deep), each chain held as a linked list of its steps, last first.
    found: list[list[Step]] = []
    todo: list[tuple[int, Any]] = [(start, None)]
    while todo and len(found) < limit:
        entity, chain = todo.pop()
        if entity == goal:
            found.append(_unlinked(chain))
            continue
        for edge, after in reversed(onward.get(entity, ())):
            todo.append((after, ((entity, after, edge), chain)))
    return found


def _unlinked(chain: Any) -> list[Step]:
    """The steps of a linked chain `(last step, (step before, ...))`, first first."""
    steps: list[Step] = []
    while chain is not None:
        step, chain = chain
        steps.append(step)
    return steps[::-1]


def _leading_to(parents: dict[int, list[tuple[int, int]]], goal: int) -> set[int]:
    """The entities on some shortest chain to `goal` (`goal` among them): every one of
    them leads there, so no walk from `start` is a dead end."""
    leads, todo = {goal}, [goal]
    while todo:
        for parent, _ in parents.get(todo.pop(), ()):
            if parent not in leads:
                leads.add(parent)
                todo.append(parent)
    return leads


def _hops(conn: Connection, dataset: Dataset, chains: list[list[Step]]) -> list[list[Hop]]:
    """The chains with their facts read whole, with their evidence: one query for all."""
    ids = sorted({edge for chain in chains for _, _, edge in chain})
    rows = store_facts.facts(conn, dataset.id, ids=ids, closed=True) if ids else []
    facts = {fact.id: fact for fact in attach_evidence(conn, rows)}
    return [
        [Hop(facts[edge], reversed=facts[edge].source_id != leaves) for leaves, _, edge in chain]
        for chain in chains
    ]
