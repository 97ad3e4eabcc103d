"""Extraction measured against hand-written gold (`gb eval --graph GOLD.jsonl`).

A gold file holds one JSON object a line: {"source": a file (relative to the gold
file's folder), "facts": [{"source", "relation", "target", "valid_at"?, "invalid_at"?},
...]}. The facts stored for that document (those with evidence in it) are paired one to
one with gold facts: both ends by name (`same_entity`), the relation by meaning
(embeddings, when the caller has them) or by words (`relation_words`). From the pairs:
precision, recall, the share of gold entities that two stored entities stand for, and,
of paired facts with gold dates, the share whose interval agrees to the day.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from gligabao.base.jsonl import numbered_json_lines
from gligabao.errors import InputError
from gligabao.read.files import read_list_text

__all__ = [
    "COSINE_THRESHOLD",
    "WORDS_THRESHOLD",
    "DocumentScore",
    "GoldDocument",
    "GoldFact",
    "Pair",
    "match_facts",
    "normalize_entity",
    "parse_gold",
    "read_gold",
    "relation_words",
    "same_entity",
    "score_document",
    "total",
    "words_match",
]

# Relations by words: the share of content stems two phrasings share (Jaccard). Half lets
# "works at" meet "worked for" ({work}) and "is married to" meet "married" ({marri}),
# while "works at" and "lives in" share nothing.
WORDS_THRESHOLD = 0.5
# Relations by meaning: cosine of the two phrases' embeddings, only to add pairs the
# words missed ("is employed by" / "works for"). High on purpose: two-word phrases that
# share a word but not a meaning ("works at" / "lives at") come close in embedding space.
COSINE_THRESHOLD = 0.8

_ISO_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})")
_WORD = re.compile(r"[^\W_]+")
# Words that carry no relation of their own: "works at" and "works in" are one relation.
_STOP = frozenset(
    """a an the of at in on to for by from with as and or is are was were be
    been being has have had its it his her their""".split()  # noqa: SIM905
)
_SUFFIXES = ("ing", "ed", "es", "s", "ly", "er", "e", "y")


@dataclass(frozen=True)
class GoldFact:
    source: str
    relation: str
    target: str
    valid_at: str | None = None  # YYYY-MM-DD
    invalid_at: str | None = None

    @property
    def dated(self) -> bool:
        return self.valid_at is not None or self.invalid_at is not None


@dataclass(frozen=True)
class GoldDocument:
    line: int
    source: str  # absolute path, as remembered documents store it
    facts: tuple[GoldFact, ...]


@dataclass(frozen=True)
class Pair:
    """A stored fact paired with a gold one, and whether their intervals agree."""

    stored_id: int
    gold: int  # index in the document's gold facts
    agrees: bool | None  # None: the gold fact gives no date


@dataclass
class DocumentScore:
    """One document's (or, summed, every document's) figures."""

    source: str
    stored: int = 0
    gold: int = 0
    matched: int = 0
    gold_entities: int = 0  # those a stored entity stands for
    duplicated: int = 0  # of those, the ones two or more stored entities stand for
    dated: int = 0  # matched facts whose gold gives a date
    agreed: int = 0
    dated_closed: int = 0  # of `dated`, gold with an end
    agreed_closed: int = 0
    document_tokens: int = 0
    calls: int = 0
    llm_tokens: int = 0  # input and output of the calls recorded for the document
    pairs: list[Pair] = field(default_factory=list)
    missed: list[GoldFact] = field(default_factory=list)
    unpaired: list[int] = field(default_factory=list)  # stored facts no gold fact took

    def _share(self, part: int, whole: int) -> float | None:
        return part / whole if whole else None

    @property
    def precision(self) -> float | None:
        return self._share(self.matched, self.stored)

    @property
    def recall(self) -> float | None:
        return self._share(self.matched, self.gold)

    @property
    def duplicate_rate(self) -> float | None:
        return self._share(self.duplicated, self.gold_entities)

    @property
    def interval_agreement(self) -> float | None:
        return self._share(self.agreed, self.dated)

    @property
    def closed_agreement(self) -> float | None:
        return self._share(self.agreed_closed, self.dated_closed)

    @property
    def open_agreement(self) -> float | None:
        return self._share(self.agreed - self.agreed_closed, self.dated - self.dated_closed)

    @property
    def tokens_per_token(self) -> float | None:
        return self._share(self.llm_tokens, self.document_tokens)

    def as_json(self, detail: bool = True) -> dict[str, Any]:
        """The figures; with `detail`, the gold facts missed and the ids of the stored
        facts left unpaired, to see what to fix."""
        out = {
            "source": self.source,
            "stored": self.stored,
            "gold": self.gold,
            "matched": self.matched,
            "precision": self.precision,
            "recall": self.recall,
            "gold_entities": self.gold_entities,
            "duplicated_entities": self.duplicated,
            "duplicate_rate": self.duplicate_rate,
            "dated": self.dated,
            "interval_agreement": self.interval_agreement,
            "closed_agreement": self.closed_agreement,
            "open_agreement": self.open_agreement,
            "document_tokens": self.document_tokens,
            "calls": self.calls,
            "llm_tokens": self.llm_tokens,
            "llm_tokens_per_token": self.tokens_per_token,
        }
        if detail:
            out["missed"] = [
                {k: v for k, v in vars(f).items() if v is not None} for f in self.missed
            ]
            out["unpaired"] = self.unpaired
        return out


# ------------------------------------------------------------------ names and relations


def normalize_entity(name: str) -> str:
    """The form entity names are compared in: accents, case, punctuation and a leading
    "the" dropped, whitespace collapsed ("The  Acmé Corp." -> "acme corp")."""
    decomposed = unicodedata.normalize("NFKD", name)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    words = _WORD.findall(bare)
    if len(words) > 1 and words[0] == "the":
        words = words[1:]
    return " ".join(words)


def same_entity(stored: str, gold: str, aliases: Mapping[str, Iterable[str]] | None = None) -> bool:
    """Whether a stored entity's name stands for a gold one: equal once normalized, or
    one of the stored entity's `aliases` (by its name as stored) is."""
    want = normalize_entity(gold)
    names = [stored, *((aliases or {}).get(stored, ()))]
    return any(normalize_entity(name) == want for name in names)


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) - len(suffix) >= 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def relation_words(relation: str) -> frozenset[str]:
    """A relation's content stems: "WORKS_AT" and "worked at" -> {"work"}. A relation of
    stop words only keeps them ("is in"), so that it is not empty."""
    words = [w.casefold() for w in _WORD.findall(relation.replace("_", " "))]
    content = [w for w in words if w not in _STOP] or words
    return frozenset(_stem(w) for w in content)


