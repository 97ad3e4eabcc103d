"""`halves`: a text whose extraction is cut off, as two parts asked for one at a time."""

from __future__ import annotations

from gligabao.chunk import ESTIMATOR
from gligabao.llm.split import HALVING_FLOOR, halves
from tests.support.helpers import story


def test_a_text_is_cut_in_two_at_a_sentence_near_its_middle() -> None:
    text = story(3, paragraphs=1)
    first, second = halves(text) or ("", "")
    assert first + second == text  # nothing lost, nothing repeated: evidence finds it
    assert first.rstrip().endswith(".") and second.strip()[0].isupper()
    assert abs(len(first) - len(second)) < len(text) / 2


def test_a_text_at_the_floor_is_not_halved() -> None:
    short = "Alice Moreau met Bruno Tanaka in Oslo."
    assert ESTIMATOR.count(short) <= HALVING_FLOOR and halves(short) is None
