"""How inputs would be cut (gb chunk-preview), nothing stored: each input read by its
reader, cut with the settings, and, when asked, each chunk's situating context as the
database holds it for the same content cut the same way. Folders are walked as gb
remember -r walks them (read/discovery.py), what is skipped said the same way."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gligabao.chunk import ChunkSettings, Cut
from gligabao.config import Config
from gligabao.errors import DatabaseError, InputError
from gligabao.read.files import FOLDER_WALKED
from gligabao.read.sources import Source, read_sources
from gligabao.remember.cut import cut_source

if TYPE_CHECKING:
    from gligabao.chunk.check import ChunkCheck

__all__ = ["Checked", "Preview", "inputs", "preview_json", "preview_text", "previews"]


@dataclass(frozen=True)
class Preview:
    """One document's cut: `shown` its name (a conversation's title after ``#``),
    `situating` the stored context of each chunk index that has one."""

    shown: str
    cut: Cut
    settings: ChunkSettings
    locations: dict[str, Any] | None  # a PDF's pages, a chat's messages, a page's lines
    situating: dict[int, str] = field(default_factory=dict)
    text: str = ""  # the text cut, for `check`

    def as_json(self) -> dict[str, Any]:
        """What `gb chunk-preview --json` prints (and `gb serve` answers) for it."""
        return preview_json(self.shown, self.cut, self.situating, self.locations)

    def check(self) -> Checked:
        """What each chunk may lack on its own (`gb chunk-preview --check`)."""
        from gligabao.chunk.check import check_chunks  # only a check needs it

        chunks = check_chunks(
            self.text,
            self.cut.chunks,
            chunk_size=self.settings.chunk_size,
            tokenizer=self.settings.tokenizer,
        )
        return Checked(self.shown, self.cut, chunks)


@dataclass(frozen=True)
class Checked:
    """A document's cut checked: each chunk with its findings (none when it stands on
    its own; no chunks for a text not chunked)."""

    shown: str
    cut: Cut
    chunks: list[ChunkCheck]

    @property
    def flagged(self) -> list[ChunkCheck]:
        """The chunks with a finding."""
        return [c for c in self.chunks if c.findings]

    def as_json(self) -> dict[str, Any]:
        """What `gb chunk-preview --check --json` prints for it: every chunk, each with
        its findings (an empty list for a chunk that stands on its own)."""
        return {
            "source": self.shown,
            "tokens": self.cut.tokens,
            "chunked": self.cut.chunked,
            "chunk_count": len(self.cut.chunks),
            "flagged_chunks": len(self.flagged),
            "findings": sum(len(c.findings) for c in self.chunks),
            "chunks": [c.as_json() for c in self.chunks],
        }


def preview_json(
    source: str,
    cut: Cut,
    situating: Mapping[int, str] | None = None,
    document: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`context` is the cut's own (section path, class line, table header); a chunk whose
    stored Contextual Retrieval context is in `situating` (by index) also gets
    `situating_context`, the key `gb show --json` gives it. A read document (PDF, HTML,
    chat) has its `document` (kind, name, locations) and each chunk its `pages` or
    `messages`."""
    situating = situating or {}
    return {
        "source": source,
        **({"document": _shown(document)} if document else {}),
        "tokens": cut.tokens,
        "chunked": cut.chunked,
        "chunk_count": len(cut.chunks),
        "chunks": [
            {
                "index": c.index,
                "start_offset": c.start_offset,
                "end_offset": c.end_offset,
                "tokens": c.tokens,
                "overlap_tokens": c.overlap_tokens,
                "section": c.section,
                "anchor": c.anchor,
                "context": c.context,
                **_shown(c.locations),
                "text": c.text,
                **(
                    {"situating_context": situating[c.index]}
                    if situating.get(c.index) is not None
                    else {}
                ),
            }
            for c in cut.chunks
        ],
    }


def _shown(where: Mapping[str, Any] | None) -> dict[str, Any]:
    # A web page's line map serves citing quotes; its first and last lines say where.
    return {key: value for key, value in (where or {}).items() if key != "line_map"}


def preview_text(config: Config, text: str, name: str | None) -> Preview:
    """How a text would be cut as `gb chunk-preview -` cuts standard input (shown as
    `name`, else `-`), nothing stored."""
    from gligabao.errors import UsageError
    from gligabao.read.files import STDIN, decode

    if not isinstance(text, str):
        raise UsageError(f"the text to preview must be a str, not {type(text).__name__}")
    settings = config.chunk_settings()
    data = text.encode("utf-8", "surrogatepass")
    source = Source(STDIN, data, decode(name or STDIN, data), stored_as=name)
    return Preview(name or STDIN, cut_source(source, settings), settings, None, text=source.text)


def inputs(
    names: Sequence[str],
    *,
    recursive: bool,
    glob: Sequence[str],
    notice: Callable[[str], None],
    each_skipped: bool = False,
) -> list[str]:
    """The inputs `names` stand for: as given, or with `recursive` (or a `glob`) found as
    gb remember -r finds them, the files skipped said in one line (each with
    `each_skipped`)."""
    if not recursive and not glob:
        return list(names)  # each as given, a name given twice shown twice
    from gligabao.read.discovery import discover
    from gligabao.service.remembering import skip_notices

    found = discover(names, recursive=recursive, globs=glob)
    for said in skip_notices(found, each=each_skipped):
        notice(said)
    return found.inputs


def previews(
    config: Config,
    names: Sequence[str],
    *,
    all_branches: bool,
    contexts: bool,
    notice: Callable[[str], None],
) -> Iterator[Preview | InputError]:
    """Each input's documents cut, or the InputError of one that cannot be read; with
    `contexts`, the stored ones of a database that is already there."""
    settings = config.chunk_settings()
    database = config["database"] if contexts and _stored(config["database"]) else None
    for name in names:
        try:
            sources = read_sources(
                name,
                chat=config["mode"] == "chat",
                all_branches=all_branches,
                folder=FOLDER_WALKED,  # it walks folders now: point at -r, as remember does
            )
        except InputError as exc:
            yield exc
            continue
        for source in sources:
            shown = source.name  # a name's non-UTF-8 bytes escaped, printable
            if source.document is not None and source.document.kind == "chat":
                shown = f"{shown} #{source.document.name}"
            cut = cut_source(source, settings)
            situating: dict[int, str] = {}
            if database is not None and source.path is not None and cut.chunked:
                situating, database = _stored_contexts(config, database, source, cut, notice)
            yield Preview(shown, cut, settings, source.locations(), situating, source.text)


def _stored(database: str) -> bool:
    """Whether there may be a database to read contexts from: a server's, or a file."""
    if os.path.isfile(database):
        return True
    from gligabao.store.opening import is_url  # here: the store is not cheap

    return is_url(database)


def _stored_contexts(
    config: Config, database: str, source: Source, cut: Cut, notice: Callable[[str], None]
) -> tuple[dict[int, str], str | None]:
    """The stored contexts of `cut`'s chunks, and the database to ask next time: None
    once it could not be read, so a locked or foreign file costs one notice, not one an
    input (the preview itself never depends on the database)."""
    from gligabao.remember.status import stored_contexts  # here: the store is not cheap

    # A short wait: a preview is not worth blocking on another process's lock.
    wait_ms = int(min(config["busy_timeout"], 1.0) * 1000)
    try:
        found = stored_contexts(
            database,
            source,
            config["dataset"],
            cut,
            busy_timeout_ms=wait_ms,
            schema=config["schema"],
        )
    except DatabaseError as exc:
        notice(f"stored contexts not shown: {exc}")
        return {}, None
    return found, database