def words_match(a: str, b: str, threshold: float = WORDS_THRESHOLD) -> bool:
    """Whether two relations share at least `threshold` of their stems (Jaccard)."""
    x, y = relation_words(a), relation_words(b)
    union = x | y
    return bool(union) and len(x & y) / len(union) >= threshold


def relation_phrase(relation: str) -> str:
    """A relation as words, for embedding: "WORKS_AT" -> "works at"."""
    return " ".join(relation.replace("_", " ").lower().split())


# ------------------------------------------------------------------ pairing


def _day(value: str | None) -> str | None:
    if value is None:
        return None
    found = _ISO_DAY.match(value.strip())
    return found.group(1) if found else value.strip()


def interval_agrees(stored: Mapping[str, Any], gold: GoldFact) -> bool:
    """The stored fact's interval against the gold one's, to the day: a start the gold
    gives must be the stored start; an end it gives must be the stored end, and a gold
    fact with no end must be stored open."""
    if gold.valid_at is not None and _day(stored.get("valid_at")) != gold.valid_at:
        return False
    return _day(stored.get("invalid_at")) == gold.invalid_at


def match_facts(
    stored: Sequence[Mapping[str, Any]],
    gold: Sequence[GoldFact],
    *,
    same_relation: Callable[[str, str], bool] = words_match,
    same_name: Callable[[str, str], bool] = same_entity,
) -> list[Pair]:
    """Stored facts (`id`, `source`, `relation`, `target`, `valid_at`, `invalid_at`)
    paired one to one with gold facts: same source, same target, same relation. Each
    gold fact takes the first stored fact that fits it and is free, preferring one
    whose interval agrees, so a duplicate stored fact counts once."""
    taken: set[int] = set()
    pairs = []
    for index, want in enumerate(gold):
        fits = [
            s
            for s in stored
            if s["id"] not in taken
            and same_name(str(s["source"]), want.source)
            and same_name(str(s["target"]), want.target)
            and same_relation(str(s["relation"]), want.relation)
        ]
        if not fits:
            continue
        best = next((s for s in fits if interval_agrees(s, want)), fits[0])
        taken.add(best["id"])
        pairs.append(Pair(best["id"], index, interval_agrees(best, want) if want.dated else None))
    return pairs


