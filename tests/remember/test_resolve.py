"""Resolution planning: exact duplicates, candidates and their order.

`Resolver` keeps indexes of what the chunks planned so far extracted; `reference_plans`
below is the plain definition it must agree with: every earlier entity and fact of the
document scanned newest first, for every new item.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from gligabao.base.names import name_key, type_key
from gligabao.remember.resolve import (
    MAX_CANDIDATES,
    NEW,
    Extraction,
    Plan,
    Ref,
    Resolver,
    _norm_fact,
)
from gligabao.store import datasets, graph, open_db
from gligabao.store.db import query


@pytest.fixture
def conn(tmp_path: Path):
    c = open_db(tmp_path / "gb.db")
    yield c
    c.close()


@pytest.fixture
def ds(conn) -> int:
    return datasets.get_or_create_dataset(conn, "default").id


def extraction(entities: list[Any], edges: list[tuple[str, str, str, str]] = ()) -> Extraction:
    """Entities as names or (name, type); edges as (source, target, relation, fact)."""
    return Extraction.from_answer(
        {
            "entities": [
                {"name": e, "type": "Person", "summary": ""}
                if isinstance(e, str)
                else {"name": e[0], "type": e[1], "summary": ""}
                for e in entities
            ],
            "edges": [{"source": s, "target": t, "relation": r, "fact": f} for s, t, r, f in edges],
        }
    )


def plan_all(conn, ds: int, extractions: list[Extraction]) -> list[Plan]:
    resolver = Resolver(conn, ds)
    return [resolver.plan(k, ex) for k, ex in enumerate(extractions)]


def names(candidates: list[dict[str, Any]]) -> list[str]:
    return [c.get("name") or c["fact"] for c in candidates]


# ---- the plain definition, and a realistic document to compare on


def reference_plans(conn, ds: int, extractions: list[Extraction]) -> list[dict[str, Any]]:
    """What each chunk's plan must be, computed the slow and obvious way."""
    doc_ids = itertools.count(-1, -1)
    numbered: dict[tuple[str, Any], int] = {}  # an unstored item's id: one, however often offered
    seen_entities: list[tuple[tuple[int, int], Any]] = []
    seen_edges: list[tuple[tuple[int, int], Any, Extraction]] = []
    refs: dict[tuple[str, int], Ref] = {}  # the chunk's, emptied for each

    def offer(kind: str, ref: Ref, row_id: int | None, shown: dict[str, Any]) -> dict:
        if row_id is None and (kind, ref.key) not in numbered:
            numbered[(kind, ref.key)] = next(doc_ids)
        cid = row_id if row_id is not None else numbered[(kind, ref.key)]
        refs[(kind, cid)] = ref
        return {"id": cid, **shown}

    out = []
    for k, ex in enumerate(extractions):
        refs.clear()
        entity_refs, entity_items = [], []
        in_chunk = []  # this chunk's entities before the one planned
        for i, e in enumerate(ex.entities):
            if i:
                in_chunk.append(((k, i - 1), ex.entities[i - 1]))
            # The same name, in the document then stored; then one by name key and type
            # (case, accents, punctuation, "the", a suffix), likewise.
            same = [key for key, o in seen_entities if (o.norm, o.type) == (e.norm, e.type)]
            if same:
                entity_refs.append(Ref("doc", same[0]))
                continue
            stored = graph.entity_exact(conn, ds, e.name, e.type)
            if stored is not None:
                entity_refs.append(Ref("db", stored["id"]))
                continue
            same = [key for key, o in seen_entities + in_chunk if o.same == e.same]
            if same:
                entity_refs.append(Ref("doc", same[0]))
                continue
            keyed = [
                r["id"]
                for r in query(
                    conn, "SELECT * FROM gb_entities WHERE dataset_id = ? ORDER BY id", (ds,)
                )
                if (name_key(r["name"], r["type"]), type_key(r["type"])) == e.same
            ]
            if keyed:
                entity_refs.append(Ref("db", keyed[0]))
                continue
            candidates = [
                offer("entities", Ref("db", r["id"]), r["id"], view(r, "name", "type", "summary"))
                for r in graph.entity_candidates_fts(conn, ds, e.name, MAX_CANDIDATES)
            ]
            for key, o in reversed(seen_entities):
                if len(candidates) < 2 * MAX_CANDIDATES and set(e.norm.split()) & set(
                    o.norm.split()
                ):
                    candidates.append(
                        offer("entities", Ref("doc", key), None, view(o, "name", "type", "summary"))
                    )
            entity_refs.append(None if candidates else NEW)
            if candidates:
                entity_items.append(
                    {"id": f"e{k}.{i}", "name": e.name, "type": e.type, "candidates": candidates}
                )

        edge_refs, edge_items = [], []
        for j, edge in enumerate(ex.edges):
            s, t = ex.entities[edge.source], ex.entities[edge.target]
            key = (s.norm, t.norm, edge.relation, _norm_fact(edge.fact))
            candidates, decided = [], None
            for at, o, o_ex in reversed(seen_edges):
                os, ot = o_ex.entities[o.source], o_ex.entities[o.target]
                if (os.norm, ot.norm, o.relation, _norm_fact(o.fact)) == key:
                    decided = Ref("doc", at)
                    break
                if {s.norm, t.norm} & {os.norm, ot.norm} and len(candidates) < MAX_CANDIDATES:
                    v = edge_view(os.name, ot.name, o.relation, o.fact, o.valid_at, o.invalid_at)
                    candidates.append(offer("edges", Ref("doc", at), None, v))
            if decided is None:
                for r in graph.current_edges_touching(
                    conn,
                    ds,
                    names=(s.norm, t.norm),
                    nearest=(s.norm, t.norm),
                    limit=24,
                    closed=True,  # a closed fact may be restated, or contradicted
                ):
                    current = r["invalid_at"] is None and r["expired_at"] is None
                    # The same words restate it: with a start of their own, the same start;
                    # without, a current fact (no document time is given here).
                    restates = r["valid_at"] == edge.valid_at if edge.valid_at else current
                    if (r["source_norm"], r["target_norm"], r["relation"]) == key[:3] and (
                        _norm_fact(r["fact"]) == key[3] and restates
                    ):
                        decided = Ref("db", r["id"])
                        break
                    if len(candidates) < 2 * MAX_CANDIDATES:
                        v = edge_view(
                            r["source_name"],
                            r["target_name"],
                            r["relation"],
                            r["fact"],
                            r["valid_at"],
                            r["invalid_at"],
                        )
                        candidates.append(offer("edges", Ref("db", r["id"]), r["id"], v))
            if decided is None and not candidates:
                decided = NEW
            edge_refs.append(decided)
            if decided is None:
                v = edge_view(
                    s.name, t.name, edge.relation, edge.fact, edge.valid_at, edge.invalid_at
                )
                edge_items.append({"id": f"r{k}.{j}", **v, "candidates": candidates})

        out.append(
            {
                "entities": entity_refs,
                "edges": edge_refs,
                "entity_items": entity_items,
                "edge_items": edge_items,
                "candidate_refs": list(refs.items()),
            }
        )
        seen_entities += [((k, i), e) for i, e in enumerate(ex.entities)]
        seen_edges += [((k, j), e, ex) for j, e in enumerate(ex.edges)]
    return out


