"""Search a dataset: BM25 over the keyword index, KNN over the vector indexes,
fused (Fusion).

What is searched: chunks (as embedded: context first, each piece the embedding model
read its own vector), chunk summaries, and documents short enough not to be chunked (by
keyword and by their own vector). A summary or a piece stands for its chunk: all are one
entry, scored per method by the best of them. Documents superseded by a newer version of
the same source are left out.

Fusion is convex by default: every candidate (each method's best `depth`) is scored by
both methods (_score_the_rest), each method's scores are normalised by their
distribution (mean ± 3 standard deviations mapped to 0..1, clipped), and an entry scores
w * vector + (1 - w) * bm25. Unlike reciprocal rank fusion (sum 1 / (rrf_k + rank),
`search.fusion = "rrf"`), which gives a weak retriever the same vote as a strong one,
the scores keep how clearly each method prefers a candidate. docs/search.md ("Measured
quality") has the measurements; `gb eval --tune` learns w per dataset.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping, Sequence

from gligabao.base.lines import line_range
from gligabao.base.record import Frozen, Record
from gligabao.errors import ConfigError
from gligabao.store import Connection, hits, vectors
from gligabao.store.artifacts import (
    SUMMARY_KIND,
    chunks_with_role,
    locations_of,
    search_artifacts_fts,
    session_documents,
    stored_locations,
    summary_ids,
)
from gligabao.store.datasets import Dataset

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gligabao.config import Config

__all__ = [
    "FUSIONS",
    "GOLD",
    "KEYWORD_SCORER",
    "METHODS",
    "Candidates",
    "Fusion",
    "Hit",
    "VectorSide",
    "candidates",
    "fuse",
    "fuse_scores",
    "fusion_for",
    "hits_of",
    "search",
    "weight_holds",
    "weight_origin",
]

METHODS = ("hybrid", "bm25", "vector")
FUSIONS = ("convex", "rrf")


class Fusion(Frozen):
    """How hybrid search fuses its two rankings: `method` convex (the scores, normalised,
    weighted: `vector_weight` for the vectors) or rrf (the ranks, constant `rrf_k`).
    With `guard`, a convex fusion halves the vectors' weight for a query whose vectors
    cannot be trusted (see Candidates.vectors_untrusted)."""

    method: str
    vector_weight: float
    rrf_k: int
    guard: bool

    def __init__(
        self,
        method: str = "convex",
        vector_weight: float = 0.5,
        rrf_k: int = 60,
        guard: bool = True,
    ) -> None:
        if method not in FUSIONS:
            raise ValueError(f"unknown fusion {method!r}; one of {', '.join(FUSIONS)}")
        if not 0.0 <= vector_weight <= 1.0:
            raise ValueError(f"vector_weight must be within 0..1, not {vector_weight}")
        self._fill(method, vector_weight, rrf_k, guard)


# The fusion settings, by config key and Fusion field.
_FUSION_KEYS = {
    "search.fusion": "method",
    "search.vector_weight": "vector_weight",
    "search.rrf_k": "rrf_k",
    "search.guard": "guard",
}


# The keyword scorer of both stores (FTS5's bm25, and the same formula over PostgreSQL's
# postings): a weight learnt against it holds for it alone. Named anew if it changes.
KEYWORD_SCORER = "bm25"
GOLD = "gold"  # a weight learnt from the user's own gold queries (gb eval --tune)
# What a weight was learnt from, in words (search/pseudo.py names the other two).
_LEARNT_FROM = {
    GOLD: "gold queries",
    "llm": "pseudo-queries written by {model}",
    "headings": "pseudo-queries from headings and summaries",
}


def _stale(learnt: Mapping[str, Any], dataset: Dataset) -> str | None:
    """Why a learnt weight does not hold for the dataset as it is now, or None. Weights
    stored before they named their model hold (nothing says otherwise)."""
    model = learnt.get("embedding_model")
    if model is not None and model != dataset.embedding_model:
        return f"learnt for {model}, and the dataset is embedded with {dataset.embedding_model}"
    scorer = learnt.get("keyword_scorer")
    if scorer is not None and scorer != KEYWORD_SCORER:
        return f"learnt for the keyword scorer {scorer}, not {KEYWORD_SCORER}"
    return None


def weight_holds(dataset: Dataset) -> bool:
    """Whether a weight learnt for the dataset holds for it as it is now."""
    learnt = dataset.search_settings or {}
    return "vector_weight" in learnt and _stale(learnt, dataset) is None


def fusion_for(config: Config, dataset: Dataset | None = None) -> Fusion:
    """The fusion a search of `dataset` uses: what the user set (config file, env, flag),
    else what `gb eval --tune` learnt for the dataset (while it holds: the same embedding
    model and keyword scorer), else the defaults."""
    learnt = (dataset.search_settings or {}) if dataset is not None else {}
    if learnt and dataset is not None and _stale(learnt, dataset):
        learnt = {}
    values: dict[str, Any] = {}
    for key, name in _FUSION_KEYS.items():
        chosen = config.sources.get(key, "default") != "default"
        values[name] = config[key] if chosen or name not in learnt else learnt[name]
    return Fusion(
        values["method"],
        float(values["vector_weight"]),
        int(values["rrf_k"]),
        bool(values["guard"]),
    )


def weight_origin(config: Config, dataset: Dataset) -> str:
    """Where the vector weight of the dataset's hybrid search comes from, in words."""
    source = config.sources.get("search.vector_weight", "default")
    if source != "default":
        return f"set by search.vector_weight ({source})"
    learnt = dataset.search_settings or {}
    if "vector_weight" not in learnt:
        return "the default; not tuned (gb eval --tune --synthetic learns it)"
    stale = _stale(learnt, dataset)
    if stale:
        return f"the default; {learnt['vector_weight']} was {stale}: tune again"
    origin = str(learnt.get("learnt_from") or GOLD)
    what = _LEARNT_FROM.get(origin, origin).format(model=learnt.get("written_by") or "the LLM")
    when = str(learnt.get("tuned_at") or "")[:10]
    return f"learnt from {learnt.get('tuned_on')} {what}" + (f" on {when}" if when else "")


