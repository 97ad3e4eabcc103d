"""The graph, read back: facts with their time filters and the evidence that
states each, to the line.

    from gligabao.graph.queries import facts, find_entities
    acme = [e["id"] for e in find_entities(conn, dataset, "Acme")]
    for fact in facts(conn, dataset, "who runs it", about=acme, at="2019-06-01"):
        print(fact.source, fact.relation, fact.target, fact.evidence[0].line_start)

A fact is `current` when nothing closed it and no end it was given has passed; `--at`
asks what was true at a time (valid time), `--known-at` what the graph held then
(transaction time). With a query, facts are searched by BM25 over their texts and KNN over
the dataset's edge vectors, always fused by reciprocal rank (`gb search` fuses chunks by
convex combination by default; `search.fusion` does not apply here).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from gligabao.base.lines import lines_between, mapped_lines, newline_offsets
from gligabao.errors import GbError
from gligabao.graph.merges import Merge, list_merges
from gligabao.read.documents import cite_described
from gligabao.search.hybrid import Vector, VectorSide, fuse
from gligabao.store import Connection, vectors
from gligabao.store import facts as store_facts
from gligabao.store.artifacts import locations_of, stored_locations
from gligabao.store.datasets import Dataset
from gligabao.store.graph import normalize_name
from gligabao.store.terms import words_of

__all__ = [
    "AmbiguousEntity",
    "Entity",
    "EntityView",
    "Evidence",
    "Fact",
    "attach_evidence",
    "entities",
    "entity",
    "facts",
    "find_entities",
    "find_entity",
    "get_fact",
    "named_in",
]

# The most candidates a method gives a filtered query (vec0's KNN takes no more).
_POOL_MAX = vectors.KNN_MAX


def _once(vector: Vector | Callable[[], Vector] | None) -> Vector | Callable[[], Vector] | None:
    """A query vector's function called at most once, however often it is asked."""
    if not callable(vector):
        return vector
    made: list[Vector] = []

    def once() -> Vector:
        if not made:
            made.append(vector())
        return made[0]

    return once


def _shallow(item: Any) -> dict[str, Any]:
    # Not dataclasses.asdict: its deep copy made gb export of 100,000 facts 17x slower.
    return {f.name: getattr(item, f.name) for f in fields(item)}


@dataclass(frozen=True)
class Evidence:
    """Where one chunk (or short document) states a fact: byte offsets in the document,
    its lines, and the quote; `exact` when the quote was found in the chunk as given,
    else the span is the tolerant match, or the whole chunk when it was not found."""

    document_id: int
    chunk_id: int
    source: str | None
    start_offset: int
    end_offset: int
    line_start: int
    line_end: int
    quote: str | None
    exact: bool
    # The chunk's pages (a PDF) or messages (a chat export), as `gb_artifacts.locations`;
    # for a web page the quote's lines of its file.
    locations: dict[str, Any] | None = None
    # Every chunk that states it at this span: two chunks whose overlap holds the quote
    # give one piece of evidence, not the same place twice. `chunk_id` is the first.
    chunk_ids: tuple[int, ...] = ()

    @property
    def where(self) -> str:
        """`path:LINE` or `path:LINE-LINE`, as a shell user quotes a place in a file; a
        PDF's pages (`path p.12-13`) or a chat's messages (`path msgs 14-19`) instead."""
        where = self.locations or {"lines": (self.line_start, self.line_end)}
        return cite_described(self.source or f"document {self.document_id}", where)

    def as_json(self) -> dict[str, Any]:
        shown = _shallow(self)
        shown["chunk_ids"] = list(self.chunk_ids)  # as JSON reads it back
        return shown


