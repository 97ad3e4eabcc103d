"""PDF documents (gligabao.read.pdf): real manuals cut and cited by page, and the
three PDFs that are refused, one line each: damaged, encrypted, scanned."""

from __future__ import annotations

import importlib.metadata
import io
import os
import re
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pypdf
import pypdfium2 as pdfium
import pytest

from gligabao.chunk import ChunkSettings
from gligabao.errors import ExitCode, InputError
from gligabao.read.documents import Page, describe
from gligabao.read.formats import kind_of, read_documents, read_file
from gligabao.read.pdf import PAGE_BREAK
from gligabao.remember.cut import cut_document
from gligabao.version import DISTRIBUTION

# Two real PDFs nobody here wrote, as Debian ships them (pdfTeX and DocBook output).
REAL_PDFS = [
    "/usr/share/doc/libtasn1-doc/libtasn1.pdf",
    "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
]
_WORDS = re.compile(r"[A-Za-z]{3,}")


def _flat(text: str) -> str:
    """Text with PDFium's hyphenation marks out and whitespace runs as one space."""
    return " ".join(text.replace("\ufffe", "").replace("\x02", "").split())


def _pdfium_pages(path: str) -> list[str]:
    """Each page's text, extracted again, here, straight from PDFium."""
    document = pdfium.PdfDocument(path)
    try:
        return [_flat(document[i].get_textpage().get_text_range()) for i in range(len(document))]
    finally:
        document.close()


def _pypdf_words(path: str) -> list[set[str]]:
    """Each page's words as another library, pypdf, reads them."""
    return [set(_WORDS.findall(page.extract_text() or "")) for page in pypdf.PdfReader(path).pages]


@pytest.mark.parametrize("path", REAL_PDFS, ids=os.path.basename)
def test_every_chunk_of_a_real_pdf_is_on_the_pages_it_cites(path: str) -> None:
    if not Path(path).exists():
        pytest.skip(
            f"{path} is not installed here (Debian packages libtasn1-doc, shared-mime-info)"
        )
    [doc] = read_file(path)
    assert doc.kind == "pdf" and doc.mode == "text"
    pages = _pdfium_pages(path)
    other = _pypdf_words(path)
    result, where = cut_document(doc, ChunkSettings(chunk_size=200, overlap_percent=20))
    assert len(result.chunks) > 20
    cited: set[int] = set()
    for chunk, found in zip(result.chunks, where, strict=True):
        first, last = describe(found)["pages"]
        cited.update(range(first, last + 1))
        # The chunk's text is on its pages, extracted again: the pages read together.
        on_pages = " ".join(pages[first - 1 : last])
        assert _flat(chunk.text) in on_pages, f"chunk {chunk.index} is not on p.{first}-{last}"
        # And another library finds its words there too (a cross-check of the pages).
        words = set(_WORDS.findall(chunk.text))
        there = set().union(*other[first - 1 : last])
        assert len(words & there) >= 0.9 * len(words), f"chunk {chunk.index}: p.{first}-{last}"
    # Every page with text is cited by some chunk; nothing is lost between pages.
    assert cited == {i for i, text in enumerate(pages, 1) if text}


def test_page_spans_slice_each_page_and_the_separator_lies_between() -> None:
    path = REAL_PDFS[1]
    if not Path(path).exists():
        pytest.skip(f"{path} is not installed here (Debian package shared-mime-info)")
    [doc] = read_file(path)
    data = doc.text.encode()
    pages = _pdfium_pages(path)
    assert [span.location for span in doc.spans] == [Page(n) for n in range(1, len(pages) + 1)]
    for span in doc.spans:
        assert _flat(data[span.start : span.end].decode()) == pages[span.location.number - 1]
    for before, after in pairwise(doc.spans):
        assert data[before.end : after.start].decode() == PAGE_BREAK
    # A span that ends exactly where a page starts does not cite it.
    second = doc.spans[1]
    assert doc.locations(0, doc.spans[0].end) == [Page(1)]
    assert doc.locations(doc.spans[0].end, second.start + 1) == [Page(2)]


