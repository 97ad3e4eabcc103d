"""Reading what a command is given: a path, or `-` for standard input.

Bytes are read exactly as they are (no newline translation), so the UTF-8 byte
offsets of a chunk slice the file itself. A text is refused, with one line that
says why, when it is over 1 MiB, empty or only whitespace, not valid UTF-8, or
holds a NUL byte; and so is a path that is missing, unreadable, a folder, or not a
regular file at all (a FIFO, a device, a socket: opening or reading one could wait
forever or never end). Standard input is read whatever it is, a pipe included, and
every read is bounded: a document at 1 MiB, a list (--files-from, a query file) at
64 MiB.

File names that are not valid UTF-8 reach gb as `os.fsdecode` gives them (lone
surrogates, which SQLite and a UTF-8 terminal refuse); a Source carries its name as
`shown_name` writes it, so such a file is stored and shown with its odd bytes escaped.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from gligabao.errors import InputError

if TYPE_CHECKING:  # the readers import their libraries: loaded only for such a file
    from gligabao.formats import FormattedDocument

MAX_BYTES = 1 << 20  # 1 MiB, accepted; one byte more is refused
MAX_LIST_BYTES = 64 << 20  # a list of paths or of queries: a million lines of 64 bytes
STDIN = "-"

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO with no writer must not wait
_OPEN_FLAGS = os.O_RDONLY | _NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


@dataclass(frozen=True, slots=True)
class Source:
    """One input, read and checked: its name as given, bytes and text.

    A PDF, an HTML page or a conversation of a chat export also has its ``document``
    (`gligabao.formats`): ``text`` is then its indexed text, ``data`` the file's bytes."""

    name: str
    data: bytes
    text: str
    document: FormattedDocument | None = None

    @property
    def sha256(self) -> str:
        """The file's, for unchanged-skipping; a chat export's documents (one a path of a
        conversation) each add their path, so that one is not taken for another."""
        digest = hashlib.sha256(self.data)
        if self.document is not None and self.document.path_id is not None:
            digest.update(b"\0" + self.document.path_id.encode("utf-8", "backslashreplace"))
        return digest.hexdigest()

    @property
    def path(self) -> Path | None:
        return None if self.name == STDIN else Path(self.name)

    @property
    def label(self) -> str:
        """How a run names it: the name, and a conversation's title after ``#``."""
        doc = self.document
        return f"{self.name} #{doc.name}" if doc is not None and doc.kind == "chat" else self.name

    def stored_source(self) -> str:
        """The source stored with the document, versions being matched by it: the file's
        absolute path, ``#`` and the path id for a conversation; ``-`` for stdin."""
        if self.path is None:
            return STDIN
        where = shown_name(os.path.abspath(self.name))
        if self.document is not None and self.document.path_id is not None:
            return f"{where}#{self.document.path_id}"
        return where

    @property
    def session(self) -> str | None:
        """A conversation's id: its document's session (`--session` finds it)."""
        return self.document.conversation_id if self.document is not None else None

    def locations(self) -> dict[str, Any] | None:
        """What the document row keeps of its format: kind, name, and where its whole
        text is (pages, messages); None for plain text."""
        if self.document is None:
            return None
        from gligabao.formats import describe

        doc = self.document
        found = [span.location for span in doc.spans]
        where: dict[str, Any] = {"kind": doc.kind, "name": doc.name, **describe(found)}
        if doc.kind == "pdf" and found:
            where["page_count"] = len(found)
        if doc.fork is not None:
            where["fork"] = {
                "path_id": doc.fork.path_id,
                "after_message_id": doc.fork.after_message_id,
                "after_turn": doc.fork.after_turn,
            }
        return where


def read_source(name: str, stdin: BinaryIO | None = None, *, chat: bool = False) -> Source:
    """Read and check one input; raises InputError with the reason it was refused. A
    chat export must hold one conversation here (`read_sources` reads them all)."""
    sources = read_sources(name, stdin, chat=chat)
    if len(sources) > 1:
        raise InputError(
            sources[0].name,
            f"holds {len(sources)} conversations; gb remember and gb chunk-preview read "
            "each of them",
        )
    return sources[0]


