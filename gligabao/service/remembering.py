"""One run of `remember` as every face starts it: the inputs found (what is skipped said),
the budget checked against the prices, the LLM client made, every input remembered with
its result handed back as it ends, and the files gone from the folders walked."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gligabao.base.words import plural
from gligabao.errors import ConfigError, UsageError
from gligabao.read.discovery import Discovery, skip_summary
from gligabao.read.files import STDIN, shown_name
from gligabao.remember.result import Remembered

if TYPE_CHECKING:
    from gligabao.base.stopping import Stop
    from gligabao.calls import Budget
    from gligabao.config import Config
    from gligabao.llm.client import LLM
    from gligabao.remember.batch import Tally
    from gligabao.remember.document import Options
    from gligabao.service.arguments import Checks
    from gligabao.store import Connection

__all__ = ["Batch", "prepare", "remember_text", "run_options", "skip_notices"]

Notice = Callable[[str], None]


def skip_notices(found: Discovery, *, each: bool) -> list[str]:
    """What to say of the files skipped: one line for all, by reason; with `each`, a
    line for each of them first."""
    said = [f"skipped {shown_name(s.path)}: {s.reason}" for s in found.skipped] if each else []
    summary = skip_summary(found.skipped)
    return said if summary is None else [*said, summary]


def budget_for(config: Config, max_cost: float | None) -> Budget | None:
    """The run's budget (--max-cost), refused when a model it may call has no price."""
    if max_cost is None:
        return None
    from gligabao.calls import Budget

    budget = Budget(config, max_cost)
    missing = budget.missing_prices()
    if missing:
        raise ConfigError(
            f"--max-cost needs a price for every model it may call; add [prices] entries "
            f"for {', '.join(missing)} to gligabao.toml"
        )
    return budget


@dataclasses.dataclass
class Batch:
    """The inputs of one run, ready: `run` remembers them, each result told as it ends and
    counted in `tally` (the summary line and the exit code); `gone` then lists the files
    remembered from the folders walked that are deleted (with `prune`, removed)."""

    conn: Connection
    config: Config
    found: Discovery
    options: Options
    llm: LLM
    budget: Budget | None
    tally: Tally

    @property
    def inputs(self) -> list[str]:
        return self.found.inputs

    def calls_out(self) -> int:
        """Requests sent and not answered yet (the progress line's)."""
        return self.llm.calls_out()

    def run(
        self,
        on_result: Callable[[Remembered], None],
        on_step: Callable[[str, str, dict[str, Any]], None] | None = None,
    ) -> Tally:
        """Remember every input; a signal (KeyboardInterrupt) leaves what was stored."""
        from gligabao.remember.batch import remember_all

        options = self.options
        if on_step is not None:
            options = dataclasses.replace(options, on_step=on_step)

        def counted(result: Remembered) -> None:
            self.tally.add(result)
            on_result(result)

        remember_all(self.conn, self.inputs, self.config, self.llm, options, counted, self.budget)
        return self.tally

    def stopped(self) -> str | None:
        """The run's one line about --max-cost once it stopped the run, else None: said
        once, after the run, with the total the summary gives, rather than once for each
        input it stopped, each with the total spent at that moment."""
        from gligabao.remember.result import LEFT

        left = self.tally.by_status.get(LEFT, 0)
        if self.budget is None or not self.budget.reached or not left:
            return None
        return (
            f"stopped at --max-cost ${self.budget.limit:g}: ${self.tally.cost:.4f} spent, "
            f"{left} {plural(left, 'input')} left; run the same command again to go on"
        )

    def gone(self, paths: Sequence[str], *, prune: bool) -> list[dict[str, Any]]:
        """The files remembered from the folders among `paths` that are deleted, each as
        its `--json` line: `deleted`, or with `prune` `removed`, its facts expired."""
        from gligabao.remember.status import deleted_files
        from gligabao.remember.status import prune as prune_file
        from gligabao.store import datasets

        dataset = datasets.find_dataset(self.conn, self.config["dataset"])
        folders = [p for p in paths if p != STDIN and os.path.isdir(p)]
        lines = []
        for gone in deleted_files(self.conn, dataset and dataset.id, folders, self.inputs):
            status = "removed" if prune else "deleted"
            line = {"source": gone.source, "status": status, "artifact_id": gone.document_id}
            if prune:
                line["facts_expired"] = prune_file(self.conn, gone)
            lines.append(line)
        return lines


