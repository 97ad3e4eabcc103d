"""Learn a dataset's fusion from queries with known answers: the user's gold (`gb eval
--tune`) or pseudo-queries the dataset writes for itself (`--synthetic`, pseudo.py).

Hybrid search fuses BM25 and vector scores with a weight (search.Fusion, convex): how
much the vectors should count depends on the embedding model and on the documents,
so it is measured rather than guessed. Each query's candidates are fetched once (both
methods, `depth` each, each scored by both) and fused at every weight of a grid whose
ends are BM25 alone (0) and the vectors alone (1). The weights that fail no more often
than either end at any k (hybrid never worse than its better half on these queries)
are kept; of those the one that loses the fewest queries from its first 20 hits wins,
then the one whose hits rank best (MRR@20), then the weight nearest the one in use (a
flat stretch of the curve is no reason to move). 0 always qualifies when BM25 is the
better half at every k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gligabao.search.evaluate import KS, GoldQuery, first_covering, gold_documents
from gligabao.search.hybrid import GOLD, KEYWORD_SCORER, Fusion, Vector, candidates, hits_of
from gligabao.store import Connection
from gligabao.store.datasets import Dataset
from gligabao.store.db import now_iso

__all__ = [
    "WEIGHTS",
    "Tuning",
    "choose_weight",
    "failures_of",
    "ranks_by_weight",
    "reciprocal_ranks",
    "tune_fusion",
]

WEIGHTS = tuple(round(i / 20, 2) for i in range(21))  # 0, 0.05, ... 1


@dataclass(frozen=True)
class Tuning:
    """What tuning measured: failures at each k for each weight, and the one chosen."""

    dataset: str
    queries: int
    failures: dict[float, dict[int, int]]  # weight -> k -> queries failed
    weight: float
    previous: float
    embedding_model: str | None = None  # the dataset's, which the weight holds for
    mrr: dict[float, float] = field(default_factory=dict)  # weight -> MRR@20
    # What the queries were: the user's gold, or pseudo-queries (pseudo.FROM_LLM, FROM_TEXT).
    origin: str = GOLD
    calls: int = 0  # chat calls paid to write the pseudo-queries
    model: str | None = None  # the chat model that wrote them

    def settings(self) -> dict[str, Any]:
        """What is stored with the dataset (gb_datasets.search_settings): the weight and
        what it was learnt for, so that a change of either side asks for a new tuning."""
        return {
            "method": "convex",
            "vector_weight": self.weight,
            "tuned_on": self.queries,
            "tuned_at": now_iso(),
            "learnt_from": self.origin,
            "embedding_model": self.embedding_model,
            "keyword_scorer": KEYWORD_SCORER,
            **({"written_by": self.model} if self.model else {}),
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "queries": self.queries,
            "learnt_from": self.origin,
            "calls": self.calls,
            "written_by": self.model,
            "vector_weight": self.weight,
            "previous_vector_weight": self.previous,
            "weights": [
                {
                    "vector_weight": w,
                    **{f"failed@{k}": n for k, n in by_k.items()},
                    "mrr@20": self.mrr.get(w),
                }
                for w, by_k in self.failures.items()
            ],
        }


def ranks_by_weight(
    conn: Connection,
    dataset: Dataset,
    queries: Sequence[GoldQuery],
    query_vectors: Mapping[str, Vector],
    *,
    depth: int = 50,
    top: int = max(KS),
    weights: Sequence[float] = WEIGHTS,
    guard: bool = True,
) -> list[dict[float, int | None]]:
    """For each query, at each weight, the rank of its first hit that covers its gold
    (None: not in the first `top`). Each query's candidates are fetched once."""
    docs = gold_documents(conn, dataset, queries)
    out: list[dict[float, int | None]] = []
    for gold in queries:
        found = candidates(
            conn,
            dataset,
            gold.query,
            method="hybrid",
            query_vector=query_vectors[gold.query],
            depth=max(depth, top),
        )
        keys = list(dict.fromkeys([*found.rankings["bm25"], *found.rankings["vector"]]))
        placed = {hit.artifact_id: hit for hit in hits_of(conn, [(k, 0.0, {}) for k in keys])}
        by_weight: dict[float, int | None] = {}
        for w in weights:
            ranked = found.ranked(Fusion("convex", w, guard=guard))[:top]
            hits = [placed[key] for key, _, _ in ranked if key in placed]
            by_weight[w] = first_covering(hits, docs[gold.source], gold)
        out.append(by_weight)
    return out


def failures_of(
    ranks: Sequence[Mapping[float, int | None]], ks: Sequence[int] = KS
) -> dict[float, dict[int, int]]:
    """weight -> k -> how many of the queries fail at k (their rank None or past k)."""
    weights = list(ranks[0]) if ranks else list(WEIGHTS)
    return {w: {k: sum(1 for r in ranks if r[w] is None or r[w] > k) for k in ks} for w in weights}


def reciprocal_ranks(ranks: Sequence[Mapping[float, int | None]]) -> dict[float, float]:
    """weight -> the mean over the queries of 1 / the rank of their first covering hit
    (0 for none in the first 20): MRR@20."""
    weights = list(ranks[0]) if ranks else list(WEIGHTS)
    return {w: sum(1 / r[w] for r in ranks if r[w]) / max(1, len(ranks)) for w in weights}


def choose_weight(ranks: Sequence[Mapping[float, int | None]], current: float) -> float:
    """The weights that fail no more often than either end (BM25 alone, vectors alone) at
    any k of KS are safe. Of those, the one that loses the fewest queries from its first
    20 hits (what a reader scans and `gb ask` reads), then whose hits rank best (MRR@20),
    then nearest `current`. Not the failures summed over k: on a hundred queries the
    failures at 1 of neighbouring weights differ by one or two, which is noise that the
    sum lets decide; MRR counts every rank, not only the crossing of a cut-off."""
    failures = failures_of(ranks)
    weights = sorted(failures)
    ends = [failures[weights[0]], failures[weights[-1]]]
    safe = [w for w in weights if all(failures[w][k] <= min(e[k] for e in ends) for k in KS)]
    mrr = reciprocal_ranks(ranks)
    deepest = max(KS)
    return min(
        safe or weights,
        key=lambda w: (failures[w][deepest], -round(mrr[w], 9), abs(w - current)),
    )


def tune_fusion(
    conn: Connection,
    dataset: Dataset,
    queries: Sequence[GoldQuery],
    query_vectors: Mapping[str, Vector],
    *,
    current: float,
    depth: int = 50,
    weights: Sequence[float] = WEIGHTS,
    guard: bool = True,
) -> Tuning:
    """Fuse each query's candidates at every weight; `current` is the weight in use."""
    ranks = ranks_by_weight(
        conn, dataset, queries, query_vectors, depth=depth, weights=weights, guard=guard
    )
    return Tuning(
        dataset.name,
        len(queries),
        failures_of(ranks),
        choose_weight(ranks, current) if ranks else current,
        current,
        dataset.embedding_model,
        mrr=reciprocal_ranks(ranks),
    )
