"""`gb remember`: documents in, chunks, graph, summaries and vectors stored."""

from __future__ import annotations

import sys
from datetime import datetime, timezone

import typer

from gligabao import render
from gligabao.cli import options
from gligabao.cli.app import command, configure, open_store
from gligabao.config import REASONING_LEVELS, STAGES
from gligabao.errors import ConfigError, ExitCode, GbError, InputError
from gligabao.inputs import STDIN, read_source
from gligabao.llm import LLM
from gligabao.pipeline import Options, remember


@command("remember")
def remember_command(
    paths: options.Paths = None,
    db: options.Db = None,
    dataset: options.Dataset = None,
    kind: str = typer.Option("document", help="Kind of the artifact (chunk_summary is gb's own)."),
    session: str = typer.Option(None, help="Session the document and its facts belong to."),
    valid_at: str = typer.Option(
        None, "--valid-at", help="ISO-8601 time the text is valid from (default now)."
    ),
    reference_time: str = typer.Option(
        None,
        "--reference-time",
        help="ISO-8601 time relative dates are read against (default valid-at).",
    ),
    model: options.StageValues = None,
    reasoning: options.StageValues = None,
    concurrency: options.Concurrency = None,
    chunk_size: options.ChunkSize = None,
    overlap: options.Overlap = None,
    mode: options.Mode = None,
    tokenizer: options.TokenizerSpec = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
    trace: options.Trace = False,
) -> None:
    """Remember documents: cut, extract a knowledge graph, summarize, embed, store.

    Run it again on the same input to finish a document a failure left halfway, or one
    stored offline (without an LLM endpoint); a document already complete is unchanged.

    Example: gb remember notes.md    cat mail.txt | gb remember - --session inbox
    """
    flags: dict[str, object] = {
        "database": db,
        "dataset": dataset,
        "concurrency": concurrency,
        "chunk_size": chunk_size,
        "chunk_overlap_percent": overlap,
        "mode": mode,
        "tokenizer": tokenizer,
    }
    flags.update(_stage_flags("models", model, None))
    flags.update(_stage_flags("reasoning", reasoning, REASONING_LEVELS))
    config = configure(config_path, flags, cutting=True)
    valid = _iso("--valid-at", valid_at)
    run_options = Options(
        dataset=config["dataset"],
        kind=kind,
        session=session,
        valid_at=valid,
        reference_time=_iso("--reference-time", reference_time) or valid,
        trace=trace,
    )
    if not paths and sys.stdin.isatty():
        render.error("no input: name a PATH, or pipe text into `gb remember -`")
        raise typer.Exit(int(ExitCode.USAGE))
    names = paths or [STDIN]
    conn = open_store(config)
    llm = LLM(config)
    failures: list[GbError] = []
    for name in names:
        try:
            source = read_source(name)
            outcome = remember(conn, source, config, llm, run_options)
        except GbError as exc:
            if len(names) == 1:
                raise
            render.error(str(exc))
            failures.append(exc)
            continue
        for notice in outcome.notices:
            render.warning(notice)
        if as_json:
            render.json_line(outcome.response)
        else:
            render.remember_panel(name, outcome)
            if trace:
                render.trajectory(outcome.trajectory)
    if failures:
        everything = len(failures) == len(names)
        if everything and all(isinstance(f, InputError) for f in failures):
            raise typer.Exit(int(ExitCode.BAD_INPUT))
        raise typer.Exit(int(ExitCode.FAILURE if everything else ExitCode.PARTIAL))


def _stage_flags(
    section: str, values: list[str] | None, allowed: tuple[str, ...] | None
) -> dict[str, str]:
    flags = {}
    for value in values or ():
        stage, sep, setting = value.partition("=")
        stage, setting = stage.strip(), setting.strip()
        stages = ("default", *STAGES) if section == "models" else STAGES
        if not sep or stage not in stages or not setting:
            raise ConfigError(
                f"--{'model' if section == 'models' else 'reasoning'} {value!r}: "
                f"expected STAGE=VALUE with STAGE one of {', '.join(stages)}"
            )
        if allowed and setting not in allowed:
            raise ConfigError(
                f"--reasoning {value!r}: the level must be one of {', '.join(allowed)}"
            )
        flags[f"{section}.{stage}"] = setting
    return flags


def _iso(flag: str, value: str | None) -> str | None:
    """An ISO-8601 time as UTC text; a time without zone is taken as UTC."""
    if value is None:
        return None
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise ConfigError(
            f"{flag} {value!r} is not an ISO-8601 time (for example 2024-05-01 or "
            "2024-05-01T09:30:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
