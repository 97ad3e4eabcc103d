"""HTML: a page's main content as markdown (markdownify, imported only when a page is read),
each line of it mapped to the lines of the file it came from.

Scripts, styles, forms and navigation chrome (``nav``, ``header``, ``footer``,
``aside``, ARIA navigation and banners, sidebars, breadcrumbs, prev/next links) are
dropped, and so are the marks of a documentation generator that are not content:
Sphinx's and MkDocs' ``¶`` permalinks, rustdoc's ``§`` anchors and "Source" links,
buttons ("Copy"), and "Edit on GitHub", "View page source" or "Show Source" links.
The main content is ``<main>`` (or ``role="main"``, ``<article>``, else the body).
markdownify writes headings as ``#``, code as fenced blocks, tables as pipe tables and
images as ``![alt](src)``, which markdown mode then cuts by section with its image and
table rules. It was chosen by measurement on the Rust documentation (bench/formats_bench.py):
all of the main text kept and fenced code, where html2text indents code and trafilatura
drops a third of a rustdoc page. The page's ``<title>`` is the document's name.

Each line of the markdown with words is a `Span` whose location is the `Lines` of the
file its words stand on: the page's text nodes are placed in the file by a second pass
of the standard library's parser (the one BeautifulSoup uses, so its text nodes come in
the same order), and the markdown's words are aligned to theirs as a diff aligns two
texts. A chunk so cites the lines of the file, not those of its markdown.
"""

from __future__ import annotations

import difflib
import html.parser
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

from gligabao.errors import InputError
from gligabao.read.documents import FormattedDocument, Lines, Span, check_size, clean_text
from gligabao.version import DISTRIBUTION

# Both are dependencies of every install, so this is said only where one is truly missing.
_INSTALL = (
    f"{DISTRIBUTION} depends on them but one is missing here; "
    "install them with: pip install markdownify beautifulsoup4"
)
_CHROME = (
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "button",
)
_CHROME_ROLES = ("navigation", "banner", "contentinfo", "search", "complementary")
# Classes of navigation and of generator marks (Sphinx and its Read the Docs theme,
# MkDocs and Material, mdBook, rustdoc): sidebars, breadcrumbs, prev/next, permalinks.
_CHROME_CLASSES = frozenset(
    {
        "headerlink",
        "sphinxsidebar",
        "related",
        "breadcrumbs",
        "breadcrumb",
        "wy-breadcrumbs",
        "rustdoc-breadcrumbs",
        "hideme",
        "wy-breadcrumbs-aside",
        "rst-footer-buttons",
        "prev-next-area",
        "prev-next-bottom",
        "nav-wrapper",
        "md-sidebar",
        "md-footer",
        "md-content__button",
        "md-source-file",
        "copybtn",
    }
)
# A link that only marks its heading (``¶`` of Sphinx and MkDocs, ``§`` of rustdoc, ``#``).
_PERMALINK_TEXTS = frozenset({"¶", "§", "#", "🔗", "⚓"})
_PERMALINK_TITLE = re.compile(r"^\s*perma(?:nent\s+)?link\b", re.I)
# Links that act on the page, not content: "Edit on GitHub", "View page source", …
_ACTION_LINK = re.compile(
    r"^\s*(?:edit\s+(?:on\s+\w+|this\s+page)|(?:view|show)\s+(?:page\s+)?source"
    r"|suggest\s+(?:an?\s+)?(?:edit|change)|copy\s+to\s+clipboard)\s*$",
    re.I,
)
# How a theme titles a block of links that is no content: the block goes, heading and all.
_NAVIGATION_TITLES = frozenset({"navigation", "this page", "table of contents", "quick search"})
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")
# Words as matched between the file and the markdown: letters and digits, as markdownify
# escapes ``_`` and ``*`` and leaves them otherwise.
_WORD = re.compile(r"[^\W_]+")
# A link's or an image's target and title: words of the markdown that are no text of the
# file.
_TARGET = re.compile(r"\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+\"[^\"\n]*\")?\)")
# How far ahead a text node BeautifulSoup gives is looked for among the parser's.
_WINDOW = 200


def read_html(name: str, data: bytes) -> FormattedDocument:
    """The main content of the page ``data`` as markdown, named by its title, each line
    with words cited by the lines of the file it came from."""
    bs4, markdownify = _libraries(name)
    soup = bs4.BeautifulSoup(data, "html.parser")
    lines = _text_lines(bs4, soup, data)
    title = " ".join(soup.title.get_text().split()) if soup.title else ""
    main = _main_content(soup)
    text = _markdown(markdownify, main)
    if not text:
        raise InputError(name, "is an HTML page with no text in its main content")
    check_size(name, text)
    spans = _line_spans(text, _words(bs4, main, lines))
    return FormattedDocument(
        name=title or os.path.basename(name), kind="html", text=text, spans=spans, mode="markdown"
    )


def _libraries(name: str):
    try:
        import bs4
        import markdownify
    except ImportError:
        raise InputError(
            name,
            f"is an HTML page, and reading HTML needs markdownify and beautifulsoup4; {_INSTALL}",
        ) from None
    return bs4, markdownify


def _main_content(soup):
    for tag in soup(_CHROME):
        tag.decompose()
    for tag in soup.find_all(attrs={"role": _CHROME_ROLES}):
        tag.decompose()
    for tag in soup.find_all(_is_chrome):
        if not tag.decomposed:
            tag.decompose()
    # Comments, doctype and the like are not text.
    for node in soup.find_all(string=lambda s: type(s).__name__ != "NavigableString"):
        node.extract()
    return (
        soup.find("main")
        or soup.find(attrs={"role": "main"})
        or soup.find("article")
        or soup.body
        or soup
    )


