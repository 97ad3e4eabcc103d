"""Learn a dataset's fusion from its own gold queries (`gb eval --tune`).

Hybrid search fuses BM25 and vector scores with a weight (search.Fusion, convex): how
much the vectors should count depends on the embedding model and on the documents,
so it is measured rather than guessed. Each query's candidates are fetched once (both
methods, `depth` each, each scored by both) and fused at every weight of a grid whose
ends are BM25 alone (0) and the vectors alone (1). The weights that fail no more often
than either end at any k (hybrid never worse than its better half on these queries)
are kept, and of those the one with the fewest failures summed over k = 1, 5, 20 wins,
ties going to the weight nearest the one in use (a flat stretch of the curve is no
reason to move). 0 always qualifies when BM25 is the better half at every k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gligabao.search.evaluate import KS, GoldQuery, first_covering, gold_documents
from gligabao.search.hybrid import GOLD, KEYWORD_SCORER, Fusion, Vector, candidates, hits_of
from gligabao.store import Connection
from gligabao.store.datasets import Dataset
from gligabao.store.db import now_iso

__all__ = ["WEIGHTS", "Tuning", "tune_fusion"]

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
                {"vector_weight": w, **{f"failed@{k}": n for k, n in by_k.items()}}
                for w, by_k in self.failures.items()
            ],
        }


def tune_fusion(
    conn: Connection,
    dataset: Dataset,
    queries: Sequence[GoldQuery],
    query_vectors: Mapping[str, Vector],
    *,
    current: float,
    depth: int = 50,
    ks: Sequence[int] = KS,
    weights: Sequence[float] = WEIGHTS,
    guard: bool = True,
) -> Tuning:
    """Fuse each query's candidates at every weight; `current` is the weight in use."""
    docs = gold_documents(conn, dataset, queries)
    top = max(ks)
    failures = {w: dict.fromkeys(ks, 0) for w in weights}
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
        for w in weights:
            ranked = found.ranked(Fusion("convex", w, guard=guard))[:top]
            hits = [placed[key] for key, _, _ in ranked if key in placed]
            rank = first_covering(hits, docs[gold.source], gold)
            for k in ks:
                if rank is None or rank > k:
                    failures[w][k] += 1
    ends = [failures[w] for w in (min(weights), max(weights))]
    safe = [w for w in weights if all(failures[w][k] <= min(e[k] for e in ends) for k in ks)]
    best = min(safe or weights, key=lambda w: (sum(failures[w].values()), abs(w - current)))
    return Tuning(dataset.name, len(queries), failures, best, current, dataset.embedding_model)
