"""The chunking invariants as property tests: any Unicode text, any settings in range."""

from __future__ import annotations

import base64
import random
import string

from hypothesis import given
from hypothesis import strategies as st

from gligabao.chunk import ESTIMATOR, ChunkSettings, cut, split_text
from tests.support.chunk_checks import PROPERTY, assert_invariants, reference_tokens

sizes = st.one_of(st.integers(32, 120), st.sampled_from([32, 64, 1024, 8000]))
overlaps = st.one_of(st.integers(0, 50), st.sampled_from([0, 20, 50]))

CJK = "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学"
EMOJI = ["👩‍👩‍👧", "🇫🇷", "👍🏽", "e\u0301", "n\u0303", "a\u0308\u0304", "🧑🏿‍🚀", "Z\u0336\u0337"]
RTL = ["שלום", "עולם", "مرحبا", "بالعالم", "\u200f", "\u202e"]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\ufeff", "\u2060"]
SEPARATORS = [
    " ",
    "  ",
    "\n",
    "\r\n",
    "\n\n",
    "\r\n\r\n",
    "\n \n",
    "\t",
    "\u3000",
    ". ",
    "! ",
    "? ",
    "… ",
    "。",
    "\n\n\n",
]

BASE64 = string.ascii_letters + string.digits + "+/"
# Words as texts from an alphabet, not from_regex: the same strings, drawn several times
# faster (a 400-character base64 word from a regex is drawn character by character).
words = st.one_of(
    st.text(alphabet=string.ascii_letters, min_size=1, max_size=14),
    st.text(alphabet=string.digits, min_size=1, max_size=8),
    st.text(alphabet=CJK, min_size=1, max_size=12),
    st.sampled_from(EMOJI + RTL + ZERO_WIDTH),
    st.builds(
        str.__add__,
        st.text(alphabet=BASE64, min_size=40, max_size=400),
        st.sampled_from(["", "=", "=="]),
    ),
    st.text(min_size=1, max_size=8),
)


@st.composite
def documents(draw: st.DrawFn) -> str:
    """Texts shaped like documents: words, sentences, paragraphs, any script."""
    parts = draw(st.lists(st.tuples(words, st.sampled_from(SEPARATORS)), min_size=1, max_size=400))
    return "".join(w + s for w, s in parts)


any_text = st.one_of(documents(), st.text(min_size=1, max_size=3000))


@PROPERTY
@given(text=any_text, chunk_size=sizes, overlap=overlaps)
def test_every_chunk_is_an_exact_bounded_slice_and_nothing_is_lost(text, chunk_size, overlap):
    chunks = split_text(text, chunk_size=chunk_size, overlap_percent=overlap)
    assert_invariants(text, chunks, chunk_size, overlap)


@PROPERTY
@given(text=any_text, chunk_size=sizes, overlap=overlaps)
def test_same_input_and_settings_give_the_same_chunks(text, chunk_size, overlap):
    first = split_text(text, chunk_size=chunk_size, overlap_percent=overlap)
    assert split_text(text, chunk_size=chunk_size, overlap_percent=overlap) == first


@PROPERTY
@given(text=any_text, chunk_size=sizes, overlap=overlaps)
def test_a_text_is_chunked_exactly_when_it_is_larger_than_a_chunk(text, chunk_size, overlap):
    result = cut(text, ChunkSettings(chunk_size=chunk_size, overlap_percent=overlap))
    whole = split_text(text, chunk_size=chunk_size, overlap_percent=overlap)
    assert result.tokens == reference_tokens(text)
    if result.tokens <= chunk_size:
        assert not result.chunked and result.chunks == []
        assert len(whole) <= 1
    else:
        assert result.chunked and result.chunks == whole and len(whole) >= 2


@PROPERTY
@given(
    text=st.text(alphabet=CJK + "。，\n", min_size=40, max_size=2000),
    overlap=st.integers(0, 50),
)
def test_cjk_text_at_the_smallest_chunk(text, overlap):
    chunks = split_text(text, chunk_size=32, overlap_percent=overlap)
    assert_invariants(text, chunks, 32, overlap)


