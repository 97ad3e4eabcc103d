"""Discovery: what the user named, turned into the list of inputs to remember.

Nothing is read in full here; `gligabao.read.sources.read_source` reads and checks each
input later. The rules:

- PATHs and `-` (standard input, at most once) are kept in the order given, each
  resolved path once. A name given explicitly (as an argument or in a
  ``--files-from`` list) is never filtered: a binary, hidden or missing file stays
  an input, so that reading it gives `files.py`'s clear refusal. The one exception
  is an empty or whitespace-only file in a ``--files-from`` list, skipped as in a
  walk: every Python package has an empty ``__init__.py``, and a cron job that lists
  a package must not fail on it every night. Named as an argument it is refused.
- A directory is walked only with ``recursive`` (``-r``), depth first, each
  directory's entries sorted by name. While walking, hidden entries (a name that
  starts with ``.``) are skipped with one notice each (a hidden directory is not
  entered), and so are symbolic links to directories (never followed, so there are
  no loops), things that are not regular files (FIFOs, sockets, devices; never
  opened), files that match no ``--glob``, binary files (a NUL byte in their first
  8 KiB, the only part read for them) and empty or whitespace-only files (read on
  past 8 KiB only while all is whitespace). Symbolic links to files are followed. Without
  ``-r`` a directory stays an input, and reading it says it is a directory.
- ``--glob PATTERN`` (fnmatch, repeatable) is matched against a walked file's path
  relative to the walked directory and against its name; ``**/`` also matches no
  directory at all, so ``*.md`` and ``**/*.md`` both take ``a.md`` and ``sub/b.md``.
- ``--files-from FILE`` (or ``-``, standard input) lists one path a line; blank
  lines are ignored and a trailing ``\\r`` is dropped. With ``null_sep`` (``-0``) the
  paths are NUL-separated, exactly as ``find -print0`` writes them. A line ``-``
  there names the file ``./-``, not standard input. The list may be a FIFO (as
  ``<(find ...)`` gives), never a device, and at most 64 MiB.

Each skip has a short ``kind`` (``binary``, ``empty``, ...) so that a run can say
what it skipped in one line, `skip_summary`.

Path names that are not valid UTF-8 are kept as `os.fsdecode` gives them
(surrogate escapes), so they round-trip to the same file.
"""

from __future__ import annotations

import codecs
import fnmatch
import itertools
import os
import stat
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from gligabao.errors import InputError, UsageError
from gligabao.read.files import (
    MAX_BYTES,
    MAX_LIST_BYTES,
    STDIN,
    list_too_large,
    open_file,
    shown_name,
)

__all__ = ["SNIFF_BYTES", "Discovery", "Skipped", "discover", "skip_summary"]

SNIFF_BYTES = 8192  # a NUL byte within this many leading bytes marks a walked file binary

HIDDEN = "hidden"
BINARY = "binary (NUL byte in the first 8 KiB)"
NO_GLOB = "does not match --glob"
NOT_REGULAR = "not a regular file"
DIR_LINK = "symbolic link to a directory (not followed)"
BROKEN_LINK = "broken symbolic link"
EMPTY = "empty"
WHITESPACE = "holds only whitespace"
UNREADABLE_DIR = "directory cannot be read"

# The kind of each reason, as the one-line summary counts it ("skipped 3 empty"), in
# the summary's order; each reads after any number.
KINDS = {
    HIDDEN: "hidden",
    BINARY: "binary",
    NO_GLOB: "not matching --glob",
    EMPTY: "empty",
    WHITESPACE: "empty",
    NOT_REGULAR: "not regular files",
    DIR_LINK: "linked to a directory",
    BROKEN_LINK: "with a broken link",
    UNREADABLE_DIR: "unreadable directories",
}

