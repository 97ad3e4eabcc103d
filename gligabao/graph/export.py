"""The graph of a dataset, exported: its entities and facts, every temporal
field of each fact and where it is stated, as JSON Lines, GraphML or two CSV files.

    from gligabao.graph.export import export
    with open("graph.graphml", "w", encoding="utf-8") as out:
        export(conn, dataset, "graphml", out)

Without `at` every fact is exported, closed ones too, with every entity; with `at`, only
the facts true at that time (as `gb facts --at` finds them) and the entities at either
end of one of them. Everything is read in one read transaction, so entities, facts and
evidence agree even while another process writes; facts are read with their evidence a
batch at a time and written as they come.

JSON Lines: one object a line, entities first (`"type": "entity"`, their own type as
`entity_type`), then facts: the object `gb facts --json` prints plus `"type": "fact"`
and the ids of their ends, `source_id` and `target_id`.

GraphML (directed), as Gephi, networkx and Neo4j's apoc.import.graphml read it: nodes
`n<ID>` with `labels=":Entity:<type>"` (apoc's readLabels), edges `e<ID>` with
`label="<RELATION>"` (apoc's relationship type), and a declared `<key>` for every
attribute (`NODE_KEYS`, `EDGE_KEYS`); an empty or unknown value has no `<data>`.
Characters XML cannot hold (control characters but tab and line breaks) become U+FFFD.

CSV: entities.csv and facts.csv (`ENTITY_COLUMNS`, `FACT_COLUMNS`), a header row each,
an unknown value an empty cell.

`evidence` in GraphML and CSV is compact: `path:LINE` (or `path:LINE-LINE`) for each
place that states the fact, joined by "; " (`document N` for a text without a path).
"""

from __future__ import annotations

import csv
import os
import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from gligabao.base.jsonl import json_record
from gligabao.base.words import plural
from gligabao.errors import GbError, UsageError
from gligabao.graph.queries import Entity, Evidence, Fact, attach_evidence
from gligabao.store import Connection
from gligabao.store import facts as store_facts
from gligabao.store.datasets import Dataset
from gligabao.store.db import read_transaction

__all__ = [
    "EDGE_KEYS",
    "ENTITY_COLUMNS",
    "FACT_COLUMNS",
    "FORMATS",
    "NODE_KEYS",
    "Graph",
    "atomic_file",
    "entity_record",
    "evidence_text",
    "export",
    "fact_json",
    "read_graph",
    "write_csv",
    "write_graphml",
    "write_jsonl",
]

FORMATS = ("jsonl", "graphml", "csv")
BATCH = 5000  # facts whose evidence is read in one query


def entity_record(entity: Entity) -> dict[str, Any]:
    """An entity as an export writes it: `type` says "entity", its own type is
    `entity_type`."""
    record = entity.as_json()
    return {
        "type": "entity",
        **{k: v for k, v in record.items() if k != "type"},
        "entity_type": entity.type,
    }


@dataclass(frozen=True)
class Graph:
    """What an export holds: its entities, and its facts read a batch at a time (each
    call of `facts` reads them again)."""

    dataset: str
    at: str | None
    entities: list[Entity]
    fact_count: int
    facts: Callable[[], Iterator[Fact]]


def read_graph(
    conn: Connection, dataset: Dataset, at: str | None = None, *, batch: int = BATCH
) -> Graph:
    """The graph of `dataset` (every fact, or those true at `at` with the entities they
    touch), oldest id first. Call it, and read its facts, inside one read transaction
    (`export` does) for entities and facts of one moment."""
    rows = store_facts.facts(conn, dataset.id, at=at, closed=True, limit=None)
    rows.sort(key=lambda r: r["id"])
    if at is None:
        entity_rows = store_facts.entities(conn, dataset.id)
    else:
        ends = {r["source_entity_id"] for r in rows} | {r["target_entity_id"] for r in rows}
        entity_rows = store_facts.entities(conn, dataset.id, ids=sorted(ends)) if ends else []
    entity_rows.sort(key=lambda r: r["id"])
    entities = [Entity.from_row(r) for r in entity_rows]

    def facts() -> Iterator[Fact]:
        for start in range(0, len(rows), batch):
            yield from attach_evidence(conn, rows[start : start + batch])

    return Graph(dataset.name, at, entities, len(rows), facts)


