"""Everything `gb` prints: rich tables on stdout, messages on stderr, JSON lines."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gligabao.base.jsonl import json_line, json_record, visible  # noqa: F401 (render's own too)
from gligabao.base.lines import mapped_lines
from gligabao.base.words import counted, plural
from gligabao.chunk import ChunkSettings, Cut
from gligabao.config import Price
from gligabao.read.documents import cite_described

if TYPE_CHECKING:
    from gligabao.base.snippet import Snippet
    from gligabao.remember.result import Remembered
    from gligabao.search.evaluate import EvalResult
    from gligabao.search.hybrid import Hit
    from gligabao.service.graph_evaluation import GraphEvaluation
    from gligabao.service.preview import Checked
    from gligabao.service.sizing import DryRun


class _Stdout(Console):
    """Standard output. Off a terminal (a pipe, a file) nothing is wrapped or cut at the
    width rich guesses (80 columns, or COLUMNS): each record stays whole on its line."""

    def print(self, *objects: Any, soft_wrap: bool | None = None, **options: Any) -> None:
        if soft_wrap is None and not self.is_terminal:
            soft_wrap = True
        if _above_bar is not None and self.is_terminal:
            # The same terminal as the live bar: printed by its console, above the bar,
            # not written under the cursor onto the bar's line.
            _above_bar.print(*objects, soft_wrap=soft_wrap, **options)
            return
        super().print(*objects, soft_wrap=soft_wrap, **options)


stdout = _Stdout(highlight=False, soft_wrap=False)
# The console of a live progress bar while one shows (see BatchProgress).
_above_bar: Console | None = None
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def plain() -> bool:
    """Whether stdout is not a terminal: tables are printed as tab-separated lines."""
    return not stdout.is_terminal


def _n(value: int) -> str:
    """A count as a person reads it on a terminal (3,727); piped or in a file, as a
    program reads it (3727)."""
    return str(value) if plain() else f"{value:,}"


def _cell(value: Any) -> str:
    return value.plain if isinstance(value, Text) else str(value)


def emit(table: Table, *, heading: bool = False) -> None:
    """A table: drawn on a terminal; elsewhere one line per row, its cells separated by tabs
    (no box drawing, nothing cut), after a line of column names, for `cut -f` and `awk -F`.
    With `heading`, the title comes first and the caption last (views of several tables).
    Cells are made visible (see visible), so none holds a tab or a line break."""
    if not plain():
        stdout.print(table)
        return
    lines = [[_cell(table.title)]] if heading and table.title else []
    lines.append([_cell(c.header) for c in table.columns])
    cells = [list(c.cells) for c in table.columns]
    lines += ([_cell(column[i]) for column in cells] for i in range(table.row_count))
    if heading and table.caption:
        lines.append([_cell(table.caption)])
    tab_separated(lines)


def tab_separated(lines: Sequence[Sequence[Any]]) -> None:
    """Lines of fields on stdout, separated by tabs, written past rich (which would turn
    the tabs into spaces); each field made visible, so none holds a tab or a line break."""
    stdout.file.write("".join("\t".join(visible(str(f)) for f in line) + "\n" for line in lines))
    stdout.file.flush()


def _indent(text: Text, spaces: int) -> Any:
    """`text` indented: on a terminal wrapped under its indent; elsewhere each line
    indented as it is, never wrapped nor cut."""
    if not plain():
        return Padding(text, (0, 0, 0, spaces), expand=False)
    return Text("\n").join(Text(" " * spaces) + line for line in text.split("\n"))


def _text(value: Any, style: str = "", *, lines: bool = False, **options: Any) -> Text:
    """A Text of `value` made visible (see visible); never parsed as markup."""
    return Text(visible(str(value), lines=lines), style=style, **options)


def _assemble(*parts: str | tuple[str, str]) -> Text:
    """Text.assemble, each part made visible (see visible)."""
    return Text.assemble(
        *((visible(p[0]), p[1]) if isinstance(p, tuple) else visible(p) for p in parts)
    )


def error(message: str) -> None:
    stderr.print(_text(f"gb: {message}", "red", lines=True))


def warning(message: str) -> None:
    stderr.print(_text(f"gb: warning: {message}", "yellow", lines=True))


def first_words(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def where(locations: Mapping[str, Any] | None) -> str:
    """A chunk's stored locations, short: ``p.12-13``, ``lines 40-52``, ``msgs 14-19``;
    "" for none."""
    lines = (locations or {}).get("lines")
    if lines:  # a web page's, of its file
        return f"lines {lines[0]}-{lines[1]}"
    return cite_described("", locations or {}).strip()


def chunk_preview_table(source: str, cut: Cut, settings: ChunkSettings) -> None:
    sizing = (
        f"chunk size {settings.chunk_size}, overlap {settings.overlap_percent}%, "
        f"{cut.mode} mode, {settings.tokenizer.name}"
    )
    if not cut.chunked:
        stdout.print(
            _assemble(
                (source, "bold"),
                f": {_n(cut.tokens)} {plural(cut.tokens, 'token')}, fits in one chunk: "
                f"not chunked ({sizing})",
            )
        )
        return
    # Texts, not strings: a file name or a chunk holding "[b]" or "[/x]" is not markup.
    table = Table(title=_text(source, "bold"), title_justify="left", expand=False)
    for name in ("#", "start", "end", "tokens", "overlap"):
        table.add_column(name, justify="right", no_wrap=True)
    # The only column that gives way on a narrow terminal or a pipe (80 columns):
    # its cells are cut to one line with an ellipsis, the numbers are never cut.
    sections = any(c.section for c in cut.chunks)
    located = any(c.locations for c in cut.chunks)
    if located:
        table.add_column("where", no_wrap=True)
    if sections:
        table.add_column("section", max_width=30, no_wrap=True, overflow="ellipsis")
    table.add_column("begins with", max_width=64)
    for c in cut.chunks:
        cut_off = {"no_wrap": True, "overflow": "ellipsis"}
        section = [_text(c.section or "—", **cut_off)] if sections else []
        table.add_row(
            str(c.index + 1),  # counted from 1, as every view a person reads counts chunks
            _n(c.start_offset),
            _n(c.end_offset),
            _n(c.tokens),
            _n(c.overlap_tokens),
            *([where(c.locations) or "—"] if located else []),
            *section,
            _text(first_words(c.text), **cut_off),
        )
    table.caption = _text(
        f"{_n(cut.tokens)} {plural(cut.tokens, 'token')} in {len(cut.chunks)} "
        f"{plural(len(cut.chunks), 'chunk')} ({sizing})"
        # Code its mode could not cut by its syntax: why it was cut as text instead.
        + "".join(f"; {notice}" for notice in cut.notices)
    )
    table.caption_justify = "left"
    emit(table, heading=True)


def chunk_preview_total(cuts: Sequence[tuple[int, int]], *, failed: int = 0) -> None:
    """The line under several previews: how many documents, tokens and chunks in all
    (`cuts`: each document's tokens and chunks, one for a text not chunked)."""
    tokens = sum(t for t, _ in cuts)
    chunks = sum(c for _, c in cuts)
    refused = f" ({_n(failed)} {plural(failed, 'input')} refused)" if failed else ""
    stdout.print(
        _text(
            f"total: {_n(len(cuts))} {plural(len(cuts), 'document')}, {_n(tokens)} "
            f"{plural(tokens, 'token')} in {_n(chunks)} {plural(chunks, 'chunk')}{refused}",
            "bold",
        )
    )


_KINDS = {
    "reference": "reference",
    "repeated_start": "repeated start",
    "split_procedure": "split procedure",
    "split_table": "split table",
}


def chunk_check(checked: Checked) -> None:
    """`gb chunk-preview --check`: a line for the document, then each flagged chunk (its
    number, section and offsets) with each finding, what it quotes, and the suggestion."""
    flagged = checked.flagged
    count = sum(len(c.findings) for c in flagged)
    chunks = len(checked.cut.chunks)
    if not checked.cut.chunked:
        said = ": fits in one chunk, nothing to check"
    elif not flagged:
        said = f": {chunks} {plural(chunks, 'chunk')}, nothing flagged"
    else:
        said = (
            f": {_n(len(flagged))} of {_n(chunks)} {plural(chunks, 'chunk')} flagged, "
            f"{counted(count, 'finding')}"
        )
    stdout.print(_assemble((checked.shown, "bold"), (said, "yellow" if flagged else "green")))
    for check in flagged:
        c = check.chunk
        stdout.print(
            _assemble(
                (f"  chunk {c.index + 1}", "bold"),
                (f"  {c.section}" if c.section else "", "cyan"),
                (f"  bytes {_n(c.start_offset)}-{_n(c.end_offset)}", "dim"),
            ),
            soft_wrap=True,
        )
        for finding in check.findings:
            head = _assemble(
                (f"{_KINDS.get(finding.kind, finding.kind)}: ", "yellow"), finding.said
            )
            stdout.print(_indent(head, 4))
            if finding.excerpt:
                stdout.print(_indent(_text(f"“{finding.excerpt}”", "dim"), 6))
            stdout.print(_indent(_text(f"→ {finding.suggestion}", "green"), 6))


def chunk_check_total(checked: Sequence[Checked], *, failed: int = 0) -> None:
    """The line under several checks: documents, those flagged, findings in all."""
    flagged = [c for c in checked if c.flagged]
    findings = sum(len(f.findings) for c in checked for f in c.flagged)
    refused = f" ({_n(failed)} {plural(failed, 'input')} refused)" if failed else ""
    stdout.print(
        _text(
            f"checked {counted(len(checked), 'document')}: {_n(len(flagged))} flagged, "
            f"{counted(findings, 'finding')}{refused}",
            "bold",
        )
    )


def config_table(rows: list[tuple[str, Any, str]]) -> None:
    table = Table(title="effective configuration", title_justify="left", expand=False)
    table.add_column("key", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("from", style="dim", overflow="fold")
    for key, value, source in rows:
        table.add_row(_text(key), _text(_shown_value(value)), _text(source))
    emit(table)


def config_summary(lines: list[tuple[str, str]]) -> None:
    """What `gb config` read and reaches, under its table: `config file  ./gligabao.toml`."""
    for what, how in lines:
        stdout.print(_text(f"{what:<12} {how}"))


def _shown_value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, Price):
        cached = "" if value.cached_input is None else f", cached input ${value.cached_input:g}"
        return f"input ${value.input:g}, output ${value.output:g}{cached} per 1M tokens"
    return str(value)


# --- the store ---------------------------------------------------------------


def _table(title: str, *columns: str) -> Table:
    table = Table(title=_text(title), title_justify="left", title_style="bold", expand=False)
    for column in columns:
        justify = "left" if column in _TEXT_COLUMNS else "right"
        table.add_column(
            column,
            justify=justify,
            no_wrap=column not in _TEXT_COLUMNS,
            overflow="ellipsis",
            max_width=60 if column in _TEXT_COLUMNS else None,
        )
    return table


_TEXT_COLUMNS = {
    "source",
    "dataset",
    "summary",
    "name",
    "fact",
    "begins with",
    "model",
    "stage",
    "kind",
    "type",
    "status",
    "index",
    "table",
    "relation",
    "created",
    "pending",
    "state",
}


def _row(table: Table, *values: Any) -> None:
    """Cells as plain text: file names and fact texts may hold [brackets] rich would parse,
    and names from an LLM escape sequences (see visible)."""
    table.add_row(*(_text(v) for v in values))


def _money(cost: float | None, unpriced: int = 0) -> str:
    """The known cost, plus the calls whose model has no [prices] (never passed off as
    free): `$0.0012`, `$0.0001 + 5 calls without a price`; no calls at all is `$0`."""
    known = "$0" if not cost else f"${cost:.4f}"
    if not unpriced:
        return known
    return f"{known} + {_n(unpriced)} {plural(unpriced, 'call')} without a price"


def dry_run_view(plan: DryRun) -> None:
    """`gb remember --dry-run`: each document's cut and calls, each stage's calls, input
    tokens, model and cost, then what the figures leave out."""
    table = _table("would remember", "source", "chunks", "tokens", "calls", "input tokens")
    for d in plan.documents:
        chunks = _n(d.chunks) if d.chunks else "not chunked"
        _row(
            table,
            d.source,
            chunks,
            _n(d.tokens),
            _n(sum(d.calls.values())),
            _n(sum(d.input_tokens.values())),
        )
    emit(table, heading=True)
    calls, tokens = plan.calls(), plan.input_tokens()
    stages = _table("by stage", "stage", "model", "calls", "input tokens", "cost")
    for stage in plan.stages:
        paid = plan.stage_cost(stage)
        cost = "no price" if paid is None else f"${paid:.4f}"
        _row(stages, stage, plan.model(stage), _n(calls[stage]), _n(tokens[stage]), cost)
    emit(stages, heading=True)
    chunks = sum(d.chunks or 1 for d in plan.documents)
    total = plan.cost()
    if total is not None:
        cost = f"${total:.4f} for the input tokens; the answers cost more"
    else:
        cost = f"unknown: no price for {', '.join(plan.unpriced())} (add [prices])"
    count = len(plan.documents)
    stdout.print(
        _text(
            f"dry run: {_n(count)} {plural(count, 'document')}, {_n(chunks)} "
            f"{plural(chunks, 'chunk')}, {_n(sum(calls.values()))} "
            f"{plural(sum(calls.values()), 'call')}, {_n(sum(tokens.values()))} input "
            f"{plural(sum(tokens.values()), 'token')}; cost {cost}. Not counted: the resolve "
            "calls, the answers embedded and the entity summaries rewritten. Nothing stored, "
            "nothing asked.",
            "bold",
        )
    )


def remember_panel(done: Remembered) -> None:
    r, source, spend = done.response, done.source, done.spend
    assert spend is not None  # a document stored: its run's calls were counted
    created = sum(1 for e in r["entities"] if e.get("created"))
    new_edges = sum(1 for e in r["edges"] if e.get("created"))
    lines = [
        f"document   {r['artifact_id']}  ({done.status})",
        f"chunks     {len(r['chunks']) if 'chunks' in r else 'not chunked'}",
        f"entities   {len(r['entities'])} ({created} new)",
        f"facts      {len(r['edges'])} ({new_edges} new), {len(r['invalidated_edges'])} closed",
        "embedded   "
        + ", ".join(
            f"{r[f'embedded_{k}']} {plural(r[f'embedded_{k}'], noun)}"
            for k, noun in (
                ("entities", "entity"),
                ("edges", "fact"),
                ("chunks", "chunk"),
                ("summaries", "summary"),
            )
        ),
        f"LLM        {spend.calls} {plural(spend.calls, 'call')} ({spend.reused} "
        f"{plural(spend.reused, 'answer')} reused), "
        f"{_n(spend.input_tokens)} in / {_n(spend.output_tokens)} out tokens",
        f"cost       {_money(spend.cost, spend.unpriced)}",
    ]
    if plain():  # no box: the source on its own line, whole, then one line a field
        stdout.print(_text("\n".join([source, *lines]), lines=True))
        return
    stdout.print(
        Panel(
            _text("\n".join(lines), lines=True),
            title=_text(source),
            title_align="left",
            expand=False,
        )
    )


def trajectory(steps: list[dict[str, Any]]) -> None:
    for step in steps:
        stdout.print(_text(f"{step['step']:<22} {step['message']}"))


def document_view(doc: dict[str, Any]) -> None:
    head = (
        f"document {doc['id']}  kind {doc['kind']}  source {doc['source'] or '—'}  "
        f"state {state_text(doc)}  valid_at {doc['valid_at']}"
    )
    stdout.print(_text(head, "bold"))
    read = doc.get("locations")
    if read:  # a PDF, an HTML page, a conversation: what it is and where its text is
        name = f"{read.get('kind', '')} {read.get('name', '')}".strip()
        stdout.print(_text(f"{name}  {where(read)}".rstrip()))
    if doc["chunks"]:
        located = any(c.get("locations") for c in doc["chunks"])
        columns = ("#", "id", "start", "end", "tokens", "overlap")
        table = _table("chunks", *columns, *(["where"] if located else []), "summary")
        for c in doc["chunks"]:
            summary = c["summary"]["text"] if c["summary"] else "—"
            if c.get("situating_context"):
                summary = f"[{first_words(c['situating_context'], 40)}] {summary}"
            _row(
                table,
                str(c["chunk_index"] + 1),  # from 1, as `chunk k of n` and chunk-preview
                str(c["id"]),
                _n(c["start_offset"]),
                _n(c["end_offset"]),
                str(c["tokens"]),
                str(c["overlap_tokens"]),
                *([where(c.get("locations")) or "—"] if located else []),
                first_words(summary, 60),
            )
        emit(table, heading=True)
    else:
        stdout.print(_text(first_words(doc["text"], 200)))
    _graph_tables(doc)


def chunk_view(view: dict[str, Any]) -> None:
    """A chunk (`gb show` of a chunk's id, or of its summary's): where it is, its text,
    its summary and its facts. Asked by a summary's id, the summary comes first."""
    place, document = view["place"], view["document"]
    if place["role"] != "chunk":
        stdout.print(_text(f"{place['id']}: {place['words']}", "bold"))
        asked = view["summary"] if place["id"] == (view["summary"] or {}).get("id") else None
        stdout.print(_text(asked["text"] if asked else view["situating_context"], lines=True))
    head = (
        f"chunk {view['chunk_index'] + 1} of {place['chunk_count'] or '?'} (id {view['id']}) "
        f"of document {document['id']}  source {document['source'] or '—'}  "
        f"lines {view['line_start']}-{view['line_end']}  state {state_text(document)}"
    )
    stdout.print(_text(head, "bold"))
    if view.get("locations"):
        stdout.print(_text(f"at {where(view['locations'])}"))
    if view["section"]:
        stdout.print(_text(f"section {view['section']}"))
    stdout.print(_text(view["text"], lines=True))
    if view["situating_context"]:
        stdout.print(_text(f"context: {view['situating_context']}", lines=True))
    summary = view["summary"]
    stdout.print(_text(f"summary {summary['id']}: {summary['text']}" if summary else "summary —"))
    _graph_tables(view)


def _graph_tables(doc: dict[str, Any]) -> None:
    """The entities and facts linked to a document or a chunk."""
    if doc["entities"]:
        table = _table("entities", "id", "name", "type")
        for e in doc["entities"]:
            _row(table, str(e["id"]), e["name"], e["type"])
        emit(table, heading=True)
    if doc["edges"]:
        table = _table("facts", "id", "fact", "relation", "valid_at", "invalid_at")
        for e in doc["edges"]:
            _row(
                table,
                str(e["id"]),
                e["fact"],
                e["relation"],
                e["valid_at"] or "—",
                e["invalid_at"] or "—",
            )
        emit(table, heading=True)


def documents_table(rows: list[dict[str, Any]]) -> None:
    """Off a terminal every field whole. On one, the file name matters most: paths are
    shortened from the left to what the screen leaves them, dates to the minute, and a
    superseded version is dimmed and says which document replaced it."""
    columns = ("id", "dataset", "source", "kind", "chunks", "tokens", "state", "created")
    cells = [_document_cells(row, terse=not plain()) for row in rows]
    if not plain():
        room = _room_for(columns, cells, stdout.width, column=2)
        # At least "…/NAME": the other columns wrap before the file name is cut.
        room = max(room, *(len(visible(_file_name(c[2]))) + 2 for c in cells), 0)
        cells = [(*c[:2], left_cut(c[2], room), *c[3:]) for c in cells]
    table = _table("documents", *columns)
    table.columns[2].max_width = None  # already fitted: never cut at its end
    table.columns[2].no_wrap = True  # nor wrapped: the other text columns give way first
    for row, values in zip(rows, cells, strict=True):
        dim = "dim" if row.get("superseded_by") is not None and not plain() else None
        table.add_row(*(_text(v) for v in values), style=dim)
    emit(table)


def state_text(document: dict[str, Any]) -> str:
    """A document's status with the stages it still waits for: `incomplete: embed`."""
    if document["status"] == "incomplete":
        return f"incomplete: {', '.join(document['pending'])}"
    return str(document["status"])


def _file_name(path: str) -> str:
    return path.rstrip("/").rpartition("/")[2] or path


def _document_cells(row: dict[str, Any], *, terse: bool) -> tuple[str, ...]:
    # On a terminal the state is its word and how many stages are left: the file name
    # needs the room more than the stages' names, which gb show and --json give.
    state = state_text(row)
    if terse and row["status"] == "incomplete":
        state = f"incomplete ({len(row['pending'])})"
    if terse and row.get("superseded_by") not in (None, row["id"]):  # by itself: removed
        state = f"superseded by {row['superseded_by']}"
    created = row["created_at"] or "—"
    return (
        str(row["id"]),
        str(row["dataset"]),
        row["source"] or "—",
        str(row["kind"]),
        f"{row['chunks_stored']}/{row['chunk_count'] or 0}",
        _n(row["tokens"] or 0),
        str(state),
        short_time(created) if terse else created,
    )


def short_time(iso: str) -> str:
    """An ISO-8601 time to the minute, as a person reads it: `2026-12-01 16:05`."""
    return iso[:16].replace("T", " ")


def _room_for(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, *, column: int
) -> int:
    """The width a rich table `width` columns wide leaves to `column`, the others shown
    whole: each column takes its widest cell plus 3 (padding and rule), the frame 1."""
    others = sum(
        max(len(visible(v)) for v in (headers[i], *(r[i] for r in rows)))
        for i in range(len(headers))
        if i != column
    )
    return max(width - others - 3 * len(headers) - 1, 16)


def left_cut(path: str, width: int) -> str:
    """`path` in at most `width` characters, cut from the left so that the file name stays:
    `…/email/utils.py`; at a folder boundary where one fits."""
    if len(visible(path)) <= width:
        return path
    tail = path[len(path) - width + 1 :]
    slash = tail.find("/")
    if 0 <= slash < len(tail) - 1:
        tail = tail[slash:]
    return "…" + tail


def forget_line(report: Any) -> None:
    stdout.print(
        _text(
            f"forgot document {report.artifact_id}: {report.chunks} "
            f"{plural(report.chunks, 'chunk')}, {report.summaries} "
            f"{plural(report.summaries, 'summary')}, {report.entities} "
            f"{plural(report.entities, 'entity')}, {report.edges} {plural(report.edges, 'fact')}, "
            f"{report.vectors} {plural(report.vectors, 'vector')}"
        )
    )


def stats_table(counts: Any) -> None:
    table = _table("stats", "what", "count")
    table.columns[0].justify = "left"
    for name, value in (
        ("documents", counts.documents),
        ("incomplete documents", counts.incomplete),
        ("chunks", counts.chunks),
        ("summaries", counts.summaries),
        ("entities", counts.entities),
        ("current facts", counts.edges_valid),
        ("closed facts", counts.edges_closed),
        ("inferences", counts.inferences),
        ("input tokens", counts.input_tokens),
        ("output tokens", counts.output_tokens),
        ("cached tokens", counts.cached_tokens),
    ):
        _row(table, name, _n(value))
    _row(table, "cost", _money(counts.cost, counts.unpriced))
    emit(table)


def vec_stats_table(dataset: str, rows: list[Any]) -> None:
    table = _table(
        f"vector indexes of dataset {dataset}",
        *("table", "held", "should", "pending", "missing", "vectors"),
    )
    for row in rows:  # vectors > held: chunks embedded as pieces, a vector each
        counts = (row.held, row.should, row.pending, row.missing, row.vectors)
        _row(table, row.table, *map(str, counts))
    emit(table)


def inference_view(row: dict[str, Any], served: list[dict[str, Any]]) -> None:
    """One LLM call: its record, the documents (and chunks) it served, its answer."""
    cost = "—" if row["cost"] is None else f"${row['cost']:.5f}"
    fields = [
        ("inference", f"{row['id']}  {row['stage']} by {row['model']}"),
        ("reasoning", row["reasoning"]),
        (
            "tokens",
            f"{_n(row['input_tokens'])} in, {_n(row['output_tokens'])} out, "
            f"{_n(row['cached_tokens'])} cached",
        ),
        ("cost", cost),
        ("duration", "—" if row["duration_ms"] is None else f"{_n(row['duration_ms'])} ms"),
        ("created", row["created_at"]),
        ("hash", row["request_hash"] or "—"),
    ]
    for name, value in fields:
        stdout.print(_text(f"{name:<10} {value}"))
    if not served:
        stdout.print(_text("served     — (no document stored from it)"))
    for doc in served:
        chunk = "" if doc["chunk_index"] is None else f", chunk {doc['chunk_index'] + 1}"
        stdout.print(_text(f"served     document {doc['id']} {doc['source'] or '-'}{chunk}"))
    _request_view(row.get("request"))
    answer = row["answer"]
    if answer is None:
        stdout.print(_text("answer     — (not kept)"))
        return
    with contextlib.suppress(ValueError):  # an answer that is not JSON is shown as it is
        answer = json.dumps(json.loads(answer), indent=2, ensure_ascii=False)
    stdout.print(_text("answer"))
    stdout.print(_indent(_text(answer, lines=True), 2))


def _request_view(request: dict[str, Any] | None) -> None:
    """What a call sent: each message under its role, or each text embedded."""
    if request is None:
        stdout.print(_text("request    — (not kept: recorded before gb kept requests)"))
        return
    stdout.print(_text("request"))
    for message in request.get("messages", ()):
        stdout.print(_indent(_text(f"{message.get('role', '?')}:", "bold"), 2))
        stdout.print(_indent(_text(str(message.get("content", "")), lines=True), 4))
    for number, text in enumerate(request.get("input", ()), start=1):
        stdout.print(_indent(_text(f"input {number}:", "bold"), 2))
        stdout.print(_indent(_text(str(text), lines=True), 4))


def inferences_table(rows: list[dict[str, Any]]) -> None:
    table = _table(
        "inferences",
        "id",
        "stage",
        "model",
        "reasoning",
        "in",
        "out",
        "cached",
        "cost",
        "ms",
        "created",
    )
    for row in rows:
        cost = "—" if row["cost"] is None else f"{row['cost']:.5f}"
        _row(
            table,
            str(row["id"]),
            row["stage"],
            row["model"],
            row["reasoning"],
            str(row["input_tokens"]),
            str(row["output_tokens"]),
            str(row["cached_tokens"]),
            cost,
            str(row["duration_ms"] or "—"),
            row["created_at"],
        )
    emit(table)


def status_line(result: Any) -> None:
    style = "green" if result.state == "in sync" else "yellow"
    document = f"document {result.document_id}" if result.document_id else "—"
    if plain():  # states have spaces ("in sync"): tabs keep the fields apart for cut -f
        tab_separated([(result.state, result.source, document, result.detail)])
        return
    stdout.print(
        _assemble((f"{result.state:<16}", style), f" {result.source}  {document}  "),
        _text(result.detail, "dim"),
    )


def status_summary(files: int, states: Mapping[str, int]) -> None:
    """The line that ends `gb status`, on stderr: `gb: 3 files: 2 in sync, 1 changed`."""
    counts = ", ".join(f"{n:,} {state}" for state, n in states.items())
    notice(f"{files:,} {plural(files, 'file')}: {counts or 'none checked'}")


# --- batches -----------------------------------------------------------------


def notice(message: str) -> None:
    stderr.print(_text(f"gb: {message}", lines=True))


def listing(items: Sequence[Any], as_json: bool, none: str, draw: Callable[[Any], None]) -> None:
    """A listing command's output: a JSON line an item with --json; else `draw(items)`,
    or, when there is none, the notice `none` (standard output stays empty)."""
    if as_json:
        for item in items:
            json_line(item.as_json())
    elif not items:
        notice(none)
    else:
        draw(items)


def result_line(result: Remembered) -> None:
    r = result.response
    chunks = (
        f"{len(r['chunks'])} {plural(len(r['chunks']), 'chunk')}"
        if "chunks" in r
        else "not chunked"
    )
    entities, edges = len(r["entities"]), len(r["edges"])
    stdout.print(
        _text(
            f"{result.status:<10} {result.source} -> document {r['artifact_id']} ({chunks}, "
            f"{entities} {plural(entities, 'entity')}, {edges} {plural(edges, 'fact')})"
        )
    )


def tally_summary(tally: Any, *, skipped: int = 0) -> str:
    """The line that ends a batch; ``skipped``: files left out before it began."""
    counts = ", ".join(f"{n} {status}" for status, n in sorted(tally.by_status.items()))
    cost = _money(tally.cost, tally.unpriced)
    # Not an input's status: the skipped files were never inputs.
    left_out = f" ({skipped:,} {plural(skipped, 'file')} skipped)" if skipped else ""
    return (
        f"{tally.done} {plural(tally.done, 'input')}: {counts or 'none'}{left_out}; "
        f"{tally.chunks:,} {plural(tally.chunks, 'chunk')}, "
        f"{tally.tokens:,} {plural(tally.tokens, 'token')}, cost {cost}, {tally.elapsed:.1f} s"
    )


_BAR = 24  # the bar's width in cells


class BatchProgress:
    """One live line on stderr, only on a terminal: a bar of chunks done of the batch's
    (see remember/progress.py), files done, calls out, tokens, cost and time left.

    While it shows, everything printed (results on stdout, messages on stderr) goes above
    it, and at the end it is removed, leaving only what was printed."""

    def __init__(
        self, tally: Any, *, enabled: bool, calls_out: Callable[[], int] | None = None
    ) -> None:
        from gligabao.remember.progress import ChunkProgress

        self.tally = tally
        self.chunks = ChunkProgress(files=tally.total)
        self.calls_out = calls_out
        self.live = None
        if enabled and stderr.is_terminal:
            from rich.live import Live

            self.live = Live(
                console=stderr,
                get_renderable=self._line,
                refresh_per_second=8,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )

    def __enter__(self) -> BatchProgress:
        global _above_bar
        if self.live is not None:
            self.live.start()
            _above_bar = stderr
        return self

    def on_step(self, name: str, step: str, data: dict[str, Any]) -> None:
        """The pipeline's Options.on_step."""
        self.chunks.on_step(name, step, data)

    def update(self, name: str) -> None:
        """Input `name` ended (its result is in the tally)."""
        self.chunks.finished(name)

    def _line(self) -> Text:
        t, c = self.tally, self.chunks
        total = c.total
        fields = [
            f"{c.done:,.0f}/{'?' if total is None else f'{total:,.0f}'} chunks",
            f"{t.done:,}/{t.total:,} {plural(t.total, 'file')}",
            f"{clock_time(c.eta())} left",
            _money(t.cost, t.unpriced),
        ]
        if self.calls_out is not None:
            out = self.calls_out()
            fields.append(f"{out:,} {plural(out, 'call')} out")
        fields.append(f"{t.tokens:,} {plural(t.tokens, 'token')}")
        filled = 0 if not total else round(_BAR * min(1.0, c.done / total))
        line = Text("remembering ")
        line.append("━" * filled, style="magenta")
        line.append("━" * (_BAR - filled), style="grey23")
        line.append(" " + " · ".join(fields))
        # One line, whatever the width: the figures at the end give way first.
        line.truncate(max(1, stderr.width - 1), overflow="ellipsis")
        return line

    def __exit__(self, *exc: object) -> None:
        global _above_bar
        if self.live is not None:
            _above_bar = None
            self.live.stop()


def clock_time(seconds: float | None) -> str:
    """`1:05:09`, `4:07`, or `-:--` when not known."""
    if seconds is None or seconds != seconds or seconds > 360_000:
        return "-:--"
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


# ------------------------------------------------------------------ search and eval

_WORD = re.compile(r"\w+")


def search_hits(hits: list[Hit], query: str, *, full: bool = False) -> None:
    """Each hit: its number, path:LINE or path:LINE-LINE, section, score and ranks, then
    the lines that best match the query (see base/snippet.py), or with `full` its whole
    text and summary, the query's words highlighted."""
    from gligabao.base.snippet import query_words, snippet, word_pattern

    pattern = word_pattern(query_words(query))
    for number, hit in enumerate(hits, start=1):
        where = hit.source or f"artifact {hit.document_id}"
        shown = [("", hit.text), ("summary: ", hit.summary)]
        lines = (hit.line_start, hit.line_end)
        if not full:
            cut = snippet(hit.text, query, hit.line_start)
            shown = [("", cut.text)]
            if hit.line_map:  # a web page: the lines of its file the snippet's words are on
                lines = _snippet_lines(hit, cut)
            elif hit.line_start is not None:
                lines = (cut.line_start, cut.line_end)
        if hit.locations and "lines" not in hit.locations:  # a PDF's pages, a chat's messages
            where = cite_described(where, hit.locations)
        elif lines[0] is not None:
            where = cite_described(where, {"lines": lines})
        ranks = ", ".join(f"{m} #{r}" for m, r in hit.ranks.items())
        head = _assemble(
            (f"{number}. ", "bold"),
            (where, "bold cyan"),
            (f"  § {hit.section}" if hit.section else "", "magenta"),
            (f"  score {hit.score:.4f} ({ranks})", "dim"),
        )
        stdout.print(head, soft_wrap=True)  # a long path stays on its line
        for label, body in shown:
            if not body or not body.strip():
                continue
            # A snippet as cut, so its lines are those its numbers name.
            text = Text(label, style="dim") + _text(body if not full else body.strip(), lines=True)
            if pattern is not None:
                text.highlight_regex(pattern, style="bold yellow")
            stdout.print(_indent(text, 3))
        stdout.print()


def _snippet_lines(hit: Hit, cut: Snippet) -> tuple[int | None, int | None]:
    """The lines of a web page's file that a snippet of its hit stands for, through the
    hit's line map: its markdown's lines are not the file's."""
    rows = hit.text.split("\n")
    first = cut.line_start - (hit.line_start if hit.line_start is not None else 1)
    count = cut.line_end - cut.line_start + 1
    start = (hit.start_offset or 0) + sum(len(row.encode("utf-8")) + 1 for row in rows[:first])
    end = start + len("\n".join(rows[first : first + count]).encode("utf-8"))
    return mapped_lines(hit.line_map, start, end) or (hit.line_start, hit.line_end)


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def eval_table(results: list[EvalResult], queries: int, ks: Sequence[int]) -> None:
    """failure@k and mean tokens of each dataset and method, side by side."""
    table = Table(
        title=f"retrieval failures on {queries} gold spans (lower is better)",
        title_justify="left",
        title_style="bold",
    )
    for column in ("dataset", "method"):
        table.add_column(column, justify="left", no_wrap=True)
    for column in ("queries", *(f"fail@{k}" for k in ks), "mean tokens"):
        table.add_column(column, justify="right", no_wrap=True)
    for r in results:
        if r.skipped:
            cells = [r.dataset, r.method, str(r.queries), *("—" for _ in ks), "—"]
        else:
            tokens = "—" if r.mean_tokens is None else f"{r.mean_tokens:.0f}"
            cells = [r.dataset, r.method, str(r.queries), *(_percent(r.fail_rate(k)) for k in ks)]
            cells.append(tokens)
        table.add_row(*(_text(c) for c in cells))
    emit(table)


def graph_eval_table(measured: GraphEvaluation) -> None:
    """Each gold document's extraction figures, then their total."""
    table = Table(
        title=f"extraction in dataset '{measured.dataset}' against gold facts "
        f"(relations by {measured.relations})",
        title_justify="left",
        title_style="bold",
    )
    table.add_column("document", justify="left", no_wrap=True)
    for column in (
        "stored",
        "gold",
        "matched",
        "precision",
        "recall",
        "dup. entities",
        "intervals",
        "closed",
        "open",
        "LLM tok/tok",
    ):
        table.add_column(column, justify="right", no_wrap=True)
    for score in [*measured.documents, measured.total]:
        ratio = score.tokens_per_token
        cells = [
            os.path.basename(score.source) if score.source != "total" else "total",
            str(score.stored),
            str(score.gold),
            str(score.matched),
            _percent(score.precision),
            _percent(score.recall),
            _percent(score.duplicate_rate),
            _percent(score.interval_agreement),
            _percent(score.closed_agreement),
            _percent(score.open_agreement),
            "—" if ratio is None else f"{ratio:.1f}",
        ]
        table.add_row(*(_text(c) for c in cells))
    emit(table)


def eval_kinds_table(results: list[EvalResult], queries: Sequence[Any], ks: Sequence[int]) -> None:
    """failure@k of each dataset and method for each kind of query, most queries first."""
    table = Table(
        title="by kind of query (lower is better)", title_justify="left", title_style="bold"
    )
    for column in ("dataset", "method", "kind"):
        table.add_column(column, justify="left", no_wrap=True)
    for column in ("queries", *(f"fail@{k}" for k in ks)):
        table.add_column(column, justify="right", no_wrap=True)
    for r in results:
        if r.skipped:
            continue
        kinds = r.by_kind(queries)
        for kind, part in sorted(kinds.items(), key=lambda item: (-item[1].queries, item[0])):
            cells = [r.dataset, r.method, kind, str(part.queries)]
            cells += [_percent(part.fail_rate(k)) for k in ks]
            table.add_row(*(_text(c) for c in cells))
    emit(table, heading=True)  # off a terminal, its title tells it from the totals


def weights_table(weights: dict[str, tuple[float, str]]) -> None:
    """The vector weight each dataset's hybrid search uses, and where it comes from."""
    table = Table(title="fusion weight in force", title_justify="left", title_style="bold")
    for column in ("dataset", "vector weight", "from"):
        table.add_column(column, no_wrap=column != "from")
    for name, (weight, origin) in weights.items():
        table.add_row(_text(name), _text(f"{weight:.2f}"), _text(origin))
    emit(table, heading=True)


def tuning_table(tuning: Any) -> None:
    """failure@k at each vector weight gb eval --tune tried, the chosen one marked."""
    spans = "gold spans" if tuning.origin == "gold" else "pseudo-queries"
    table = Table(
        title=f"hybrid search of '{tuning.dataset}' by vector weight, {tuning.queries} {spans} "
        "(0: BM25 alone, 1: vectors alone)",
        title_justify="left",
        title_style="bold",
    )
    ks = list(next(iter(tuning.failures.values())))
    for column in ("vector weight", *(f"fail@{k}" for k in ks), "MRR@20", ""):
        table.add_column(column, justify="right", no_wrap=True)
    for weight, by_k in tuning.failures.items():
        mark = "learnt" if weight == tuning.weight else ""
        mark += " (was)" if weight == tuning.previous and weight != tuning.weight else ""
        mrr = tuning.mrr.get(weight)
        cells = [
            f"{weight:.2f}",
            *(_percent(by_k[k] / tuning.queries) for k in ks),
            "" if mrr is None else f"{mrr:.3f}",
            mark,
        ]
        table.add_row(*(_text(c) for c in cells))
    emit(table, heading=True)


def _interval(fact: Any) -> str:
    since = (fact.valid_at or "?")[:10]
    until = fact.invalid_at[:10] if fact.invalid_at else "now"
    return f"{since} → {until}"


def facts_list(facts: list[Any], *, where: bool = True) -> None:
    """Each fact: id, source —RELATION→ target, its interval and status, the fact, and
    (unless not `where`) where it is stated."""
    for fact in facts:
        head = _assemble(
            (f"#{fact.id} ", "dim"),
            (fact.source, "bold"),
            (f" —{fact.relation}→ ", "cyan"),
            (fact.target, "bold"),
            (f"  {_interval(fact)}", "green" if fact.status == "current" else "yellow"),
            ("" if fact.status == "current" else "  closed", "yellow"),
        )
        stdout.print(head, soft_wrap=True)
        stdout.print(_indent(_text(fact.fact, lines=True), 3))
        for evidence in fact.evidence if where else ():
            stdout.print(_text("   " + evidence.where, "dim cyan"), soft_wrap=True)


def why(fact: Any, closer: Any | None, read_lines: Any) -> None:
    """A fact, each piece of its evidence with the quote highlighted in its lines, and what
    closed it with its own evidence and the reason."""
    facts_list([fact], where=False)
    for evidence in fact.evidence:
        _evidence_lines(evidence, read_lines)
    if fact.closed_by:
        stdout.print(
            _assemble(
                ("closed by ", "yellow"),
                (f"#{fact.closed_by['id']}", "bold"),
                (f": {fact.closed_by['reason'] or 'no reason given'}", ""),
            ),
            soft_wrap=True,
        )
        if closer is not None:
            facts_list([closer], where=False)
            for evidence in closer.evidence:
                _evidence_lines(evidence, read_lines)


def _evidence_lines(evidence: Any, read_lines: Any) -> None:
    data, begins = read_lines(evidence.document_id, evidence.start_offset, evidence.end_offset)

    # rich drops carriage returns: offsets are counted without them too (CRLF files), and
    # in the visible text, whose escapes are longer than the characters they stand for.
    def shown(part: bytes) -> str:
        return visible(part.decode("utf-8", "replace").replace("\r", ""), lines=True)

    text = Text(shown(data).rstrip("\n"))
    start = len(shown(data[: evidence.start_offset - begins]))
    end = len(shown(data[: evidence.end_offset - begins]))
    text.stylize("bold yellow" if evidence.exact else "yellow", start, end)
    mark = "" if evidence.exact else "  (not an exact quote: the span shown is approximate)"
    stdout.print(_text(f"   {evidence.where}{mark}", "dim cyan"), soft_wrap=True)
    stdout.print(_indent(text, 5))


def entity_view(view: Any) -> None:
    """An entity: name, type and summary; its facts as a timeline; its neighbours; the
    documents that mention it."""
    stdout.print(
        _assemble((f"#{view.id} ", "dim"), (view.name, "bold"), (f"  ({view.type})", "magenta")),
        soft_wrap=True,
    )
    if view.summary:
        stdout.print(_indent(_text(view.summary, lines=True), 3))
    if view.summary_stale_at:
        stdout.print(
            _text(
                f"   summary stale since {view.summary_stale_at}: facts it may state changed; "
                "the next gb remember with a chat endpoint rewrites it",
                "yellow",
            ),
            soft_wrap=True,
        )
    stdout.print(Text(f"facts ({len(view.facts)}), oldest first:", style="bold"))
    facts_list(view.facts)
    for fact in view.facts:
        if fact.closed_by:
            stdout.print(
                _text(
                    f"   #{fact.id} closed by #{fact.closed_by['id']}: "
                    f"{fact.closed_by['reason'] or 'no reason given'}",
                    "yellow",
                ),
                soft_wrap=True,
            )
    if view.neighbours:
        stdout.print(Text("neighbours:", style="bold"))
        for n in view.neighbours:
            stdout.print(_text(f"   #{n['id']} {n['name']} ({n['type']}), {n['depth']} away"))
    if view.documents:
        stdout.print(Text("documents:", style="bold"))
        for doc in view.documents:
            stdout.print(_text(f"   #{doc['id']} {doc['source']}"), soft_wrap=True)
    if view.aliases:
        stdout.print(Text("also named:", style="bold"))
        stdout.print(_text("   " + "; ".join(view.aliases)), soft_wrap=True)
    if view.merges:
        stdout.print(Text("merges:", style="bold"))
        for merge in view.merges:
            stdout.print(_text("   " + merge_line(merge)), soft_wrap=True)


def merge_line(merge: Any) -> str:
    """One merge in words: what became what, from where, why, and whether undone."""
    why = merge.rule
    if merge.inference_id is not None:
        why += f" (inference {merge.inference_id})"
    if merge.score is not None:
        why += f", score {merge.score:.2f}"
    line = (
        f"merge {merge.id}: {merge.name!r} ({merge.type}) into #{merge.entity_id} "
        f"{merge.entity_name!r}, from chunk #{merge.artifact_id}, by {why}, "
        f"{short_time(merge.created_at)}"
    )
    if merge.undone_at is not None:
        line += f"; undone {short_time(merge.undone_at)}: entity #{merge.restored_id}"
    return line


def merges_list(merges: list[Any]) -> None:
    for merge in merges:
        stdout.print(_text(merge_line(merge)), soft_wrap=True)


def _held(found: Any) -> str:
    """Which facts a chain was sought through, in words."""
    if found.at and found.known_at:
        return f"facts true at {found.at} as the graph held them at {found.known_at}"
    if found.at:
        return f"facts true at {found.at}"
    if found.known_at:
        return f"facts the graph held at {found.known_at}"
    return "current facts"


def no_path(found: Any) -> str:
    """The line that says two entities are not linked."""
    return (
        f"no chain of at most {counted(found.max_depth, 'fact')} links "
        f"{found.source['name']} and {found.target['name']} through {_held(found)}"
    )


def paths_view(found: Any) -> None:
    """The chains linking two entities: each hop a fact as facts_list shows it (its own
    direction, its interval, where it is stated), marked when crossed backwards."""
    if not found.found:
        return
    head = _assemble(
        (found.source["name"], "bold"),
        " ... ",
        (found.target["name"], "bold"),
        f": {counted(len(found.paths), 'chain')} of "
        f"{counted(len(found.paths[0]), 'fact')}, through {_held(found)}",
    )
    stdout.print(head, soft_wrap=True)
    for number, hops in enumerate(found.paths, 1):
        stdout.print(Text(f"chain {number}:", style="bold"))
        for hop in hops:
            facts_list([hop.fact])
            if hop.reversed:
                stdout.print(_text("   (linked from its target to its source)", "dim"))


def entities_table(items: list[Any]) -> None:
    table = _table("entities", "id", "name", "type", "facts", "documents")
    for item in items:
        _row(table, item.id, item.name, item.type, item.fact_count, item.document_count)
    emit(table)


# --- gb copy ---------------------------------------------------------------------


class CopyProgress:
    """One live line on stderr, only on a terminal: the step of a copy and how far it
    is; removed at the end."""

    def __init__(self, *, enabled: bool) -> None:
        self.live = None
        self.line = ""
        if enabled and stderr.is_terminal:
            from rich.live import Live

            self.live = Live(
                console=stderr, get_renderable=lambda: _text(self.line), transient=True
            )
            self.live.start()

    def __call__(self, what: str, done: int, total: int) -> None:
        # A negative total is one not counted (an index read a page at a time).
        self.line = f"copying {what}: {done:,}" + (f" of {total:,}" if total >= 0 else "")
        if self.live is not None:
            self.live.refresh()

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()


def copy_line(report: Any) -> None:
    rows = sum(report.rows.values())
    documents = report.rows.get("gb_artifacts", 0)
    again = " (going on from a copy cut short)" if report.resumed else ""
    source, destination = report.source, report.destination
    if report.into is not None:  # one dataset, into a new one
        source = f"dataset {report.dataset} of {source}"
        destination = f"dataset {report.into} of {destination}"
    stdout.print(
        _text(
            f"copied {source} -> {destination}{again}: {rows:,} "
            f"{plural(rows, 'row')} ({documents:,} {plural(documents, 'artifact')}), "
            f"{report.keyword_rows:,} keyword {plural(report.keyword_rows, 'row')}, "
            f"{report.vectors:,} {plural(report.vectors, 'vector')}"
        )
    )
