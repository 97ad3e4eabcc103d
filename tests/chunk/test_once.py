"""`cut` looks at each token of a text once: the estimator's pass over the whole text is
made one time, whether the text is then cut or found to fit."""

from __future__ import annotations

import pytest

from gligabao.chunk import ChunkSettings, cut, split_text, tokens

PROSE = "\n\n".join(
    f"Paragraph {i} says what clause {i} of the licence means, and when it ends."
    for i in range(300)
)
MARKDOWN = "\n\n".join(f"## Section {i}\n\nThe text of section {i}, in words." for i in range(300))


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every text the estimator marks tokens in, whole-text passes included."""
    seen: list[int] = []
    real = tokens.token_marks

    def recording(data: bytes) -> bytes:
        seen.append(len(data))
        return real(data)

    monkeypatch.setattr(tokens, "token_marks", recording)
    return seen


@pytest.mark.parametrize(
    ("text", "mode"), [(PROSE, "text"), (MARKDOWN, "markdown"), (PROSE, "code")]
)
def test_a_text_larger_than_a_chunk_is_marked_once(passes, text, mode):
    result = cut(text, ChunkSettings(chunk_size=256, mode=mode), path=None)
    assert result.chunked
    assert passes.count(len(text.encode())) == 1


def test_a_text_that_fits_is_marked_once_and_counted_right(passes):
    text = PROSE[:600]
    result = cut(text, ChunkSettings(chunk_size=1024, mode="text"))
    assert not result.chunked and result.tokens == tokens.ESTIMATOR.count_slowly(text)
    assert passes.count(len(text.encode())) == 1


def test_the_cut_is_the_one_split_text_gives(passes):
    result = cut(PROSE, ChunkSettings(chunk_size=256, overlap_percent=20, mode="text"))
    assert result.chunks == split_text(PROSE, chunk_size=256, overlap_percent=20)
    assert result.tokens == tokens.ESTIMATOR.count_slowly(PROSE)
