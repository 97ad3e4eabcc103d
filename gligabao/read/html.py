"""HTML: a page's main content as markdown (markdownify, imported only when a page is read).

Scripts, styles, forms and navigation chrome (``nav``, ``header``, ``footer``,
``aside``, ARIA navigation and banners) are dropped; the main content is ``<main>``
(or ``role="main"``, ``<article>``, else the body). markdownify writes headings as
``#``, code as fenced blocks, tables as pipe tables and images as ``![alt](src)``,
which markdown mode then cuts by section with its image and table rules. It was
chosen by measurement on the Rust documentation (bench/formats_bench.py): all of the
main text kept and fenced code, where html2text indents code and trafilatura drops a
third of a rustdoc page. The page's ``<title>`` is the document's name.
"""

from __future__ import annotations

import os
import re

from gligabao.errors import InputError
from gligabao.read.documents import FormattedDocument, check_size, clean_text
from gligabao.version import DISTRIBUTION

# Both are dependencies of every install, so this is said only where one is truly missing.
_INSTALL = (
    f"{DISTRIBUTION} depends on them but one is missing here; "
    "install them with: pip install markdownify beautifulsoup4"
)
_CHROME = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form")
_CHROME_ROLES = ("navigation", "banner", "contentinfo", "search", "complementary")
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")


def read_html(name: str, data: bytes) -> FormattedDocument:
    """The main content of the page ``data`` as markdown, named by its title."""
    bs4, markdownify = _libraries(name)
    soup = bs4.BeautifulSoup(data, "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title else ""
    main = _main_content(soup)
    text = _markdown(markdownify, main)
    if not text:
        raise InputError(name, "is an HTML page with no text in its main content")
    check_size(name, text)
    return FormattedDocument(
        name=title or os.path.basename(name), kind="html", text=text, spans=(), mode="markdown"
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


def _markdown(markdownify, main) -> str:
    converter = markdownify.MarkdownConverter(
        heading_style=markdownify.ATX, bullets="-", code_language="", escape_misc=False
    )
    markdown = converter.convert_soup(main)
    # Whitespace-only lines between blocks become one blank line.
    return _BLANK_LINES.sub("\n\n", clean_text(markdown)).strip()
