"""Files that are not plain text recognised and read: a PDF, a saved web page, a chat
export, each by its reader (imported only for such a file: they bring libraries)."""

from __future__ import annotations

import os
import re

from gligabao.errors import InputError
from gligabao.read.documents import FormattedDocument
from gligabao.read.files import open_file, shown_name

__all__ = ["KINDS", "MAX_FILE_BYTES", "kind_of", "read_documents", "read_file"]

# A PDF or a chat export is read whole; what it yields is held to MAX_BYTES a document.
MAX_FILE_BYTES = 64 << 20
KINDS = ("pdf", "html", "chat")

_PDF_SUFFIXES = frozenset({".pdf"})
_HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
_CHAT_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson"})
_HTML_START = re.compile(
    rb"\A(?:\xef\xbb\xbf)?\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)\b", re.I | re.S
)


def kind_of(path: str | None, data: bytes) -> str | None:
    """``pdf``, ``html`` or ``chat`` for a file a reader here takes, else None (plain
    text, as before). A ``.pdf`` is a PDF even when damaged, so that it is refused as
    one; a PDF or an HTML page is also known by its first bytes, a chat export only
    by a JSON extension and the shape of its first record."""
    suffix = os.path.splitext(path or "")[1].lower()
    if suffix in _PDF_SUFFIXES or data[:1024].lstrip().startswith(b"%PDF-"):
        return "pdf"
    if suffix in _HTML_SUFFIXES or _HTML_START.match(data[:4096]):
        return "html"
    if suffix in _CHAT_SUFFIXES:
        from gligabao.read.chat import export_format

        return "chat" if export_format(data) else None
    return None


def read_documents(
    name: str, data: bytes, *, kind: str | None = None, all_branches: bool = False
) -> list[FormattedDocument]:
    """The documents of the file ``name`` (its bytes ``data``), read as ``kind``
    (default: `kind_of`); InputError, one line, for one that cannot be read."""
    kind = kind or kind_of(name, data)
    if kind == "pdf":
        from gligabao.read.pdf import read_pdf

        return [read_pdf(name, data)]
    if kind == "html":
        from gligabao.read.html import read_html

        return [read_html(name, data)]
    if kind == "chat":
        from gligabao.read.chat import read_chat

        return read_chat(name, data, all_branches=all_branches)
    raise InputError(shown_name(name), "is not a PDF, an HTML page or a chat export")


def read_file(name: str, *, all_branches: bool = False) -> list[FormattedDocument]:
    """`read_documents` of the file at ``name``, read whole (at most MAX_FILE_BYTES)."""
    with open_file(name) as handle:
        try:
            data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise InputError(shown_name(name), f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(shown_name(name), f"is larger than {MAX_FILE_BYTES >> 20} MiB; split it")
    return read_documents(shown_name(name), data, all_branches=all_branches)