def view(item: Any, *fields: str) -> dict[str, Any]:
    return {f: item[f] if isinstance(item, dict) else getattr(item, f) for f in fields}


def edge_view(source, target, relation, fact, valid_at, invalid_at) -> dict[str, Any]:
    return {
        "source": source,
        "target": target,
        "relation": relation,
        "fact": fact,
        "valid_at": valid_at,
        "invalid_at": invalid_at,
    }


def summary(plan: Plan) -> dict[str, Any]:
    return {
        "entities": plan.decisions.entities,
        "edges": plan.decisions.edges,
        "entity_items": plan.entity_items,
        "edge_items": plan.edge_items,
        "candidate_refs": list(plan.candidate_refs.items()),
    }


FIRST = ["Alice", "Bob", "Carol", "Dmitri", "Eve", "Françoise", "Gao", "Hana", "Ivan", "Jun"]
LAST = ["Smith", "Jones", "Okafor", "Müller", "Tanaka", "Garcia", "Chen", "Kaur"]
ORGS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Wonka"]
KINDS = ["Corp", "Inc", "Labs", "Bank", "University"]
PLACES = ["Berlin", "Paris", "New York", "Lagos", "York", "São Paulo", "Oslo"]
RELATIONS = ["works at", "WORKS_AT", "lives in", "founded", "knows", "acquired", "based in"]


