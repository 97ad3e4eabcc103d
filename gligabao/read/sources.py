"""One input, read and checked: what the user named, as the documents gb stores.

A plain text is one document; a PDF, an HTML page or a chat export is read by its format
(`gligabao.read.formats`), a chat export giving one document a conversation.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from gligabao.errors import InputError
from gligabao.read.documents import FormattedDocument, describe, line_map
from gligabao.read.files import (
    FOLDER,
    MAX_BYTES,
    STDIN,
    decode,
    read_file_bytes,
    read_stdin,
    shown_name,
)
from gligabao.read.formats import MAX_FILE_BYTES, kind_of, read_documents


@dataclass(frozen=True, slots=True)
class Source:
    """One input, read and checked: its name as given, bytes and text.

    A PDF, an HTML page or a conversation of a chat export also has its ``document``
    (`gligabao.read.documents`): ``text`` is then its indexed text, ``data`` the file's bytes."""

    name: str
    data: bytes
    text: str
    document: FormattedDocument | None = None
    # The name standard input is stored and shown under (gb remember - --name): two texts
    # piped in are not both `-`.
    stored_as: str | None = None

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
        name = self.stored_as or self.name
        return f"{name} #{doc.name}" if doc is not None and doc.kind == "chat" else name

    def stored_source(self) -> str:
        """The source stored with the document, versions being matched by it: the file's
        absolute path, ``#`` and the path id for a conversation; for stdin the name it was
        given, else ``-``."""
        if self.path is None:
            return self.stored_as or STDIN
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
        text is (pages, messages, lines of the file); None for plain text."""
        if self.document is None:
            return None
        doc = self.document
        found = [span.location for span in doc.spans]
        where: dict[str, Any] = {"kind": doc.kind, "name": doc.name, **describe(found)}
        if doc.kind == "pdf" and found:
            where["page_count"] = len(found)
        if "lines" in where:  # a web page: the file's lines of each line of its text
            where["line_map"] = line_map(doc.spans, 0, len(doc.text.encode("utf-8")))
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
    name: str,
    stdin: BinaryIO | None = None,
    *,
    chat: bool = False,
    all_branches: bool = False,
    folder: str = FOLDER,
) -> list[Source]:
    """The documents of one input: its text, or what a format reader made of a PDF,
    an HTML page or a chat export (each conversation one; with ``all_branches`` each
    other branch too). ``chat`` (``--mode chat``) refuses a file that is not a chat
    export. InputError, one line, for one that is refused (a folder: ``folder`` says
    what to do instead)."""
    shown = shown_name(name)
    data = read_stdin(stdin) if name == STDIN else read_file_bytes(name, folder=folder)
    kind = kind_of(None if name == STDIN else name, data)
    if chat and kind != "chat":
        kind = "chat"  # read_chat says why the file is not an export
    if kind is None:
        return [Source(shown, data, decode(shown, data))]
    if len(data) > MAX_BYTES and name != STDIN:  # a reader takes more than a text
        data = read_file_bytes(name, MAX_FILE_BYTES)
        if len(data) > MAX_FILE_BYTES:
            raise InputError(shown, f"is larger than {MAX_FILE_BYTES >> 20} MiB; split it")
    documents = read_documents(shown, data, kind=kind, all_branches=all_branches)
    return [Source(shown, data, doc.text, doc) for doc in documents]