_READ_BLOCK = 1 << 16
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the check must not block us
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file or directory found while walking and left out, and why."""

    path: str
    reason: str

    @property
    def kind(self) -> str:
        """What the one-line summary counts it as: its reason without the detail."""
        head = self.reason.partition(":")[0]
        return KINDS.get(head, head)


@dataclass
class Discovery:
    """The inputs to read, in order (paths as the user would recognise them, or
    ``-``), and what was skipped on the way, with the reason for each."""

    inputs: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def discover(
    names: Sequence[str],
    *,
    recursive: bool = False,
    globs: Sequence[str] = (),
    files_from: str | None = None,
    null_sep: bool = False,
    stdin: BinaryIO | None = None,
) -> Discovery:
    """The inputs that ``names`` and the ``files_from`` list stand for; see the module doc.

    Raises UsageError when ``-`` is named twice, or both named and given as
    ``files_from``; InputError when the ``files_from`` list cannot be read.
    """
    if sum(1 for name in names if name == STDIN) > 1:
        raise UsageError("`-` (standard input) can be named only once")
    if files_from == STDIN and STDIN in names:
        raise UsageError(
            "`-` cannot be both an input and `--files-from -`: standard input is read only once"
        )
    walker = _Walker(recursive, _glob_patterns(globs))
    for name in names:
        walker.add(name)
    if files_from is not None:
        for name in _listed(files_from, null_sep, stdin):
            walker.add(os.path.join(os.curdir, name) if name == STDIN else name, listed=True)
    return walker.found


_Entry = tuple[os.DirEntry[str], str, str, str]  # entry; shown, relative, resolved path


class _Walker:
    """Collects inputs and notices, each resolved path once."""

    def __init__(self, recursive: bool, patterns: tuple[str, ...]) -> None:
        self.recursive = recursive
        self.patterns = patterns
        self.found = Discovery()
        self.seen: set[str] = set()  # resolved paths of the inputs, and "-"
        self.walked: set[str] = set()  # resolved directories already listed

    def add(self, name: str, *, listed: bool = False) -> None:
        """One name given explicitly: kept as it is, or walked if a directory and -r;
        one ``listed`` in --files-from is skipped if empty (see the module doc)."""
        if name == STDIN:
            self._keep(name, STDIN)
        elif self.recursive and os.path.isdir(name):
            self._walk(name)
        elif listed and (reason := _sniff(name, binary=False)) is not None:
            self._skip(name, reason)
        else:
            self._keep(name, os.path.realpath(name))

    def _keep(self, shown: str, key: str) -> None:
        if key not in self.seen:
            self.seen.add(key)
            self.found.inputs.append(shown)

    def _skip(self, shown: str, reason: str) -> None:
        self.found.skipped.append(Skipped(shown, reason))

    def _walk(self, top: str) -> None:
        """Walk ``top`` depth first, each directory's entries sorted by name."""
        shown_top = "" if os.path.normpath(top) == os.curdir else top
        stack = [self._list(top, shown_top, "", os.path.realpath(top))]
        while stack:
            item = next(stack[-1], None)
            if item is None:
                stack.pop()
                continue
            entry, shown, rel, real = item
            if entry.name.startswith("."):
                self._skip(shown, HIDDEN)
            elif entry.is_symlink():
                self._linked(entry, shown, rel)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(self._list(entry.path, shown, rel, real))
            elif entry.is_file(follow_symlinks=False):
                self._file(entry.path, shown, rel, real)
            else:
                self._skip(shown, NOT_REGULAR)

    def _list(self, path: str, shown: str, rel: str, real: str) -> Iterator[_Entry]:
        """The entries of one directory, sorted by name, with their shown, relative and
        resolved paths; nothing for a directory already listed or one that cannot be."""
        if real in self.walked:
            return iter(())
        self.walked.add(real)
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda entry: entry.name)
        except OSError as exc:
            reason = "permission denied" if isinstance(exc, PermissionError) else exc.strerror
            self._skip(shown or os.curdir, f"{UNREADABLE_DIR}: {reason or exc}")
            return iter(())
        return (
            (
                entry,
                os.path.join(shown, entry.name) if shown else entry.name,
                f"{rel}/{entry.name}" if rel else entry.name,
                os.path.join(real, entry.name),
            )
            for entry in entries
        )

    def _linked(self, entry: os.DirEntry[str], shown: str, rel: str) -> None:
        """A symbolic link met while walking: followed to a file, never to a directory."""
        try:
            mode = entry.stat().st_mode
        except OSError:  # dangling, or a loop of links
            self._skip(shown, BROKEN_LINK)
            return
        if stat.S_ISDIR(mode):
            self._skip(shown, DIR_LINK)
        elif stat.S_ISREG(mode):
            self._file(entry.path, shown, rel, os.path.realpath(entry.path))
        else:
            self._skip(shown, NOT_REGULAR)

    def _file(self, path: str, shown: str, rel: str, key: str) -> None:
        """A file found by walking: kept unless it matches no glob or looks binary."""
        if key in self.seen:
            return
        if self.patterns and not _matches(rel, self.patterns):
            self._skip(shown, NO_GLOB)
            return
        reason = _sniff(path)
        if reason is None:
            self._keep(shown, key)
        else:
            self._skip(shown, reason)


