"""Benchmark the format readers (gligabao.read.documents) on real inputs, and the libraries
they were chosen from.

- PDF: pages per second of our reader (PDFium through pypdfium2) and of pypdf on two
  real manuals Debian ships, and how alike their words are (the share of pypdf's words
  our text has in the same order, and words broken by a hyphen at a line end).
- HTML: pages per second of our reader (markdownify) over pages of the Rust
  documentation (``~/.rustup/toolchains/*/share/doc/rust/html``), and, for each
  candidate library, the share of ``<main>``'s words kept and the fenced code blocks.
- Chat: messages per second, read and cut (multi-turn and single windows), over a
  ChatGPT export built from real prose (the machine's licence texts and the test
  corpus, a paragraph a message), every tenth answer regenerated. No real export ships
  on this machine; the words are real, the tree is generated.

Run from the repository root::

    .venv/bin/pip install -e '.[pdf,html]' pypdf html2text trafilatura lxml_html_clean
    .venv/bin/python bench/formats_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import difflib
import glob
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gligabao.chunk import ChunkSettings
from gligabao.chunk.conversation import ChatWindows
from gligabao.read.formats import read_documents
from gligabao.remember.cut import cut_document

PDFS = [
    "/usr/share/doc/libtasn1-doc/libtasn1.pdf",
    "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
]
RUST = sorted(glob.glob(str(Path.home() / ".rustup/toolchains/*/share/doc/rust/html")))
_WORD = re.compile(r"[A-Za-z_]{4,}")


def median_seconds(run: Callable[[], object], runs: int) -> float:
    run()  # warm-up: imports, caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# --------------------------------------------------------------------------- PDF


def pypdf_pages(data: bytes) -> list[str]:
    import io

    import pypdf

    return [page.extract_text() or "" for page in pypdf.PdfReader(io.BytesIO(data)).pages]


def pdf_bench(runs: int) -> None:
    print("PDF                           pages   ours p/s  pypdf p/s   same words  hyphen breaks")
    for path in PDFS:
        if not Path(path).exists():
            print(f"{Path(path).name:28s}  not installed")
            continue
        data = Path(path).read_bytes()
        [doc] = read_documents(path, data)
        pages = len(doc.spans)
        ours = median_seconds(lambda data=data, path=path: read_documents(path, data), runs)
        try:
            other = pypdf_pages(data)
            theirs = median_seconds(lambda data=data: pypdf_pages(data), runs)
        except ImportError:
            print(f"{Path(path).name:28s} {pages:6d} {pages / ours:10.0f}  pypdf unavailable")
            continue
        a, b = doc.text.split(), "\n".join(other).split()
        same = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
        breaks_ours = len(re.findall(r"[a-z]-\n[a-z]", doc.text))
        breaks_pypdf = len(re.findall(r"[a-z]-\n[a-z]", "\n".join(other)))
        print(
            f"{Path(path).name:28s} {pages:6d} {pages / ours:10.0f} {pages / theirs:10.0f}"
            f"   {same:10.3f}  {breaks_ours} ours, {breaks_pypdf} pypdf"
        )


# -------------------------------------------------------------------------- HTML


def rust_pages(limit: int) -> list[Path]:
    if not RUST:
        return []
    root = Path(RUST[0])
    picked = sorted(root.glob("book/ch*.html"))[: limit // 2]
    picked += sorted(root.glob("std/*/struct.*.html"))[: limit - len(picked)]
    return picked


def _main(html: bytes):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "nav", "header", "footer", "aside"]):
        tag.decompose()
    return soup.find("main") or soup.body


def _html2text(html: bytes) -> str:
    import html2text

    handler = html2text.HTML2Text()
    handler.body_width = 0
    return handler.handle(str(_main(html)))


def _trafilatura(html: bytes) -> str:
    import trafilatura

    return (
        trafilatura.extract(
            html.decode("utf-8", "replace"),
            output_format="markdown",
            include_images=True,
            include_tables=True,
            include_formatting=True,
            favor_recall=True,
        )
        or ""
    )


def _ours(html: bytes) -> str:
    return read_documents("page.html", html)[0].text


def html_bench(runs: int, limit: int) -> None:
    pages = rust_pages(limit)
    if not pages:
        print("HTML: no Rust documentation under ~/.rustup/toolchains: skipped")
        return
    from bs4 import BeautifulSoup

    htmls = [p.read_bytes() for p in pages]
    reference = []
    for html in htmls:
        main = BeautifulSoup(html, "html.parser").find("main")
        for tag in main(["script", "style"]):
            tag.decompose()
        reference.append((set(_WORD.findall(main.get_text(" "))), len(main.find_all("pre"))))
    size = sum(map(len, htmls)) / 1024
    print(f"\nHTML: {len(pages)} Rust documentation pages ({size:.0f} KiB) from {RUST[0]}")
    print("library                 pages/s   main words kept  fenced code blocks")
    for name, convert in (
        ("markdownify (ours)", _ours),
        ("html2text", _html2text),
        ("trafilatura", _trafilatura),
    ):
        try:
            outputs = [convert(html) for html in htmls]
        except ImportError as exc:
            print(f"{name:22s} unavailable ({exc.name})")
            continue
        seconds = median_seconds(lambda convert=convert: [convert(h) for h in htmls], runs)
        kept = sum(
            len(words & set(_WORD.findall(out)))
            for (words, _), out in zip(reference, outputs, strict=True)
        )
        total = sum(len(words) for words, _ in reference)
        fences = sum(out.count("```") // 2 for out in outputs)
        pres = sum(n for _, n in reference)
        print(f"{name:22s} {len(htmls) / seconds:8.1f}   {kept / total:15.3f}  {fences} of {pres}")


# -------------------------------------------------------------------------- chat


def real_paragraphs() -> list[str]:
    sources = sorted(glob.glob("/usr/share/common-licenses/*"))
    sources += sorted(str(p) for p in Path(__file__).parents[1].glob("tests/support/corpus/*"))
    paragraphs: list[str] = []
    for source in sources:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        paragraphs += [p.strip() for p in re.split(r"\n\s*\n", text) if len(p.strip()) > 40]
    return paragraphs


def chatgpt_export(paragraphs: list[str], per_conversation: int = 200) -> bytes:
    """Conversations of real paragraphs, user and assistant in turn; every tenth answer
    has a regenerated sibling (a second branch)."""
    conversations = []
    for c, first in enumerate(range(0, len(paragraphs) - 1, per_conversation)):
        block = paragraphs[first : first + per_conversation]
        mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for i, text in enumerate(block):
            node = f"c{c}m{i}"
            role = "user" if i % 2 == 0 else "assistant"
            message = {
                "id": node,
                "author": {"role": role},
                "create_time": 1.7e9 + i,
                "content": {"content_type": "text", "parts": [text]},
            }
            mapping[node] = {"id": node, "message": message, "parent": parent, "children": []}
            mapping[parent]["children"].append(node)
            if role == "assistant" and i % 20 == 1:
                alt = f"{node}r"
                mapping[alt] = {
                    "id": alt,
                    "message": {**message, "id": alt, "content": {"parts": [text[::-1]]}},
                    "parent": parent,
                    "children": [],
                }
                mapping[parent]["children"].append(alt)
            parent = node
        conversations.append(
            {
                "title": f"conversation {c}",
                "id": f"c{c}",
                "current_node": parent,
                "mapping": mapping,
            }
        )
    return json.dumps(conversations).encode()


def chat_bench(runs: int) -> None:
    paragraphs = real_paragraphs()
    data = chatgpt_export(paragraphs)
    settings = ChunkSettings()
    docs = read_documents("conversations.json", data)
    messages = sum(len(d.spans) for d in docs)
    print(
        f"\nChat: ChatGPT export of {len(docs)} conversations, {messages} messages "
        f"({len(data) / 1024:.0f} KiB) of real prose"
    )
    print("step                                  messages/s   chunks")
    read = median_seconds(lambda: read_documents("conversations.json", data), runs)
    print(f"{'read (path to current_node)':36s} {messages / read:12.0f}")
    branches = read_documents("conversations.json", data, all_branches=True)
    stored = sum(len(d.spans) for d in branches)
    read_all = median_seconds(
        lambda: read_documents("conversations.json", data, all_branches=True), runs
    )
    print(f"{'read (all branches)':36s} {stored / read_all:12.0f}   ({len(branches)} documents)")
    for window in ("multi", "single"):
        windows = ChatWindows(window=window)
        chunks = sum(len(cut_document(d, settings, windows)[0].chunks) for d in docs)
        seconds = median_seconds(
            lambda windows=windows: [cut_document(d, settings, windows) for d in docs], runs
        )
        print(f"{'cut, ' + window + ' windows (256/32)':36s} {messages / seconds:12.0f}   {chunks}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--html-pages", type=int, default=20)
    args = parser.parse_args()
    pdf_bench(args.runs)
    html_bench(max(1, args.runs // 2), args.html_pages)
    chat_bench(args.runs)


if __name__ == "__main__":
    main()