def _is_chrome(tag) -> bool:
    """A tag of navigation, a permalink or a page action, by its class, label or text."""
    if _CHROME_CLASSES.intersection(tag.get("class") or ()):
        return True
    label = tag.get("aria-label") or ""
    if "navigation" in label.lower() or "breadcrumb" in label.lower():
        return True
    if tag.name == "a":
        text = tag.get_text().strip()
        if text in _PERMALINK_TEXTS or _PERMALINK_TITLE.match(tag.get("title") or ""):
            return True
        if text == "Source" and "src" in (tag.get("class") or ()):
            return True  # rustdoc's link to an item's source, beside its heading
        return bool(_ACTION_LINK.match(text))
    if tag.name == "div":
        # A theme's "Navigation" block: a heading that says so over links, no paragraph.
        heading = tag.find(("h2", "h3", "h4"), recursive=False)
        title = heading.get_text().strip().lower() if heading is not None else ""
        return title in _NAVIGATION_TITLES and tag.find("p") is None
    return False


def _markdown(markdownify, main) -> str:
    converter = markdownify.MarkdownConverter(
        heading_style=markdownify.ATX, bullets="-", code_language="", escape_misc=False
    )
    markdown = converter.convert_soup(main)
    # Whitespace-only lines between blocks become one blank line.
    return _BLANK_LINES.sub("\n\n", clean_text(markdown)).strip()


class _TextPositions(html.parser.HTMLParser):
    """The line of the file where each text node of a page begins, in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.runs: list[tuple[int, str]] = []

    def handle_data(self, data: str) -> None:
        self.runs.append((self.getpos()[0], data))


def _text_lines(bs4, soup, data: bytes) -> dict[int, int]:
    """The first line in the file of each text node of ``soup`` (by id). The parser here
    reads the same text BeautifulSoup read and gives the same text nodes in the same
    order; only BeautifulSoup shortens whitespace between tags, and a node it would give
    otherwise is matched to the next one of the same text."""
    encoding = soup.original_encoding or "utf-8"
    parser = _TextPositions()
    try:
        parser.feed(data.decode(encoding, "replace"))
        parser.close()
    except (LookupError, AssertionError):  # an encoding Python lacks, a parser it refuses
        return {}
    runs = parser.runs
    found: dict[int, int] = {}
    at = 0
    for node in _text_nodes(bs4, soup.descendants):
        text = str(node)
        if not text.strip():
            at += at < len(runs) and not runs[at][1].strip()
            continue
        for k in range(at, min(at + _WINDOW, len(runs))):
            if runs[k][1] == text:
                found[id(node)] = runs[k][0]
                at = k + 1
                break
    return found


def _text_nodes(bs4, nodes: Iterable[Any]) -> Iterable[Any]:
    skipped = (bs4.Comment, bs4.Doctype, bs4.Declaration, bs4.CData, bs4.ProcessingInstruction)
    return (n for n in nodes if isinstance(n, bs4.NavigableString) and not isinstance(n, skipped))


def _words(bs4, main, lines: dict[int, int]) -> list[tuple[str, int]]:
    """The words of the main content in order, each with its line in the file."""
    words: list[tuple[str, int]] = []
    for node in _text_nodes(bs4, main.descendants):
        line = lines.get(id(node))
        if line is None:
            continue
        text = str(node)
        for match in _WORD.finditer(text):
            words.append((match.group(), line + text.count("\n", 0, match.start())))
    return words


def _line_spans(text: str, words: Sequence[tuple[str, int]]) -> tuple[Span, ...]:
    """The spans of the markdown ``text`` whose words were found in the file, each with
    the `Lines` of the file they stand on: a line of the markdown, or a part of one where
    its words stand on several lines of the file (a paragraph markdownify joined), so
    that a chunk or a quote that begins within it begins on its own line. The markdown's
    words and the file's are aligned as a diff aligns two texts: a word of the markdown
    that is not the file's (an image's alt text, code split otherwise) is passed over
    without the words after it losing their place."""
    masked = _TARGET.sub(lambda m: "]" + " " * (len(m.group()) - 1), text)
    found = [(m.group(), m.start()) for m in _WORD.finditer(masked)]
    matcher = difflib.SequenceMatcher(None, [w for w, _ in found], [w for w, _ in words])
    line_of = [0] * len(found)
    for block in matcher.get_matching_blocks():
        for i in range(block.size):
            line_of[block.a + i] = words[block.b + i][1]
    spans: list[Span] = []
    offset = start = k = 0
    for shown in text.split("\n"):
        end = start + len(shown)
        # Where in the line (characters) each run of words on one line of the file begins.
        runs: list[tuple[int, int]] = []
        while k < len(found) and found[k][1] < end:
            if line_of[k] and (not runs or line_of[k] != runs[-1][1]):
                runs.append((found[k][1] - start, line_of[k]))
            k += 1
        bounds = [0, *(at for at, _ in runs[1:]), len(shown)]
        for (_, line), left, right in zip(runs, bounds, bounds[1:], strict=False):
            low = offset + len(shown[:left].encode("utf-8"))
            high = offset + len(shown[:right].encode("utf-8"))
            spans.append(Span(low, high, Lines(line, line)))
        offset += len(shown.encode("utf-8")) + 1
        start = end + 1
    return tuple(spans)