def score_document(
    doc: GoldDocument,
    stored: Sequence[Mapping[str, Any]],
    entities: Sequence[Mapping[str, Any]],
    usage: Mapping[str, int],
    *,
    same_relation: Callable[[str, str], bool] = words_match,
    same_name: Callable[[str, str], bool] = same_entity,
) -> DocumentScore:
    """One document's figures: its stored facts and entities against its gold facts,
    and what its LLM calls (`usage`: `tokens`, `calls`, `input_tokens`, `output_tokens`)
    cost per token of it."""
    pairs = match_facts(stored, doc.facts, same_relation=same_relation, same_name=same_name)
    score = DocumentScore(
        doc.source,
        stored=len(stored),
        gold=len(doc.facts),
        matched=len(pairs),
        document_tokens=usage.get("tokens", 0),
        calls=usage.get("calls", 0),
        llm_tokens=usage.get("input_tokens", 0) + usage.get("output_tokens", 0),
        pairs=pairs,
    )
    paired = {p.gold for p in pairs}
    score.missed = [f for i, f in enumerate(doc.facts) if i not in paired]
    taken = {p.stored_id for p in pairs}
    score.unpaired = [int(f["id"]) for f in stored if f["id"] not in taken]
    names = {normalize_entity(n): n for f in doc.facts for n in (f.source, f.target)}
    for name in names.values():
        standing = [e for e in entities if same_name(str(e["name"]), name)]
        if standing:
            score.gold_entities += 1
            score.duplicated += len(standing) > 1
    for pair in pairs:
        if pair.agrees is None:
            continue
        closed = doc.facts[pair.gold].invalid_at is not None
        score.dated += 1
        score.agreed += pair.agrees
        score.dated_closed += closed
        score.agreed_closed += closed and pair.agrees
    return score


def total(scores: Iterable[DocumentScore]) -> DocumentScore:
    """Every document's figures summed (shares over the sums, not means of shares)."""
    out = DocumentScore("total")
    for s in scores:
        for name in (
            "stored",
            "gold",
            "matched",
            "gold_entities",
            "duplicated",
            "dated",
            "agreed",
            "dated_closed",
            "agreed_closed",
            "document_tokens",
            "calls",
            "llm_tokens",
        ):
            setattr(out, name, getattr(out, name) + getattr(s, name))
    return out


# ------------------------------------------------------------------ the gold file


def _date(value: Any, number: int, key: str, name: str) -> str | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(str(value)[:10]).isoformat()
    except ValueError:
        raise InputError(name, f"line {number}: {key} must be an ISO date, not {value!r}") from None


def _fact(item: Any, number: int, name: str) -> GoldFact:
    if not isinstance(item, dict):
        raise InputError(name, f"line {number}: each fact must be an object")
    for key in ("source", "relation", "target"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise InputError(name, f"line {number}: each fact needs a non-empty {key}")
    return GoldFact(
        item["source"],
        item["relation"],
        item["target"],
        _date(item.get("valid_at"), number, "valid_at", name),
        _date(item.get("invalid_at"), number, "invalid_at", name),
    )


def parse_gold(
    lines: Iterable[str], base: str | os.PathLike[str], name: str = "gold"
) -> list[GoldDocument]:
    """Gold documents from JSON lines, blank lines skipped, relative sources taken from
    `base`. Raises InputError naming the bad line."""
    out: list[GoldDocument] = []
    for number, item in numbered_json_lines(lines, name):
        if not isinstance(item, dict) or not isinstance(item.get("facts"), list):
            raise InputError(name, f"line {number}: expected an object with source and facts")
        source = item.get("source")
        if not isinstance(source, str) or not source:
            raise InputError(name, f"line {number}: source must be a file path")
        path = os.path.abspath(os.path.join(base, os.path.expanduser(source)))
        facts = tuple(_fact(f, number, name) for f in item["facts"])
        out.append(GoldDocument(number, path, facts))
    return out


def read_gold(path: str | os.PathLike[str]) -> list[GoldDocument]:
    """The gold documents of a JSON-lines file; relative sources from its folder."""
    text = read_list_text(os.fspath(path), "gold file")
    gold = parse_gold(text.splitlines(), Path(os.fspath(path)).resolve().parent, str(path))
    if not gold:
        raise InputError(str(path), "holds no documents")
    return gold
