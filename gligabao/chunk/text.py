"""`split_text`: cut a text into overlapping chunks: paragraphs, then sentences, then words.

Every chunk is the slice ``text[chunk.start:chunk.end]`` (character offsets);
``start_offset`` and ``end_offset`` are the same bounds as UTF-8 byte offsets.

The cut works on the UTF-8 bytes. The text is first broken into *units*:
paragraphs; a paragraph larger than a chunk into sentences; a sentence still
larger into pieces of words; a word still larger into pieces cut between
tokens. Units are trimmed of whitespace, so whatever lies between two units is
whitespace. Units are packed greedily; each chunk but the first begins with
the last units (or words) of the one before, as many as the overlap budget
allows. Token counts come from a `SpanCounter`, which for the estimator counts
any byte range in a handful of C-speed calls, so each token is looked at once.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate, compress, repeat
from operator import add

from gligabao.chunk.tokens import ESTIMATOR, SpanCounter, Tokenizer, span_counter

# Whitespace as str.isspace() sees it within ASCII; the only whitespace that
# separates units (Unicode spaces cost no tokens but do not split words).
_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
# What lies between two paragraphs: one or more blank lines (a blank line may hold
# spaces or \r) and the whitespace after them. Written as a line break, spaces, a line
# break and any whitespace (the same matches) so that re scans it faster.
_PARAGRAPH_BREAK = re.compile(rb"(\n[ \t\r\x0b\x0c\x1c-\x1f]*\n[ \t\n\r\x0b\x0c\x1c-\x1f]*)")
_CLOSERS = rb"(?:[)\]\"']|\xe2\x80[\x99\x9d]|\xc2\xbb|\xe3\x80[\x8d\x8f])*"
# A sentence ends after . ! ? … (and closing quotes or brackets) before
# whitespace, after a CJK full stop (。！？｡) anywhere, and at every line break.
# Each alternative begins with a literal byte, so that re skips to the next of those
# bytes in C rather than trying a match at every byte (8x faster; the same matches).
_STOPS = rb"(?:[.!?]|\xe2\x80\xa6)*" + _CLOSERS + rb"(?=[ \t\n\r\x0b\x0c\x1c-\x1f])"
_CJK_STOPS = rb"(?:\xe3\x80\x82|\xef\xbc[\x81\x9f]|\xef\xbd\xa1)*" + _CLOSERS
_SENTENCE_END = re.compile(
    rb"|".join(
        [
            *(stop + _STOPS for stop in (rb"\.", rb"!", rb"\?", rb"\xe2\x80\xa6")),
            *(stop + _CJK_STOPS for stop in (rb"\xe3\x80\x82", rb"\xef\xbc[\x81\x9f]")),
            rb"\xef\xbd\xa1" + _CJK_STOPS,
            rb"\n",
        ]
    )
)
_WORD = re.compile(rb"[^ \t\n\r\x0b\x0c\x1c-\x1f]+")
_SPACE_BYTE = re.compile(rb"[ \t\n\r\x0b\x0c\x1c-\x1f]")
# A run of whitespace; one byte, then the rest, so that re skips to it in C.
_SPACES = re.compile(rb"([ \t\n\r\x0b\x0c\x1c-\x1f][ \t\n\r\x0b\x0c\x1c-\x1f]*)")
# Boundaries a word may be cut at without splitting a character or a token.
_TOKEN = re.compile(rb"[A-Za-z]{1,4}|[0-9]{1,3}|[\x00-\x7f]|[\xc0-\xff][\x80-\xbf]*")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk: ``text == source[start:end]``; ``*_offset`` are UTF-8 byte offsets.

    The structure-aware modes add where it sits (``section``, a heading path such as
    "Cleaning > Cleaning Steps", and its ``anchor``) and a ``context`` that is put
    before the text when it is embedded and keyword-indexed, never stored in it.
    A chunk of a PDF or a chat export has its ``locations`` (`gligabao.read.documents.describe`).
    """

    index: int
    start: int
    end: int
    start_offset: int
    end_offset: int
    tokens: int
    overlap_tokens: int
    text: str
    section: str | None = None
    anchor: str | None = None
    context: str = ""
    locations: dict[str, object] | None = None


