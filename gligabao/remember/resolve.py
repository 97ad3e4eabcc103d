"""Resolution: which extracted entities and facts are already known.

Everything a chunk is compared against is known once every chunk is extracted: the
stored graph, and what the chunks before it in the same document extracted. So the
decisions of every chunk are prepared up front, before anything is stored:

- an exact duplicate (same ends, relation and fact), an entity whose name has the
  same key as one known (gligabao/base/names.py: case, accents, punctuation, a leading
  "the", an organization's suffix) and whose type agrees, and an item with no candidate
  at all are decided here, without the LLM;
- the rest go to the LLM in batched `resolve` calls, each holding all the undecided
  items of one or more consecutive chunks, that run while the chunks are embedded.

A decision refers to a stored row (``Ref("db", id)``), to an item an earlier chunk of
this document extracted (``Ref("doc", (chunk, i))``, given its row when that chunk is
stored), or to nothing (new). Candidates of an edge are the current facts touching
the same entities, never a search over the whole graph.
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from gligabao.base.names import name_key, type_key
from gligabao.base.times import canonical_time
from gligabao.llm import ChatRequest, resolve_request
from gligabao.store import Connection, graph, merges

MAX_CANDIDATES = 6
# Undecided items gathered into one resolve call before a new one is started: fewer,
# larger calls (about one per several chunks) instead of one per chunk.
BATCH_ITEMS = 40
DEFAULT_TYPE = "Entity"


@dataclass(frozen=True, slots=True)
class Ref:
    kind: str  # "db" | "doc" | "new"
    key: Any = None  # a row id, or (chunk index, item index)


NEW = Ref("new")


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    """An entity as one chunk's extraction gave it, before it is matched to a stored one."""

    name: str
    type: str
    summary: str
    norm: str
    key: str = ""  # the name as deterministic resolution compares it

    @property
    def same(self) -> tuple[str, str]:
        """Two entities with this in common are one."""
        return (self.key or self.norm, type_key(self.type))


@dataclass(frozen=True, slots=True)
class ExtractedEdge:
    """A fact as one chunk's extraction gave it, its ends indexes into that chunk's entities."""

    source: int  # index into the chunk's entities
    target: int
    relation: str
    fact: str
    valid_at: str | None
    invalid_at: str | None
    quote: str = ""  # the passage of the chunk that states it, as the extraction gave it


@dataclass
class Extraction:
    """One chunk's graph, cleaned: entities unique by name and type, edges by index."""

    entities: list[ExtractedEntity]
    edges: list[ExtractedEdge]
    unreadable_dates: int = 0  # given by the LLM but no date ("last March"): stored unknown

    @classmethod
    def from_answer(cls, value: dict[str, Any]) -> Extraction:
        entities: list[ExtractedEntity] = []
        seen: dict[tuple[str, str], int] = {}
        by_name: dict[str, int] = {}

        def entity(name: str, type_: str, summary: str) -> int | None:
            norm = graph.normalize_name(name)
            if not norm:
                return None
            type_ = type_.strip() or DEFAULT_TYPE
            key = (norm, type_)
            if key not in seen:
                seen[key] = len(entities)
                named = name_key(name, type_) or norm
                entities.append(ExtractedEntity(name.strip(), type_, summary.strip(), norm, named))
            by_name.setdefault(norm, seen[key])
            return seen[key]

        for item in value.get("entities", ()):
            entity(item.get("name", ""), item.get("type", ""), item.get("summary", ""))
        edges: list[ExtractedEdge] = []
        seen_edges: set[tuple[int, int, str, str]] = set()
        unreadable = 0

        def when(given: Any) -> str | None:
            nonlocal unreadable
            moment = canonical_time(given)
            if moment is None and given not in (None, ""):
                unreadable += 1
            return moment

        for item in value.get("edges", ()):
            ends = []
            for name in (item.get("source", ""), item.get("target", "")):
                norm = graph.normalize_name(name)
                index = by_name.get(norm) if norm else None
                ends.append(index if index is not None else entity(name, "", ""))
            relation = _relation(item.get("relation", ""))
            fact = " ".join(str(item.get("fact", "")).split())
            if None in ends or not fact:
                continue
            key = (ends[0], ends[1], relation, _norm_fact(fact))
            if key in seen_edges:
                continue
            seen_edges.add(key)
            edges.append(
                ExtractedEdge(
                    ends[0],
                    ends[1],
                    relation,
                    fact,
                    when(item.get("valid_at")),  # "last March" stays unknown
                    when(item.get("invalid_at")),
                    str(item.get("quote") or ""),
                )
            )
        return cls(entities, edges, unreadable)


