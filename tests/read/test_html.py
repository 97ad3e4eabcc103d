"""HTML pages (gligabao.read.html): main content as markdown, chrome dropped, cut in
markdown mode; checked on the Rust documentation this machine ships and on a page
written here with every kind of chrome."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from gligabao.chunk import ChunkSettings
from gligabao.read.documents import Lines
from gligabao.read.formats import kind_of, read_documents, read_file
from gligabao.remember.cut import cut_document

_WORDS = re.compile(r"[A-Za-z_]{4,}")
# Pages of three kinds of Rust documentation: mdBook (the book, the reference) and
# rustdoc (std), each with a sidebar, scripts and page navigation around <main>.
RUST_PAGES = [
    "book/ch04-01-what-is-ownership.html",
    "book/ch15-01-box.html",
    "reference/items/functions.html",
    "std/option/enum.Option.html",
]


def _rust_docs() -> Path | None:
    found = sorted(Path.home().glob(".rustup/toolchains/*/share/doc/rust/html"))
    return found[0] if found else None


def _rust_page(relative: str) -> Path:
    root = _rust_docs()
    if root is None:
        pytest.skip("no Rust documentation here (~/.rustup/toolchains/*/share/doc/rust/html)")
    path = root / relative
    if not path.exists():
        pytest.skip(f"{relative} is not in this toolchain's documentation ({root})")
    return path


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(text))


@pytest.mark.parametrize("relative", RUST_PAGES)
def test_a_real_page_becomes_its_main_content_without_chrome(relative: str) -> None:
    path = _rust_page(relative)
    soup = BeautifulSoup(path.read_bytes(), "html.parser")
    [doc] = read_file(str(path))
    assert doc.kind == "html" and doc.mode == "markdown"
    assert doc.name == " ".join(soup.title.get_text().split())
    main = soup.find("main")
    scripts = [tag.get_text().strip() for tag in soup.find_all(["script", "style"])]
    navigation = " ".join(tag.get_text(" ") for tag in soup.find_all("nav"))
    for tag in main.find_all(["script", "style"]):
        tag.decompose()
    content = _words(main.get_text(" "))
    got = _words(doc.text)
    # All of the main text is kept...
    assert len(content & got) >= 0.98 * len(content)
    # ...and nothing of the sidebar and page navigation that is not in it, no script, no
    # style.
    assert not (_words(navigation) - content) & got
    for script in filter(None, scripts):
        assert script[:60] not in doc.text
    # Images of the content are markers with their alt text.
    for image in main.find_all("img"):
        assert f"![{image.get('alt', '')}]({image['src']})" in doc.text
    # Code stays code: one fenced block per <pre>.
    assert doc.text.count("```") // 2 == len(main.find_all("pre"))


def test_a_real_page_is_cut_in_markdown_mode_by_its_sections() -> None:
    path = _rust_page(RUST_PAGES[0])
    [doc] = read_file(str(path))
    result, where = cut_document(doc, ChunkSettings(chunk_size=256, overlap_percent=10))
    assert result.mode == "markdown" and len(result.chunks) > 10
    sections = {chunk.section for chunk in result.chunks}
    assert "What Is Ownership? > The Stack and the Heap" in sections
    assert "What Is Ownership? > Ownership Rules" in sections
    # No pages: each chunk cites the lines of the file its words stand on, in order.
    assert all(found and all(isinstance(loc, Lines) for loc in found) for found in where)
    firsts = [found[0].first for found in where]
    assert firsts == sorted(firsts)


PAGE = """<!DOCTYPE html>
<html><head><title>  Wheel
 change </title>
