"""Benchmark `gb facts` and `gb entity` on a large graph: p50 and p95 latency.

The script builds a database directly through the store (no LLM): `--entities` entities
(default 20,000: 60% people, 25% companies, 15% places, named from word lists, each with
a one-line summary) and `--facts` facts between them (default 100,000) from eight
relations (WORKS_AT, LIVES_IN, IS_LED_BY, HEADQUARTERED_IN, KNOWS, PARTNERS_WITH,
INVESTED_IN, ACQUIRED), each a sentence such as "Alice Moreau works at Blue Harbor
Systems since March 2015.", its valid_at spread over 2000-2025, the targets drawn with
a skew (a few companies and places are hubs). About 20% of the facts are closed as
`gb remember` closes them: a later fact with the same source and a functional relation
(WORKS_AT, LIVES_IN, IS_LED_BY, HEADQUARTERED_IN) but another target is placed after it
by `graph.settle_in_time`, which sets invalid_at, invalidated_by_edge_id and expired_at
(chains of several are common). The sentences are the text of the documents: 50 facts
a chunk, 100 chunks a document, each fact linked to its chunk with its quote and byte
span (`QuoteSpan`), its two entities linked to the chunk too; every entity, fact
and chunk has a random 1,536-dimension unit vector, as `gb remember` leaves them (the
entities and edges indexes with their binary-quantized `-bits` companions). The tests'
OpenAI-compatible server (tests/support/llm_server.py) runs on 127.0.0.1 to embed the queries.
With `--reuse`, the database is first made ready as the next `gb remember` would
(`set_embedding`): one built before the `-bits` tables gets them, filled from its float
vectors, once (~18 s at 100,000 facts and 20,000 entities).

Timed in this process, over `--queries` queries each (default 50, after five warm-up
ones), with `gligabao.graph.queries`:

- facts QUERY, hybrid: `facts(conn, ds, QUERY, query_vector=..., limit=20)`, the query
  (a question naming an entity: "who works at Blue Harbor Systems") embedded by its own
  request to the server, as `gb facts` does;
- facts QUERY, bm25: the same without a vector;
- facts --about ID --at DATE: `facts(conn, ds, about=[id], at=DATE)`, a random entity
  and a random date;
- facts (list): `facts(conn, ds)`, the current facts, newest first;
- entity NAME: `entity(conn, ds, NAME)`, an existing name, depth 1;
- a fact's candidates: `graph.current_edges_touching(..., nearest=(a, b), closed=True)`
  as `gb remember`'s resolution calls it for each extracted fact, one end drawn among the
  ten entities with the most facts.

Each case shows its CPU time beside the wall time (this process, all threads): on a
machine shared with other work it is the steadier figure. A hybrid call's CPU time can
exceed its wall time, its keyword and vector halves running on two cores at once.

The vector half of `facts QUERY` ranks the facts' vectors in two steps (store/sqlite/vectors.py,
`knn`): the nearest `max(4 * k, 400)` by Hamming distance over the `-bits` table, then
those by their exact cosine distance. Here k is facts()'s pool, 4 * max(depth, limit) =
200. Random vectors say nothing of how much of the exact answer that keeps, so it was
measured on real ones: 20,000 sentences of shared/retrieval-dev's corpus as facts and its
first 200 queries, embedded by all-MiniLM-L6-v2 (384 dimensions). recall@k is the share
of the exact scan's k nearest found, averaged over the queries (min: the worst query);
"top 20" is the share of the exact 20 nearest found in the k returned:

    k     candidates       recall@k  min    top 20  min    CPU a query
    10     4k =   40        0.949   0.40
    10     8k =   80        0.989   0.60
    10    16k =  160        0.997   0.80
    20     4k =   80        0.959   0.45
    20     8k =  160        0.987   0.65
    20    16k =  320        0.995   0.80
    20    32k =  640        1.000   0.90
    20   max(8k, 200) = 200 0.991   0.70
    20   max(4k, 400) = 400 0.997   0.80
    50     4k =  200        0.955   0.50
    50     8k =  400        0.986   0.60
    50    16k =  800        0.997   0.84
    100  max(4k, 400) = 400 0.957   0.62    0.997  0.80
    200    2k =  400        0.870   0.56    0.997  0.80
    200    4k =  800        0.959   0.76    1.000  0.95    58 ms  (exact scan: 23 ms here)
    200    8k = 1600        0.990   0.91    1.000  0.95    89 ms

The true nearest few are among the nearest few hundred by Hamming distance whatever k
is: a floor of 400 candidates keeps recall@20 at 0.997, and 4k above it keeps recall@k
above 0.95 for a pool of 200 (whose top 20 are all found) at half the cost of 8k: at
100,000 facts of 1,536 dimensions, knn(k=200) takes ~68 ms of CPU with 800 candidates,
~109 with 1,600, ~280 by the exact scan. 384 bits a vector is the hard case for binary
quantization; 1,536-dimension embeddings keep four times as many bits.

Then `gb facts QUERY --json` and `gb entity NAME --json` as fresh processes, `--runs`
times each (default 15), beside `gb --version` (process start and imports only).

Run from the repository root::

    . .venv/bin/activate
    python bench/graph_bench.py [--entities 20000] [--facts 100000] [--queries 50]
                                [--runs 15] [--keep DB [--reuse]]
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import functools
import itertools
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from gligabao.base.evidence import QuoteSpan  # noqa: E402
from gligabao.chunk.tokens import ESTIMATOR  # noqa: E402
from gligabao.config import load_config  # noqa: E402
from gligabao.graph.queries import entity, facts  # noqa: E402
from gligabao.llm.query import embed_query  # noqa: E402
from gligabao.remember.resolve import MAX_CANDIDATES  # noqa: E402
from gligabao.store import facts as store_facts  # noqa: E402
from gligabao.store import graph, open_db, transaction  # noqa: E402
from gligabao.store.artifacts import insert_chunk, insert_document  # noqa: E402
from gligabao.store.datasets import find_dataset, get_or_create_dataset, set_embedding  # noqa: E402
from gligabao.store.sqlite.vectors import chunk_row, edge_row, entity_row, upsert_vectors  # noqa: E402
from tests.support.llm_server import LLMServer  # noqa: E402

DIMENSIONS = 1536
MODEL = "bench-embedding"
DATASET = "bench"
FACTS_PER_CHUNK = 50
CHUNKS_PER_DOCUMENT = 100
SENTENCES_PER_LINE = 5
CLOSED_SHARE = 0.2
TARGET_SKEW = 0.6  # target weights ~ 1 / rank**TARGET_SKEW within a type
LIMIT_MS = 100.0
FIRST_DAY = dt.date(2000, 1, 1)
LAST_DAY = dt.date(2024, 12, 31)  # a first fact's valid_at; later ones up to END_DAY
END_DAY = dt.date(2025, 6, 30)


def _words(text: str) -> list[str]:
    return text.split()


MONTHS = _words(
    "January February March April May June July August September October November December"
)

FIRST_NAMES = _words(
    """