@dataclass(frozen=True)
class Fact:
    id: int
    source: str
    relation: str
    target: str
    fact: str
    valid_at: str | None
    invalid_at: str | None
    created_at: str
    expired_at: str | None
    status: str  # current | closed
    closed_by: dict[str, Any] | None  # {id, fact, reason}
    evidence: list[Evidence] = field(default_factory=list)
    source_id: int = 0
    target_id: int = 0

    def as_json(self) -> dict[str, Any]:
        """The object `gb facts --json` prints: the ends by name (their ids aside)."""
        shown = _shallow(self)
        del shown["source_id"], shown["target_id"]
        shown["evidence"] = [e.as_json() for e in self.evidence]
        return shown


class AmbiguousEntity(GbError):
    """A name that is no entity's, but close to several: the script must say which."""

    def __init__(self, name: str, candidates: list[dict[str, Any]]) -> None:
        self.candidates = candidates
        if not candidates:
            super().__init__(f"no entity is named {name!r}; gb entities lists them")
            return
        shown = "; ".join(f"{c['id']} {c['name']} ({c['type']})" for c in candidates[:10])
        super().__init__(
            f"no entity is named exactly {name!r}; close ones: {shown}; name one by its id"
        )


# Words that tell no name from another: English function words, and the legal forms of
# companies ("Globex Inc" is Globex). A name looked up must match on its other words.
_FUNCTION_WORDS = "a an and the of at all in on to for by with from or nor is as its any"
_LEGAL_FORMS = "inc incorporated corp corporation co company ltd limited llc plc gmbh ag sa"
_COMMON_WORDS = frozenset(f"{_FUNCTION_WORDS} {_LEGAL_FORMS}".split())


def _name_words(name: str) -> set[str]:
    """The words of a name as the keyword index compares them: NFKC, casefolded, without
    accents (as FTS5's unicode61 tokenizer folds them)."""
    folded = unicodedata.normalize("NFKD", normalize_name(name))
    return set(words_of("".join(c for c in folded if not unicodedata.combining(c)), 256))


def _names_every_word(candidate: str, name: str) -> bool:
    """Whether the entity name `candidate` holds every telling word of `name`: a lookup
    that matched only on common words, or on some of its words, means no entity."""
    telling = _name_words(name) - _COMMON_WORDS
    return bool(telling) and telling <= _name_words(candidate)


def find_entities(
    conn: Connection,
    dataset: Dataset,
    name: str,
    query_vector: Vector | Callable[[], Vector] | None = None,
) -> list[dict[str, Any]]:
    """The entities `name` means: its id ("12"), else those with exactly that normalized
    name (of any type), else the one entity whose name shares its words and holds every
    telling one of them (not only "all" or "the").
    Several close matches, or none, raise AmbiguousEntity, which lists them (with no word
    in common, the nearest by `query_vector`, when given): a script never gets the wrong
    one silently."""
    exact = store_facts.entities(conn, dataset.id, name_norm=normalize_name(name))
    digits = name.strip()
    if digits.isascii() and digits.isdecimal():
        by_id = store_facts.entities(conn, dataset.id, ids=[int(digits)])
        if by_id and exact and exact != by_id:  # "12": an id, and some entity's name
            raise AmbiguousEntity(name, by_id + exact)
        if by_id:
            return by_id
    if exact:
        return exact
    close = store_facts.entities(
        conn, dataset.id, ids=store_facts.entity_ids_fts(conn, dataset.id, name, 10, names=True)
    )
    if len(close) == 1 and _names_every_word(close[0]["name"], name):
        return close
    if not close and query_vector is not None:
        vector = query_vector() if callable(query_vector) else query_vector
        nearest = vectors.knn(conn.for_search(), dataset.id, "entities", vector, 5)
        ids = [vectors.parse_vector_id(n.vector_id)[1] for n in nearest]
        close = store_facts.entities(conn, dataset.id, ids=ids)
    raise AmbiguousEntity(name, close)


def find_entity(
    conn: Connection,
    dataset: Dataset,
    name: str,
    query_vector: Vector | Callable[[], Vector] | None = None,
) -> dict[str, Any]:
    """The one entity `name` means (see find_entities): several entities of that name,
    of other types, raise AmbiguousEntity too."""
    candidates = find_entities(conn, dataset, name, query_vector)
    if len(candidates) > 1:  # one name, several types: say which
        raise AmbiguousEntity(name, candidates)
    return candidates[0]


