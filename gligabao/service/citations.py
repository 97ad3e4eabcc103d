"""The sources of an answer and its citations, checked rather than trusted.

A model asked to answer from numbered sources may cite a number it was not given, or
quote words its source does not hold. Each citation is checked here: its source must be
one that was given, and its quote must be found in that source's text, exactly first,
then tolerantly (any run of whitespace for a space, any case), as an extraction's
evidence quotes are (base/evidence.py). A citation that fails is dropped and counted;
the answer's markers of sources no citation stands for are taken out, and a sentence
left without one is marked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gligabao.base.evidence import locate_quote
from gligabao.base.lines import mapped_lines
from gligabao.graph.queries import Evidence, Fact
from gligabao.read.documents import cite_described
from gligabao.search.hybrid import Hit

__all__ = [
    "UNSUPPORTED",
    "Checked",
    "Citation",
    "Dropped",
    "Source",
    "check",
    "chunk_source",
    "fact_source",
    "interval",
    "marked",
]

# What follows a sentence of the answer that no checked citation supports.
UNSUPPORTED = "[no source]"

# A marker: [3], or several numbers in one, [1, 3].
_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
# A sentence: up to its end mark and the markers after it (before a word that does not
# begin in lower case, "e.g. this" goes on, nor with a marker), or to the end of the text.
_SENTENCE = re.compile(
    r"\S.*?(?:[.!?](?:\s*\[\d+(?:\s*,\s*\d+)*\])*(?=\s+[^\sa-z\[]|\s*$)|$)", re.DOTALL
)


def interval(fact: Fact) -> str:
    """When a fact held, by month: `2019-03 -> 2023-03`, `2019-03 -> current`, or
    `current` for a current fact whose start is not known."""
    until = fact.invalid_at[:7] if fact.invalid_at else None
    if until is None:
        until = "current" if fact.status == "current" else "closed"
    if fact.valid_at is None:
        return until if until == "current" else f"? -> {until}"
    return f"{fact.valid_at[:7]} -> {until}"


def _place(source: str | None, document_id: int, first: int | None, last: int | None) -> str:
    name = source or f"document {document_id}"
    if first is None:
        return name
    return f"{name}:{first}" + (f"-{last}" if last is not None and last != first else "")


@dataclass(frozen=True)
class Source:
    """One numbered source an answer is asked from: a fact (its sentence, and the quote
    that states it) or a chunk (its text). `text` is what the model reads of it and what
    a quote of it must be found in."""

    n: int
    kind: str  # fact | chunk
    id: int  # the fact's, or the chunk's (an unchunked document's) artifact id
    text: str
    source: str | None
    document_id: int
    line_start: int | None
    line_end: int | None
    locations: dict[str, Any] | None = None
    interval: str | None = None  # a fact's
    start_offset: int | None = None  # a chunk's first byte in its document
    evidence: tuple[Evidence, ...] = ()  # a fact's
    # A web page's chunk: the file's lines of its text (Hit.line_map), for a quote's lines.
    line_map: list[list[int]] = field(default_factory=list, repr=False, compare=False)

    @property
    def where(self) -> str:
        """`path:LINE-LINE`, or a PDF's pages, a chat's messages."""
        if self.locations:
            return cite_described(self.source or f"document {self.document_id}", self.locations)
        return _place(self.source, self.document_id, self.line_start, self.line_end)

    def prompt(self) -> str:
        """What the model reads: a line saying what it is and where, then its text."""
        what = f"fact, {self.interval}" if self.kind == "fact" else "passage"
        return f"{what}, {self.where}\n{self.text.rstrip()}"

    def as_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "kind": self.kind,
            "id": self.id,
            "source": self.source,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "locations": self.locations,
            "interval": self.interval,
            "text": self.text,
        }


def fact_source(n: int, fact: Fact) -> Source:
    """A fact as a source: its sentence, then the words that state it; placed where its
    first evidence is."""
    quote = next((e.quote for e in fact.evidence if e.quote), None)
    text = fact.fact + (f'\nStated as: "{quote}"' if quote and quote != fact.fact else "")
    first = fact.evidence[0] if fact.evidence else None
    return Source(
        n=n,
        kind="fact",
        id=fact.id,
        text=text,
        source=first.source if first else None,
        document_id=first.document_id if first else 0,
        line_start=first.line_start if first else None,
        line_end=first.line_end if first else None,
        locations=first.locations if first else None,
        interval=interval(fact),
        evidence=tuple(fact.evidence),
    )


def chunk_source(n: int, hit: Hit) -> Source:
    """A chunk found by search as a source: its whole text."""
    return Source(
        n=n,
        kind="chunk",
        id=hit.artifact_id,
        text=hit.text,
        source=hit.source,
        document_id=hit.document_id,
        line_start=hit.line_start,
        line_end=hit.line_end,
        locations=hit.locations or None,
        start_offset=hit.start_offset,
        line_map=hit.line_map,
    )


@dataclass(frozen=True)
class Citation:
    """A citation that holds: its source's number, what it is, where its quote is (the
    quote's own lines in a chunk; the fact's evidence for a fact), the quote in the
    source's own words, and whether it was found as the model gave it (`exact`) or only
    tolerantly (other case or spacing)."""

    n: int
    kind: str
    id: int
    source: str | None
    document_id: int
    line_start: int | None
    line_end: int | None
    locations: dict[str, Any] | None
    quote: str
    exact: bool
    interval: str | None = None

    @property
    def where(self) -> str:
        if self.locations:
            return cite_described(self.source or f"document {self.document_id}", self.locations)
        return _place(self.source, self.document_id, self.line_start, self.line_end)

    def as_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "kind": self.kind,
            "id": self.id,
            "source": self.source,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "locations": self.locations,
            "quote": self.quote,
            "exact": self.exact,
            "interval": self.interval,
        }


@dataclass(frozen=True)
class Dropped:
    """A citation that did not hold, and why."""

    source: Any  # the number as the model gave it
    quote: str
    why: str

    def as_json(self) -> dict[str, Any]:
        return {"source": self.source, "quote": self.quote, "why": self.why}


@dataclass(frozen=True)
class Checked:
    """An answer once checked: its text with only the markers of sources a citation
    stands for, and each sentence left without one marked; the citations that hold, those
    dropped, and the sentences marked."""

    answer: str
    citations: list[Citation]
    dropped: list[Dropped]
    unsupported: list[str] = field(default_factory=list)


def _cited(source: Source, quote: str) -> Citation | None:
    """The citation of `quote` in `source`, or None when its text does not hold it."""
    span = locate_quote(quote, source.text)
    if span.start_offset is None or span.end_offset is None:
        return None
    data = source.text.encode("utf-8")
    # The words as the source has them: a quote found only tolerantly is shown as said.
    found = data[span.start_offset : span.end_offset].decode("utf-8", "replace")
    first, last = source.line_start, source.line_end
    locations = source.locations
    doc_source, document_id = source.source, source.document_id
    mapped = None
    if source.kind == "chunk" and source.line_map:
        # A web page: the quote's lines of its file, not of its markdown.
        at = source.start_offset or 0
        mapped = mapped_lines(source.line_map, at + span.start_offset, at + span.end_offset)
    if mapped is not None:
        first, last = mapped
        locations = {**(locations or {}), "lines": [first, last]}
    elif source.kind == "chunk" and first is not None:
        first = first + data.count(b"\n", 0, span.start_offset)
        last = first + data.count(
            b"\n", span.start_offset, max(span.start_offset, span.end_offset - 1)
        )
    elif source.kind == "fact":
        evidence = _evidence_of(source, quote)
        if evidence is not None:
            first, last, locations = evidence.line_start, evidence.line_end, evidence.locations
            doc_source, document_id = evidence.source, evidence.document_id
    return Citation(
        n=source.n,
        kind=source.kind,
        id=source.id,
        source=doc_source,
        document_id=document_id,
        line_start=first,
        line_end=last,
        locations=locations,
        quote=found,
        exact=span.exact,
        interval=source.interval,
    )


def _evidence_of(source: Source, quote: str) -> Evidence | None:
    """The evidence of a fact whose quote holds `quote`, else its first."""
    for evidence in source.evidence:
        if evidence.quote and locate_quote(quote, evidence.quote).start_offset is not None:
            return evidence
    return source.evidence[0] if source.evidence else None


def check(value: dict[str, Any], sources: list[Source]) -> Checked:
    """The model's answer (`{"answer", "citations": [{"source", "quote"}]}`) checked
    against the `sources` it was given, numbered from 1."""
    citations: list[Citation] = []
    dropped: list[Dropped] = []
    seen: set[tuple[int, str]] = set()
    for given in value.get("citations") or []:
        number, quote = given.get("source"), str(given.get("quote") or "")
        valid = isinstance(number, int) and not isinstance(number, bool)
        if not valid or not 1 <= number <= len(sources):
            dropped.append(Dropped(number, quote, f"source [{number}] was not given"))
            continue
        if not quote.strip():
            dropped.append(Dropped(number, quote, "no quote"))
            continue
        cited = _cited(sources[number - 1], quote)
        if cited is None:
            dropped.append(Dropped(number, quote, f"the quote is not in source [{number}]"))
        elif (number, cited.quote) not in seen:
            seen.add((number, cited.quote))
            citations.append(cited)
    # A bracket is a marker when its numbers are sources given or cited (a number cited
    # but not given is a marker to take out); a list in code, [60, 70, 80], is text.
    numbers = set(range(1, len(sources) + 1))
    numbers |= {g.get("source") for g in value.get("citations") or [] if isinstance(g, dict)}
    supported = {c.n for c in citations}
    answer, unsupported = marked(str(value.get("answer") or ""), supported, markers=numbers)
    # A citation the answer marks nowhere supports none of its sentences: listed under
    # them, it would read as if it did.
    markers = [_numbers(m) for m in _MARKER.finditer(answer)]
    shown = {n for found in markers if set(found) <= numbers for n in found}
    dropped += [
        Dropped(c.n, c.quote, "the answer marks it nowhere") for c in citations if c.n not in shown
    ]
    return Checked(answer, [c for c in citations if c.n in shown], dropped, unsupported)


def _numbers(marker: re.Match[str]) -> list[int]:
    """The source numbers a marker `[2]` or `[2, 3]` holds."""
    return [int(n) for n in re.findall(r"\d+", marker.group(1))]


def marked(
    text: str, supported: set[int], markers: set[Any] | None = None
) -> tuple[str, list[str]]:
    """`text` with the markers of numbers not `supported` taken out, and each sentence
    left without a marker followed by UNSUPPORTED; and those sentences. With `markers`
    (the numbers a marker may hold), brackets holding another number, such as a list in
    an answer's code (`[60, 70, 80, 90]`), are text, not markers: left as written."""

    def marker(match: re.Match[str]) -> bool:
        return markers is None or all(n in markers for n in _numbers(match))

    def kept(match: re.Match[str]) -> str:
        if not marker(match):
            return match.group(0)
        shown = [n for n in _numbers(match) if n in supported]
        return "".join(f"[{n}]" for n in shown)

    out: list[str] = []
    unsupported: list[str] = []
    last = 0
    for sentence in _SENTENCE.finditer(text):
        out.append(text[last : sentence.start()])
        last = sentence.end()
        cleaned = re.sub(r"\s+(?=[.!?,;:]|$)", "", _MARKER.sub(kept, sentence.group(0)))
        if not cleaned.strip():
            continue
        cited = any(marker(m) for m in _MARKER.finditer(cleaned))
        if not cited and re.search(r"\w", cleaned):
            unsupported.append(cleaned.strip())
            cleaned = f"{cleaned} {UNSUPPORTED}"
        out.append(cleaned)
    out.append(text[last:])
    return "".join(out).strip(), unsupported