def _relation(text: str) -> str:
    return re.sub(r"\W+", "_", str(text).strip()).strip("_").upper() or "RELATED_TO"


def _norm_fact(fact: str) -> str:
    return " ".join(fact.casefold().split()).rstrip(".")


@dataclass
class Decisions:
    """What each extracted item of one chunk is; None while the LLM has not said."""

    entities: list[Ref | None]
    edges: list[Ref | None]
    closes: list[list[tuple[Ref, str]]]


@dataclass(frozen=True, slots=True)
class Merge:
    """Why an extracted entity is one known under another name: the rule, or the
    `resolve` call (its inference id) that said so."""

    rule: str
    inference_id: int | None = None


@dataclass
class Plan:
    """One chunk's decisions and what is left for the LLM."""

    index: int
    extraction: Extraction
    decisions: Decisions
    # Entity index -> why it is merged into what its decision names (a name of its own).
    merges: dict[int, Merge] = field(default_factory=dict)
    entity_items: list[dict[str, Any]] = field(default_factory=list)
    edge_items: list[dict[str, Any]] = field(default_factory=list)
    # (entities|edges, candidate id) -> what it stands for: stored row ids of entities
    # and of edges overlap, so the kind is part of the key.
    candidate_refs: dict[tuple[str, int], Ref] = field(default_factory=dict)

    @property
    def undecided(self) -> int:
        return len(self.entity_items) + len(self.edge_items)


@dataclass
class Batch:
    """One resolve call: the undecided items of consecutive chunks."""

    plans: list[Plan]
    items: dict[str, list[dict[str, Any]]]  # {"entities": [...], "edges": [...]}

    @property
    def request(self) -> ChatRequest:
        return resolve_request(self.items)


def split_items(
    items: dict[str, list[dict[str, Any]]],
) -> list[dict[str, list[dict[str, Any]]]]:
    """A batch's items as two halves (in order), for an answer too long to come whole;
    one item cannot be split."""
    flat = [(kind, item) for kind in ("entities", "edges") for item in items.get(kind, ())]
    if len(flat) < 2:
        return [items]
    middle = len(flat) // 2
    return [
        {kind: [item for k, item in part if k == kind] for kind in ("entities", "edges")}
        for part in (flat[:middle], flat[middle:])
    ]


def merge_answers(values: list[dict[str, Any]]) -> dict[str, Any]:
    """The answers of a split batch, as the one answer of the whole."""
    return {kind: [a for v in values for a in v.get(kind, ())] for kind in ("entities", "edges")}


