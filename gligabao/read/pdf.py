"""PDF: the text layer of each page, through PDFium (pypdfium2, imported only when a PDF is read).

The pages' texts are joined by `PAGE_BREAK` (a blank line with a form feed: text
mode cuts there as between paragraphs) and each page's span is its `Page` location,
so a chunk cites the pages its bytes overlap. PDFium was chosen by measurement on
two real manuals (bench/formats_bench.py): the same words as pypdf, hyphenated line
ends marked rather than kept as "manip- ulation", and about 20 times faster.

A damaged file, an encrypted one and one without a text layer (scanned pages,
images only: gb does no OCR) are refused, one line each saying which.
"""

from __future__ import annotations

import os
import re
import threading

from gligabao.errors import InputError
from gligabao.read.documents import FormattedDocument, Page, Span, check_size, clean_text
from gligabao.version import DISTRIBUTION

PAGE_BREAK = "\n\f\n"
# pypdfium2 is a dependency of every install, so this is said only where it is truly missing
# (removed, or a wheel that did not install on this platform).
_INSTALL = (
    f"{DISTRIBUTION} depends on it but it is missing here; install it with: pip install pypdfium2"
)
# PDFium's error codes when a document does not load (fpdfview.h).
_ERR_PASSWORD = 4
_ERR_SECURITY = 5
# PDFium marks a word hyphenated at a line end with U+FFFE (or U+0002) and the break.
_HYPHEN_BREAK = re.compile("[\ufffe\x02]\n?")
# PDFium is not thread-safe: one document is read at a time in a process.
_PDFIUM = threading.Lock()


def read_pdf(name: str, data: bytes) -> FormattedDocument:
    """The text of the PDF ``data`` with each page's span; InputError when it has none."""
    pdfium = _pdfium(name)
    with _PDFIUM:
        document = _open(pdfium, name, data)
        try:
            pages = [_page_text(document, i) for i in range(len(document))]
            title = _title(document)
        finally:
            document.close()
    if not pages:
        raise InputError(name, "is a PDF with no pages: nothing to read")
    if not any(pages):
        raise InputError(
            name,
            f"is a PDF without a text layer (scanned or images only, {_pages(len(pages))}): "
            "gb does no OCR; run OCR first (e.g. ocrmypdf) and give the result",
        )
    text, spans = _join(pages)
    check_size(name, text)
    return FormattedDocument(
        name=title or os.path.basename(name), kind="pdf", text=text, spans=spans, mode="text"
    )


def _pages(n: int) -> str:
    return "1 page" if n == 1 else f"{n} pages"


def _pdfium(name: str):
    try:
        import pypdfium2
    except ImportError:
        raise InputError(name, f"is a PDF, and reading PDFs needs pypdfium2; {_INSTALL}") from None
    return pypdfium2


def _open(pdfium, name: str, data: bytes):
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == _ERR_PASSWORD:
            raise InputError(
                name,
                "is an encrypted PDF (it needs a password to open): not read; "
                "save a copy without the password and give that",
            ) from None
        if code == _ERR_SECURITY:
            raise InputError(
                name, "is a PDF protected by a security handler PDFium does not support: not read"
            ) from None
        raise InputError(
            name, "is not a readable PDF (damaged or truncated); export or download it again"
        ) from None


def _page_text(document, index: int) -> str:
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            raw = textpage.get_text_range()
        finally:
            textpage.close()
    finally:
        page.close()
    text = _HYPHEN_BREAK.sub("", raw.replace("\r\n", "\n"))
    # Form feeds mark page breaks in the indexed text: none from a page itself.
    return clean_text(text).replace("\f", "\n").strip()


def _title(document) -> str:
    try:
        title = document.get_metadata_value("Title")
    except Exception:  # a damaged info dictionary: the file name will do
        return ""
    return " ".join(clean_text(title or "").split())


def _join(pages: list[str]) -> tuple[str, tuple[Span, ...]]:
    """The pages joined by PAGE_BREAK, and the byte span of each page with text."""
    spans: list[Span] = []
    offset = 0
    sep = len(PAGE_BREAK.encode())
    kept: list[str] = []
    for number, page in enumerate(pages, 1):
        if not page:
            continue
        if kept:
            offset += sep
        size = len(page.encode("utf-8"))
        spans.append(Span(offset, offset + size, Page(number)))
        kept.append(page)
        offset += size
    return PAGE_BREAK.join(kept), tuple(spans)