def _sniff(path: str, *, binary: bool = True) -> str | None:
    """Why a file is skipped after a look at its first 8 KiB (binary, unless not
    ``binary``; not regular) or its whitespace (empty), or None to keep it.

    A file that cannot be opened or read is kept: reading it later says why it was
    refused. So is a listed one that is not a regular file (``binary`` False).
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return NOT_REGULAR if binary else None
        head = os.read(fd, SNIFF_BYTES)
        if binary and b"\0" in head:
            return BINARY
        return _blank(fd, head)
    except OSError:
        return None
    finally:
        os.close(fd)


def _blank(fd: int, head: bytes) -> str | None:
    """EMPTY or WHITESPACE when the file, ``head`` first, is nothing else, as reading it
    would find (`inputs.decode`); None as soon as a block holds anything else, or for a
    file that reading refuses for another reason (too large, not UTF-8)."""
    if not head:
        return EMPTY
    decoder = codecs.getincrementaldecoder("utf-8")()
    block, total = head, 0
    try:
        while block:
            total += len(block)
            if total > MAX_BYTES or decoder.decode(block).strip():
                return None
            block = os.read(fd, _READ_BLOCK)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return None
    return WHITESPACE


def skip_summary(skipped: Sequence[Skipped]) -> str | None:
    """One line for what a run skipped, counted by kind: ``skipped 32 binary, 135 not
    matching --glob, 3 empty``; None when nothing was."""
    counts = Counter(s.kind for s in skipped)
    if not counts:
        return None
    order = dict.fromkeys([*KINDS.values(), *counts])  # a kind not listed, last
    parts = (f"{counts[kind]} {kind}" for kind in order if counts[kind])
    return f"skipped {', '.join(parts)}"


def _glob_patterns(globs: Sequence[str]) -> tuple[str, ...]:
    """The fnmatch patterns for ``globs``: each, and each with some ``**/`` matching nothing."""
    patterns: dict[str, None] = {}
    for glob in globs:
        parts = glob.split("**/")
        for keep in itertools.product(("**/", ""), repeat=min(len(parts) - 1, 8)):
            pattern = parts[0] + "".join(k + p for k, p in zip(keep, parts[1:], strict=False))
            patterns[pattern] = None
    return tuple(patterns)


def _matches(rel: str, patterns: tuple[str, ...]) -> bool:
    name = rel.rpartition("/")[2]
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) for p in patterns)


def _listed(files_from: str, null_sep: bool, stdin: BinaryIO | None) -> Iterator[str]:
    """The paths in a --files-from list, read a block at a time, decoded as file names;
    a list over MAX_LIST_BYTES (`--files-from /dev/zero` would never end) is refused."""
    if files_from == STDIN:
        stream = stdin if stdin is not None else sys.stdin.buffer
        yield from _split(stream, null_sep, files_from)
        return
    if os.path.isdir(files_from):
        raise InputError(
            shown_name(files_from), "is a directory; --files-from takes a file of paths"
        )
    # A FIFO is read (`--files-from <(find ...)`); a device or a socket is refused.
    with open_file(files_from, pipes=True, given=GIVEN) as stream:
        yield from _split(stream, null_sep, files_from)


GIVEN = " (given to --files-from)"


def _split(stream: BinaryIO, null_sep: bool, files_from: str) -> Iterator[str]:
    sep = b"\0" if null_sep else b"\n"
    rest = bytearray()  # an entry not ended yet: grown in place, never copied whole
    first = True
    total = 0
    while True:
        block = _block(stream, files_from)
        if not block:
            break
        total += len(block)
        if total > MAX_LIST_BYTES:
            raise list_too_large(files_from, "list of paths")
        rest += block
        if sep not in block:
            continue
        *items, tail = bytes(rest).split(sep)
        rest = bytearray(tail)
        # NUL-separated, empty entries are nothing: skipped at C speed, not one by one.
        for item in filter(None, items) if null_sep else items:
            name = _name(item, null_sep, first)
            first = False
            if name is not None:
                yield name
    name = _name(bytes(rest), null_sep, first)
    if name is not None:
        yield name


def _block(stream: BinaryIO, files_from: str) -> bytes:
    try:
        return stream.read(_READ_BLOCK)
    except OSError as exc:
        raise InputError(
            shown_name(files_from), f"cannot be read{GIVEN}: {exc.strerror or exc}"
        ) from None


def _name(item: bytes, null_sep: bool, first: bool) -> str | None:
    """One entry of the list as a path name; None for a blank one."""
    if not null_sep:
        if first and item.startswith(b"\xef\xbb\xbf"):  # a UTF-8 BOM from a Windows editor
            item = item[3:]
        if item.endswith(b"\r"):
            item = item[:-1]
        if not item.strip():
            return None
    elif not item:
        return None
    return os.fsdecode(item)