class Resolver:
    """Prepares the decisions of a document's chunks against the graph and each other.

    What the chunks planned so far extracted is kept in indexes, each item normalized
    once, so that planning a chunk costs its own items and their candidates, not every
    item before it. Items are numbered in the order they were planned (``seq``); an
    index lists seqs in ascending order, and candidates are read from its end.
    """

    def __init__(self, conn: Connection, dataset_id: int, valid_at: str | None = None) -> None:
        self.conn = conn
        self.dataset_id = dataset_id
        self.valid_at = valid_at  # the document's: a fact's own, where its text gives none
        # Candidate ids of unstored items, negative, one per item: a batch's prompt lists
        # each candidate once, however many items it is offered to.
        self._doc_ids = itertools.count(-1, -1)
        self._doc_candidate_ids: dict[tuple[str, Any], int] = {}
        self._keys_filled = False  # the stored entities' name keys: filled once, if asked
        self._chunk_keys: dict[tuple[str, str], tuple[int, int]] = {}  # the chunk planned
        # Entities: the first of each (name, type); every one, with its view, by seq;
        # word of a name -> seqs of the entities whose name has it.
        self._doc_entities: dict[tuple[str, str], tuple[int, int]] = {}  # by `same`
        self._doc_exact: dict[tuple[str, str], tuple[int, int]] = {}  # by (norm, type)
        self._entity_seqs: list[tuple[tuple[int, int], dict[str, Any]]] = []
        self._entity_words: dict[str, list[int]] = {}
        # Edges: every one, with its view, by seq; (source, target, relation, fact), all
        # normalized -> the seq of the latest; an end's name -> seqs of the edges touching it.
        self._edge_seqs: list[tuple[tuple[int, int], dict[str, Any]]] = []
        self._edge_exact: dict[tuple[str, str, str, str], int] = {}
        self._edge_ends: dict[str, list[int]] = {}

    def plan(self, index: int, extraction: Extraction) -> Plan:
        """Decide what can be decided for chunk ``index``; chunks must come in order."""
        plan = Plan(
            index,
            extraction,
            Decisions(
                [None] * len(extraction.entities),
                [None] * len(extraction.edges),
                [[] for _ in extraction.edges],
            ),
        )
        entities = extraction.entities
        keys = [
            (entities[e.source].norm, entities[e.target].norm, e.relation, _norm_fact(e.fact))
            for e in extraction.edges
        ]
        self._chunk_keys = {}
        for i, entity in enumerate(entities):
            plan.decisions.entities[i] = self._entity(plan, i, entity)
            self._chunk_keys.setdefault(entity.same, (index, i))
        for j, edge in enumerate(extraction.edges):
            plan.decisions.edges[j] = self._edge(plan, j, edge, keys[j])
        # Only now are this chunk's items candidates: for the chunks after it.
        for i, entity in enumerate(entities):
            self._doc_entities.setdefault(entity.same, (index, i))
            self._doc_exact.setdefault((entity.norm, entity.type), (index, i))
            seq = len(self._entity_seqs)
            self._entity_seqs.append(((index, i), _entity_view(entity)))
            for word in set(entity.norm.split()):
                self._entity_words.setdefault(word, []).append(seq)
        for j, (edge, key) in enumerate(zip(extraction.edges, keys, strict=True)):
            seq = len(self._edge_seqs)
            source, target = entities[edge.source], entities[edge.target]
            self._edge_seqs.append(((index, j), _edge_view(edge, source.name, target.name)))
            self._edge_exact[key] = seq
            for end in {key[0], key[1]}:
                self._edge_ends.setdefault(end, []).append(seq)
        return plan

    # ---- entities

    def _entity(self, plan: Plan, i: int, entity: ExtractedEntity) -> Ref | None:
        # The same name first, then one by key: a name stored as it is goes to its own
        # entity, even where an earlier chunk named one an unmerge kept apart from it.
        earlier = self._doc_exact.get((entity.norm, entity.type))
        if earlier is not None:
            return Ref("doc", earlier)
        stored = graph.entity_exact(self.conn, self.dataset_id, entity.name, entity.type)
        if stored is not None:
            return Ref("db", stored["id"])
        # The chunks before, then this chunk's entities before it (stored before it).
        earlier = self._doc_entities.get(entity.same) or self._chunk_keys.get(entity.same)
        if earlier is not None:
            plan.merges[i] = Merge(merges.RULE_NAME)
            return Ref("doc", earlier)
        same = self._same_key(entity)
        if same is not None:
            plan.merges[i] = Merge(merges.RULE_NAME)
            return Ref("db", same)
        candidates = []
        for row in graph.entity_candidates_fts(
            self.conn, self.dataset_id, entity.name, MAX_CANDIDATES
        ):
            candidates.append(
                self._candidate(
                    plan, "entities", Ref("db", row["id"]), row["id"], _entity_view(row)
                )
            )
        # The latest entities of the chunks before that share a word of the name. None
        # has the same name and type: that would have been an exact duplicate above.
        words = [self._entity_words.get(w, ()) for w in set(entity.norm.split())]
        for seq in _latest(words, MAX_CANDIDATES * 2 - len(candidates)):
            key, view = self._entity_seqs[seq]
            candidates.append(self._candidate(plan, "entities", Ref("doc", key), None, view))
        if not candidates:
            return NEW
        plan.entity_items.append(
            {
                "id": f"e{plan.index}.{i}",
                "name": entity.name,
                "type": entity.type,
                "candidates": candidates,
            }
        )
        return None

    def _same_key(self, entity: ExtractedEntity) -> int | None:
        """The stored entity this one is by name key and type, if one is. Several that
        an unmerge kept apart leave the choice to the LLM; several others (stored
        before names had a key) are one: the oldest."""
        if not self._keys_filled:
            merges.fill_name_keys(self.conn, self.dataset_id)
            self._keys_filled = True
        key, type_ = entity.same
        found = [
            row["id"]
            for row in merges.entities_by_key(self.conn, self.dataset_id, key)
            if type_key(row["type"]) == type_
        ]
        if len(found) > 1 and merges.kept_apart(self.conn, found) & set(
            itertools.permutations(found, 2)
        ):
            return None
        return found[0] if found else None

    # ---- edges

    def _edge(
        self, plan: Plan, j: int, edge: ExtractedEdge, key: tuple[str, str, str, str]
    ) -> Ref | None:
        ex = plan.extraction
        source, target = ex.entities[edge.source], ex.entities[edge.target]
        # The chunks before: the latest facts touching either end, newest first, down to
        # the latest exact duplicate, which decides the edge (those newer than it are
        # numbered all the same: the ids, and so the requests a rerun finds recorded, stay).
        exact = self._edge_exact.get(key, -1)
        candidates: list[dict[str, Any]] = []
        ends = [self._edge_ends.get(end, ()) for end in {source.norm, target.norm}]
        for seq in _latest(ends, MAX_CANDIDATES, above=exact):
            ref_key, view = self._edge_seqs[seq]
            candidates.append(self._candidate(plan, "edges", Ref("doc", ref_key), None, view))
        if exact >= 0:
            return Ref("doc", self._edge_seqs[exact][0])
        for row in graph.current_edges_touching(
            self.conn,
            self.dataset_id,
            names=(source.norm, target.norm),
            nearest=(source.norm, target.norm),
            limit=MAX_CANDIDATES * 4,
            closed=True,
        ):
            same = (
                row["source_norm"],
                row["target_norm"],
                row["relation"],
                _norm_fact(row["fact"]),
            ) == key
            if same and _holds(row, edge.valid_at, self.valid_at):
                return Ref("db", row["id"])
            if len(candidates) < MAX_CANDIDATES * 2:
                view = {
                    "source": row["source_name"],
                    "target": row["target_name"],
                    "relation": row["relation"],
                    "fact": row["fact"],
                    "valid_at": row["valid_at"],
                    "invalid_at": row["invalid_at"],
                }
                candidates.append(
                    self._candidate(plan, "edges", Ref("db", row["id"]), row["id"], view)
                )
        if not candidates:
            return NEW
        item = {"id": f"r{plan.index}.{j}", **_edge_view(edge, source.name, target.name)}
        plan.edge_items.append({**item, "candidates": candidates})
        return None

    def _candidate(
        self, plan: Plan, kind: str, ref: Ref, row_id: int | None, view: dict[str, Any]
    ) -> dict[str, Any]:
        candidate_id = row_id
        if candidate_id is None:
            if (kind, ref.key) not in self._doc_candidate_ids:
                self._doc_candidate_ids[(kind, ref.key)] = next(self._doc_ids)
            candidate_id = self._doc_candidate_ids[(kind, ref.key)]
        plan.candidate_refs[(kind, candidate_id)] = ref
        return {"id": candidate_id, **view}