def named_in(conn: Connection, dataset: Dataset, text: str, limit: int = 10) -> list[Entity]:
    """The entities `text` names: those whose names share words with it (BM25 over
    names), each kept only when the text holds every telling word of its name ("Acme" in
    a question names "Acme Corp"; "the corp" names nothing)."""
    ids = store_facts.entity_ids_fts(conn, dataset.id, text, limit * 4, names=True)
    rows = store_facts.entities(conn, dataset.id, ids=ids)
    named = [Entity.from_row(r) for r in rows if _names_every_word(text, r["name"])]
    return named[:limit]


def facts(
    conn: Connection,
    dataset: Dataset,
    query: str | None = None,
    *,
    about: Sequence[int] | None = None,  # entity ids (find_entities)
    at: str | None = None,
    known_at: str | None = None,
    closed: bool = False,
    relation: str | None = None,
    session: str | None = None,
    limit: int = 20,
    query_vector: Vector | Callable[[], Vector] | None = None,
    depth: int = 50,
    rrf_k: int = 60,
) -> list[Fact]:
    """The facts of `dataset`: current ones unless `at`, `known_at` or `closed` say
    otherwise; touching the entities `about` (ids); newest first, or, with `query`, best
    first (BM25, fused with KNN over the edge vectors when `query_vector` is given)."""
    filters: dict[str, Any] = {
        "entity_ids": about,
        "at": at,
        "known_at": known_at,
        "closed": closed,
        "relation": relation,
        "session": session,
    }
    if query is None:
        rows = store_facts.facts(conn, dataset.id, limit=limit, **filters)
    else:
        # Each method ranks more facts than shown, and the filters keep the fused order;
        # while they leave fewer than `limit` and a ranking may hold more, a larger pool.
        pool = max(depth, limit) * 2
        vector = _once(query_vector)  # embedded in the first round, beside BM25; once
        while True:
            rankings = _rank(conn, dataset, "edges", query, vector, pool)
            ranked = [key for key, _, _ in fuse(rankings, rrf_k)]
            rows = store_facts.facts(conn, dataset.id, ids=ranked, limit=limit, **filters)
            more = any(len(found) == pool for found in rankings.values())
            if len(rows) >= limit or not more or pool >= _POOL_MAX:
                break
            pool = min(pool * 4, _POOL_MAX)
    return attach_evidence(conn, rows)


def get_fact(conn: Connection, dataset: Dataset, fact_id: int) -> Fact | None:
    """One fact by id, whatever its status."""
    rows = store_facts.facts(conn, dataset.id, ids=[fact_id], closed=True)
    return attach_evidence(conn, rows)[0] if rows else None


def _joined(listed: list[Evidence], found: Evidence) -> int:
    """Where `found` goes in its fact's evidence: with a quote that one chunk's end cut
    off and the next chunk's overlap states whole (one span inside the other, both found
    exactly), one place, the whole quote, with both chunks on it; else a place of its own.
    """
    for i, kept in enumerate(listed):
        if not (found.exact and kept.exact and kept.document_id == found.document_id):
            continue
        chunks = (*kept.chunk_ids, *found.chunk_ids)
        if kept.start_offset <= found.start_offset and found.end_offset <= kept.end_offset:
            listed[i] = replace(kept, chunk_ids=chunks)
            return i
        if found.start_offset <= kept.start_offset and kept.end_offset <= found.end_offset:
            listed[i] = replace(found, chunk_ids=(found.chunk_id, *kept.chunk_ids))
            return i
    listed.append(found)
    return len(listed) - 1


