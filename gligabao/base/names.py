"""When two entity names are one name: the key deterministic resolution compares.

Two extracted entities, or an extracted one and a stored one, whose keys and types
agree are one entity without asking the LLM. The key forgives what never tells two
things apart: case, spacing, punctuation, Unicode compatibility forms, accents, a
leading "the", and for an organization a corporate suffix ("Acme, Inc." is "ACME").
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["is_organization", "name_key", "type_key"]

# Types an extraction gives organizations; a suffix is stripped for these alone, for
# "Co." or "Corp" may end the name of a ship or a person's nickname.
_ORGANIZATION_TYPES = frozenset(
    {"organization", "organisation", "org", "company", "corporation", "business", "firm"}
)
_SUFFIXES = frozenset(
    {"inc", "incorporated", "ltd", "limited", "llc", "gmbh", "corp", "corporation", "co", "plc"}
)
_NOT_WORD = re.compile(r"[\W_]+")


def type_key(type_: str) -> str:
    """The form types are compared in: "Organization" and "organization " agree."""
    return " ".join(unicodedata.normalize("NFKC", type_).casefold().split())


def is_organization(type_: str) -> bool:
    return type_key(type_) in _ORGANIZATION_TYPES


def name_key(name: str, type_: str = "") -> str:
    """The form names are compared in; "" for a name of no letters or digits."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name).casefold())
    text = "".join(c for c in text if not unicodedata.combining(c))
    words = _NOT_WORD.sub(" ", unicodedata.normalize("NFKC", text)).split()
    if len(words) > 1 and words[0] == "the":
        words = words[1:]
    if is_organization(type_):
        while len(words) > 1 and words[-1] in _SUFFIXES:
            words = words[:-1]
    return " ".join(words)
