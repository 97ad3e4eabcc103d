"""`gb remember`: documents in, chunks, graph, summaries and vectors stored."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

import typer

from gligabao.base.jsonl import json_line
from gligabao.base.words import counted
from gligabao.cli import options
from gligabao.cli.app import FLAGS, command, interrupted, memory
from gligabao.config import REASONING_LEVELS, STAGES
from gligabao.errors import ExitCode, Interrupted, UsageError
from gligabao.read.files import STDIN, shown_name

if TYPE_CHECKING:
    from gligabao.remember.batch import Tally
    from gligabao.remember.result import Remembered
    from gligabao.service.sizing import DryRun


@command("remember")
def remember_command(
    paths: options.Paths = None,
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    kind: str = typer.Option(
        "document",
        metavar="KIND",
        help="Kind of the document (chunk_summary and chunk_context are gb's own).",
    ),
    session: str = typer.Option(
        None, metavar="ID", help="Session the document and its facts belong to."
    ),
    valid_at: str = typer.Option(
        None,
        "--valid-at",
        metavar="TIME",
        help="ISO-8601 time the text is valid from (default now).",
    ),
    reference_time: str = typer.Option(
        None,
        "--reference-time",
        metavar="TIME",
        help="ISO-8601 time relative dates are read against (default valid-at).",
    ),
    model: list[str] = typer.Option(
        None,
        "-m",
        "--model",
        metavar="[STAGE=]MODEL",
        help="The chat model: MODEL for every stage (config models.default), or "
        "STAGE=MODEL for one (repeatable); stages: extract_graph, summarize_chunk, resolve, "
        "contextualize_chunk, default.",
    ),
    reasoning: options.StageValues = None,
    concurrency: options.Concurrency = None,
    chunk_size: options.ChunkSize = None,
    overlap: options.Overlap = None,
    mode: options.Mode = None,
    tokenizer: options.TokenizerSpec = None,
    recursive: bool = typer.Option(
        False, "-r", "--recursive", help="Remember the files in folders given, and below."
    ),
    glob: list[str] = typer.Option(
        None,
        "--glob",
        metavar="PATTERN",
        help="With -r, only files matching PATTERN (repeatable), e.g. '*.md'.",
    ),
    files_from: str = typer.Option(
        None,
        "--files-from",
        metavar="FILE",
        help="Read the paths to remember from FILE, one a line; - for stdin.",
    ),
    null: bool = typer.Option(
        False, "-0", "--null", help="--files-from paths are NUL-separated (find -print0)."
    ),
    contextual: bool = typer.Option(
        None,
        "--contextual/--no-contextual",
        help="Write a short context situating each chunk in its document, embedded and "
        "indexed with it (one more LLM call a chunk; config `contextual`).",
        show_default=False,
    ),
    stages: str = typer.Option(
        None,
        "--stages",
        metavar="LIST",
        help="What to do, comma-separated: graph,summaries,embed (all, the default) or "
        "embed (vectors only, no chat calls; a later run with all completes the rest). "
        "Config `stages`.",
    ),
    no_graph: bool = typer.Option(
        False, "--no-graph", help="Shorthand for --stages embed: search without a graph."
    ),
    force: bool = typer.Option(
        False, "--force", help="Remember inputs again even when already stored whole."
    ),
    prune: bool = typer.Option(
        False,
        "--prune",
        help="With -r, mark files deleted from the folders removed and expire their facts.",
    ),
    max_cost: float = typer.Option(
        None,
        "--max-cost",
        min=0,
        metavar="USD",
        help="Stop before the run's LLM cost passes USD (needs a price for each model: "
        "[prices], or built in for the default models at OpenAI).",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="Print only errors (and --json lines)."
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="List each file skipped, and why (default: one line)."
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Store nothing, ask nothing: say how the inputs would be cut and the LLM calls, "
        "input tokens and cost it would take (works with no endpoint).",
    ),
    name: str = typer.Option(
        None,
        "--name",
        metavar="NAME",
        help="The name standard input (-) is stored and shown under, its source (default -).",
    ),
    all_branches: options.AllBranches = False,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
    trace: options.Trace = False,
) -> None:
    """Remember documents: graph, summaries, vectors.

    Remember documents: cut, extract a knowledge graph, summarize, embed, store.

    Run it again on the same input to finish a document a failure left halfway, or one
    stored offline (without an LLM endpoint); a document already complete is unchanged.

    Many inputs overlap their LLM calls; an input already stored whole is reported
    unchanged and costs nothing; a changed file is stored as a new version that supersedes
    the old one, only its changed chunks extracted again (--force: all of them). One bad
    input never stops the others (exit code 4: partial).

    A PDF, an HTML page or a chat export (ChatGPT's or Claude's conversations.json,
    JSON Lines of messages) is read by its reader; each chunk keeps its pages or
    messages (--json: `locations`).

    \b
    Examples:
      gb remember notes.md
      gb remember report.pdf conversations.json
      cat mail.txt | gb remember - --name mail.txt --session inbox
      find docs -name '*.md' -print0 | gb remember --files-from - -0 --quiet
      gb remember -r docs --dry-run     # what it would cut, call and cost; nothing done
    """
    if prune and not recursive:
        raise UsageError("--prune goes with -r FOLDER: it removes the files deleted from it")
    flags: dict[str, object] = {
        "database": db,
        "schema": schema,
        "dataset": dataset,
        "concurrency": concurrency,
        "contextual": contextual,
        **options.chunk_flags(chunk_size, overlap, mode, tokenizer),
    }
    flags.update(_stage_flags("models", model, None))
    flags.update(_stage_flags("reasoning", reasoning, REASONING_LEVELS))
    service = memory(config_path, flags, {**FLAGS, "name": "--name"}, quiet=quiet)
    if not paths and not files_from and sys.stdin.isatty():
        raise UsageError("no input: name a PATH, or pipe text into `gb remember -`")
    if dry_run:
        plan = service.dry_run(
            paths or ([] if files_from else [STDIN]),
            recursive=recursive,
            glob=glob or (),
            files_from=files_from,
            null=null,
            stages="embed" if no_graph else stages,
            all_branches=all_branches,
            name=name,
            each_skipped=verbose,
        )
        _dry_run_report(plan, as_json=as_json, quiet=quiet)
    batch = service.batch(
        paths or ([] if files_from else [STDIN]),
        recursive=recursive,
        glob=glob or (),
        files_from=files_from,
        null=null,
        session=session,
        valid_at=valid_at,
        reference_time=reference_time,
        kind=kind,
        force=force,
        stages="embed" if no_graph else stages,
        trace=trace,
        all_branches=all_branches,
        name=name,
        max_cost=max_cost,
        each_skipped=verbose,
    )
    if STDIN in batch.inputs and sys.stdin.isatty():
        # A person at a terminal would otherwise see nothing happen, and not know that gb
        # waits for them to type (or paste) the text, nor how to end it.
        _notice("reading standard input: type or paste the text, then Ctrl-D on a line of its own")
    several = len(batch.inputs) > 1
    # The bar is for a terminal only: without one, --json and --quiet runs (cron's) never
    # import rich, ~35 ms of every such run.
    progress = None
    if several and not quiet and sys.stderr.isatty():
        progress = _render().BatchProgress(batch.tally, enabled=True, calls_out=batch.calls_out)
    live = progress is not None and progress.live is not None
    with progress or contextlib.nullcontext():

        def report(result: Remembered) -> None:
            if progress is not None:
                progress.update(result.source)
            # A file name's bytes that are not UTF-8, as they are stored: printable.
            result = dataclasses.replace(result, source=shown_name(result.source))
            # An input --max-cost stopped is said once for them all, after the run.
            if result.failure is not None and not result.left:
                _render().error(str(result.failure))
            if as_json:
                json_line(result.as_json())
            elif result.stored and not quiet:
                render = _render()
                if several:
                    render.result_line(result)
                else:
                    render.remember_panel(result)
                _version_notice(result)
                if trace:
                    render.trajectory(result.trajectory)

        try:
            tally = batch.run(report, progress.on_step if live else None)
        except KeyboardInterrupt:  # SIGINT, SIGTERM, SIGHUP (cli/app.py)
            raise _interrupted(batch.tally) from None
    if (stopped := batch.stopped()) is not None:
        _render().error(stopped)
    if recursive:
        _deleted_files(batch.gone(paths or [], prune=prune), as_json=as_json, quiet=quiet)
    for notice in tally.notices:
        # What a cron job must hear of even with --quiet: inputs left with stages pending.
        if not quiet or notice in tally.unfinished:
            _render().warning(notice)
    if several and not quiet:
        _notice(_render().tally_summary(tally, skipped=len(batch.found.skipped)))
    tuned = service.tune_if_due() if tally.exit_code() in (ExitCode.OK, ExitCode.PARTIAL) else None
    if tuned is not None and not quiet:
        _notice(
            f"learnt the hybrid vector weight of '{tuned.dataset}': {tuned.weight:.2f}, "
            f"from {tuned.queries} pseudo-queries ({tuned.calls} LLM calls)"
        )
    raise typer.Exit(int(tally.exit_code()))


def _dry_run_report(plan: DryRun, *, as_json: bool, quiet: bool) -> None:
    """What --dry-run found: each input refused in one line, each document and the total
    (a JSON line each with --json); its exit code as a run's (3 every input refused, 4
    some)."""
    render = _render()
    for refused in plan.refused:
        render.error(str(refused))
    if as_json:
        for sized in plan.documents:
            json_line(sized.as_json())
        json_line(plan.as_json())
    elif not quiet:
        render.dry_run_view(plan)
    code = 0
    if plan.refused:
        code = ExitCode.BAD_INPUT if not plan.documents else ExitCode.PARTIAL
    raise typer.Exit(int(code))


def _render() -> ModuleType:
    """What prints for a person (rich, ~35 ms to import): imported when there is some."""
    from gligabao.cli import render

    return render


def _notice(message: str) -> None:
    _render().notice(message)


def _version_notice(result: Remembered) -> None:
    """What a new version of a changed file cost: chunks taken over, extracted, facts
    expired."""
    version = result.response.get("previous_version")
    if version is not None:
        _notice(
            f"{result.source}: replaces document {version['artifact_id']}: "
            f"{counted(version['chunks_reused'], 'chunk')} reused, "
            f"{version['chunks_extracted']} extracted again, "
            f"{counted(version['facts_expired'], 'fact')} expired (no longer stated)"
        )


def _deleted_files(lines: list[dict[str, Any]], *, as_json: bool, quiet: bool) -> None:
    """Files remembered from the folders walked that are gone: each said, or with
    --prune said removed, its facts expired."""
    for line in lines:
        if as_json:
            json_line(line)
        elif not quiet:
            if line["status"] == "removed":
                said = (
                    f"document {line['artifact_id']} removed, "
                    f"{counted(line['facts_expired'], 'fact')} expired"
                )
            else:
                said = f"still remembered as document {line['artifact_id']} (--prune removes it)"
            _notice(f"{line['source']}: deleted; {said}")


def _interrupted(tally: Tally) -> Interrupted:
    """What a signal left: every chunk stored before it is kept whole (the one being
    stored rolled back), every answer received is kept, and a rerun goes on from there."""
    done = f"{tally.done} of {counted(tally.total, 'input')} done; " if tally.total > 1 else ""
    return interrupted(
        f"{done}what was stored is kept, each chunk whole; run the same command again to continue"
    )


def _stage_flags(
    section: str, values: list[str] | None, allowed: tuple[str, ...] | None
) -> dict[str, str]:
    flags = {}
    for value in values or ():
        stage, sep, setting = value.partition("=")
        stage, setting = stage.strip(), setting.strip()
        if section == "models" and not sep and stage:
            # `-m gpt-4o`: a model alone is the default model, the one most runs change;
            # STAGE=MODEL still picks one stage's.
            stage, sep, setting = "default", "=", stage
        stages = ("default", *STAGES) if section == "models" else STAGES
        # A flag that cannot work is a usage error (exit 2), as every bad option value is.
        if not sep or stage not in stages or not setting:
            raise UsageError(
                f"--{'model' if section == 'models' else 'reasoning'} {value!r}: "
                f"expected {'MODEL or ' if section == 'models' else ''}STAGE=VALUE with STAGE "
                f"one of {', '.join(stages)}"
            )
        if allowed and setting not in allowed:
            raise UsageError(
                f"--reasoning {value!r}: the level must be one of {', '.join(allowed)}"
            )
        flags[f"{section}.{stage}"] = setting
    return flags