def attach_evidence(conn: Connection, rows: list[dict[str, Any]]) -> list[Fact]:
    """Facts of `store.facts` rows, each with its evidence: one query for all of them,
    each document read once (as far as its evidence goes) to number its lines."""
    links = store_facts.evidence(conn, [r["id"] for r in rows])
    reach: dict[int, int] = {}
    for link in links:
        reach[link["document_id"]] = max(reach.get(link["document_id"], 0), link["chunk_end"])
    newlines = {
        doc: newline_offsets(store_facts.document_bytes(conn, doc, end))
        for doc, end in reach.items()
    }
    by_edge: dict[int, list[Evidence]] = {}
    # (fact, document, span) -> its place in by_edge: a span stated by the overlap of two
    # chunks is one entry, with both chunks on it.
    seen: dict[tuple[int, int, int, int], int] = {}
    for link in links:
        located = link["quote_start"] is not None
        start = link["quote_start"] if located else link["chunk_start"]
        end = link["quote_end"] if located else link["chunk_end"]
        listed = by_edge.setdefault(link["edge_id"], [])
        key = (link["edge_id"], link["document_id"], start, end)
        if key in seen:
            kept = listed[seen[key]]
            listed[seen[key]] = replace(
                kept,
                chunk_ids=(*kept.chunk_ids, link["chunk_id"]),
                exact=kept.exact or (bool(link["exact"]) and located),
            )
            continue
        where = stored_locations(link)
        # A web page's quote is cited by the lines of its file, through the chunk's map.
        mapped = mapped_lines(where.get("line_map"), start, end) or where.get("lines")
        first, last = mapped or lines_between(newlines[link["document_id"]], start, end)
        shown = locations_of(link)
        if mapped:
            shown["lines"] = [first, last]
        found = Evidence(
            document_id=link["document_id"],
            chunk_id=link["chunk_id"],
            source=link["source"],
            start_offset=start,
            end_offset=end,
            line_start=first,
            line_end=last,
            quote=link["quote"],
            exact=bool(link["exact"]) and located,
            locations=shown or None,
            chunk_ids=(link["chunk_id"],),
        )
        seen[key] = _joined(listed, found)
    return [
        Fact(
            id=r["id"],
            source=r["source_name"],
            relation=r["relation"],
            target=r["target_name"],
            fact=r["fact"],
            valid_at=r["valid_at"],
            invalid_at=r["invalid_at"],
            created_at=r["created_at"],
            expired_at=r["expired_at"],
            status="current" if r["current"] else "closed",
            closed_by=(
                {
                    "id": r["invalidated_by_edge_id"],
                    "fact": r["closer_fact"],
                    "reason": r["invalidation_reason"],
                }
                if r["invalidated_by_edge_id"] is not None
                else None
            ),
            evidence=by_edge.get(r["id"], []),
            source_id=r["source_entity_id"],
            target_id=r["target_entity_id"],
        )
        for r in rows
    ]


@dataclass(frozen=True)
class Entity:
    """An entity with how many facts touch it and how many documents mention it."""

    id: int
    name: str
    type: str
    summary: str
    fact_count: int  # every fact it is an end of, closed ones too
    document_count: int
    created_at: str = ""

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Entity:
        return cls(
            row["id"],
            row["name"],
            row["type"],
            row["summary"],
            row["fact_count"],
            row["document_count"],
            row["created_at"],
        )

    def as_json(self) -> dict[str, Any]:
        return _shallow(self)


@dataclass(frozen=True)
class EntityView:
    """One entity whole: its facts as a timeline (oldest first), its neighbours up to a
    depth, and the documents that mention it."""

    id: int
    name: str
    type: str
    summary: str
    facts: list[Fact]
    neighbours: list[dict[str, Any]]  # {id, name, type, depth}
    documents: list[dict[str, Any]]  # {id, source}
    # The other names it was extracted under (merges not undone), and every merge into
    # it or that it came out of, oldest first.
    aliases: list[str] = field(default_factory=list)
    merges: list[Merge] = field(default_factory=list)
    # Since when the summary may state facts gb no longer holds (None: it follows them);
    # the next run with a chat endpoint rewrites it.
    summary_stale_at: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "summary": self.summary,
            "summary_stale_at": self.summary_stale_at,
            "facts": [f.as_json() for f in self.facts],
            "neighbours": self.neighbours,
            "documents": self.documents,
            "aliases": self.aliases,
            "merges": [m.as_json() for m in self.merges],
        }