Aaron Abigail Adele Adrian Agnes Aiko Alan Alba Alice Amara Amir Ana Anders Andrea Anika
Anton Arjun Astrid Aurora Ayla Beatriz Ben Bianca Boris Brigid Bruno Caleb Camille Carlos
Carmen Chiara Chloe Clara Colin Dalia Daniel Dario Diego Dmitri Elena Elif Elias Elsa Emil
Emma Enzo Erik Esther Ethan Eva Farah Felix Fiona Frida Gabriel Greta Hana Hannah Hugo
Ibrahim Ida Ines Ingrid Irene Isaac Ivan Jade Jakob Jana Javier Jonas Julia Kai Karim Kenji
Lara Laura Leila Leon Lina Linus Lucas Luna Magnus Maja Malik Marco Maria Mateo Maya Mei
Milan Mira Nadia Naomi Nico Nina Noah Nora Olga Omar Oscar Paula Pedro Priya Rafael Rania
Rosa Ruben Sara Selin Simon Sofia Stefan Tariq Tomas Vera Viktor Yara Yusuf Zara Zoe
"""
)
LAST_NAMES = _words(
    """
Abara Achterberg Adeyemi Alvarez Andersen Aoki Arslan Bauer Becker Bergstrom Bianchi Brandt
Castillo Chen Costa Dahl Demir Dubois Eriksen Esposito Fischer Fontaine Garcia Gonzaga Gruber
Haas Halvorsen Hansen Hartmann Herrera Hoffmann Horvat Ibarra Ivanova Jansen Jensen Kato
Keller Kim Kowalski Kraus Lambert Larsen Lehmann Lindqvist Lopez Lund Maier Marchetti Martin
Meyer Moreau Morales Muller Nakamura Navarro Neumann Nguyen Nielsen Novak Okafor Oliveira
Olsen Ortega Park Pereira Petrov Popescu Quinn Ramos Reyes Ricci Rojas Rossi Russo Sato
Schmidt Schneider Silva Sorensen Suzuki Svensson Tanaka Torres Vasquez Vogel Wagner Weber
Werner Yilmaz Zimmermann Abbott Barros Carvalho Delgado Eklund Farouk Gallo Hakimi Iyer
Jovanovic Kaur Lacroix Mendes Nowak Oyelaran Pham Quintero Rahman Santos Takahashi Ueda
Vidal Walsh Xu Yamamoto Zhang Amato Bakker Conti Duarte Engel Ferreira Gomes Holm Ito
"""
)
COMPANY_WORDS = _words(
    """