def overlap_budget(chunk_size: int, overlap_percent: int) -> int:
    """The most tokens a chunk may repeat from the one before it."""
    return chunk_size * overlap_percent // 100


def split_text(
    text: str,
    *,
    chunk_size: int = 1024,
    overlap_percent: int = 20,
    tokenizer: Tokenizer | None = None,
) -> list[Chunk]:
    """Cut ``text`` into chunks of at most ``chunk_size`` tokens, overlap included.

    The first chunk starts at 0 and the last ends at ``len(text)``; a text that
    fits in one chunk comes back as one chunk, an empty one as none. Whether a
    text should be chunked at all is for ``gligabao.chunk.cut``.
    """
    splitter = Splitter(
        text, chunk_size=chunk_size, overlap_percent=overlap_percent, tokenizer=tokenizer
    )
    return text_chunks(splitter)


def text_chunks(splitter: Splitter) -> list[Chunk]:
    """`split_text` of a text whose `Splitter` is made (and its tokens counted) already."""
    if not splitter.data:
        return []
    return splitter.chunks(splitter.region(0, len(splitter.data)))


class Splitter:
    """The cut of one text, region by region: text mode cuts one region, the whole
    text; the structure-aware modes cut each section (or class) as a region of its
    own, from blocks they found (a table row, a fenced block, a function).

    Offsets here are UTF-8 byte offsets into ``data``; ``chunks`` turns the spans of
    the chunks, in order, into `Chunk`s with character offsets too.
    """

    def __init__(
        self,
        text: str,
        *,
        chunk_size: int = 1024,
        overlap_percent: int = 20,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        if chunk_size < 1 or not 0 <= overlap_percent <= 100:
            raise ValueError("chunk_size must be positive and overlap_percent within 0..100")
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.tokenizer = tokenizer or ESTIMATOR
        self.counter = span_counter(self.tokenizer, self.data)
        self.chunk_size = chunk_size
        self.budget = overlap_budget(chunk_size, overlap_percent)
        # The tokens, and overlap tokens, of chunk spans already summed from their units
        # (or counted by `fits`), so that `chunks` need not count those bytes again.
        self._tokens: dict[tuple[int, int], tuple[int, int | None]] = {}

    def count(self, start: int, end: int) -> int:
        """Tokens of ``data[start:end]`` (bounds at whitespace or between tokens)."""
        return self.counter.count(start, end)

    def tokens(self) -> int:
        """Tokens of the whole text, as the tokenizer counts it."""
        return self.counter.count(0, len(self.data))

    def fits(self, start: int, end: int) -> bool:
        """Whether ``data[start:end]`` fits in one chunk. If it does, its tokens are kept
        for `chunks`, which then need not count that span again."""
        tokens = self.counter.count(start, end)
        if tokens > self.chunk_size:
            return False
        self._tokens[start, end] = (tokens, None)
        return True

    def region(
        self,
        start: int,
        end: int,
        blocks: list[tuple[int, int]] | None = None,
        *,
        overlap: bool = True,
        atoms: list[tuple[int, int]] | None = None,
    ) -> list[tuple[int, int]]:
        """Spans of the chunks that cover ``data[start:end]``, the first starting at
        ``start`` and the last ending at ``end``.

        The units are ``blocks`` (byte spans inside the region, in order, whitespace
        between them) or, when None, the region's paragraphs; a unit larger than a
        chunk is split as in text mode (sentences, then words, then pieces). Chunks repeat
        the end of the previous one within the region only, unless ``overlap`` is off.

        ``atoms`` (byte spans in order, not overlapping, each starting and ending at a
        token boundary: an image, a table row, a fenced block) are never cut inside: no
        unit and no chunk, overlap included, starts or ends strictly inside one that
        fits in a chunk; one larger than a chunk is cut as any other text.
        """
        budget = self.budget if overlap else 0
        units = _Units(self.data, self.counter, self.chunk_size, max(self.chunk_size - budget, 1))
        if atoms:
            units.keep_whole(atoms)
        if blocks is None:
            units.split(start, end)
        else:
            for b_start, b_end in blocks:
                units.block(b_start, b_end)
        if not units.starts:
            return [(start, end)]
        # Paragraphs, sentences and words leave only whitespace outside the units, which
        # an exact counter counts as nothing: a chunk's tokens are those of its units.
        summed = blocks is None and not atoms and self.counter.exact
        known = self._tokens if summed else None
        return _pack(self.data, units, self.counter, self.chunk_size, budget, start, end, known)

    def chunks(
        self,
        spans: list[tuple[int, int]],
        where: list[tuple[str | None, str | None, str]] | None = None,
    ) -> list[Chunk]:
        """`Chunk`s for byte spans in order; overlap is what a span shares with the last.
        ``where`` gives each its ``section``, ``anchor`` and ``context``."""
        return _chunks(self.text, self.data, spans, self.counter, where, self._tokens)


class _Units:
    """Units as three parallel lists of byte offsets and token counts (cheap to build)."""

    def __init__(self, data: bytes, counter: SpanCounter, chunk_size: int, piece_max: int):
        self.data = data
        self.counter = counter
        self.count = counter.count
        self.chunk_size = chunk_size
        self.piece_max = piece_max
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.tokens: list[int] = []
        # Spans no unit bound may fall strictly inside (`Splitter.region`'s atoms).
        self.atom_starts: list[int] = []
        self.atom_ends: list[int] = []

    def keep_whole(self, atoms: list[tuple[int, int]]) -> None:
        """Keep these spans whole, those that fit in a chunk (the others may be cut)."""
        for start, end in sorted(atoms):
            if self.atom_ends and start < self.atom_ends[-1]:
                continue  # overlaps the one before: keep the first
            if self.count(start, end) <= self.chunk_size:
                self.atom_starts.append(start)
                self.atom_ends.append(end)

    def inside(self, pos: int) -> bool:
        """Whether ``pos`` lies strictly inside an atom."""
        i = bisect_left(self.atom_starts, pos) - 1  # the last atom starting before pos
        return i >= 0 and pos < self.atom_ends[i]

    def _holds_atom(self, start: int, end: int) -> bool:
        i = bisect_left(self.atom_ends, start + 1)  # the first atom ending after start
        return i < len(self.atom_starts) and self.atom_starts[i] < end

    def split(self, start: int, end: int) -> None:
        """The paragraphs of ``data[start:end]`` as units."""
        # re.split with the separator captured alternates paragraph, separator, ...:
        # the offsets follow from the lengths. The separator takes the whitespace that
        # begins the next paragraph too, so only the first needs a left strip. Each list
        # is one C-level pass (map, accumulate) rather than a Python step a paragraph:
        # prose has thousands, and all but a few fit in a chunk as they are.
        whole = start == 0 and end == len(self.data)
        parts = _PARAGRAPH_BREAK.split(self.data if whole else self.data[start:end])
        starts = list(accumulate(map(len, parts), initial=start))[::2]
        paragraphs = parts[::2]
        bodies = list(map(len, map(bytes.rstrip, paragraphs, repeat(_SPACE))))
        head = paragraphs[0]
        starts[0] += len(head) - len(head.lstrip(_SPACE))
        bodies[0] = len(head.strip(_SPACE))
        if 0 in bodies:  # whitespace at the start or the end of the text
            starts = list(compress(starts, bodies))
            bodies = list(compress(bodies, bodies))
        ends = list(map(add, starts, bodies))
        tokens = self.counter.counts(starts, ends)
        if max(tokens, default=0) > self.chunk_size:
            # Only the paragraphs larger than a chunk are split further: those between
            # them go in as runs (list slices), not one Python step each.
            done = 0
            for i in compress(range(len(tokens)), map(self.chunk_size.__lt__, tokens)):
                self.starts += starts[done:i]
                self.ends += ends[done:i]
                self.tokens += tokens[done:i]
                self._sentences(starts[i], ends[i])
                done = i + 1
            starts, ends, tokens = starts[done:], ends[done:], tokens[done:]
        self.starts += starts
        self.ends += ends
        self.tokens += tokens

    def block(self, start: int, end: int) -> None:
        """One unit given by a structure-aware mode; split as in text mode if larger."""
        self._paragraph(start, end, self.data[start:end])

    def _add(self, start: int, end: int, tokens: int) -> None:
        self.starts.append(start)
        self.ends.append(end)
        self.tokens.append(tokens)

    def _paragraph(self, start: int, end: int, part: bytes) -> None:
        body = part.strip(_SPACE)
        if not body:
            return
        start += len(part) - len(part.lstrip(_SPACE))
        end = start + len(body)
        tokens = self.count(start, end)
        if tokens <= self.chunk_size:
            self._add(start, end, tokens)
        else:
            self._sentences(start, end)

    def _sentences(self, start: int, end: int) -> None:
        """The sentences of a paragraph larger than a chunk, as units."""
        pos = start
        for match in _SENTENCE_END.finditer(self.data, start, end):
            if self.atom_starts and self.inside(match.end()):
                continue
            self._sentence(pos, match.end())
            pos = match.end()
        self._sentence(pos, end)

    def _sentence(self, start: int, end: int) -> None:
        start, end = _trim(self.data, start, end)
        if start == end:
            return
        tokens = self.count(start, end)
        if tokens <= self.chunk_size:
            self._add(start, end, tokens)
        else:
            self._words(start, end)

    def _words(self, start: int, end: int) -> None:
        """Pack the words of one oversized sentence into pieces of at most piece_max tokens."""
        if self.counter.exact and not self.atom_starts:
            self._summed_words(start, end)
            return
        piece_start = piece_end = -1
        for w_start, w_end in self._word_spans(start, end):
            if piece_start >= 0 and self.count(piece_start, w_end) <= self.piece_max:
                piece_end = w_end
                continue
            if piece_start >= 0:
                self._add(piece_start, piece_end, self.count(piece_start, piece_end))
                piece_start = -1
            tokens = self.count(w_start, w_end)
            if tokens <= self.piece_max:
                piece_start, piece_end = w_start, w_end
            elif tokens <= self.chunk_size and self._holds_atom(w_start, w_end):
                self._add(w_start, w_end, tokens)  # an atom: whole, if less room for overlap
            else:
                self._cut_word(w_start, w_end)
        if piece_start >= 0:
            self._add(piece_start, piece_end, self.count(piece_start, piece_end))

    def _summed_words(self, start: int, end: int) -> None:
        """`_words` with an exact counter and no atoms: each word is counted once, and
        a piece's tokens are its words' (whitespace counts nothing), so each piece is
        found by bisecting the running totals rather than recounted a word at a time."""
        # Word, spaces, word, ...: offsets from the lengths, with no match object a word.
        parts = _SPACES.split(self.data[start:end])
        bounds = list(accumulate(map(len, parts), initial=start))
        w_starts, w_ends = bounds[0:-1:2], bounds[1::2]
        totals = list(accumulate(self.counter.counts(w_starts, w_ends), initial=0))
        n = len(w_starts)
        i = 0
        while i < n:
            if totals[i + 1] - totals[i] > self.piece_max:
                self._cut_word(w_starts[i], w_ends[i])
                i += 1
                continue
            # The words from i on that fit: up to the last running total within reach.
            j = bisect_right(totals, totals[i] + self.piece_max, i + 1, n + 1) - 1
            self._add(w_starts[i], w_ends[j - 1], totals[j] - totals[i])
            i = j

    def _word_spans(self, start: int, end: int):
        """The words of ``data[start:end]``; words an atom spans are joined into one."""
        if not self.atom_starts:
            for match in _WORD.finditer(self.data, start, end):
                yield match.span()
            return
        w_start = -1
        for match in _WORD.finditer(self.data, start, end):
            if w_start < 0:
                w_start = match.start()
            if not self.inside(match.end()):
                yield w_start, match.end()
                w_start = -1
        if w_start >= 0:
            yield w_start, match.end()

    def _cut_word(self, start: int, end: int) -> None:
        """Cut a word larger than a piece between tokens, each piece as large as fits."""
        if self.counter.exact and not self.atom_starts:
            for p_start, p_end in self.counter.pieces(start, end, self.piece_max):
                self._add(p_start, p_end, self.count(p_start, p_end))
            return
        cuts = [m.end() for m in _TOKEN.finditer(self.data, start, end)]
        if self.atom_starts:
            cuts = [c for c in cuts if not self.inside(c)] or [end]
        first = 0
        while first < len(cuts):
            piece_start = start if first == 0 else cuts[first - 1]
            # The furthest token end whose piece still fits (at least one token).
            last = bisect_right(
                cuts, self.piece_max, first, len(cuts), key=lambda e: self.count(piece_start, e)
            )
            last = max(last, first + 1)
            self._add(piece_start, cuts[last - 1], self.count(piece_start, cuts[last - 1]))
            first = last


def _trim(data: bytes, start: int, end: int) -> tuple[int, int]:
    while start < end and data[start] in _SPACE:
        start += 1
    while end > start and data[end - 1] in _SPACE:
        end -= 1
    return start, end


def _pack(
    data: bytes,
    units: _Units,
    counter: SpanCounter,
    chunk_size: int,
    budget: int,
    region_start: int,
    region_end: int,
    known: dict[tuple[int, int], tuple[int, int | None]] | None = None,
) -> list[tuple[int, int]]:
    """Greedy packing with overlap: (start, end) per chunk, in bytes; with ``known``,
    each chunk's tokens (its overlap's and its units') and its overlap's go there too."""
    starts, ends, tokens = units.starts, units.ends, units.tokens
    n = len(starts)
    totals = list(accumulate(tokens, initial=0))  # totals[i]: the tokens of units before i
    spans: list[tuple[int, int]] = []
    first = prev_first = 0  # the first new unit of this chunk, and of the one before
    while first < n:
        overlap_start = starts[first]
        overlap_tokens: int | None = 0
        if spans and budget:
            room = min(budget, chunk_size - tokens[first])
            overlap_start, overlap_tokens = _overlap_start(
                data, units, counter, prev_first, first, room
            )
            if not counter.additive:
                overlap_start = _exact_overlap(
                    units, counter, prev_first, first, overlap_start, room
                )
            if overlap_start <= spans[-1][0]:  # never start where the previous chunk did
                overlap_start, overlap_tokens = starts[first], 0
        if overlap_tokens is None or known is None:
            # Only with ``known`` is all between the units whitespace, which the sum
            # from `_overlap_start` leaves out; otherwise the overlap is counted whole.
            overlap_tokens = counter.count(overlap_start, starts[first])
        # As many units as fit after the overlap (at least one): the last whose running
        # total is within what is left, found by bisecting the running totals.
        room = chunk_size - overlap_tokens + totals[first]
        last = max(first + 1, bisect_right(totals, room, first + 1, n + 1) - 1)
        start = overlap_start if spans else region_start
        end = region_end if last == n else ends[last - 1]
        if not counter.additive:
            start, end, last = _fit(units, counter, first, last, start, end, chunk_size)
        if known is not None:
            # The overlap is the previous chunk's, of this region: none for its first.
            overlap = (overlap_tokens if start < starts[first] else 0) if spans else None
            known[start, end] = (overlap_tokens + totals[last] - totals[first], overlap)
        spans.append((start, end))
        prev_first, first = first, last
    return spans


def _exact_overlap(
    units: _Units, counter: SpanCounter, prev_first: int, first: int, start: int, room: int
) -> int:
    """With a tokenizer that is not additive (tiktoken counts the whitespace between
    units too), move the overlap's start to later units until counted whole it fits."""
    prev_end = units.ends[first - 1]
    while start < units.starts[first] and counter.count(start, prev_end) > room:
        i = bisect_right(units.starts, start, prev_first, first)
        start = units.starts[i] if i < first else units.starts[first]
    return start


def _overlap_start(
    data: bytes, units: _Units, counter: SpanCounter, prev_first: int, first: int, room: int
) -> tuple[int, int | None]:
    """Where chunk ``first`` starts: its overlap (whole units, else words, else none),
    and the tokens of its units from there, where they are known without a count."""
    starts, tokens = units.starts, units.tokens
    if room <= 0:
        return starts[first], 0
    used = 0
    i = first
    while i > prev_first and used + tokens[i - 1] <= room:
        i -= 1
        used += tokens[i]
    if i < first:
        return starts[i], used
    # Not even the last unit fits: its last words that do.
    unit_start, unit_end = starts[first - 1], units.ends[first - 1]
    if counter.exact and not units.atom_starts:
        found = _last_words(data, counter, unit_start, unit_end, room)
        return (starts[first], 0) if found is None else found
    word_starts = [m.start() for m in _WORD.finditer(data, unit_start, unit_end)]
    if units.atom_starts:
        word_starts = [s for s in word_starts if not units.inside(s)]
    # Counts fall as the start moves right: find the first word start that fits.
    k = bisect_left(word_starts, -room, key=lambda s: -counter.count(s, unit_end))
    return (word_starts[k], None) if k < len(word_starts) else (starts[first], 0)


def _last_words(
    data: bytes, counter: SpanCounter, start: int, end: int, room: int
) -> tuple[int, int] | None:
    """The first word start in ``data[start:end]`` from which at most ``room`` tokens
    are left, with those tokens, or None where even the last word has more.

    With an exact counter a count from any byte falls as the byte moves right, so the
    first byte that leaves at most ``room`` is bisected for, and the answer is the first
    word start from there, without listing the words of a unit that may fill a chunk.
    Counts of adjacent ranges add up, so each step counts only the half it drops: the
    unit is counted about once, not once a step.
    """
    lo, hi, left = start, end, 0  # left: the tokens from hi to end, at most room
    while lo < hi:
        mid = (lo + hi) // 2
        tokens = left + counter.count(mid, hi)
        if tokens <= room:
            hi, left = mid, tokens
        else:
            lo = mid + 1
    pos = hi
    if pos > start and data[pos - 1] not in _SPACE:  # inside a word: the next one
        space = _SPACE_BYTE.search(data, pos, end)
        if space is None:
            return None
        pos = space.end()
    word = _WORD.search(data, pos, end)
    if word is None:
        return None
    return word.start(), left - counter.count(hi, word.start())


def _fit(
    units: _Units,
    counter: SpanCounter,
    first: int,
    last: int,
    start: int,
    end: int,
    chunk_size: int,
) -> tuple[int, int, int]:
    """Shrink a chunk sized by summed counts until counted whole it fits (non-additive)."""
    while counter.count(start, end) > chunk_size:
        if start != units.starts[first]:
            start = units.starts[first]  # drop the overlap first
        elif last - first > 1:
            last -= 1
            end = units.ends[last - 1]
        else:
            break  # one unit alone: counted alone, it fits
    return start, end, last


def _chunks(
    text: str,
    data: bytes,
    spans: list[tuple[int, int]],
    counter: SpanCounter,
    where: list[tuple[str | None, str | None, str]] | None = None,
    known: dict[tuple[int, int], tuple[int, int | None]] | None = None,
) -> list[Chunk]:
    """Chunks with character offsets, byte offsets, tokens (from ``known`` where a span
    is there) and overlap tokens."""
    char_at = _char_offsets(text, data, {b for span in spans for b in span})
    chunks = []
    prev_end = 0
    known = known or {}
    for i, (start, end) in enumerate(spans):
        tokens, overlap = known.get((start, end)) or (None, None)
        if overlap is None:  # not known, or the first chunk of a region
            overlap = counter.count(start, prev_end) if start < prev_end else 0
        c_start, c_end = char_at[start], char_at[end]
        chunks.append(
            Chunk(
                i,
                c_start,
                c_end,
                start,
                end,
                counter.count(start, end) if tokens is None else tokens,
                overlap,
                text[c_start:c_end],
                *(where[i] if where else ()),
            )
        )
        prev_end = end
    return chunks


def _char_offsets(text: str, data: bytes, bounds: set[int]) -> dict[int, int]:
    if len(data) == len(text):  # ASCII: bytes and characters coincide
        return {b: b for b in bounds}
    # Decode each stretch between consecutive bounds once: O(len(data)) in all.
    char_at: dict[int, int] = {}
    pos = chars = 0
    for bound in sorted(bounds):
        chars += len(data[pos:bound].decode("utf-8", "surrogatepass"))
        char_at[bound] = chars
        pos = bound
    return char_at
