"""The name key deterministic resolution compares (gligabao/base/names.py)."""

from __future__ import annotations

import pytest

from gligabao.base.names import is_organization, name_key, type_key


@pytest.mark.parametrize(
    ("a", "b", "type_"),
    [
        ("Acme Corporation", "ACME corporation", "Person"),  # case
        ("Zoë  Ålund", "Zoe Alund", "Person"),  # accents, spacing
        ("Zoe\u0301", "Zoé", "Person"),  # a decomposed accent
        ("ＡＣＭＥ", "acme", "Product"),  # full width: a compatibility form
        ("O'Brien-Smith", "o brien smith", "Person"),  # punctuation
        ("The Beatles", "Beatles", "Group"),  # a leading "the"
        ("Acme, Inc.", "ACME", "Organization"),  # a corporate suffix
        ("Globex GmbH", "Globex", "company"),
        ("Initech Ltd", "Initech LLC", "Organization"),
        ("Straße", "STRASSE", "Location"),
    ],
)
def test_names_that_differ_only_in_form_have_one_key(a: str, b: str, type_: str) -> None:
    assert name_key(a, type_) == name_key(b, type_)


@pytest.mark.parametrize(
    ("a", "b", "type_"),
    [
        ("Acme Inc.", "Acme", "Person"),  # a suffix counts only for an organization
        ("Acme Co.", "Acme", "Ship"),
        ("Alice Moreau", "Alice", "Person"),
        ("Theodore", "odore", "Person"),  # "the" only as a word of its own
    ],
)
def test_names_that_differ_in_substance_do_not(a: str, b: str, type_: str) -> None:
    assert name_key(a, type_) != name_key(b, type_)


def test_a_name_that_is_only_the_article_or_the_suffix_keeps_it() -> None:
    assert name_key("The", "Band") == "the"
    assert name_key("Inc.", "Organization") == "inc"
    assert name_key("?!", "Thing") == ""


def test_types_agree_in_any_case_and_spacing() -> None:
    assert type_key(" Organization ") == type_key("organization")
    assert is_organization("ORGANISATION") and not is_organization("Person")