Acme Apex Arbor Atlas Aurora Beacon Birch Blue Bright Cedar Cobalt Copper Crest Crystal
Delta Echo Ember Evergreen Falcon Fern Granite Harbor Helix Horizon Indigo Iron Juniper
Keystone Lumen Maple Meridian Nimbus North Nova Oak Onyx Orbit Pacific Pine Polar Prism
Quartz Redwood Ridge River Sable Silver Solar Spruce Stellar Summit Tidal Titan Unity
Vertex Vista Willow Zenith
"""
)
COMPANY_NOUNS = _words(
    """
Analytics Bio Bridge Capital Cloud Code Data Dynamics Energy Foods Forge Freight Health
Labs Logic Media Metrics Mobility Networks Optics Pharma Robotics Security Signal Software
Space Systems Textiles Tools Works
"""
)
COMPANY_SUFFIXES = _words("Corp Inc Ltd Group GmbH SA AG Partners Holdings Co")
PLACE_ROOTS = _words(
    """
Alder Ash Bel Birch Black Bram Bright Brook Cam Castle Cedar Clay Cold Crow Dal Dun Elm
Fair Fern Glen Gold Green Hal Hart Haw High Holly Iron Kings Lark Lin Marsh Mill Moss Nor
Oak Pen Pine Red Rich Rose Rother Salt Sand Shel Silver Stan Stone Sun Thorn Wal Well West
Wick Wil Win Wood Wren York
"""
)
PLACE_ENDINGS = _words(
    """
bury by dale field ford gate ham haven hill holm ley mere mouth port stead ton vale ville
wick worth
"""
)
PLACE_PREFIXES = _words("New North South East West Port Lake Upper Lower Saint")
JOBS = _words(
    """
engineer designer teacher nurse lawyer accountant chemist architect journalist pilot
economist physician researcher analyst photographer translator carpenter chef
"""
)
SECTORS = _words(
    """
