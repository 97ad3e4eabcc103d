"""One example per step of the text mode's cut, with counts that can be checked by eye.

Each word "abcd" is exactly one estimated token, so a paragraph of ten of them
is ten tokens and every expected cut below can be worked out by hand.
"""

from __future__ import annotations

import pytest

from gligabao.chunk import ESTIMATOR, ChunkSettings, cut, split_text
from tests.support.chunk_checks import assert_invariants, reference_budget, reference_tokens


def words(n: int, word: str = "abcd") -> str:
    return " ".join([word] * n)


@pytest.mark.parametrize(
    "count", [ESTIMATOR.count, reference_tokens], ids=["estimator", "reference"]
)
def test_the_estimator_counts_runs_as_c1_says(count):
    assert count("") == 0
    assert count("   \n\t\u3000\xa0") == 0
    assert count("abcd") == 1
    assert count("abcde") == 2  # ceil(5/4)
    assert count("123") == 1 and count("1234") == 2  # ceil(n/3)
    assert count("abc123") == 2  # a letter run, then a digit run
    assert count("ab-cd e") == 4  # three letter runs and a hyphen
    assert count("中文字") == 3
    assert count("é") == 1 and count("caf\u0065\u0301") == 2  # not ASCII: one token
    assert count("٣٣٣") == 3 and count("²") == 1  # digits, but not ASCII ones
    assert count("a, b!") == 4
    assert count("👍🏽") == 2
    assert count("\u200b") == 1  # zero-width, but not whitespace


def test_the_reference_budget_is_the_spec_s_rounded_down():
    assert reference_budget(1024, 20) == 204  # 204.8
    assert reference_budget(32, 25) == 8
    assert reference_budget(33, 50) == 16  # 16.5
    assert reference_budget(8000, 0) == 0


def test_paragraphs_are_packed_whole_and_chunks_end_at_paragraph_breaks():
    paragraphs = [words(10, w) for w in ("aaaa", "bbbb", "cccc", "dddd", "eeee")]
    text = "\n\n".join(paragraphs)
    chunks = split_text(text, chunk_size=32, overlap_percent=0)
    assert [c.text for c in chunks] == ["\n\n".join(paragraphs[:3]), "\n\n".join(paragraphs[3:])]
    assert [c.tokens for c in chunks] == [30, 20]
    assert_invariants(text, chunks, 32, 0)


def test_a_paragraph_larger_than_a_chunk_is_split_into_sentences_and_lines():
    sentences = [words(9, w) + "." for w in ("aaaa", "bbbb", "cccc", "dddd")]  # 10 tokens each
    text = " ".join(sentences[:3]) + "\n" + sentences[3]
    chunks = split_text(text, chunk_size=32, overlap_percent=0)
    assert [c.text for c in chunks] == [" ".join(sentences[:3]), sentences[3]]
    assert_invariants(text, chunks, 32, 0)


def test_cjk_full_stops_end_sentences():
    sentence = "我们去学校了。"  # 7 tokens
    text = sentence * 10
    chunks = split_text(text, chunk_size=32, overlap_percent=0)
    assert [c.text for c in chunks] == [sentence * 4, sentence * 4, sentence * 2]


def test_a_sentence_larger_than_a_chunk_is_packed_word_by_word_leaving_room_for_overlap():
    text = words(100)  # one sentence of 100 tokens, no punctuation
    chunks = split_text(text, chunk_size=32, overlap_percent=25)  # budget 8, pieces <= 24
    assert chunks[0].text == words(24) and chunks[0].tokens == 24
    assert all(c.tokens <= 32 for c in chunks)
    # Each later chunk: 8 words of overlap, then a whole 24-word piece.
    assert [c.overlap_tokens for c in chunks[1:]] == [8] * (len(chunks) - 1)
    assert [c.tokens for c in chunks[1:-1]] == [32] * (len(chunks) - 2)
    assert_invariants(text, chunks, 32, 25)


def test_a_word_larger_than_a_chunk_is_cut_into_pieces():
    blob = "x" * 200  # one 200-letter word: 50 tokens
    text = f"head {blob} tail"
    chunks = split_text(text, chunk_size=32, overlap_percent=0)
    assert "".join(c.text for c in chunks).replace(" ", "") == text.replace(" ", "")
    pieces = [c.text for c in chunks]
    assert pieces == ["head", "x" * 128, "x" * 72 + " tail"]
    assert_invariants(text, chunks, 32, 0)


def test_overlap_is_made_of_the_last_whole_units_that_fit_the_budget():
    paragraphs = [
        words(5, w) for w in ("aaaa", "bbbb", "cccc", "dddd", "eeee", "ffff", "gggg", "hhhh")
    ]
    text = "\n\n".join(paragraphs)
    chunks = split_text(text, chunk_size=32, overlap_percent=50)  # budget 16: three paragraphs
    assert chunks[0].text == "\n\n".join(paragraphs[:6])
    assert chunks[1].overlap_tokens == 15
    assert chunks[1].text == "\n\n".join(paragraphs[3:])
    assert_invariants(text, chunks, 32, 50)


def test_overlap_falls_back_to_the_last_words_when_no_whole_unit_fits():
    paragraphs = [words(20, w) for w in ("aaaa", "bbbb", "cccc", "dddd")]
    text = "\n\n".join(paragraphs)
    chunks = split_text(text, chunk_size=64, overlap_percent=20)  # budget 12 < 20-token units
    assert chunks[0].text == "\n\n".join(paragraphs[:3])
    assert chunks[1].overlap_tokens == 12
    assert chunks[1].text == words(12, "cccc") + "\n\n" + paragraphs[3]
    assert_invariants(text, chunks, 64, 20)


def test_overlap_is_shortened_to_leave_room_for_the_next_unit():
    paragraphs = [words(n, w) for n, w in ((10, "aaaa"), (20, "bbbb"), (26, "cccc"))]
    text = "\n\n".join(paragraphs)
    chunks = split_text(text, chunk_size=32, overlap_percent=50)  # budget 16, room 32-26 = 6
    assert chunks[1].text == words(6, "bbbb") + "\n\n" + paragraphs[2]
    assert chunks[1].overlap_tokens == 6 and chunks[1].tokens == 32
    assert_invariants(text, chunks, 32, 50)


def test_overlap_is_dropped_when_the_next_unit_fills_a_chunk():
    paragraphs = [words(20, "aaaa"), words(32, "bbbb")]
    text = "\n\n".join(paragraphs)
    chunks = split_text(text, chunk_size=32, overlap_percent=50)
    assert [c.text for c in chunks] == paragraphs
    assert chunks[1].overlap_tokens == 0


def test_byte_offsets_slice_the_utf8_bytes_and_crlf_is_kept():
    text = "Ünïcödé wörds hére.\r\n\r\n" * 40
    data = text.encode()
    chunks = split_text(text, chunk_size=40, overlap_percent=20)
    for chunk in chunks:
        assert data[chunk.start_offset : chunk.end_offset].decode() == chunk.text
        assert chunk.start_offset > chunk.start or chunk.start == 0
    assert "\r\n" in chunks[0].text


@pytest.mark.parametrize("size", [32, 1024, 8000])
def test_a_text_at_the_chunk_size_is_not_chunked_and_one_token_more_is(size):
    at_size = words(size)
    assert ESTIMATOR.count(at_size) == size
    assert not cut(at_size, ChunkSettings(chunk_size=size)).chunked
    over = cut(at_size + " abcd", ChunkSettings(chunk_size=size))
    assert over.chunked and over.tokens == size + 1 and len(over.chunks) >= 2