def document(seed: int, chunks: int, per_chunk: int) -> tuple[list, list[Extraction]]:
    """A pool of names, and the extractions of a document that keeps coming back to some
    of them: in other cases or spacing, by first name alone, with another type, stating
    the same facts again in other words or letter for letter."""
    rnd = random.Random(seed)
    pool = []
    for _ in range(120):
        kind = rnd.choice(["person", "person", "org", "place"])
        if kind == "person":
            pool.append((f"{rnd.choice(FIRST)} {rnd.choice(LAST)}", "Person"))
        elif kind == "org":
            pool.append((f"{rnd.choice(ORGS)} {rnd.choice(KINDS)}", "Organization"))
        else:
            pool.append((rnd.choice(PLACES), "Location"))

    def spelled(name: str) -> str:
        r = rnd.random()
        if r < 0.1:
            return name.upper()
        if r < 0.2:
            return f"  {name.replace(' ', '   ')} "
        return name.split()[0] if r < 0.25 else name

    def fact(s: str, rel: str, t: str) -> str:
        said = f"{s.strip()} {rel.lower().replace('_', ' ')} {t.strip()}"
        r = rnd.random()
        if r < 0.5:
            return said + "."
        return said.upper() if r < 0.6 else f"{said} since {rnd.randrange(1990, 2000)}."

    extractions = []
    for _ in range(chunks):
        entities = []
        for _ in range(per_chunk):
            name, type_ = (
                pool[min(int(rnd.expovariate(0.2)), 20)]
                if rnd.random() < 0.6
                else (rnd.choice(pool))
            )
            if rnd.random() < 0.05:
                type_ = rnd.choice(["", "Person", "Thing"])
            entities.append({"name": spelled(name), "type": type_, "summary": f"about {name}"})
        edges = []
        for _ in range(per_chunk):
            s = rnd.choice(entities)["name"]
            t = rnd.choice(entities)["name"] if rnd.random() < 0.9 else rnd.choice(pool)[0]
            rel = rnd.choice(RELATIONS)
            edges.append(
                {
                    "source": s,
                    "target": t,
                    "relation": rel,
                    "fact": fact(s, rel, t),
                    "valid_at": None if rnd.random() < 0.7 else "2020-01-01",
                }
            )
        extractions.append(Extraction.from_answer({"entities": entities, "edges": edges}))
    return pool, extractions