software logistics biotech energy retail insurance media robotics textile aerospace
pharmaceutical banking telecom shipping agriculture
"""
)
REGIONS = _words("north south east west coast mountains lakes")

# relation: (source type, target type, functional, sentence, weight)
RELATIONS = {
    "WORKS_AT": ("person", "company", True, "{s} works at {t} since {d}.", 25),
    "LIVES_IN": ("person", "place", True, "{s} lives in {t} since {d}.", 15),
    "IS_LED_BY": ("company", "person", True, "{s} is led by {t} since {d}.", 8),
    "HEADQUARTERED_IN": ("company", "place", True, "{s} is headquartered in {t} since {d}.", 7),
    "KNOWS": ("person", "person", False, "{s} has known {t} since {d}.", 20),
    "PARTNERS_WITH": ("company", "company", False, "{s} has partnered with {t} since {d}.", 10),
    "INVESTED_IN": ("person", "company", False, "{s} invested in {t} in {d}.", 8),
    "ACQUIRED": ("company", "company", False, "{s} acquired {t} in {d}.", 7),
}
REASONS = {
    "WORKS_AT": "a later fact gives {s} another employer",
    "LIVES_IN": "a later fact has {s} living elsewhere",
    "IS_LED_BY": "a later fact gives {s} another leader",
    "HEADQUARTERED_IN": "a later fact moves the headquarters of {s}",
}
# Questions a person would ask, by the type of the entity they name.
QUESTIONS = {
    "person": (
        "where does {n} work",
        "where does {n} live",
        "who does {n} know",
        "{n} employer history",
        "companies {n} invested in",
    ),
    "company": (
        "who works at {n}",
        "who leads {n}",
        "where is {n} headquartered",
        "companies acquired by {n}",
        "partners of {n}",
    ),
    "place": ("who lives in {n}", "companies headquartered in {n}", "people moving to {n}"),
}


def _unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIMENSIONS), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def _names(count: int, rng: random.Random, make, capacity: int, kind: str) -> list[str]:
    if count > capacity // 2:
        raise SystemExit(f"the word lists make about {capacity:,} {kind} names, not {count:,}")
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        name = make()
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


def _entities(n: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """n (name, type, summary): 60% people, 25% companies, the rest places."""
    people, companies = round(n * 0.6), round(n * 0.25)
    places = n - people - companies

    def person() -> str:
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        if rng.random() < 0.3:  # a middle initial, as people are often named
            return f"{first} {chr(65 + rng.randrange(26))}. {last}"
        return f"{first} {last}"

    def company() -> str:
        words = [rng.choice(COMPANY_WORDS), rng.choice(COMPANY_NOUNS)]
        if rng.random() < 0.6:
            words.append(rng.choice(COMPANY_SUFFIXES))
        return " ".join(words)

    def place() -> str:
        name = rng.choice(PLACE_ROOTS) + rng.choice(PLACE_ENDINGS)
        return f"{rng.choice(PLACE_PREFIXES)} {name}" if rng.random() < 0.5 else name

    out = []
    for name in _names(people, rng, person, len(FIRST_NAMES) * len(LAST_NAMES) * 27, "person"):
        out.append((name, "person", f"{name.split()[0]} is a {rng.choice(JOBS)}."))
    cap = len(COMPANY_WORDS) * len(COMPANY_NOUNS) * (len(COMPANY_SUFFIXES) + 1)
    for name in _names(companies, rng, company, cap, "company"):
        out.append((name, "company", f"{name} is a {rng.choice(SECTORS)} company."))
    cap = len(PLACE_ROOTS) * len(PLACE_ENDINGS) * (len(PLACE_PREFIXES) + 1)
    for name in _names(places, rng, place, cap, "place"):
        out.append((name, "place", f"{name} is a town in the {rng.choice(REGIONS)}."))
    return out


def _fact_specs(
    entities: list[tuple[str, str, str]], m: int, rng: random.Random
) -> list[tuple[int, str, int, dt.date, int]]:
    """m (source index, relation, target index, valid day, index of the fact it closes
    or -1), in the order they are remembered. A closing fact follows the one it closes;
    about CLOSED_SHARE of them close one."""
    by_type: dict[str, list[int]] = {}
    for i, (_, type_, _) in enumerate(entities):
        by_type.setdefault(type_, []).append(i)
    # Targets are skewed: within a type, the one at rank r has weight 1 / r**TARGET_SKEW.
    cum: dict[str, list[float]] = {}
    for type_, members in by_type.items():
        rng.shuffle(members)
        cum[type_] = list(
            itertools.accumulate(1 / (r + 1) ** TARGET_SKEW for r in range(len(members)))
        )

    def target(type_: str, not_this: int) -> int:
        members, weights = by_type[type_], cum[type_]
        while True:
            pick = members[bisect.bisect(weights, rng.random() * weights[-1])]
            if pick != not_this or len(members) == 1:
                return pick

    relations = list(RELATIONS)
    weights = [RELATIONS[r][4] for r in relations]
    span = (LAST_DAY - FIRST_DAY).days
    closing = set(rng.sample(range(min(m, 1000), m), int(m * CLOSED_SHARE))) if m > 1000 else set()
    open_functional: list[int] = []  # facts a later one may close
    specs: list[tuple[int, str, int, dt.date, int]] = []
    for i in range(m):
        closed = -1
        while i in closing and open_functional:
            k = rng.randrange(len(open_functional))
            open_functional[k], open_functional[-1] = open_functional[-1], open_functional[k]
            candidate = open_functional.pop()
            if specs[candidate][3] < END_DAY:
                closed = candidate
                break
        if closed >= 0:
            source, relation, old_target, day, _ = specs[closed]
            new_target = target(RELATIONS[relation][1], old_target)
            day = day + dt.timedelta(days=rng.randint(1, (END_DAY - day).days))
            specs.append((source, relation, new_target, day, closed))
        else:
            relation = rng.choices(relations, weights)[0]
            source_type, target_type = RELATIONS[relation][:2]
            source = rng.choice(by_type[source_type])
            day = FIRST_DAY + dt.timedelta(days=rng.randrange(span))
            specs.append((source, relation, target(target_type, source), day, -1))
        if RELATIONS[specs[-1][1]][2]:
            open_functional.append(i)
    return specs


def _sentence(entities, spec) -> str:
    source, relation, target, day, _ = spec
    when = f"{MONTHS[day.month - 1]} {day.year}"
    return RELATIONS[relation][3].format(s=entities[source][0], t=entities[target][0], d=when)


def _iso(day: dt.date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def build(path: str, n_entities: int, n_facts: int, seed: int = 7) -> dict[str, float]:
    """The database at `path`; returns the build seconds and what it holds."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    started = time.perf_counter()
    entities = _entities(n_entities, rng)
    specs = _fact_specs(entities, n_facts, rng)
    conn = open_db(path)
    ds = get_or_create_dataset(conn, DATASET)
    set_embedding(conn, ds.id, MODEL, DIMENSIONS)
    entity_ids: list[int] = []
    with transaction(conn):
        for name, type_, summary in entities:
            entity_ids.append(graph.insert_entity(conn, ds.id, name, type_, summary))
        for at in range(0, len(entity_ids), 5000):
            batch = entity_ids[at : at + 5000]
            vecs = _unit_vectors(nrng, len(batch))
            rows = [entity_row(e, vecs[i].tobytes()) for i, e in enumerate(batch)]
            upsert_vectors(conn, ds.id, "entities", rows)
    edge_ids: list[int] = []
    closed = 0
    per_document = FACTS_PER_CHUNK * CHUNKS_PER_DOCUMENT
    for doc_number, first in enumerate(range(0, len(specs), per_document)):
        doc_specs = specs[first : first + per_document]
        # The document: one line every SENTENCES_PER_LINE sentences, chunks of
        # FACTS_PER_CHUNK sentences; each sentence's byte span kept for its evidence.
        chunks: list[tuple[str, int, int]] = []  # text, start, end (bytes)
        spans: list[tuple[str, int, int, int]] = []  # sentence, start, end, chunk number
        pieces: list[str] = []
        offset = 0
        for c in range(0, len(doc_specs), FACTS_PER_CHUNK):
            chunk_start = offset
            lines = []
            group = doc_specs[c : c + FACTS_PER_CHUNK]
            for ln in range(0, len(group), SENTENCES_PER_LINE):
                line = []
                for spec in group[ln : ln + SENTENCES_PER_LINE]:
                    sentence = _sentence(entities, spec)
                    size = len(sentence.encode("utf-8"))
                    spans.append((sentence, offset, offset + size, len(chunks)))
                    line.append(sentence)
                    offset += size + 1  # the space or newline after it
                lines.append(" ".join(line))
            text = "\n".join(lines) + "\n"
            chunks.append((text, chunk_start, offset))
            pieces.append(text)
        doc_text = "".join(pieces)
        assert len(doc_text.encode("utf-8")) == offset
        with transaction(conn):
            token_counts = [ESTIMATOR.count(text) for text, _, _ in chunks]
            doc = insert_document(
                conn,
                dataset_id=ds.id,
                text=doc_text,
                source=f"/bench/graph/doc-{doc_number:03d}.txt",
                chunk_count=len(chunks),
                status="complete",
                tokens=sum(token_counts),
            )
            chunk_ids = []
            for index, ((text, start, end), tokens) in enumerate(
                zip(chunks, token_counts, strict=True)
            ):
                chunk_ids.append(
                    insert_chunk(
                        conn,
                        document_id=doc,
                        text=text,
                        chunk_index=index,
                        start_offset=start,
                        end_offset=end,
                        tokens=tokens,
                    )
                )
            vecs = _unit_vectors(nrng, len(chunk_ids))
            rows = [chunk_row(c, doc, i, vecs[i].tobytes()) for i, c in enumerate(chunk_ids)]
            upsert_vectors(conn, ds.id, "chunks", rows)
            new_edges = []
            for spec, (sentence, start, end, chunk_number) in zip(doc_specs, spans, strict=True):
                source, relation, target, day, closes = spec
                chunk = chunk_ids[chunk_number]
                edge_id = graph.insert_edge(
                    conn,
                    ds.id,
                    entity_ids[source],
                    entity_ids[target],
                    relation,
                    sentence,
                    valid_at=_iso(day),
                    artifact_id=chunk,
                )
                edge_ids.append(edge_id)
                new_edges.append(edge_id)
                if closes >= 0:
                    reason = REASONS[relation].format(s=entities[source][0])
                    closed += len(graph.settle_in_time(conn, edge_id, [edge_ids[closes]], reason))
                graph.link_edge(conn, edge_id, chunk, None, QuoteSpan(sentence, start, end, True))
                graph.link_entity(conn, entity_ids[source], chunk)
                graph.link_entity(conn, entity_ids[target], chunk)
            vecs = _unit_vectors(nrng, len(new_edges))
            rows = [edge_row(e, vecs[i].tobytes()) for i, e in enumerate(new_edges)]
            upsert_vectors(conn, ds.id, "edges", rows)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return {
        "seconds": time.perf_counter() - started,
        "entities": len(entity_ids),
        "facts": len(edge_ids),
        "closed": closed,
        "documents": doc_number + 1 if specs else 0,
    }


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def _env(base_url: str, path: str) -> dict[str, str]:
    """The environment of the timed commands: the test server, the bench database and
    dataset, and a config dir (with the processes run in its folder) holding no
    gligabao.toml."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GB_", "OPENAI_"))}
    env.update(
        GB_DB=path,
        OPENAI_BASE_URL=base_url,
        GB_EMBEDDINGS_MODEL=MODEL,
        GB_EMBEDDINGS_DIMENSIONS=str(DIMENSIONS),
        GB_DATASET=DATASET,
        XDG_CONFIG_HOME=os.path.dirname(path),
    )
    return env


class Workload:
    """What the timed calls ask, drawn from the database: questions naming an entity,
    entity ids and dates for --about/--at, names for `gb entity`."""

    def __init__(self, path: str, count: int, seed: int) -> None:
        conn = open_db(path, create=False)
        ds = find_dataset(conn, DATASET)
        if ds is None:
            raise SystemExit(f"{path} has no dataset {DATASET!r}")
        # Every entity with its number of facts: names drawn among those with some.
        rows = [r for r in store_facts.entities(conn, ds.id) if r["fact_count"]]
        conn.close()
        rng = random.Random(seed)
        span = (END_DAY - FIRST_DAY).days
        picks = rng.sample(rows, min(len(rows), 3 * count))
        self.questions = [
            rng.choice(QUESTIONS[r["type"]]).format(n=r["name"]) for r in picks[:count]
        ]
        self.about = [
            (r["id"], _iso(FIRST_DAY + dt.timedelta(days=rng.randrange(span))))
            for r in picks[count : 2 * count]
        ]
        self.names = [r["name"] for r in picks[2 * count :]]
        self.fact_counts = [r["fact_count"] for r in rows]
        # What resolution reads for an extracted fact: the stored facts touching its two
        # ends, nearest first. One end a hub (among the ten with the most facts), as a
        # fact about the user, or their company, is in a memory of their own notes.
        hubs = sorted(rows, key=lambda r: r["fact_count"])[-10:]
        self.pairs = [
            (graph.normalize_name(r["name"]), graph.normalize_name(rng.choice(hubs)["name"]))
            for r in picks[:count]
        ]


def measure(path: str, work: Workload, base_url: str) -> dict[str, dict[str, float]]:
    """In-process latency of each call, over the workload, after five warm-up calls; and
    its CPU time (this process's, all threads: the KNN half runs on a second one), which
    other work on a shared machine disturbs less than it does the wall time."""
    config = load_config(None, {"database": path}, env=_env(base_url, path))
    conn = open_db(path, create=False)
    ds = find_dataset(conn, DATASET)
    assert ds is not None

    def hybrid(q: str):
        return facts(conn, ds, q, query_vector=functools.partial(embed_query, config, q), limit=20)

    cases = {
        "hybrid": (work.questions, hybrid),
        "bm25": (work.questions, lambda q: facts(conn, ds, q, limit=20)),
        "about_at": (work.about, lambda a: facts(conn, ds, about=[a[0]], at=a[1], limit=20)),
        "list": (work.questions, lambda _: facts(conn, ds, limit=20)),
        "entity": (work.names, lambda name: entity(conn, ds, name)),
        "candidates": (work.pairs, lambda pair: candidates(conn, ds.id, pair)),
    }
    out: dict[str, dict[str, float]] = {}
    for case, (inputs, call) in cases.items():
        for item in inputs[:5]:  # warm up the page cache and the statements
            call(item)
        times, cpu, rows = [], [], 0
        for item in inputs:
            t0, c0 = time.perf_counter(), time.process_time()
            got = call(item)
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            rows += len(got.facts) if case == "entity" else len(got)
        out[case] = {"p50": statistics.median(times), "p95": _pct(times, 95)}
        out[case]["cpu"] = statistics.median(cpu)
        out[case]["rows"] = rows / len(inputs)
    conn.close()
    return out


def candidates(conn, dataset_id: int, pair: tuple[str, str]) -> list[dict]:
    """The stored facts an extracted fact between these two names is compared with, as
    gb remember's resolution asks for them (remember/resolve.py)."""
    return graph.current_edges_touching(
        conn, dataset_id, names=pair, nearest=pair, limit=4 * MAX_CANDIDATES, closed=True
    )


def _run(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, str, str]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = (time.perf_counter() - t0) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:4])} failed: {done.stderr.strip()}")
    return elapsed, done.stdout, done.stderr