Vector = Sequence[float] | bytes  # a query embedded with the dataset's model


class Hit(Frozen):
    """One search result: a chunk (or an unchunked document) with where it comes from."""

    score: float
    ranks: dict[str, int]  # method -> 1-based rank in that method's list
    artifact_id: int  # the chunk, or the document itself when it was not chunked
    document_id: int
    source: str | None
    start_offset: int | None  # UTF-8 byte offsets in the document
    end_offset: int | None
    line_start: int | None  # 1-based lines of the offsets
    line_end: int | None
    section: str | None
    text: str
    summary: str | None
    kind: str  # chunk | document
    # Where it comes from in a PDF, a chat or a web page (pages, messages, lines of the
    # file: formats.describe), or {}.
    locations: dict[str, Any]
    # A web page's: the file's lines of each part of its text, so a snippet of it is
    # numbered as in the file (`gligabao.base.lines.mapped_lines`); not in --json.
    line_map: list[list[int]]
    _unshown = frozenset({"line_map"})

    def __init__(
        self,
        score: float,
        ranks: dict[str, int],
        artifact_id: int,
        document_id: int,
        source: str | None,
        start_offset: int | None,
        end_offset: int | None,
        line_start: int | None,
        line_end: int | None,
        section: str | None,
        text: str,
        summary: str | None,
        kind: str = "chunk",
        locations: dict[str, Any] | None = None,  # None: {}
        line_map: list[list[int]] | None = None,  # None: []
    ) -> None:
        self._fill(
            score,
            ranks,
            artifact_id,
            document_id,
            source,
            start_offset,
            end_offset,
            line_start,
            line_end,
            section,
            text,
            summary,
            kind,
            {} if locations is None else locations,
            [] if line_map is None else line_map,
        )

    def as_json(self) -> dict[str, Any]:
        located = {"locations": self.locations} if self.locations else {}
        return {
            "score": self.score,
            "ranks": self.ranks,
            "artifact_id": self.artifact_id,
            "document_id": self.document_id,
            "kind": self.kind,
            "source": self.source,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "section": self.section,
            "text": self.text,
            "summary": self.summary,
            **located,
        }