def run_options(
    config: Config,
    checks: Checks,
    on_notice: Notice | None,
    *,
    session: str | None = None,
    valid_at: str | None = None,
    reference_time: str | None = None,
    kind: str = "document",
    force: bool = False,
    stages: str | None = None,
    trace: bool = False,
    all_branches: bool = False,
    name: str | None = None,
    stop: Stop | None = None,
) -> Options:
    """A run's options, its arguments checked; the configured stages refused before any
    input is read. `stages` as --stages names them (None: the configuration's); `name`
    is what standard input is stored and shown as."""
    from gligabao.remember.document import Options, parse_stages

    parse_stages(config["stages"], "config stages")
    moment = checks.time("valid_at", valid_at)
    chosen = stages and parse_stages(stages, checks.name("stages"))
    return Options(
        dataset=config["dataset"],
        kind=kind,
        session=session,
        valid_at=moment,
        reference_time=checks.time("reference_time", reference_time) or moment,
        force=force,
        stages=chosen or None,
        trace=trace,
        all_branches=all_branches,
        stdin_name=_stdin_name(checks, name),
        on_notice=on_notice,
        stop=stop,
    )


def _stdin_name(checks: Checks, name: str | None) -> str | None:
    """The name standard input is stored under, checked: a text that says something."""
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise UsageError(f"{checks.name('name')} must name the text, not {name!r}")
    return name


def prepare(
    config: Config,
    checks: Checks,
    on_notice: Notice | None,
    connect: Callable[[], Any],
    paths: Sequence[str],
    *,
    recursive: bool = False,
    glob: Sequence[str] = (),
    files_from: str | None = None,
    null: bool = False,
    max_cost: float | None = None,
    each_skipped: bool = False,
    **how: Any,
) -> Batch:
    """`paths` (files, folders with `recursive`, `-`) and the `files_from` list found,
    what is skipped said (each file with `each_skipped`), the budget and the LLM client
    made: a Batch whose `run` remembers them."""
    from gligabao.read.discovery import discover
    from gligabao.remember.batch import Tally

    max_cost = checks.amount("max_cost", max_cost)
    options = run_options(config, checks, on_notice, **how)
    found = discover(paths, recursive=recursive, globs=glob, files_from=files_from, null_sep=null)
    if options.stdin_name is not None and STDIN not in found.inputs:
        raise UsageError(f"{checks.name('name')} names standard input: remember - with it")
    for said in skip_notices(found, each=each_skipped) if on_notice is not None else ():
        on_notice(said)
    budget = budget_for(config, max_cost)
    conn = connect()
    from gligabao.llm import LLM  # the openai SDK (~0.45 s): only to remember

    tally = Tally(total=len(found.inputs))
    return Batch(conn, config, found, options, LLM(config), budget, tally)


def remember_text(
    config: Config,
    checks: Checks,
    on_notice: Notice | None,
    connect: Callable[[], Any],
    text: str,
    name: str | None,
    how: dict[str, Any],
) -> Remembered:
    """A text remembered as `gb remember - --name NAME` remembers standard input: stored
    and shown as `name` (else `-`); a text refused or a run that fails raises."""
    from gligabao.llm import LLM
    from gligabao.read.files import decode
    from gligabao.read.sources import Source
    from gligabao.remember.document import remember

    if not isinstance(text, str):
        raise UsageError(f"the text to remember must be a str, not {type(text).__name__}")
    options = run_options(config, checks, on_notice, name=name, **how)
    shown = options.stdin_name or STDIN
    data = text.encode("utf-8", "surrogatepass")
    source = Source(STDIN, data, decode(shown, data), stored_as=options.stdin_name)
    llm = LLM(config)  # a client that cannot be made: refused before the file is created
    done = remember(connect(), source, config, llm, options)
    return dataclasses.replace(done, source=shown)