def command(path: str, work: Workload, runs: int, base_url: str) -> dict[str, dict[str, float]]:
    """Wall time of `gb facts QUERY --json` and `gb entity NAME --json` as fresh
    processes, and of `gb --version`."""
    folder = os.path.dirname(path)
    env = _env(base_url, path)
    gb = [sys.executable, "-m", "gligabao"]
    times: dict[str, list[float]] = {"facts": [], "entity": [], "version": []}
    bm25_only = 0
    for i in range(runs + 2):
        question = work.questions[i % len(work.questions)]
        name = work.names[i % len(work.names)]
        took_facts, out, err = _run([*gb, "facts", question, "--json"], env, folder)
        if not out.strip():
            raise SystemExit(f"gb facts found nothing for {question!r}")
        bm25_only += "BM25 only" in err
        took_entity, out, _ = _run([*gb, "entity", name, "--json"], env, folder)
        if not out.strip():
            raise SystemExit(f"gb entity showed nothing for {name!r}")
        took_version, _, _ = _run([*gb, "--version"], env, folder)
        if i >= 2:  # two warm-up runs: the page cache, Python's bytecode cache
            times["facts"].append(took_facts)
            times["entity"].append(took_entity)
            times["version"].append(took_version)
    if bm25_only:
        print(f"WARNING: gb facts searched by BM25 only in {bm25_only} runs (no query vector)")
    return {k: {"p50": statistics.median(v), "p95": _pct(v, 95)} for k, v in times.items()}