<style>.nav { color: red } body { font-family: Grotesk }</style>
<script>var trackingPixel = "beacon";</script></head>
<body>
<header><a href="/">Acme Garage home</a> <form><input name="q"> Search garage</form></header>
<nav><ul><li><a href="/tyres">Tyres catalogue</a></li><li>Opening hours</li></ul></nav>
<div role="navigation">Breadcrumbs: Garage / Guides</div>
<main>
<h1>Changing a wheel</h1>
<p>Park on level ground and set the <strong>handbrake</strong>.</p>
<h2>Loosening</h2>
<p>Turn each nut a half turn.</p>
<img src="/img/nuts.png" alt="Loosen the wheel nuts">
<h2>Torque</h2>
<table><tr><th>Car</th><th>Torque</th></tr>
ROWS
</table>
<pre><code>torque --check 110</code></pre>
</main>
<aside>Related: buying winter tyres</aside>
<footer>Copyright Acme Garage, cookie settings</footer>
<script>document.write("late script text")</script>
</body></html>
"""


def _page(rows: int = 3) -> bytes:
    cells = "\n".join(f"<tr><td>Model {i}</td><td>{100 + i} Nm</td></tr>" for i in range(rows))
    return PAGE.replace("ROWS", cells).encode()


def test_chrome_scripts_and_styles_are_dropped_and_the_title_names_it() -> None:
    [doc] = read_documents("wheel.html", _page())
    assert doc.name == "Wheel change"
    assert doc.text.startswith(
        "# Changing a wheel\n\nPark on level ground and set the **handbrake**."
    )
    assert "## Loosening" in doc.text and "## Torque" in doc.text
    assert "![Loosen the wheel nuts](/img/nuts.png)" in doc.text
    assert "| Car | Torque |" in doc.text and "| Model 2 | 102 Nm |" in doc.text
    assert "```\ntorque --check 110\n```" in doc.text
    for chrome in (
        "trackingPixel",
        "late script",
        "Grotesk",
        "Acme Garage",
        "Search garage",
        "Tyres catalogue",
        "Opening hours",
        "Breadcrumbs",
        "winter tyres",
        "cookie",
    ):
        assert chrome not in doc.text


def test_a_long_table_is_cut_between_rows_with_its_header_repeated() -> None:
    [doc] = read_documents("wheel.html", _page(rows=120))
    result, _ = cut_document(doc, ChunkSettings(chunk_size=128, overlap_percent=0))
    torque = [chunk for chunk in result.chunks if "| Model" in chunk.text]
    assert len(torque) > 3
    for chunk in torque:
        assert chunk.section == "Changing a wheel > Torque"
        # The header goes with every piece, in what is embedded (its context).
        assert "| Car | Torque |" in chunk.text or "| Car | Torque |" in chunk.context
    image = [chunk for chunk in result.chunks if "![Loosen" in chunk.text]
    assert len(image) == 1 and "![Loosen the wheel nuts](/img/nuts.png)" in image[0].text


def test_a_page_without_main_uses_its_body_and_one_without_title_its_file_name() -> None:
    html = b"<html><body><nav>Menu</nav><p>Only a paragraph.</p></body></html>"
    [doc] = read_documents("saved/page.htm", html)
    assert doc.name == "page.htm"
    assert doc.text == "Only a paragraph."


def test_a_page_with_no_content_is_refused() -> None:
    with pytest.raises(Exception, match=r"^blank\.html: is an HTML page with no text"):
        read_documents("blank.html", b"<html><nav>Home</nav><script>x()</script></html>")


def test_html_is_recognised_by_its_name_or_its_first_bytes() -> None:
    assert kind_of("page.html", b"") == "html"
    assert kind_of("page.HTM", b"") == "html"
    assert kind_of("saved", b"\xef\xbb\xbf  <!-- saved -->\n<!DOCTYPE html><html>") == "html"
    assert kind_of("notes.md", b"# Notes about <html> tags") is None


def test_without_markdownify_a_page_is_refused_with_what_to_install() -> None:
    code = (
        "import sys; sys.modules['markdownify'] = None\n"
        "from gligabao.read.formats import read_documents\n"
        "try:\n"
        "    read_documents('a.html', b'<p>hi</p>')\n"
        "except Exception as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "a.html: is an HTML page, and reading HTML needs markdownify and beautifulsoup4; "
        "gligabao-gb depends on them but one is missing here; "
        "install them with: pip install markdownify beautifulsoup4"
    )


# ---- a Sphinx page: the IDLE page of Python's documentation (tests/read/fixtures)

SPHINX_PAGE = Path(__file__).parent / "fixtures" / "idle-help.html"
_FIRST_WORD = re.compile(r"[^\W_]+")
# A link's target and title are no words of the page's text.
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def first_word(text: str) -> str:
    """The first word of a piece of the markdown that is text of the page."""
    return _FIRST_WORD.findall(_LINK_TARGET.sub("]", text))[0]


def test_a_sphinx_page_loses_its_permalinks_and_navigation_in_text_and_sections() -> None:
    [doc] = read_file(str(SPHINX_PAGE))
    assert doc.name == "IDLE — Python 3.13.0a2 documentation"
    assert doc.text.startswith("# IDLE\n\n")
    for noise in ("¶", "Permalink", "Show Source", "Report a Bug", "previous |", "»"):
        assert noise not in doc.text, noise
    result, _ = cut_document(doc, ChunkSettings(chunk_size=256, overlap_percent=10))
    sections = {chunk.section for chunk in result.chunks}
    assert "IDLE > Menus > File menu (Shell and Editor)" in sections
    assert "IDLE > Editing and Navigation > Completions" in sections
    assert not any("¶" in (section or "") for section in sections)


def test_each_chunk_and_line_of_a_sphinx_page_cites_the_file_line_of_its_first_words() -> None:
    [doc] = read_file(str(SPHINX_PAGE))
    file_lines = SPHINX_PAGE.read_text(encoding="utf-8").split("\n")
    result, where = cut_document(doc, ChunkSettings(chunk_size=256, overlap_percent=10))
    assert len(result.chunks) > 30
    for chunk, found in zip(result.chunks, where, strict=True):
        first = found[0].first
        assert first_word(chunk.text) in file_lines[first - 1], (chunk.index, first)
        assert found[-1].last >= first
    # Not the markdown's own lines: the page's heading is on line 223 of the file.
    assert where[0][0].first == 223 and "<h1>IDLE" in file_lines[222]
    # Every line of the markdown with words, and every part of one, is cited so.
    data = doc.text.encode("utf-8")
    for span in doc.spans:
        words = data[span.start : span.end].decode("utf-8")
        line = file_lines[span.location.first - 1]
        assert first_word(words) in line, (words[:60], span.location)


def test_generator_chrome_of_mkdocs_read_the_docs_and_rustdoc_is_left_out() -> None:
    html = b"""<html><body>
