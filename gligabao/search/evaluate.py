"""Measure retrieval on gold spans (`gb eval`): failure@k per dataset and search method.

A query file holds one JSON object a line: {"query", "source", "start", "end"}, a gold
span of UTF-8 bytes [start, end) in a remembered file, and optionally a "kind" to group
queries by. A query fails at k when none of its top-k hits, from that same document,
covers at least half of the span; its rank is that of its first hit that does (None when
none of the top max(ks) does), so two settings can be compared query by query. The mean
tokens per retrieved chunk is taken over every query's top hits (at most max(ks)).
Method `rerank` (asked for by name: one LLM call a query) is hybrid search with its best
hits reordered by the chat model (rerank.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gligabao.base.jsonl import numbered_json_lines
from gligabao.errors import InputError
from gligabao.read.files import read_list_text
from gligabao.search.hybrid import Fusion, Hit, search
from gligabao.store import Connection
from gligabao.store.artifacts import find_by_source, tokens_of
from gligabao.store.datasets import Dataset
from gligabao.store.errors import NotFound

if TYPE_CHECKING:
    from gligabao.search.rerank import Reranker

__all__ = [
    "EVAL_METHODS",
    "KS",
    "METHOD_CHOICES",
    "RERANK",
    "EvalResult",
    "GoldQuery",
    "covers",
    "evaluate_dataset",
    "failed_at",
    "first_covering",
    "parse_queries",
    "read_queries",
]

EVAL_METHODS = ("bm25", "vector", "hybrid")  # what gb eval measures unless told
RERANK = "rerank"  # hybrid, reranked by the chat model
METHOD_CHOICES = (*EVAL_METHODS, RERANK)
KS = (1, 5, 20)


@dataclass(frozen=True)
class GoldQuery:
    """One line of a query file: the query and the span of bytes that answers it."""

    line: int
    query: str
    source: str  # absolute path, as remembered documents store it
    start: int
    end: int
    kind: str | None = None  # a group to report failures by (gb eval prints each)


@dataclass(frozen=True)
class EvalResult:
    """failure@k of one search method on one dataset."""

    dataset: str
    method: str
    queries: int
    failures: dict[int, int]  # k -> queries that failed at k
    mean_tokens: float | None  # per retrieved chunk, over the top max(ks) hits
    retrieved: int = 0  # hits the mean is over
    skipped: str | None = None  # why the method was not run
    failed_queries: dict[int, list[int]] = field(default_factory=dict)  # k -> line numbers
    ranks: dict[int, int | None] = field(default_factory=dict)  # line -> first covering hit

    def fail_rate(self, k: int) -> float | None:
        if self.skipped or not self.queries:
            return None
        return self.failures[k] / self.queries

    def by_kind(self, queries: Sequence[GoldQuery]) -> dict[str, EvalResult]:
        """This result split by the queries' kinds (those with none left out)."""
        kinds: dict[str, list[GoldQuery]] = {}
        for gold in queries:
            if gold.kind is not None:
                kinds.setdefault(gold.kind, []).append(gold)
        split = {}
        for kind, golds in kinds.items():
            lines = {g.line for g in golds}
            failed = {k: [n for n in v if n in lines] for k, v in self.failed_queries.items()}
            split[kind] = EvalResult(
                self.dataset,
                self.method,
                len(golds),
                {k: len(v) for k, v in failed.items()},
                None,
                skipped=self.skipped,
                failed_queries=failed,
                ranks={n: r for n, r in self.ranks.items() if n in lines},
            )
        return split

    def as_json(self) -> dict[str, Any]:
        ks = sorted(self.failures) or list(KS)
        return {
            "dataset": self.dataset,
            "method": self.method,
            "queries": self.queries,
            **{f"failure@{k}": self.fail_rate(k) for k in ks},
            **{f"failed@{k}": self.failures.get(k) for k in ks},
            "mean_tokens": self.mean_tokens,
            "retrieved": self.retrieved,
            "skipped": self.skipped,
            # Per query (by its line in the file): the rank of its first covering hit.
            "ranks": {str(line): rank for line, rank in sorted(self.ranks.items())},
        }


def parse_queries(
    lines: Iterable[str],
    base: str | os.PathLike[str] | None = None,
    name: str = "queries",
) -> list[GoldQuery]:
    """Gold queries from JSON lines; blank lines are skipped. A relative `source` is taken
    from `base` (default: the current folder). Raises InputError naming the bad line."""
    out: list[GoldQuery] = []
    root = Path(base) if base is not None else Path.cwd()
    for number, item in numbered_json_lines(lines, name):
        if not isinstance(item, dict):
            raise InputError(
                name, f"line {number}: expected an object with query, source, start, end"
            )
        missing = [key for key in ("query", "source", "start", "end") if key not in item]
        if missing:
            raise InputError(name, f"line {number}: missing {', '.join(missing)}")
        query, source, start, end = item["query"], item["source"], item["start"], item["end"]
        if not isinstance(query, str) or not query.strip():
            raise InputError(name, f"line {number}: query must be a non-empty string")
        if not isinstance(source, str) or not source:
            raise InputError(name, f"line {number}: source must be a file path")
        if any(isinstance(v, bool) or not isinstance(v, int) for v in (start, end)):
            raise InputError(name, f"line {number}: start and end must be integers (byte offsets)")
        if not 0 <= start < end:
            raise InputError(name, f"line {number}: need 0 <= start < end, got {start}..{end}")
        kind = item.get("kind")
        if kind is not None and (not isinstance(kind, str) or not kind.strip()):
            raise InputError(name, f"line {number}: kind must be a non-empty string")
        path = os.path.abspath(os.path.join(root, os.path.expanduser(source)))
        out.append(GoldQuery(number, query, path, start, end, kind))
    return out


