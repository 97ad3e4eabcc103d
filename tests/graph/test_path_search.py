"""`Memory.path` on graphs written straight into the store (no LLM): random ones, whose
chains are checked against every shortest chain networkx finds, and one too long for a
recursive walk."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import networkx as nx
import pytest

from gligabao import Memory
from gligabao.store import datasets, graph, open_db
from tests.support.helpers import database

PAST = "2020-01-01T00:00:00.000Z"


@pytest.fixture
def conn(backend) -> Iterator[Any]:
    opened = open_db(database(), create=True)
    yield opened
    opened.close()


@pytest.fixture
def ds(conn) -> int:
    return datasets.get_or_create_dataset(conn, "default").id


def _random_graph(conn: Any, ds: int, seed: int) -> tuple[list[int], nx.MultiGraph]:
    """30 entities and 60 facts between them (a few loops, a few parallel, a fifth closed):
    their ids, and the current facts as an undirected multigraph keyed by fact id."""
    rng = random.Random(seed)
    ids = [graph.insert_entity(conn, ds, f"Node {seed} {n}") for n in range(30)]
    current = nx.MultiGraph()
    current.add_nodes_from(ids)
    for n in range(60):
        a, b = rng.choice(ids), rng.choice(ids)
        edge = graph.insert_edge(conn, ds, a, b, "LINKS", f"Fact {n}.", valid_at=PAST)
        if rng.random() < 0.2:
            graph.close_edge(conn, edge, PAST)
        elif a != b:
            current.add_edge(a, b, key=edge)
    return ids, current


def _every_shortest_chain(g: nx.MultiGraph, a: int, b: int) -> list[list[int]]:
    """Each shortest chain of facts from a to b, as its facts' ids: every shortest chain
    of entities, with each parallel fact between two of them."""
    chains = []
    for nodes in nx.all_shortest_paths(g, a, b):
        steps = [sorted(g[x][y]) for x, y in itertools.pairwise(nodes)]
        chains += [list(chain) for chain in itertools.product(*steps)]
    return sorted(chains)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_chains_are_the_first_shortest_ones_networkx_finds(conn, ds, seed) -> None:
    ids, current = _random_graph(conn, ds, seed)
    rng = random.Random(seed)
    with Memory(database()) as memory:
        for a, b in (rng.sample(ids, 2) for _ in range(25)):
            found = memory.path(str(a), str(b), max_depth=4)
            chains = [[hop.fact.id for hop in hops] for hops in found.paths]
            if not nx.has_path(current, a, b) or nx.shortest_path_length(current, a, b) > 4:
                assert not found.found and chains == [], (a, b)
                continue
            assert chains == _every_shortest_chain(current, a, b)[:5], (a, b)
            for hops in found.paths:
                at = a
                for hop in hops:
                    ends = (hop.fact.source_id, hop.fact.target_id)
                    assert hop.fact.status == "current" and at in ends
                    assert hop.reversed == (at != hop.fact.source_id)
                    at = ends[1] if hop.fact.source_id == at else ends[0]
                assert at == b


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # 1,500 facts, written one by one
def test_a_chain_longer_than_python_s_stack_is_deep(conn, ds) -> None:
    ids = [graph.insert_entity(conn, ds, f"Station {n}") for n in range(1501)]
    for n, (a, b) in enumerate(itertools.pairwise(ids)):
        # Every other fact stated the other way round: crossed backwards.
        ends = (a, b) if n % 2 else (b, a)
        graph.insert_edge(conn, ds, *ends, "NEXT_TO", f"Stop {n}.", valid_at=PAST)
    with Memory(database()) as memory:
        (hops,) = memory.path(str(ids[0]), str(ids[-1]), max_depth=2000).paths
        assert len(hops) == 1500
        assert [hop.reversed for hop in hops[:4]] == [True, False, True, False]
        assert not memory.path(str(ids[0]), str(ids[-1]), max_depth=1499).found


def test_at_most_five_chains_the_first_by_their_facts_ids(conn, ds) -> None:
    """Two facts between each two of four entities in a row: eight shortest chains."""
    ids = [graph.insert_entity(conn, ds, f"Town {n}") for n in range(4)]
    g = nx.MultiGraph()
    for a, b in itertools.pairwise(ids):
        for n in range(2):
            ends = (a, b) if n else (b, a)
            g.add_edge(a, b, key=graph.insert_edge(conn, ds, *ends, "ROAD", f"Road {n}."))
    with Memory(database()) as memory:
        found = memory.path(str(ids[0]), str(ids[-1]))
    every = _every_shortest_chain(g, ids[0], ids[-1])
    assert len(every) == 8
    assert [[hop.fact.id for hop in hops] for hops in found.paths] == every[:5]