<div role="navigation" aria-label="breadcrumbs navigation"><ul class="wy-breadcrumbs">
<li>Docs</li><li>Guide</li>
<li class="wy-breadcrumbs-aside"><a href="_sources/guide.rst.txt">View page source</a></li>
</ul></div>
<div class="md-content"><article>
<a href="https://github.com/acme/docs/edit/main/guide.md" title="Edit this page">Edit on GitHub</a>
<h1 id="guide">Guide<a class="headerlink" href="#guide" title="Permanent link">&para;</a></h1>
<p>Install the tool first.</p>
<h2 id="run">Running <a class="anchor" href="#run">&sect;</a></h2>
<div class="highlight"><pre><code>tool --run</code></pre><button class="copybtn">Copy</button></div>
<p>Then run it.</p>
<h3 id="m">Method <a class="src" href="../src/lib.rs.html#10">Source</a></h3>
<p>See the <a href="lib.rs.html">source</a> and <a href="trait.Copy.html">Copy</a>.</p>
<div><h3>Navigation</h3><ul><li><a href="b.html">Next topic</a></li></ul></div>
<div class="rst-footer-buttons"><a href="a.html">Previous</a><a href="c.html">Next</a></div>
</article></div>
<div class="sphinxsidebar"><h3>Navigation</h3><ul><li>Other page</li></ul></div>
</body></html>"""
    [doc] = read_documents("guide.html", html)
    assert doc.text == (
        "# Guide\n\nInstall the tool first.\n\n## Running\n\n```\ntool --run\n```\n\n"
        "Then run it.\n\n### Method\n\n"
        "See the [source](lib.rs.html) and [Copy](trait.Copy.html)."
    )
    # Each line with words cites its own line of the file.
    lines = html.decode().split("\n")
    for span in doc.spans:
        words = doc.text.encode()[span.start : span.end].decode()
        assert first_word(words) in lines[span.location.first - 1]
