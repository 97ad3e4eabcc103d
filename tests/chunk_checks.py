"""What every chunking test shares: the invariants of SPEC C5, checked on one cut, and
the settings of the property tests."""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, settings

from gligabao.chunk import ESTIMATOR, Chunk, Tokenizer, overlap_budget

# Hypothesis settings of every chunking property test: 500 examples, no deadline (a
# large text takes a while), and the same examples on every run under CI.
PROPERTY = settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=bool(os.environ.get("CI")),
)

_NON_SPACE = re.compile(r"\S")


def assert_invariants(
    text: str,
    chunks: list[Chunk],
    chunk_size: int,
    overlap_percent: int,
    tokenizer: Tokenizer = ESTIMATOR,
) -> None:
    assert chunks, "a non-empty text gives at least one chunk"
    data = text.encode()
    budget = overlap_budget(chunk_size, overlap_percent)
    assert chunks[0].start == 0 and chunks[0].start_offset == 0
    assert chunks[-1].end == len(text), "the last chunk ends at the end of the text"
    assert chunks[-1].end_offset == len(data)
    for i, chunk in enumerate(chunks):
        assert chunk.index == i
        assert chunk.text == text[chunk.start : chunk.end], "a chunk is an exact slice"
        assert data[chunk.start_offset : chunk.end_offset] == chunk.text.encode(), "byte offsets"
        assert chunk.tokens == tokenizer.count(chunk.text), "tokens are the chunk's own count"
        assert chunk.tokens <= chunk_size, f"chunk {i} has {chunk.tokens} > {chunk_size} tokens"
        if i == 0:
            assert chunk.overlap_tokens == 0
            continue
        prev = chunks[i - 1]
        assert prev.start < chunk.start and prev.end < chunk.end, "chunks move forward"
        if chunk.start < prev.end:
            shared = text[chunk.start : prev.end]
            assert tokenizer.count(shared) <= budget, "overlap within the budget"
            if tokenizer.additive:
                assert chunk.overlap_tokens == tokenizer.count(shared)
        else:
            assert chunk.overlap_tokens == 0
            gap = text[prev.end : chunk.start]
            assert not _NON_SPACE.search(gap), f"non-whitespace lost between chunks: {gap!r}"
