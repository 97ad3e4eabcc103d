"""What every chunking test shares: the chunking invariants, checked on one cut, with
token counts and overlap budgets worked out here from the spec, not taken from the
library; and the settings of the property tests."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, settings

from gligabao.chunk import Chunk, Tokenizer

# Hypothesis settings of every chunking property test: 500 examples, no deadline (a
# large text takes a while), and the same examples on every run, here as in CI: a seed
# from each test's own source (derandomize), so that a run that passes locally passes in
# CI and a failure seen once is seen again. It also leaves the example database aside.
PROPERTY = settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)

# ------------------------------------------------------------------ the estimator, again

# The default estimator as the design words it: "a run of ASCII letters costs ceil(n/4)
# tokens, a run of ASCII digits ceil(n/3), each CJK character 1, each other
# non-whitespace character 1, whitespace 0". A run is as long as it can be: a letter run
# ends at anything that is not an ASCII letter (a digit, an accent, a space). CJK and
# every other non-whitespace character cost the same, so they need no telling apart.
# Whitespace is what str.isspace() calls whitespace, the same as \s in a str pattern
# (U+200B, U+FEFF and U+180E are not whitespace, so they cost 1). [0-9], not \d: a
# digit outside ASCII (٣, ２, ²) is an "other" character.
_LETTER_RUN = re.compile(r"[A-Za-z]+")
_DIGIT_RUN = re.compile(r"[0-9]+")
_OTHER = re.compile(r"[^\sA-Za-z0-9]")


def reference_tokens(text: str) -> int:
    """The design's count of ``text``, the oracle of the estimator's counts."""
    return (
        sum((len(run) + 3) // 4 for run in _LETTER_RUN.findall(text))  # ceil(n / 4)
        + sum((len(run) + 2) // 3 for run in _DIGIT_RUN.findall(text))  # ceil(n / 3)
        + len(_OTHER.findall(text))
    )


def reference_budget(chunk_size: int, overlap_percent: int) -> int:
    """The overlap budget: a chunk repeats "at most chunk_size * overlap_percent / 100
    tokens" of the one before; a whole number of tokens is at most that exactly when it is
    at most its floor."""
    return chunk_size * overlap_percent // 100


_NON_SPACE = re.compile(r"\S")


def assert_invariants(
    text: str,
    chunks: list[Chunk],
    chunk_size: int,
    overlap_percent: int,
    tokenizer: Tokenizer | None = None,
) -> None:
    """The chunking invariants on one cut. Tokens are counted by `reference_tokens` unless
    the cut was sized by another tokenizer (tiktoken), which then counts them; the budget
    is always the spec's."""
    if tokenizer is None or tokenizer.name == "estimator":
        count = reference_tokens
    else:
        count = tokenizer.count
    assert chunks, "a non-empty text gives at least one chunk"
    data = text.encode()
    budget = reference_budget(chunk_size, overlap_percent)
    assert chunks[0].start == 0 and chunks[0].start_offset == 0
    assert chunks[-1].end == len(text), "the last chunk ends at the end of the text"
    assert chunks[-1].end_offset == len(data)
    for i, chunk in enumerate(chunks):
        assert chunk.index == i
        assert chunk.text == text[chunk.start : chunk.end], "a chunk is an exact slice"
        assert data[chunk.start_offset : chunk.end_offset] == chunk.text.encode(), "byte offsets"
        tokens = count(chunk.text)
        assert chunk.tokens == tokens, f"chunk {i} says {chunk.tokens} tokens, has {tokens}"
        assert tokens <= chunk_size, f"chunk {i} has {tokens} > {chunk_size} tokens"
        if i == 0:
            assert chunk.overlap_tokens == 0
            continue
        prev = chunks[i - 1]
        assert prev.start < chunk.start and prev.end < chunk.end, "chunks move forward"
        if chunk.start < prev.end:
            shared = count(text[chunk.start : prev.end])
            assert shared <= budget, f"chunk {i} repeats {shared} tokens, budget {budget}"
            assert chunk.overlap_tokens == shared, "overlap_tokens are the repeated text's count"
        else:
            assert chunk.overlap_tokens == 0
            gap = text[prev.end : chunk.start]
            assert not _NON_SPACE.search(gap), f"non-whitespace lost between chunks: {gap!r}"