def _ready(path: str) -> float:
    """Seconds to bring a reused database's vector tables up to date, as the next
    `gb remember` would (set_embedding): a database built before the quantized companions
    of the entities and edges indexes gets them, filled from its float vectors."""
    t0 = time.perf_counter()
    conn = open_db(path, create=False)
    ds = find_dataset(conn, DATASET)
    if ds is None:
        raise SystemExit(f"{path} has no dataset {DATASET!r}")
    set_embedding(conn, ds.id, MODEL, DIMENSIONS)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.perf_counter() - t0


def _size(path: str) -> int:
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def _remove(path: str) -> None:
    for p in (path, path + "-wal", path + "-shm"):
        if os.path.exists(p):
            os.remove(p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entities", type=int, default=20_000, help="entities to build")
    parser.add_argument("--facts", type=int, default=100_000, help="facts to build")
    parser.add_argument("--queries", type=int, default=50, help="timed calls per case")
    parser.add_argument("--runs", type=int, default=15, help="timed processes per command")
    parser.add_argument("--keep", help="database path to build and keep (default: temporary)")
    parser.add_argument(
        "--reuse", action="store_true", help="with --keep: time the database there, if any"
    )
    args = parser.parse_args()
    if args.queries < 20:
        parser.error("--queries must be at least 20 for a p95")
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    if args.entities < 100 or args.facts < 1000:
        parser.error("at least 100 entities and 1,000 facts")
    if args.reuse and not args.keep:
        parser.error("--reuse needs --keep")
    folder = tempfile.mkdtemp(prefix="gb-graph-bench-")
    path = os.path.abspath(args.keep) if args.keep else os.path.join(folder, "graph.db")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    built = None
    if not (args.reuse and os.path.exists(path)):
        _remove(path)
        print(
            f"building {args.entities:,} entities, {args.facts:,} facts, {DIMENSIONS}-d vectors ..."
        )
        built = build(path, args.entities, args.facts)
        print(
            f"  built in {built['seconds']:.1f} s: {built['entities']:,} entities, "
            f"{built['facts']:,} facts ({built['closed']:,} closed), "
            f"{built['documents']} documents; database {_size(path) / 2**20:,.0f} MiB"
        )
    else:
        print(f"timing {path} as it is ({_size(path) / 2**20:,.0f} MiB)")
        print(f"  its vector tables made ready as gb remember would in {_ready(path):.1f} s")
    work = Workload(path, args.queries, seed=11)
    counts = sorted(work.fact_counts)
    print(
        f"  facts an entity: median {statistics.median(counts):.0f}, "
        f"p99 {_pct(counts, 99):.0f}, max {counts[-1]:,}"
    )
    with LLMServer() as server:
        timing = measure(path, work, server.base_url)
        processes = command(path, work, args.runs, server.base_url)
    if not args.keep:
        _remove(path)

    print()
    print(
        f"gb facts / gb entity at {args.entities:,} entities and {args.facts:,} facts (ms): "
        f"in process, {args.queries} calls a case; as a process, {args.runs} runs"
    )
    head = f"{'case':<48} {'p50':>7} {'p95':>7} {'cpu p50':>7} {'rows':>6}  <{LIMIT_MS:.0f} ms p50"
    print(head)
    print("-" * len(head))
    labels = {
        "hybrid": "facts(QUERY), hybrid, query embedded over HTTP",
        "bm25": "facts(QUERY), bm25",
        "about_at": "facts(about=[id], at=DATE)",
        "list": "facts(), current, newest first",
        "entity": "entity(NAME), depth 1",
        "candidates": "a fact's candidates, one end a hub (resolution)",
    }
    for case, label in labels.items():
        t = timing[case]
        verdict = "PASS" if t["p50"] < LIMIT_MS else "FAIL"
        print(
            f"{label:<48} {t['p50']:>7.1f} {t['p95']:>7.1f} {t['cpu']:>7.1f} {t['rows']:>6.1f}"
            f"  {verdict}"
        )
    for case, label in (
        ("facts", "gb facts QUERY --json (process)"),
        ("entity", "gb entity NAME --json (process)"),
        ("version", "gb --version (process)"),
    ):
        t = processes[case]
        print(f"{label:<48} {t['p50']:>7.1f} {t['p95']:>7.1f}")
    if built is not None:
        print(f"\nbuild: {built['seconds']:.1f} s")
    load = os.getloadavg()
    print(
        f"load average after the run: {load[0]:.1f} (1 min), {load[1]:.1f} (5 min), "
        f"{os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
