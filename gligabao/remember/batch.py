"""Many inputs in one run: documents overlap, sharing one event loop and one limiter.

Each document keeps its own order (one transaction per chunk, in order), but while one
waits on the network the others' calls fill the `concurrency` slots, so a folder of
short files imports at the speed of the endpoint, not of one file after another.
Inputs are read as their turn comes and results are handed back one by one as they
end, so memory stays flat however many files there are. One bad input never sinks the
batch; --max-cost stops new calls and reports what was left.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gligabao.calls import Budget, BudgetReached, Spend
from gligabao.config import Config
from gligabao.errors import ExitCode, GbError
from gligabao.read.files import FOLDER_WALKED, STDIN, shown_name
from gligabao.read.sources import Source, read_sources
from gligabao.remember.document import Options, remember_async, require_embeddings
from gligabao.remember.result import FAILED, LEFT, PENDING, Remembered
from gligabao.store import Connection

if TYPE_CHECKING:  # the client imports the openai SDK; it is passed in, not made here
    from gligabao.llm.client import LLM


def remember_all(
    conn: Connection,
    names: Iterable[str],
    config: Config,
    llm: LLM,
    options: Options,
    on_result: Callable[[Remembered], None],
    budget: Budget | None = None,
) -> None:
    """Remember every input; ``on_result`` is called for each as it ends."""
    require_embeddings(llm)  # once, not once an input

    async def run() -> None:
        try:
            await _run_all(conn, names, config, llm, options, on_result, budget)
        finally:
            await llm.aclose()

    asyncio.run(run())


async def _run_all(conn, names, config, llm, options, on_result, budget) -> None:
    # Enough documents at once to keep every request slot busy while some of them are
    # in their store phase, and few enough that memory does not grow with the batch.
    window = max(4, 2 * config["concurrency"])
    running: set[asyncio.Task[None]] = set()

    async def one(name: str) -> None:
        if budget is not None and budget.reached:
            on_result(Remembered(name, LEFT))
            return
        try:
            sources = read_sources(
                name,
                chat=config["mode"] == "chat",
                all_branches=options.all_branches,
                folder=FOLDER_WALKED,
            )
        except GbError as exc:
            on_result(Remembered(name, FAILED, failure=exc))
            return
        if name == STDIN and options.stdin_name is not None:
            sources = [replace(s, stored_as=options.stdin_name) for s in sources]
        # A chat export: each conversation (and branch) is a document, reported as one.
        for source in sources:
            await remember_one(source.label, source)

    async def remember_one(name: str, source: Source) -> None:
        if budget is not None and budget.reached:
            on_result(Remembered(name, LEFT))
            return
        spend = Spend()
        try:
            done = await remember_async(conn, source, config, llm, options, budget, spend)
        except GbError as exc:
            stopped = isinstance(exc, BudgetReached) or isinstance(exc.__cause__, BudgetReached)
            on_result(Remembered(name, LEFT if stopped else FAILED, failure=exc, spend=spend))
            return
        except Exception as exc:  # not foreseen (a store error...): this input fails, not all
            error = GbError(llm.scrub(f"{shown_name(name)}: {type(exc).__name__}: {exc}"))
            error.__cause__ = exc
            on_result(Remembered(name, FAILED, failure=error, spend=spend))
            return
        on_result(done)

    for name in names:
        if len(running) >= window:
            done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # raise what ended a task, never drop it unseen
        running.add(asyncio.ensure_future(one(name)))
    if running:
        await asyncio.gather(*running)


@dataclass
class Tally:
    """What a batch did so far: for the progress display, the summary and the exit code."""

    total: int = 0
    done: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    errors: list[GbError] = field(default_factory=list)
    chunks: int = 0
    tokens: int = 0
    cost: float = 0.0
    priced: bool = True
    unpriced: int = 0  # calls without a price
    notices: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)  # notices of inputs left pending
    started: float = field(default_factory=time.monotonic)

    def add(self, result: Remembered) -> None:
        self.done += 1
        self.by_status[result.status] = self.by_status.get(result.status, 0) + 1
        if result.failure is not None and result.status == FAILED:
            self.errors.append(result.failure)
        spend = result.spend or Spend()
        self.tokens += spend.input_tokens + spend.output_tokens
        self.cost += spend.cost
        self.priced = self.priced and spend.priced
        self.unpriced += spend.unpriced
        self.chunks += len(result.response.get("chunks", ()))
        for notice in result.notices:
            if notice not in self.notices:
                self.notices.append(notice)
            if result.status == PENDING and notice not in self.unfinished:
                self.unfinished.append(notice)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def exit_code(self) -> ExitCode:
        # Stored with stages pending (the endpoint could not be reached) is partial too:
        # a cron job must see that the night's import is not done.
        failed = len(self.errors)
        left = self.by_status.get(LEFT, 0) + self.by_status.get(PENDING, 0)
        if not failed:
            return ExitCode.PARTIAL if left else ExitCode.OK
        if failed == self.total:
            codes = {e.exit_code for e in self.errors}
            return codes.pop() if len(codes) == 1 else ExitCode.FAILURE
        return ExitCode.PARTIAL
