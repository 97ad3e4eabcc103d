"""`gb export`: the graph of a dataset, to standard output or a file, as JSON Lines,
GraphML or CSV (gligabao/graph/export.py).

It only reads: it opens the database without creating one (exit 6 when there is none).
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from gligabao.base.words import plural
from gligabao.cli import options, render
from gligabao.cli.app import command, memory
from gligabao.errors import UsageError


@command("export")
def export_command(
    fmt: str = typer.Option(
        "jsonl", "--format", "-f", metavar="jsonl|graphml|csv", help="The file format."
    ),
    at: str = typer.Option(
        None,
        "--at",
        metavar="TIME",
        help="Only the facts true at this time (ISO-8601) and the entities they touch.",
    ),
    output: str = typer.Option(
        None,
        "-o",
        "--output",
        metavar="PATH",
        help="Write this file (replaced whole, once written); for csv the folder to "
        "write entities.csv and facts.csv into (required). Else standard output.",
    ),
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
) -> None:
    """Export the graph: JSON Lines, GraphML or CSV.

    Export the graph of a dataset: its entities and facts, with every temporal field
    (valid_at, invalid_at, created_at, expired_at, status, closed_by) and the evidence of
    each fact.

    Without --at, every entity and every fact, closed ones too. With --at, only the facts
    true at that time (exactly those gb facts --at finds) and the entities at either end
    of one of them; an entity with no fact true then is left out.

    \b
    Formats:
      jsonl    one object a line, entities first: "type": "entity" with id, name,
               entity_type (the entity's own type), summary, created_at, fact_count,
               document_count; then "type": "fact": what gb facts --json prints
               (closed_by {id, fact, reason}, evidence with path, lines, quote),
               plus source_id and target_id, the ids of its ends.
      graphml  a directed graph for Gephi, networkx or Neo4j (apoc.import.graphml,
               readLabels: true): nodes n<ID> (label, name, entity_type, summary,
               created_at, fact_count, document_count), edges e<ID> (label, relation,
               fact, valid_at, invalid_at, created_at, expired_at, status, current,
               closed_by, closed_reason, evidence, evidence_count); an unknown or
               empty value is left out.
      csv      entities.csv and facts.csv in the folder -o names, a header row each;
               facts name their ends by id and by name.
    In graphml and csv, evidence is "path:LINE; path:LINE-LINE".

    \b
    Examples:
      gb export --format graphml -o graph.graphml
      gb export --at 2019-06-01 | jq 'select(.type == "fact") | .fact'
      gb export --format csv -o graph/ --dataset work
    """
    from gligabao.graph.export import FORMATS

    fmt = fmt.strip().lower()
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    to_stdout = output is None or output == "-"
    if fmt == "csv" and to_stdout:
        raise UsageError("--format csv writes two files: name their folder with -o FOLDER")
    if not to_stdout and fmt != "csv" and Path(output).is_dir():
        raise UsageError(f"-o {output} is a folder; name the file to write")
    if fmt == "csv" and Path(output).exists() and not Path(output).is_dir():
        raise UsageError(f"-o {output} is a file; csv needs a folder for its two files")
    service = memory(config_path, {"database": db, "schema": schema, "dataset": dataset})
    graph = service.export(fmt, at=at, output=None if to_stdout else output, stream=sys.stdout)
    if not to_stdout:
        entities, facts = len(graph.entities), graph.fact_count
        render.notice(
            f"{entities} {plural(entities, 'entity')} and {facts} {plural(facts, 'fact')} "
            f"-> {output}"
        )