def fuse(
    rankings: Mapping[str, Sequence[Hashable]], rrf_k: int = 60
) -> list[tuple[Hashable, float, dict[str, int]]]:
    """Reciprocal rank fusion of ranked lists (best first), one per method.

    Returns (key, score, {method: rank}) best first; a key repeated within one list
    counts at its first (best) place. Ties keep the order of first appearance.
    """
    scores: dict[Hashable, float] = {}
    ranks: dict[Hashable, dict[str, int]] = {}
    for method, keys in rankings.items():
        for rank, key in enumerate(dict.fromkeys(keys), start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (rrf_k + rank)
            ranks.setdefault(key, {})[method] = rank
    order = sorted(scores, key=lambda key: -scores[key])  # stable: ties keep first seen
    return [(key, scores[key], ranks[key]) for key in order]


def _normalised(scores: Mapping[Hashable, float]) -> dict[Hashable, float]:
    """Scores mapped onto 0..1 by their distribution: mean - 3 sd to 0, mean + 3 sd to 1,
    clipped. Robust to one method's scale (BM25's is unbounded, cosine's narrow) and to
    one outlier, where min-max would let the best score squash all the others."""
    if not scores:
        return {}
    values = list(scores.values())
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    if sd == 0:
        return dict.fromkeys(scores, 1.0)
    low, span = mean - 3 * sd, 6 * sd
    return {key: min(1.0, max(0.0, (v - low) / span)) for key, v in scores.items()}


def fuse_scores(
    rankings: Mapping[str, Sequence[Hashable]],
    scores: Mapping[str, Mapping[Hashable, float]],
    weights: Mapping[str, float],
) -> list[tuple[Hashable, float, dict[str, int]]]:
    """Convex fusion of the keys the `rankings` hold: the sum over methods of weight *
    score, each method's scores normalised over those keys (a key it has no score for:
    its lowest, 0). Returns (key, score, {method: rank in its list}) best first, as
    fuse(); ties keep the order of first appearance."""
    keys = list(dict.fromkeys(key for ranking in rankings.values() for key in ranking))
    fused = dict.fromkeys(keys, 0.0)
    for method, weight in weights.items():
        own = scores.get(method, {})
        normal = _normalised({key: own.get(key, 0.0) for key in keys})
        for key in keys:
            fused[key] += weight * normal[key]
    ranks: dict[Hashable, dict[str, int]] = {key: {} for key in keys}
    for method, ranking in rankings.items():
        for rank, key in enumerate(dict.fromkeys(ranking), start=1):
            ranks[key][method] = rank
    order = sorted(keys, key=lambda key: -fused[key])
    return [(key, fused[key], ranks[key]) for key in order]


def _entries(conn: Connection, ids: Sequence[int]) -> list[int]:
    """Artifact ids mapped to their entry (a summary to its chunk), order kept; unknown
    ones, and those of superseded versions, dropped."""
    return list(dict.fromkeys(e for e in _entry_of_each(conn, ids) if e is not None))


def _entry_of_each(conn: Connection, ids: Sequence[int]) -> list[int | None]:
    """The entry of each artifact id (a summary's is its chunk), None for an unknown one
    or one of a superseded version."""
    rows = hits.kinds(conn, ids)
    summarized = [r["parent_id"] for r in rows.values() if r["kind"] == SUMMARY_KIND]
    chunks = hits.kinds(conn, summarized) if summarized else {}
    out: list[int | None] = []
    for aid in ids:
        row = rows.get(aid)
        if row is not None and row["kind"] == SUMMARY_KIND:
            aid, row = row["parent_id"], chunks.get(row["parent_id"])
        out.append(aid if row is not None and row["superseded_by"] is None else None)
    return out


# vec0 answers at most this many neighbours a query.
_KNN_MAX = vectors.KNN_MAX


# BM25 scores this many times `depth` rows (see _bm25).
_SCORED_ROWS = 8


def _bm25(
    conn: Connection,
    dataset_id: int,
    text: str,
    depth: int,
    scores: dict[int, float] | None = None,
    session: str | None = None,
    superseded: int = 0,
) -> list[int]:
    """The `depth` entries BM25 ranks best; `scores` is given the BM25 score (higher is
    better; FTS5's rank is its negative) of those and of the next ones, down to
    _SCORED_ROWS * depth rows (and `superseded` more, see candidates), for the
    fusion to weigh the vectors' candidates by too: FTS5 ranks every matching row
    whatever the limit (400 rows cost 7.5 ms against 5.1 for 50 on the dev set), while
    asking for given rows' scores costs ~65 ms. An entry's score is its best row's, when
    a chunk and its summary both match."""
    limit = _SCORED_ROWS * depth + superseded
    rows = search_artifacts_fts(conn, dataset_id, text, limit=limit, session=session)
    entries = _entry_of_each(conn, [r["artifact_id"] for r in rows])
    if scores is not None:
        for row, entry in zip(rows, entries, strict=True):
            if entry is not None and entry not in scores:
                scores[entry] = -row["rank"]
    return list(dict.fromkeys(e for e in entries if e is not None))[:depth]


# A chunk may be embedded as several pieces, each its own neighbour: where there are
# pieces the KNN asks for this many times `depth` vectors, so that `depth` distinct
# entries remain (the dev set: 7,926 vectors for 1,590 chunks at embeddings.max_tokens
# 256, 5 a chunk; a chunk's nearest piece comes first and the rest fall behind those of
# other chunks, so a few times depth holds the depth nearest chunks).
_PIECES_PER_ENTRY = 4


def _vector(
    conn: Connection,
    dataset_id: int,
    vector: Vector,
    depth: int,
    exact: bool = False,
    session: str | None = None,
    scores: dict[int, float] | None = None,
    superseded: int = 0,
) -> list[int]:
    """The entries nearest `vector`; `scores` is given each one's cosine similarity, its
    nearest vector's (a piece, the chunk's summary). `superseded` more are asked for."""
    k = depth + superseded
    if vectors.has_pieces(conn, dataset_id):
        k *= _PIECES_PER_ENTRY
    k = min(_KNN_MAX, k)
    # A session's documents are searched one by one (vec0 filters on one value a column).
    scopes: list[dict[str, int] | None] = [None]
    if session is not None:
        scopes = [{"parent_id": d} for d in session_documents(conn, dataset_id, session)]
    found = [
        neighbour
        for where in scopes
        for index in ("chunks", "summaries")
        for neighbour in vectors.knn(conn, dataset_id, index, vector, k, where=where, exact=exact)
    ]
    found.sort(key=lambda n: n.distance)
    ids = [vectors.parse_vector_id(n.vector_id)[1] for n in found]
    entries = _entry_of_each(conn, ids)
    if scores is not None:
        for neighbour, entry in zip(found, entries, strict=True):
            if entry is not None and entry not in scores:
                scores[entry] = 1.0 - neighbour.distance
    return list(dict.fromkeys(e for e in entries if e is not None))[:depth]


class VectorSide(threading.Thread):
    """The vector half of a hybrid search, on a second connection to the same database:
    the driver lets go of the GIL while the database works, so the KNN scan runs on one
    core while the keyword search runs on another, and the query's embedding request
    waits on neither.
    `rank(conn, vector)` is the ranking to compute (ids, best first)."""

    def __init__(
        self,
        conn: Connection,
        vector: Vector | Callable[[], Vector],
        rank: Callable[[Connection, Vector], list[int]],
    ) -> None:
        super().__init__(name="gb-search-vector", daemon=True)
        self.conn = conn
        self.vector = vector
        self.rank = rank
        self.found: list[int] = []
        self.error: BaseException | None = None

    def start(self) -> None:
        other = self.conn.sibling()
        if other is self.conn:  # in memory: one connection, one thread
            self.run_on(self.conn)
        else:
            self.other = other.for_search()
            super().start()

    def run(self) -> None:
        self.run_on(self.other)

    def run_on(self, conn: Connection) -> None:
        try:
            self.vector = self.vector() if callable(self.vector) else self.vector
            self.found = self.rank(conn, self.vector)
        except BaseException as exc:  # handed to the caller's thread by result()
            self.error = exc

    def join(self, timeout: float | None = None) -> None:
        if self.ident is not None:  # started as a thread (not run inline)
            super().join(timeout)

    def result(self) -> list[int]:
        self.join()
        if self.error is not None:
            raise self.error
        return self.found


def search(
    conn: Connection,
    dataset: Dataset,
    query: str,
    *,
    method: str = "hybrid",
    k: int = 10,
    query_vector: Vector | Callable[[], Vector] | None = None,
    depth: int = 50,
    fusion: Fusion | None = None,
    exact: bool = False,
    session: str | None = None,
    role: str | None = None,
) -> list[Hit]:
    """The k best hits for `query` in `dataset`, best first; with `role`, only chunks
    holding a chat message by that role (gb search --role).

    `method` is hybrid (BM25 and vector fused), bm25 or vector; hybrid and vector need
    `query_vector`, the query embedded with the dataset's own model, or a function that
    returns it (called in a worker thread, so the embedding request overlaps the keyword
    search). `depth` is how many candidates each method contributes; `fusion` how they
    are fused (default: Fusion(), convex; fusion_for() gives a dataset's). The vectors
    are ranked through their quantized companions (store.vectors.knn) unless
    `exact` (`search.exact`): then by the exact cosine scan alone. A hit's score is the
    fused one, or with one method that method's own (BM25's, or cosine similarity).
    """
    if k <= 0:
        return []
    found = candidates(
        conn,
        dataset,
        query,
        method=method,
        query_vector=query_vector,
        depth=max(depth, k),
        exact=exact,
        session=session,
    )
    ranked = found.ranked(fusion or Fusion())
    if role is not None:
        allowed = set(chunks_with_role(conn, dataset.id, role))
        ranked = [entry for entry in ranked if entry[0] in allowed]
    return hits_of(conn, ranked[:k])


# Standard deviations above the mean of a method's candidates: BM25's best this far
# above the rest is a clear answer (it is where the fusion's normalised scale tops out);
# vectors whose best stands less far above theirs do not tell the candidates apart.
_CLEAR_BEST = 3.0
_FLAT_BEST = 2.5
# How deep in the vectors' ranking BM25's clear best must be for the two to agree.
_AGREEING_DEPTH = 20
# What is left of the vectors' weight for a query whose vectors are not trusted.
_UNTRUSTED_SHARE = 0.5


def _best_stands_out(ranking: Sequence[int], scores: Mapping[int, float]) -> float:
    """How many standard deviations the best of `ranking` scores above their mean."""
    values = [scores[key] for key in ranking if key in scores]
    if len(values) < 3:
        return 0.0
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return (max(values) - mean) / sd if sd else 0.0


class Candidates(Record):
    """What each method found for a query (entry ids best first) and their own scores
    (BM25's, cosine similarity): fused by `ranked`, as often as wanted (gb eval --tune)."""

    method: str
    rankings: dict[str, list[int]]
    scores: dict[str, dict[int, float]]

    def __init__(
        self, method: str, rankings: dict[str, list[int]], scores: dict[str, dict[int, float]]
    ) -> None:
        self._fill(method, rankings, scores)

    def vectors_untrusted(self) -> bool:
        """Whether this query's vectors should not move its ranking: their scores do not
        separate the candidates (the model has no opinion on this query), or BM25 has a
        clear best that the vectors do not place in their first _AGREEING_DEPTH (a weak
        model disagreeing with a confident keyword match is the weak model's failure far
        more often than BM25's). Measured on ../shared/retrieval-dev: docs/search.md."""
        bm25, vector = self.rankings.get("bm25") or [], self.rankings.get("vector") or []
        if not bm25 or not vector:
            return False
        if _best_stands_out(vector, self.scores["vector"]) < _FLAT_BEST:
            return True
        clear = _best_stands_out(bm25, self.scores["bm25"]) > _CLEAR_BEST
        return clear and bm25[0] not in vector[:_AGREEING_DEPTH]

    def ranked(self, fusion: Fusion) -> list[tuple[int, float, dict[str, int]]]:
        """All the candidates, best first: (entry id, score, {method: rank})."""
        if self.method != "hybrid":
            own = self.scores[self.method]  # one method: its own score
            return [
                (key, own[key], {self.method: rank})
                for rank, key in enumerate(self.rankings[self.method], start=1)
            ]
        if fusion.method == "convex":
            w = fusion.vector_weight
            if fusion.guard and w < 1.0 and self.vectors_untrusted():
                # Halved, not zeroed: measured on three sets, dropping the vectors
                # altogether cost the tests' corpus 3 queries at @1 where halving cost none.
                w *= _UNTRUSTED_SHARE
            fused = fuse_scores(self.rankings, self.scores, {"vector": w, "bm25": 1.0 - w})
        else:
            fused = fuse(self.rankings, fusion.rrf_k)
        return fused  # type: ignore[return-value]


def candidates(
    conn: Connection,
    dataset: Dataset,
    query: str,
    *,
    method: str = "hybrid",
    query_vector: Vector | Callable[[], Vector] | None = None,
    depth: int = 50,
    exact: bool = False,
    session: str | None = None,
) -> Candidates:
    """The `depth` best entries of each method `method` takes, for search() to fuse."""
    if method not in METHODS:
        raise ValueError(f"unknown search method {method!r}; one of {', '.join(METHODS)}")
    if method != "bm25" and query_vector is None:
        raise ValueError(f"{method} search needs the query's vector")
    conn.for_search()
    rankings: dict[str, list[int]] = {}
    scores: dict[str, dict[int, float]] = {"bm25": {}, "vector": {}}
    # Older versions are kept, and so are their keyword rows and vectors (forgetting the
    # newer version makes an older one current again): each method asks for as many
    # more rows as they hold, and drops them.
    extra = hits.superseded_rows(conn, dataset.id)
    if method == "vector":
        assert query_vector is not None
        vector = query_vector() if callable(query_vector) else query_vector
        rankings["vector"] = _vector(
            conn, dataset.id, vector, depth, exact, session, scores["vector"], extra
        )
    elif method == "bm25":
        rankings["bm25"] = _bm25(conn, dataset.id, query, depth, scores["bm25"], session, extra)
    else:
        assert query_vector is not None
        side = VectorSide(
            conn,
            query_vector,
            lambda c, v: _vector(c, dataset.id, v, depth, exact, session, scores["vector"], extra),
        )
        side.start()
        try:
            rankings["bm25"] = _bm25(conn, dataset.id, query, depth, scores["bm25"], session, extra)
        except BaseException:
            side.join()  # done with the second connection before the error goes up
            raise
        rankings["vector"] = side.result()
        _score_the_rest(conn, dataset.id, side.vector, rankings, scores)
    return Candidates(method, rankings, scores)


def _score_the_rest(
    conn: Connection,
    dataset_id: int,
    vector: Vector,
    rankings: Mapping[str, list[int]],
    scores: dict[str, dict[int, float]],
) -> None:
    """Give BM25's candidates the vectors' score too (cosine similarity, of each one's
    nearest vector), so convex fusion weighs every candidate on both: a strong keyword
    match the vectors rank 60th is not scored 0 by them. The vectors' candidates have
    their BM25 scores already, from _bm25's longer list (beyond it: 0)."""
    far = [e for e in rankings["bm25"] if e not in scores["vector"]]
    if not far:
        return
    near = vectors.similarities(conn, dataset_id, "chunks", vector, far)
    for summary, chunk in summary_ids(conn, far).items():
        got = vectors.similarities(conn, dataset_id, "summaries", vector, [summary])
        if summary in got:
            near[chunk] = max(near.get(chunk, -1.0), got[summary])
    scores["vector"].update(near)


def hits_of(conn: Connection, chosen: Sequence[tuple[int, float, dict[str, int]]]) -> list[Hit]:
    """The hits of ranked entries (Candidates.ranked), with their text, place and summary."""
    ids = [key for key, _, _ in chosen]
    rows = hits.details(conn, ids)
    summaries = hits.summaries(conn, ids)
    found: list[Hit] = []
    for key, score, ranks in chosen:
        row = rows.get(key)  # type: ignore[call-overload]
        if row is None:
            continue
        start, end = row["start_offset"], row["end_offset"]
        lines: tuple[int, int] | None = None
        located = locations_of(row)
        if row["parent_id"] is None:  # an unchunked document: all of it
            data = row["text"].encode("utf-8")
            start, end = 0, len(data)
            # A web page's lines are those of its file, not of its markdown.
            lines = located.get("lines") or line_range(data, start, end)
        elif row["line_start"] is not None:
            lines = row["line_start"], row["line_end"]
        elif start is not None and end is not None:
            lines = line_range(row["head"] or b"", start, end)
        found.append(
            Hit(
                score=score,
                ranks=ranks,
                artifact_id=row["id"],
                document_id=row["document_id"],
                source=row["source"],
                start_offset=start,
                end_offset=end,
                line_start=lines[0] if lines else None,
                line_end=lines[1] if lines else None,
                section=row["section"],
                text=row["text"],
                summary=summaries.get(row["id"]),
                kind="document" if row["parent_id"] is None else "chunk",
                locations=located,
                line_map=stored_locations(row).get("line_map") or [],
            )
        )
    return found


# Why a dataset's vectors cannot be searched (see vector_obstacle).
NO_VECTORS = "no vectors"
OTHER_MODEL = "other model"
NO_ENDPOINT = "no endpoint"


def vector_obstacle(
    config: Config,
    conn: Connection,
    dataset: Dataset,
    indexes: tuple[str, ...] = ("chunks", "summaries"),
) -> str | None:
    """Why vector search cannot run on `dataset`, or None when it can.

    NO_VECTORS: none stored in its `indexes` (by default the chunk and summary ones, what
    gb search compares); OTHER_MODEL: they were made
    with another model or dimensions than embeddings.*, so a query's would not compare;
    NO_ENDPOINT: no embeddings endpoint to embed the query. Checked in that order, with
    no network call and no openai import. `gb search` and `gb eval` each say it their way.
    """
    if dataset.embedding_model is None or not vectors.has_vectors(conn, dataset.id, indexes):
        return NO_VECTORS
    model, dims = config["embeddings.model"], config["embeddings.dimensions"]
    if (dataset.embedding_model, dataset.embedding_dimensions) != (model, dims):
        return OTHER_MODEL
    from gligabao.llm.endpoint import Endpoints  # regexes compiled: not for bm25 alone

    if not Endpoints.from_config(config).embeddings_available:
        return NO_ENDPOINT
    return None


# What an index's vectors stand for, in a notice's words.
_HOLDS = {"edges": "fact ", "entities": "entity "}


def bm25_only(obstacle: str, dataset: Dataset, index: str = "chunks") -> str:
    """The notice of a search that goes on by BM25 alone: why vectors cannot be used."""
    why = {
        NO_VECTORS: f"dataset '{dataset.name}' has no {_HOLDS.get(index, '')}vectors",
        OTHER_MODEL: f"dataset '{dataset.name}' was embedded with another model "
        f"({dataset.embedding_model}) than embeddings.model",
        NO_ENDPOINT: "no embeddings endpoint configured (OPENAI_BASE_URL / OPENAI_API_KEY)",
    }[obstacle]
    return f"{why}; searching by BM25 only"


def other_model(config: Config, dataset: Dataset) -> ConfigError:
    """The refusal of a vector search whose query would be embedded by another model than
    the dataset's vectors were."""
    model, dims = config["embeddings.model"], config["embeddings.dimensions"]
    return ConfigError(
        f"dataset '{dataset.name}' was embedded with {dataset.embedding_model} "
        f"({dataset.embedding_dimensions} dimensions), but embeddings.model is {model} "
        f"({dims}); set embeddings.model and embeddings.dimensions to the dataset's, "
        "or search with --method bm25"
    )