def _holds(row: dict[str, Any], own: str | None, document: str | None) -> bool:
    """Whether the same words restate a stored fact. With a start date of its own, only
    the same start does: "since 2024" after "since 2015" is a second stint, whichever is
    remembered first. Without one, it restates a current fact, and a closed one only for
    a document of a time within its interval: after its end, it is true again."""
    if own is not None:
        return own == row["valid_at"]
    if row["invalid_at"] is None and row["expired_at"] is None:
        return True
    began, ended = row["valid_at"] or "", row["invalid_at"]
    return document is not None and began <= document and (ended is None or document < ended)


def _latest(indexes: Iterable[Sequence[int]], limit: int, above: int = -1) -> Iterator[int]:
    """The greatest seqs found in any of these ascending lists, each once, greatest
    first: at most `limit`, and all greater than `above`."""
    if limit <= 0:
        return
    previous = None
    for seq in heapq.merge(*(reversed(i) for i in indexes), reverse=True):
        if seq <= above:
            return
        if seq != previous:
            yield seq
            limit -= 1
            if not limit:
                return
            previous = seq


class Batcher:
    """Groups the undecided items of consecutive chunks into resolve calls, one chunk's
    plan at a time, so that a call can be sent as soon as its chunks are planned: a group
    is closed once it holds BATCH_ITEMS items or more (the next plan with items would
    start a new one anyway), the last by `close`."""

    def __init__(self) -> None:
        self._group: list[Plan] = []
        self._size = 0

    def add(self, plan: Plan) -> Batch | None:
        """The batch `plan` closes, if it closes one."""
        if not plan.undecided:
            return None
        self._group.append(plan)
        self._size += plan.undecided
        return self.close() if self._size >= BATCH_ITEMS else None

    def close(self) -> Batch | None:
        """The batch of the plans added since the last one closed, if any."""
        if not self._group:
            return None
        group, self._group, self._size = self._group, [], 0
        return Batch(
            group,
            {
                "entities": [item for p in group for item in p.entity_items],
                "edges": [item for p in group for item in p.edge_items],
            },
        )