def store_graph(conn, ds: int, pool: list, seed: int, n_edges: int) -> None:
    """An earlier document's graph: half the pool, facts between them, some closed."""
    rnd = random.Random(seed)
    ids = [graph.upsert_entity(conn, ds, name, type_, f"stored {name}")[0] for name, type_ in pool]
    ids = ids[: len(ids) // 2]
    edges = []
    for k in range(n_edges):
        a, b = rnd.choice(ids), rnd.choice(ids)
        rel = rnd.choice(RELATIONS)
        s, t = graph.get_entity(conn, a)["name"], graph.get_entity(conn, b)["name"]
        fact = f"{s} {rel.lower().replace('_', ' ')} {t}" + ("." if k % 2 else f" ({k})")
        edges.append(graph.insert_edge(conn, ds, a, b, rel.upper().replace(" ", "_"), fact))
    for edge_id in rnd.sample(edges, len(edges) // 5):
        graph.close_edge(conn, edge_id, "2020-01-01")


@pytest.mark.parametrize(
    ("seed", "chunks", "per_chunk", "stored"),
    [(1, 40, 12, 150), (2, 60, 8, 0), (3, 15, 30, 400)],
    ids=["with-a-stored-graph", "empty-graph", "large-chunks"],
)
def test_plans_are_those_of_the_plain_definition(
    conn, ds: int, seed: int, chunks: int, per_chunk: int, stored: int
) -> None:
    pool, extractions = document(seed, chunks, per_chunk)
    if stored:
        store_graph(conn, ds, pool, seed, stored)
    plans = plan_all(conn, ds, extractions)
    expected = reference_plans(conn, ds, extractions)
    for plan, want in zip(plans, expected, strict=True):
        assert summary(plan) == want, f"chunk {plan.index}"
    # The document is realistic: every way of deciding happened, many times.
    decided = [r for p in plans for r in p.decisions.entities + p.decisions.edges]
    kinds = {(r.kind if r else None) for r in decided}
    assert {"doc", None} <= kinds and (not stored or "db" in kinds)
    offered = [
        c for p in plans for item in p.entity_items + p.edge_items for c in item["candidates"]
    ]
    assert len(offered) > 10 * chunks
    assert any(
        len(item["candidates"]) == 2 * MAX_CANDIDATES for p in plans for item in p.entity_items
    )
    exact_edges = [r for p in plans for r in p.decisions.edges if r and r.kind == "doc"]
    assert len(exact_edges) >= 3


# ---- what the definition says, case by case


def test_an_exact_duplicate_is_the_first_of_its_name_and_type(conn, ds: int) -> None:
    stored = graph.insert_entity(conn, ds, "Berlin", "Location")
    plans = plan_all(
        conn,
        ds,
        [
            extraction(["Alice Smith", ("Acme", "Org")]),
            extraction(["ALICE   smith", ("Acme", "Org"), ("Berlin", "Location")]),
            extraction(["alice smith", ("acme", "Person")]),
        ],
    )
    assert plans[0].decisions.entities == [NEW, NEW]
    assert plans[1].decisions.entities == [
        Ref("doc", (0, 0)),
        Ref("doc", (0, 1)),
        Ref("db", stored),
    ]
    assert plans[2].decisions.entities[0] == Ref("doc", (0, 0))
    # Same name, another type: not a duplicate, but a candidate, as often as the chunks
    # before named it.
    assert plans[2].decisions.entities[1] is None
    assert plans[2].entity_items[0]["candidates"] == [
        {"id": -1, "name": "Acme", "type": "Org", "summary": ""},
        {"id": -2, "name": "Acme", "type": "Org", "summary": ""},
    ]
    assert plans[2].candidate_refs == {
        ("entities", -1): Ref("doc", (1, 1)),
        ("entities", -2): Ref("doc", (0, 1)),
    }


def test_entity_candidates_share_a_word_newest_first_each_once(conn, ds: int) -> None:
    stored = graph.insert_entity(conn, ds, "Alice Cooper", "Person")
    plans = plan_all(
        conn,
        ds,
        [
            extraction(["Alice Smith", "Bob Jones", "Carol Smith"]),
            extraction(["Alice Jones", "Dave"]),
            extraction(["Alice Smith Jones"]),  # shares two words with some: offered once
            # Items of the same chunk are not each other's candidates.
            extraction(["Smith Alice Jones", "Smith"]),
        ],
    )
    dave = plans[1].decisions.entities[1]
    assert dave == NEW  # no word in common with anything
    item = plans[2].entity_items[0]
    assert names(item["candidates"]) == [
        "Alice Cooper",  # the stored graph's, by keyword, first
        "Alice Jones",
        "Carol Smith",
        "Bob Jones",
        "Alice Smith",
    ]
    assert item["candidates"][0]["id"] == stored
    assert [plans[2].candidate_refs[("entities", c["id"])] for c in item["candidates"]] == [
        Ref("db", stored),
        Ref("doc", (1, 0)),
        Ref("doc", (0, 2)),
        Ref("doc", (0, 1)),
        Ref("doc", (0, 0)),
    ]
    later = names(plans[3].entity_items[0]["candidates"])
    assert later[:2] == ["Alice Cooper", "Alice Smith Jones"] and "Smith" not in later


def test_entity_candidates_are_capped_fts_ones_first(conn, ds: int) -> None:
    for k in range(10):
        graph.insert_entity(conn, ds, f"Acme {k}", "Org")
    chunks = [extraction([(f"Acme Doc{k}", "Org")]) for k in range(20)]
    plans = plan_all(conn, ds, [*chunks, extraction([("Acme", "Thing")])])
    item = plans[-1].entity_items[0]
    assert len(item["candidates"]) == 2 * MAX_CANDIDATES
    ids = [c["id"] for c in item["candidates"]]
    assert all(i > 0 for i in ids[:MAX_CANDIDATES]) and all(i < 0 for i in ids[MAX_CANDIDATES:])
    assert names(item["candidates"])[MAX_CANDIDATES:] == [f"Acme Doc{k}" for k in range(19, 13, -1)]


FACT = ("Alice", "Acme", "works at", "Alice works at Acme.")


def test_an_exact_duplicate_fact_is_the_latest_one_said_the_same_way(conn, ds: int) -> None:
    plans = plan_all(
        conn,
        ds,
        [
            extraction(["Alice", ("Acme", "Org")], [FACT]),
            extraction(["Alice", ("Acme", "Org"), "Bob"], [("Alice", "Bob", "knows", "A knows B")]),
            extraction(["alice", ("ACME", "Person")], [FACT]),
            # Other case, spacing, trailing period, relation spelling: the same fact.
            extraction(["Alice", "Acme"], [("ALICE", "acme", "WORKS_AT", "alice  works at ACME")]),
        ],
    )
    assert plans[0].decisions.edges == [NEW]
    # Exact, by names: the entity types do not matter.
    assert plans[2].decisions.edges == [Ref("doc", (0, 0))]
    # The latest duplicate decides; the facts touching its ends said after it were
    # offered all the same (their candidate ids are spent, their refs kept).
    assert plans[3].decisions.edges == [Ref("doc", (2, 0))]
    assert plans[3].edge_items == [] and plans[3].candidate_refs == {}
    assert plans[2].edge_items == []
    edges = [ref for (kind, _), ref in plans[2].candidate_refs.items() if kind == "edges"]
    assert edges == [Ref("doc", (1, 0))]


def test_fact_candidates_touch_an_end_newest_first(conn, ds: int) -> None:
    a, b = graph.insert_entity(conn, ds, "Alice", "Person"), graph.insert_entity(conn, ds, "Bob")
    c = graph.insert_entity(conn, ds, "Carol", "Person")
    ab = graph.insert_edge(conn, ds, a, b, "KNOWS", "Alice knows Bob.")
    ba = graph.insert_edge(conn, ds, b, a, "KNOWS", "Bob knows Alice.")
    bc = graph.insert_edge(conn, ds, b, c, "KNOWS", "Bob knows Carol.")
    closed = graph.insert_edge(conn, ds, a, c, "KNOWS", "Alice knew Carol.")
    graph.close_edge(conn, closed, "2020-01-01")
    graph.insert_edge(conn, ds, c, c, "IS", "Carol is Carol.")  # touches neither
    plans = plan_all(
        conn,
        ds,
        [
            extraction(["Alice", "Dora"], [("Alice", "Dora", "knows", "Alice knows Dora")]),
            extraction(["Eve", "Dora"], [("Eve", "Dora", "knows", "Eve knows Dora")]),
            extraction(["Alice", "Bob"], [("Alice", "Bob", "met", "Alice met Bob")]),
            extraction(["Alice", "Bob"], [("Alice", "Bob", "knows", "Alice knows Bob")]),
        ],
    )
    assert names(plans[2].edge_items[0]["candidates"]) == [
        "Alice knows Dora",  # this document's first, newest first
        "Alice knows Bob.",  # then the stored graph's current ones: from Alice to Bob
        "Bob knows Carol.",  # touching one of them otherwise, newest first
        "Bob knows Alice.",
        "Alice knew Carol.",  # then the closed: it may be restated, or contradicted
    ]
    offered = [c["id"] for c in plans[2].edge_items[0]["candidates"]]
    assert offered[1:] == [ab, bc, ba, closed]
    assert plans[2].edge_items[0]["candidates"][4]["invalid_at"] == "2020-01-01"
    assert plans[2].candidate_refs[("edges", offered[0])] == Ref("doc", (0, 0))
    assert plans[3].decisions.edges == [Ref("db", ab)]


def test_fact_candidates_are_capped(conn, ds: int) -> None:
    hub = "Hub"
    chunks = [
        extraction([hub, f"Spoke {k}"], [(hub, f"Spoke {k}", "links", f"hub links {k}")])
        for k in range(10)
    ]
    plans = plan_all(conn, ds, [*chunks, extraction([hub, "X"], [(hub, "X", "links", "new")])])
    candidates = plans[-1].edge_items[0]["candidates"]
    assert names(candidates) == [f"hub links {k}" for k in range(9, 3, -1)]


# ---- the stored graph's candidate query


def test_current_edges_touching_by_ids_or_names(conn, ds: int) -> None:
    a = graph.insert_entity(conn, ds, "Alice", "Person")
    a2 = graph.insert_entity(conn, ds, "ALICE", "Robot")
    b = graph.insert_entity(conn, ds, "Bob", "Person")
    c = graph.insert_entity(conn, ds, "Carol", "Person")
    ab = graph.insert_edge(conn, ds, a, b, "KNOWS", "Alice knows Bob.")
    ba = graph.insert_edge(conn, ds, b, a, "KNOWS", "Bob knows Alice.")
    a2c = graph.insert_edge(conn, ds, a2, c, "BUILT", "ALICE built Carol.")
    bc = graph.insert_edge(conn, ds, b, c, "KNOWS", "Bob knows Carol.")
    ab_old = graph.insert_edge(conn, ds, a, b, "MARRIED", "Alice married Bob.")
    graph.close_edge(conn, ab_old, "2020-01-01")
    other = datasets.get_or_create_dataset(conn, "other").id
    x = graph.insert_entity(conn, other, "Alice", "Person")
    graph.insert_edge(conn, other, x, x, "IS", "Alice is Alice.")

    def ids(rows):
        return [r["id"] for r in rows]

    assert ids(graph.current_edges_touching(conn, ds, [a])) == [ab, ba]
    assert ids(graph.current_edges_touching(conn, ds, names=["alice"])) == [ab, ba, a2c]
    assert ids(graph.current_edges_touching(conn, ds, [c], names=["alice"])) == [ab, ba, a2c, bc]
    near = graph.current_edges_touching(conn, ds, names=["alice", "bob"], nearest=("alice", "bob"))
    # From alice to bob, then from alice or to bob, then the rest; each newest first.
    assert ids(near) == [ab, a2c, bc, ba]
    row = near[0]
    assert (row["source_name"], row["source_norm"], row["target_name"], row["target_norm"]) == (
        "Alice",
        "alice",
        "Bob",
        "bob",
    )
    assert row["fact"] == "Alice knows Bob." and row["source_entity_id"] == a
    assert ids(graph.current_edges_touching(conn, ds, names=["alice", "bob"], limit=2)) == [ab, ba]
    assert graph.current_edges_touching(conn, ds, names=["dora"]) == []
    assert graph.current_edges_touching(conn, ds) == []