def read_queries(path: str | os.PathLike[str]) -> list[GoldQuery]:
    """The gold queries of a JSON-lines file; relative sources from the current folder."""
    # Bounded, and never a device: `gb eval /dev/zero` is refused, not read until memory ends.
    text = read_list_text(os.fspath(path), "query file")
    queries = parse_queries(text.splitlines(), name=str(path))
    if not queries:
        raise InputError(str(path), "holds no queries")
    return queries


def covers(hit_start: int | None, hit_end: int | None, start: int, end: int) -> bool:
    """Whether [hit_start, hit_end) covers at least half of [start, end)."""
    if hit_start is None or hit_end is None:
        return False
    overlap = min(hit_end, end) - max(hit_start, start)
    return overlap > 0 and 2 * overlap >= end - start


def failed_at(hits: Sequence[Hit], document_id: int, gold: GoldQuery, k: int) -> bool:
    """True when none of the first k hits, from the gold document, covers half the span."""
    rank = first_covering(hits, document_id, gold)
    return rank is None or rank > k


def first_covering(hits: Sequence[Hit], document_id: int, gold: GoldQuery) -> int | None:
    """The 1-based rank of the first hit, from the gold document, that covers half the
    span; None when none does."""
    for rank, hit in enumerate(hits, start=1):
        if hit.document_id == document_id and covers(
            hit.start_offset, hit.end_offset, gold.start, gold.end
        ):
            return rank
    return None


def gold_documents(
    conn: Connection, dataset: Dataset, queries: Sequence[GoldQuery]
) -> dict[str, int]:
    """source -> the latest non-superseded document of the dataset remembered from it;
    NotFound names the first source the dataset does not hold."""
    docs: dict[str, int] = {}
    for gold in queries:
        if gold.source in docs:
            continue
        row = find_by_source(conn, dataset.id, gold.source)
        if row is None:
            raise NotFound(
                f"line {gold.line}: {gold.source} is not remembered in dataset "
                f"'{dataset.name}' (gb remember it with --dataset {dataset.name})"
            )
        docs[gold.source] = row["id"]
    return docs


def evaluate_dataset(
    conn: Connection,
    dataset: Dataset,
    queries: Sequence[GoldQuery],
    *,
    methods: Sequence[str] = EVAL_METHODS,
    query_vectors: Mapping[str, Sequence[float] | bytes] | None = None,
    skip: Mapping[str, str] | None = None,
    ks: Sequence[int] = KS,
    depth: int = 50,
    fusion: Fusion | None = None,
    reranker: Reranker | None = None,
    on_notice: Callable[[str], None] | None = None,
) -> list[EvalResult]:
    """failure@k of each method on the dataset, in `methods` order.

    vector, hybrid and rerank need `query_vectors` (query text -> its embedding with the
    dataset's model), rerank a `reranker` too; a method named in `skip` (method ->
    reason) is reported skipped. A query whose reranking fell back to the fused order is
    told to `on_notice`, by its line, and counted in that order.
    """
    docs = gold_documents(conn, dataset, queries)
    top = max(ks)
    results: list[EvalResult] = []
    for method in methods:
        reason = (skip or {}).get(method)
        if reason is None and method != "bm25" and query_vectors is None:
            reason = "no query vectors"
        if reason is None and method == RERANK and reranker is None:
            reason = "no reranker"
        if reason is not None:
            results.append(EvalResult(dataset.name, method, len(queries), {}, None, 0, reason))
            continue
        failures = {k: 0 for k in ks}
        failed_lines: dict[int, list[int]] = {k: [] for k in ks}
        ranks: dict[int, int | None] = {}
        retrieved: list[int] = []
        for gold in queries:
            vector = None if method == "bm25" else query_vectors[gold.query]  # type: ignore[index]
            hits = search(
                conn,
                dataset,
                gold.query,
                method="hybrid" if method == RERANK else method,
                k=reranker.candidates(top) if method == RERANK and reranker else top,
                query_vector=vector,
                depth=depth,
                fusion=fusion,
            )
            if method == RERANK and reranker is not None:
                reranked = reranker.rerank(gold.query, hits)
                hits = reranked.hits[:top]
                if reranked.notice is not None and on_notice is not None:
                    on_notice(f"line {gold.line}: {reranked.notice}")
            retrieved.extend(hit.artifact_id for hit in hits)
            rank = ranks[gold.line] = first_covering(hits, docs[gold.source], gold)
            for k in ks:
                if rank is None or rank > k:
                    failures[k] += 1
                    failed_lines[k].append(gold.line)
        tokens = tokens_of(conn, retrieved)
        counted = [tokens[a] for a in retrieved if tokens.get(a) is not None]
        mean = sum(counted) / len(counted) if counted else None  # type: ignore[arg-type]
        results.append(
            EvalResult(
                dataset.name,
                method,
                len(queries),
                failures,
                mean,
                len(retrieved),
                None,
                failed_lines,
                ranks,
            )
        )
    return results