def batches(plans: list[Plan]) -> list[Batch]:
    """Group the undecided items of consecutive chunks into resolve calls."""
    batcher = Batcher()
    closed = [batcher.add(plan) for plan in plans]
    return [b for b in (*closed, batcher.close()) if b is not None]


# The key an answer's item carries the id of the `resolve` call that gave it under: a
# batch cut in halves is answered by several.
INFERENCE = "_inference"


def with_inference(value: dict[str, Any], inference_id: int) -> dict[str, Any]:
    """An answer whose entity items each name the call that gave them."""
    return {
        **value,
        "entities": [
            {**a, INFERENCE: inference_id} if isinstance(a, dict) else a
            for a in value.get("entities", ())
        ],
    }


def apply_answer(batch: Batch, value: dict[str, Any]) -> None:
    """Fill the undecided decisions of a batch's chunks from the LLM's answer.

    An id the answer does not mention, or a candidate id that was not offered, counts
    as "not a duplicate": an item is never merged into something it was not shown.
    """
    answers = {a.get("id"): a for a in value.get("entities", ())}
    answers.update({a.get("id"): a for a in value.get("edges", ())})
    for plan in batch.plans:
        offered = plan.candidate_refs
        for i, decision in enumerate(plan.decisions.entities):
            if decision is None:
                answer = answers.get(f"e{plan.index}.{i}", {})
                plan.decisions.entities[i] = offered.get(
                    ("entities", answer.get("duplicate_of")), NEW
                )
                if plan.decisions.entities[i] != NEW:
                    plan.merges[i] = Merge(merges.RULE_RESOLVE, answer.get(INFERENCE))
        for j, decision in enumerate(plan.decisions.edges):
            if decision is not None:
                continue
            answer = answers.get(f"r{plan.index}.{j}", {})
            duplicate = offered.get(("edges", answer.get("duplicate_of")))
            plan.decisions.edges[j] = duplicate or NEW
            if duplicate is None:
                reason = str(answer.get("reason") or "contradicted by a newer fact")
                plan.decisions.closes[j] = [
                    (offered[("edges", c)], reason)
                    for c in answer.get("contradicts", ())
                    if ("edges", c) in offered
                ]


def _entity_view(entity: Any) -> dict[str, Any]:
    if isinstance(entity, ExtractedEntity):
        return {"name": entity.name, "type": entity.type, "summary": entity.summary}
    return {"name": entity["name"], "type": entity["type"], "summary": entity["summary"]}


def _edge_view(edge: ExtractedEdge, source: str, target: str) -> dict[str, Any]:
    return {
        "source": source,
        "target": target,
        "relation": edge.relation,
        "fact": edge.fact,
        "valid_at": edge.valid_at,
        "invalid_at": edge.invalid_at,
    }