def entity(
    conn: Connection,
    dataset: Dataset,
    name: str,
    *,
    at: str | None = None,
    depth: int = 1,
    query_vector: Vector | Callable[[], Vector] | None = None,
) -> EntityView:
    """The entity `name` means (see find_entities; several entities of that name, of
    other types, raise AmbiguousEntity): every fact touching it, closed ones marked (or those true
    at `at`), oldest first; the entities up to `depth` facts away (through current facts,
    or facts true at `at`); the documents that mention it."""
    found = find_entity(conn, dataset, name, query_vector)
    rows = store_facts.facts(conn, dataset.id, entity_ids=[found["id"]], at=at, closed=at is None)
    timeline = sorted(attach_evidence(conn, rows), key=lambda f: (f.valid_at or "", f.id))
    seen, frontier, near = {found["id"]}, [found["id"]], []
    for hop in range(1, max(0, depth) + 1):
        step = [n for n in store_facts.neighbours(conn, frontier, at=at) if n["id"] not in seen]
        near += [{**n, "depth": hop} for n in step]
        seen.update(n["id"] for n in step)
        frontier = [n["id"] for n in step]
        if not frontier:
            break
    merged = list_merges(conn, dataset, entity_id=found["id"])
    aliases = [
        m.name
        for m in merged
        if m.entity_id == found["id"] and m.undone_at is None and m.name != found["name"]
    ]
    return EntityView(
        id=found["id"],
        name=found["name"],
        type=found["type"],
        summary=found["summary"],
        facts=timeline,
        neighbours=near,
        documents=store_facts.entity_documents(conn, found["id"]),
        aliases=list(dict.fromkeys(aliases)),
        merges=merged,
        summary_stale_at=found.get("summary_stale_at"),
    )


def entities(
    conn: Connection,
    dataset: Dataset,
    query: str | None = None,
    *,
    limit: int = 20,
    query_vector: Vector | Callable[[], Vector] | None = None,
    depth: int = 50,
    rrf_k: int = 60,
) -> list[Entity]:
    """Entities by name, or, with `query`, best first: BM25 over names and summaries,
    fused with KNN over the entity vectors when `query_vector` is given."""
    if query is None:
        rows = store_facts.entities(conn, dataset.id, limit=limit)
        return [Entity.from_row(r) for r in rows]
    rankings = _rank(conn, dataset, "entities", query, query_vector, max(depth, limit))
    ranked = [key for key, _, _ in fuse(rankings, rrf_k)][:limit]
    return [Entity.from_row(r) for r in store_facts.entities(conn, dataset.id, ids=ranked)]


def _rank(
    conn: Connection,
    dataset: Dataset,
    index: str,
    query: str,
    query_vector: Vector | Callable[[], Vector] | None,
    pool: int,
) -> dict[str, list[int]]:
    """The BM25 and (given a query vector) KNN rankings of facts or entities, at most
    `pool` each: the KNN scan on a second connection while BM25 runs on this one."""
    conn.for_search()
    keywords = store_facts.edge_ids_fts if index == "edges" else store_facts.entity_ids_fts
    if query_vector is None:
        return {"bm25": keywords(conn, dataset.id, query, pool)}

    def nearest(c: Connection, vector: Vector) -> list[int]:
        found = vectors.knn(c, dataset.id, index, vector, min(pool, vectors.KNN_MAX))
        return [vectors.parse_vector_id(n.vector_id)[1] for n in found]

    side = VectorSide(conn, query_vector, nearest)
    side.start()
    try:
        bm25 = keywords(conn, dataset.id, query, pool)
    finally:
        side.join()  # done with the second connection, whatever happened here
    return {"bm25": bm25, "vector": side.result()}