@PROPERTY
@given(
    parts=st.lists(
        st.sampled_from(EMOJI + ZERO_WIDTH + RTL + [" ", "\r\n", "\r\n\r\n"]),
        min_size=20,
        max_size=600,
    ),
    chunk_size=sizes,
    overlap=overlaps,
)
def test_emoji_combining_marks_and_rtl(parts, chunk_size, overlap):
    text = "".join(parts)
    chunks = split_text(text, chunk_size=chunk_size, overlap_percent=overlap)
    assert_invariants(text, chunks, chunk_size, overlap)


class _CountedEstimator:
    """The estimator behind the plain tokenizer interface: the chunker then counts each
    range it weighs, the way it does for any tokenizer, rather than adding up counts."""

    name = "estimator, counted"
    additive = True

    def count(self, text: str) -> int:
        return ESTIMATOR.count(text)


# Sentences longer than a chunk (no full stop, no line break), packed word by word.
long_sentences = st.lists(
    st.tuples(words, st.sampled_from([" ", "  ", "\t", "\u3000 "])), min_size=1, max_size=300
).map(lambda parts: "".join(w + s for w, s in parts))


@PROPERTY
@given(text=st.one_of(any_text, long_sentences), chunk_size=sizes, overlap=overlaps)
def test_adding_up_counts_cuts_as_counting_each_range_does(text, chunk_size, overlap):
    # The estimator's cut sums counts (a piece's words, an overlap's units) and cuts long
    # words along its token marks; it must come out as counting every candidate range.
    added = split_text(text, chunk_size=chunk_size, overlap_percent=overlap)
    counted = split_text(
        text, chunk_size=chunk_size, overlap_percent=overlap, tokenizer=_CountedEstimator()
    )
    assert added == counted


def test_named_hard_cases_hold_the_invariants():
    rng_words = "Alpha beta gamma. Delta epsilon! Zeta eta theta? "
    cases = {
        "cjk at 32 / 50%": ("".join(CJK[i % len(CJK)] for i in range(3000)) + "。" * 50, 32, 50),
        "emoji + combining at 32 / 50%": (" ".join(EMOJI * 200), 32, 50),
        "crlf paragraphs": ("\r\n\r\n".join(rng_words * 7 for _ in range(60)), 64, 20),
        "200 KB base64 word": (
            base64.b64encode(bytes(range(256)) * 600).decode()[:200_000],
            1024,
            20,
        ),
        "200 KB base64 word, small chunks": (
            base64.b64encode(random.Random(0).randbytes(150_000)).decode(),
            32,
            50,
        ),
    }
    for name, (text, size, overlap) in cases.items():
        chunks = split_text(text, chunk_size=size, overlap_percent=overlap)
        assert len(chunks) > 1, name
        assert_invariants(text, chunks, size, overlap)


# Where a fast estimator could go wrong: runs of every length next to each other, every
# character str.isspace() calls whitespace (outside ASCII too), characters that are not
# whitespace but look like it, and letters and digits outside ASCII, which cost 1 each.
WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())  # all 29
NEAR_MISSES = "\u180e\u200b\ufeff\u2060éßǅΩ٣２²①"
runs = st.lists(
    st.one_of(
        st.text(alphabet="abcxyzABCXYZ", min_size=1, max_size=13),
        st.text(alphabet="0123456789", min_size=1, max_size=10),
        st.text(alphabet=WHITESPACE + NEAR_MISSES + ".-_+/" + CJK[:4] + "😀", max_size=3),
    ),
    max_size=60,
).map("".join)


@PROPERTY
@given(text=st.one_of(runs, st.text(max_size=400), documents()))
def test_the_estimator_counts_any_text_as_c1_says(text):
    expected = reference_tokens(text)
    assert ESTIMATOR.count(text) == expected
    assert ESTIMATOR.count_slowly(text) == expected
