"""The fusion's guard (search.guard): a query whose vectors cannot be trusted is fused with
half the vector weight; any other query as usual."""

from __future__ import annotations

from gligabao.search.hybrid import Candidates, Fusion

BM25_ORDER = list(range(1, 31))


def _candidates(vector_order: list[int], vector_scores: list[float], bm25_scores: list[float]):
    return Candidates(
        "hybrid",
        {"bm25": BM25_ORDER, "vector": vector_order},
        {
            "bm25": dict(zip(BM25_ORDER, bm25_scores, strict=True)),
            "vector": dict(zip(vector_order, vector_scores, strict=True)),
        },
    )


def _order(found: Candidates, fusion: Fusion) -> list[int]:
    return [key for key, _, _ in found.ranked(fusion)]


# BM25 with a clear best: far above the other 29, which are alike.
CLEAR = [30.0] + [10.0 - 0.1 * i for i in range(29)]
# BM25 with no clear best: a gentle slope.
GENTLE = [20.0 - 0.3 * i for i in range(30)]
# Vectors that separate their candidates: one well above the rest.
SEPARATED = [0.9] + [0.5 - 0.005 * i for i in range(29)]


def test_vectors_that_do_not_separate_the_candidates_count_half():
    flat = [0.5 - 0.0001 * i for i in range(30)]  # a slope, and no best that stands out
    reversed_order = list(reversed(BM25_ORDER))
    found = _candidates(reversed_order, flat, GENTLE)
    assert found.vectors_untrusted()
    guarded = _order(found, Fusion(vector_weight=0.8))
    assert guarded == _order(found, Fusion(vector_weight=0.4, guard=False))
    assert guarded != _order(found, Fusion(vector_weight=0.8, guard=False))


def test_vectors_that_miss_bm25s_clear_best_count_half():
    # The vectors' own list: 20 others first, BM25's best (1) only 21st.
    vector_order = [*range(11, 31), *range(1, 11)]
    found = _candidates(vector_order, SEPARATED, CLEAR)
    assert found.vectors_untrusted()
    guarded = _order(found, Fusion(vector_weight=0.6))
    assert guarded[0] == 1  # BM25's clear best keeps its place
    assert guarded == _order(found, Fusion(vector_weight=0.3, guard=False))
    assert _order(found, Fusion(vector_weight=0.6, guard=False))[0] != 1


def test_vectors_that_agree_with_bm25s_best_are_fused():
    vector_order = [5, 1, *[k for k in BM25_ORDER if k not in (1, 5)]]
    found = _candidates(vector_order, SEPARATED, CLEAR)
    assert not found.vectors_untrusted()
    guarded = _order(found, Fusion(vector_weight=0.6))
    assert guarded == _order(found, Fusion(vector_weight=0.6, guard=False))
    assert guarded != BM25_ORDER  # the vectors moved something


def test_without_a_clear_bm25_best_a_disagreeing_model_still_counts():
    vector_order = [*range(11, 31), *range(1, 11)]
    found = _candidates(vector_order, SEPARATED, GENTLE)
    assert not found.vectors_untrusted()
    assert _order(found, Fusion(vector_weight=0.6))[0] == 11


def test_the_ends_of_the_scale_stay_what_they_are():
    """Tuning compares the fusion with BM25 alone (0) and vectors alone (1): the guard
    changes neither end."""
    vector_order = [*range(11, 31), *range(1, 11)]
    found = _candidates(vector_order, SEPARATED, CLEAR)
    assert _order(found, Fusion(vector_weight=1.0))[:20] == vector_order[:20]
    assert _order(found, Fusion(vector_weight=0.0)) == BM25_ORDER


def test_tuning_keeps_the_most_queries_in_the_first_20_then_ranks_them_best():
    """Of the weights never worse than an end, the one that keeps the most queries in the
    first 20 hits wins, even where another fails less often summed over 1, 5 and 20;
    among those that keep as many, the one that ranks them higher."""
    from gligabao.search.tune import choose_weight

    # Each query's rank of its gold at weights 0 (BM25), 0.3, 0.5 and 1 (vectors).
    ranks = [
        {0.0: 2, 0.3: 2, 0.5: 1, 1.0: None},
        {0.0: 3, 0.3: 2, 0.5: 1, 1.0: None},
        {0.0: None, 0.3: 6, 0.5: None, 1.0: 2},
    ]
    # 0.5 fails 1 + 1 + 1 = 3 times, 0.3 fails 3 + 1 + 0 = 4 times, but 0.3 loses none.
    assert choose_weight(ranks, current=0.5) == 0.3
    # All in the first 20 at both: the better ranks win.
    ranks[2] = {0.0: None, 0.3: 6, 0.5: 7, 1.0: 2}
    assert choose_weight(ranks, current=0.3) == 0.5