def export(
    conn: Connection,
    dataset: Dataset,
    fmt: str,
    out: TextIO | Path,
    at: str | None = None,
    *,
    batch: int = BATCH,
) -> Graph:
    """Write the graph of `dataset` in `fmt` to `out`: a text stream for jsonl and
    graphml, a folder for csv. Returns what was written (its facts not read again)."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    if (fmt == "csv") != isinstance(out, Path):
        raise UsageError("csv is written to a folder; jsonl and graphml to a stream")
    with read_transaction(conn):
        graph = read_graph(conn, dataset, at, batch=batch)
        if fmt == "jsonl":
            write_jsonl(graph, out)  # type: ignore[arg-type]
        elif fmt == "graphml":
            write_graphml(graph, out)  # type: ignore[arg-type]
        else:
            write_csv(graph, out)  # type: ignore[arg-type]
    return graph


def evidence_text(evidence: list[Evidence]) -> str:
    """`path:LINE; path:LINE-LINE`: where a fact is stated, in one string."""
    return "; ".join(e.where for e in evidence)


# ------------------------------------------------------------------ JSON Lines


def fact_json(fact: Fact) -> dict[str, Any]:
    return {
        "type": "fact",
        **fact.as_json(),
        "source_id": fact.source_id,
        "target_id": fact.target_id,
    }


def write_jsonl(graph: Graph, out: TextIO) -> None:
    for entity in graph.entities:
        out.write(json_record(entity_record(entity)))
    for fact in graph.facts():
        out.write(json_record(fact_json(fact)))
    out.flush()


# ------------------------------------------------------------------ GraphML

# (attr.name, attr.type) of each attribute; the <key> ids are "n_NAME" and "e_NAME".
# `label` is the entity's name and the fact's relation, the attribute Gephi shows.
NODE_KEYS = (
    ("label", "string"),
    ("name", "string"),
    ("entity_type", "string"),
    ("summary", "string"),
    ("created_at", "string"),
    ("fact_count", "int"),
    ("document_count", "int"),
)
EDGE_KEYS = (
    ("label", "string"),
    ("relation", "string"),
    ("fact", "string"),
    ("valid_at", "string"),
    ("invalid_at", "string"),
    ("created_at", "string"),
    ("expired_at", "string"),
    ("status", "string"),
    ("current", "boolean"),
    ("closed_by", "int"),
    ("closed_reason", "string"),
    ("evidence", "string"),
    ("evidence_count", "int"),
)

# What XML 1.0 cannot hold at all, even as a character reference.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_TEXT_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"}
_ATTR_ESCAPES = {**_TEXT_ESCAPES, '"': "&quot;", "\n": "&#10;", "\t": "&#9;"}
_TEXT_SPECIAL = re.compile("[&<>\r]")
_ATTR_SPECIAL = re.compile('[&<>\r"\n\t]')


def xml_text(value: str) -> str:
    """`value` as XML character data: escaped, with what XML cannot hold as U+FFFD (a
    carriage return kept as a reference, which parsers do not turn into a line feed)."""
    return _TEXT_SPECIAL.sub(lambda m: _TEXT_ESCAPES[m.group()], _NOT_XML.sub("\ufffd", value))


def xml_attr(value: str) -> str:
    """`value` inside double quotes, whitespace kept (parsers normalize it otherwise)."""
    return _ATTR_SPECIAL.sub(lambda m: _ATTR_ESCAPES[m.group()], _NOT_XML.sub("\ufffd", value))


def _data(prefix: str, values: dict[str, Any]) -> str:
    parts = []
    for name, value in values.items():
        if value is None or value == "":
            continue
        text = str(value).lower() if isinstance(value, bool) else xml_text(str(value))
        parts.append(f'      <data key="{prefix}_{name}">{text}</data>\n')
    return "".join(parts)


def _labels(entity_type: str) -> str:
    """Neo4j labels, as apoc writes them: ":Entity:Person" (a ':' in a type would split
    it, so it becomes '_')."""
    kind = " ".join(entity_type.replace(":", "_").split())
    return ":Entity" + (f":{kind}" if kind and kind != "Entity" else "")


def write_graphml(graph: Graph, out: TextIO) -> None:
    out.write(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"\n'
        '    xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"\n'
        '    xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns\n'
        '     http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">\n'
    )
    for prefix, where, keys in (("n", "node", NODE_KEYS), ("e", "edge", EDGE_KEYS)):
        for name, kind in keys:
            out.write(
                f'  <key id="{prefix}_{name}" for="{where}" attr.name="{name}" '
                f'attr.type="{kind}"/>\n'
            )
    when = f" true at {graph.at}" if graph.at else ", closed ones too"
    out.write(
        '  <graph id="G" edgedefault="directed">\n'
        f"    <desc>{xml_text(f'gb export of dataset {graph.dataset!r}: ')}"
        f"{len(graph.entities)} {plural(len(graph.entities), 'entity')}, {graph.fact_count} "
        f"{plural(graph.fact_count, 'fact')}{xml_text(when)}</desc>\n"
    )
    for entity in graph.entities:
        out.write(f'    <node id="n{entity.id}" labels="{xml_attr(_labels(entity.type))}">\n')
        out.write(
            _data(
                "n",
                {
                    "label": entity.name,
                    "name": entity.name,
                    "entity_type": entity.type,
                    "summary": entity.summary,
                    "created_at": entity.created_at,
                    "fact_count": entity.fact_count,
                    "document_count": entity.document_count,
                },
            )
        )
        out.write("    </node>\n")
    for fact in graph.facts():
        out.write(
            f'    <edge id="e{fact.id}" source="n{fact.source_id}" target="n{fact.target_id}" '
            f'label="{xml_attr(fact.relation)}">\n'
        )
        closer = fact.closed_by or {}
        out.write(
            _data(
                "e",
                {
                    "label": fact.relation,
                    "relation": fact.relation,
                    "fact": fact.fact,
                    "valid_at": fact.valid_at,
                    "invalid_at": fact.invalid_at,
                    "created_at": fact.created_at,
                    "expired_at": fact.expired_at,
                    "status": fact.status,
                    "current": fact.status == "current",
                    "closed_by": closer.get("id"),
                    "closed_reason": closer.get("reason"),
                    "evidence": evidence_text(fact.evidence),
                    "evidence_count": len(fact.evidence),
                },
            )
        )
        out.write("    </edge>\n")
    out.write("  </graph>\n</graphml>\n")
    out.flush()


# ------------------------------------------------------------------ CSV

ENTITY_COLUMNS = (
    "id",
    "name",
    "entity_type",
    "summary",
    "created_at",
    "fact_count",
    "document_count",
)
FACT_COLUMNS = (
    "id",
    "source_id",
    "source",
    "relation",
    "target_id",
    "target",
    "fact",
    "valid_at",
    "invalid_at",
    "created_at",
    "expired_at",
    "status",
    "closed_by",
    "closed_reason",
    "evidence",
)


def _fact_row(fact: Fact) -> list[Any]:
    closer = fact.closed_by or {}
    return [
        fact.id,
        fact.source_id,
        fact.source,
        fact.relation,
        fact.target_id,
        fact.target,
        fact.fact,
        fact.valid_at,
        fact.invalid_at,
        fact.created_at,
        fact.expired_at,
        fact.status,
        closer.get("id"),
        closer.get("reason"),
        evidence_text(fact.evidence),
    ]


def write_csv(graph: Graph, folder: Path) -> None:
    """entities.csv and facts.csv in `folder` (made if missing), each written whole
    before either replaces what was there."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GbError(f"cannot make the folder {folder}: {exc.strerror}") from None
    with (
        atomic_file(folder / "entities.csv", newline="") as entities_out,
        atomic_file(folder / "facts.csv", newline="") as facts_out,
    ):
        writer = csv.writer(entities_out)
        writer.writerow(ENTITY_COLUMNS)
        for e in graph.entities:
            record = entity_record(e)
            writer.writerow([record[column] for column in ENTITY_COLUMNS])
        writer = csv.writer(facts_out)
        writer.writerow(FACT_COLUMNS)
        for fact in graph.facts():
            writer.writerow(_fact_row(fact))


# ------------------------------------------------------------------ files


@contextmanager
def atomic_file(path: Path, *, newline: str | None = None) -> Iterator[TextIO]:
    """A UTF-8 text file that replaces `path` only once written whole: a temporary file
    beside it, flushed to disk and renamed; removed if anything fails on the way."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        # 0o666 less the umask, as a file made by open() would be (mkstemp's is 0o600).
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise GbError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException as exc:
        temp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise GbError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