def read_sources(
    name: str, stdin: BinaryIO | None = None, *, chat: bool = False, all_branches: bool = False
) -> list[Source]:
    """The documents of one input: its text, or what a format reader made of a PDF,
    an HTML page or a chat export (each conversation one; with ``all_branches`` each
    other branch too). ``chat`` (``--mode chat``) refuses a file that is not a chat
    export. InputError, one line, for one that is refused."""
    shown = shown_name(name)
    data = _read_stdin(stdin) if name == STDIN else _read_file(name)
    from gligabao.formats import MAX_FILE_BYTES, kind_of, read_documents

    kind = kind_of(None if name == STDIN else name, data)
    if chat and kind != "chat":
        kind = "chat"  # read_chat says why the file is not an export
    if kind is None:
        return [Source(shown, data, decode(shown, data))]
    if len(data) > MAX_BYTES and name != STDIN:  # a reader takes more than a text
        data = _read_file(name, MAX_FILE_BYTES)
        if len(data) > MAX_FILE_BYTES:
            raise InputError(shown, f"is larger than {MAX_FILE_BYTES >> 20} MiB; split it")
    documents = read_documents(shown, data, kind=kind, all_branches=all_branches)
    return [Source(shown, data, doc.text, doc) for doc in documents]


def shown_name(name: str) -> str:
    """``name`` as gb stores and prints it: the bytes of a file name that are not UTF-8
    (lone surrogates in ``name``, from os.fsdecode) written as Python writes bytes,
    ``bad\\xff.txt``; any other name as it is."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        pass
    try:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no file name decodes to
        return name.encode("utf-8", "backslashreplace").decode("ascii")


def open_file(name: str, *, pipes: bool = False, given: str = "") -> BinaryIO:
    """The file ``name``, open to read; InputError (its name, ``given`` and why) for a
    path that is missing, unreadable, a folder, or not a regular file. With ``pipes``
    a FIFO is read too (a list from `<(find ...)`): without a writer it reads as empty.
    The open never blocks, so a FIFO or a device is never waited on."""
    shown = shown_name(name)
    try:
        fd = os.open(name, _OPEN_FLAGS)
    except FileNotFoundError:
        raise InputError(shown, f"no such file{given}") from None
    except PermissionError:
        raise InputError(shown, f"cannot be read{given}: permission denied") from None
    except IsADirectoryError:
        raise InputError(shown, "is a directory; give the files in it") from None
    except OSError as exc:
        raise InputError(shown, f"cannot be read{given}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(shown, "is a directory; give the files in it")
        if not stat.S_ISREG(mode) and not (pipes and stat.S_ISFIFO(mode)):
            instead = "a regular file or a pipe" if pipes else "its content on standard input (-)"
            raise InputError(
                shown,
                f"is {_kind(mode)}, not a regular file{given}: not read, as that could wait "
                f"forever or never end; give {instead} instead",
            )
        if _NONBLOCK:  # open now: a FIFO's reads wait for its writer's data
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def read_list(name: str, what: str) -> bytes:
    """The whole of a list file (``what`` names it in errors: "query file"), at most
    MAX_LIST_BYTES; a FIFO is read, a device or a larger file refused."""
    with open_file(name, pipes=True, given=f" (a {what})") as handle:
        try:
            data = handle.read(MAX_LIST_BYTES + 1)
        except OSError as exc:
            raise InputError(shown_name(name), f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_LIST_BYTES:
        raise list_too_large(name, what)
    return data


def list_too_large(name: str, what: str) -> InputError:
    return InputError(
        shown_name(name),
        f"is larger than {MAX_LIST_BYTES >> 20} MiB, too large for a {what}; split it",
    )


def decode(name: str, data: bytes) -> str:
    """The text of ``data``, or an InputError saying what is wrong with it."""
    if len(data) > MAX_BYTES:
        raise InputError(name, f"is larger than 1 MiB ({MAX_BYTES:,} bytes); split it first")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(name, f"contains a NUL byte at offset {nul}: binary files are not read")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            name,
            f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "convert it first, e.g. iconv -t UTF-8",
        ) from None
    if not text.strip():
        raise InputError(name, "is empty" if not data else "holds only whitespace")
    return text


def _read_stdin(stdin: BinaryIO | None) -> bytes:
    stream = stdin if stdin is not None else sys.stdin.buffer
    return stream.read(MAX_BYTES + 1)


def _read_file(name: str, most: int = MAX_BYTES) -> bytes:
    with open_file(name) as handle:
        try:
            return handle.read(most + 1)
        except OSError as exc:  # EIO, or a file that is not what its mode said
            raise InputError(shown_name(name), f"cannot be read: {exc.strerror or exc}") from None