def _encrypted_pdf() -> bytes:
    """A real PDF saved with a user password, as a user's locked file would be."""
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(REAL_PDFS[1]))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _image_only_pdf(pages: int = 2) -> bytes:
    """A scan: pages holding one picture each and no text layer."""
    document = pdfium.PdfDocument.new()
    for _ in range(pages):
        page = document.new_page(300, 400)
        bitmap = pdfium.PdfBitmap.new_native(40, 50, pdfium.raw.FPDFBitmap_BGR)
        bitmap.fill_rect((200, 200, 180, 255), 0, 0, 40, 50)
        image = pdfium.PdfImage.new(document)
        image.set_bitmap(bitmap)
        image.set_matrix(pdfium.PdfMatrix().scale(240, 300).translate(30, 50))
        page.insert_obj(image)
        page.gen_content()
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _truncated_pdf() -> bytes:
    return Path(REAL_PDFS[0]).read_bytes()[:6000]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (_truncated_pdf, "is not a readable PDF (damaged or truncated)"),
        (lambda: b"%PDF-1.7\n" + bytes(range(256)) * 8, "is not a readable PDF (damaged"),
        (_encrypted_pdf, "is an encrypted PDF (it needs a password to open)"),
        (_image_only_pdf, "is a PDF without a text layer (scanned or images only, 2 pages)"),
    ],
    ids=["truncated", "garbage", "encrypted", "image-only"],
)
def test_a_pdf_that_cannot_be_read_is_refused_in_one_line_saying_why(make, says) -> None:
    for path in REAL_PDFS[:1]:
        if not Path(path).exists():
            pytest.skip(f"{path} is not installed here (Debian package libtasn1-doc)")
    Path("doc.pdf").write_bytes(make())
    with pytest.raises(InputError) as refused:
        read_file("doc.pdf")
    message = str(refused.value)
    assert message.startswith(f"doc.pdf: {says}")
    assert "\n" not in message
    assert refused.value.exit_code == ExitCode.BAD_INPUT


def test_the_scan_refusal_says_there_is_no_ocr_and_what_to_do() -> None:
    with pytest.raises(InputError, match=r"gb does no OCR; run OCR first \(e\.g\. ocrmypdf\)"):
        read_documents("scan.pdf", _image_only_pdf(1))


def test_a_pdf_is_recognised_by_its_name_or_its_first_bytes() -> None:
    assert kind_of("report.pdf", b"") == "pdf"  # refused as a damaged PDF, not as binary
    assert kind_of("REPORT.PDF", b"junk") == "pdf"
    assert kind_of("download", b"%PDF-1.4\n...") == "pdf"
    assert kind_of("notes.txt", b"a PDF is %PDF- at the start, not here") is None


def test_without_pypdfium2_a_pdf_is_refused_with_what_to_install() -> None:
    # A real process where the PDF library cannot be imported, as after `pip install .`.
    code = (
        "import sys; sys.modules['pypdfium2'] = None\n"
        "from gligabao.errors import InputError\n"
        "from gligabao.read.formats import read_documents\n"
        "try:\n"
        f"    read_documents('a.pdf', open({REAL_PDFS[1]!r}, 'rb').read())\n"
        "except InputError as exc:\n"
        "    print(exc)\n"
    )
    if not Path(REAL_PDFS[1]).exists():
        pytest.skip(f"{REAL_PDFS[1]} is not installed here")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "a.pdf: is a PDF, and reading PDFs needs pypdfium2; gligabao-gb depends on it but it "
        "is missing here; install it with: pip install pypdfium2"
    )


def test_every_install_reads_pdfs_and_html() -> None:
    # The libraries are requirements of the distribution itself, under no extra: a plain
    # `pip install gligabao-gb` reads PDFs and HTML pages.
    required = importlib.metadata.requires(DISTRIBUTION) or []
    plain = {re.split(r"[<>=!~; \[]", r, maxsplit=1)[0].lower() for r in required if ";" not in r}
    assert {"pypdfium2", "markdownify", "beautifulsoup4"} <= plain


def test_a_page_without_text_is_left_out_and_the_others_keep_their_numbers() -> None:
    if not Path(REAL_PDFS[1]).exists():
        pytest.skip(f"{REAL_PDFS[1]} is not installed here (Debian package shared-mime-info)")
    # The real manual with a scanned page put in as page 2.
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(REAL_PDFS[1]))
    writer.insert_page(pypdf.PdfReader(io.BytesIO(_image_only_pdf(1))).pages[0], 1)
    out = io.BytesIO()
    writer.write(out)
    [doc] = read_documents("manual.pdf", out.getvalue())
    numbers = [span.location.number for span in doc.spans]
    assert numbers == [1, *range(3, 19)]
    pages = _pdfium_pages(REAL_PDFS[1])  # the manual without the scan
    data = doc.text.encode()
    for span, page in zip(doc.spans[1:], pages[1:], strict=True):
        assert _flat(data[span.start : span.end].decode()) == page
    _, where = cut_document(doc, ChunkSettings(chunk_size=200))
    assert not any(Page(2) in found for found in where)  # no chunk cites the scan


def test_a_file_over_the_size_limit_is_refused_before_it_is_read() -> None:
    from gligabao.read.formats import MAX_FILE_BYTES

    with open("huge.pdf", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(InputError, match=r"^huge\.pdf: is larger than 64 MiB; split it$"):
        read_file("huge.pdf")
