"""`gb ask QUESTION`: an answer from the memory, each claim cited to a source checked.

The answer's words are shown on a terminal as they come, then replaced by the answer
once its citations are checked (a sentence without support marked); piped, it is
printed once, plain. Then its sources, `[n] path:LINE` with the words quoted and a
fact's interval. No citation that holds: gb says it found no support in the memory,
shows the closest sources, and exits 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from gligabao.base.words import counted
from gligabao.cli import options
from gligabao.cli.app import FLAGS, command, memory
from gligabao.errors import ExitCode

if TYPE_CHECKING:
    from gligabao.service.asking import Answered

CLOSEST = 5  # sources shown when none supports an answer


@command("ask")
def ask_command(
    question: str = typer.Argument(metavar="QUESTION", help="The question, in your own words."),
    at: str = typer.Option(
        None, "--at", metavar="TIME", help="Answer with the facts true at this time (ISO-8601)."
    ),
    known_at: str = typer.Option(
        None,
        "--known-at",
        metavar="TIME",
        help="Answer with the facts the graph held at this time (ISO-8601).",
    ),
    k: int = typer.Option(
        6,
        "-k",
        "-n",
        "--limit",
        metavar="N",
        help="How many facts, facts of the entities named, and chunks to answer from (each).",
    ),
    session: options.SessionFilter = None,
    model: str = typer.Option(
        None,
        "--model",
        metavar="MODEL",
        help="The chat model of the answer (config models.answer).",
    ),
    no_stream: bool = typer.Option(
        False, "--no-stream", help="Print the answer once checked, not as it comes."
    ),
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Answer a question from the memory, citing its sources.

    Answer a question from the memory: the facts that match it and those of the entities
    it names (current ones; with --at those true then, with --known-at those the graph
    held then) and the best chunks of a hybrid search, each a numbered source. One LLM
    call (stage answer, recorded in gb inferences: the same question on the same memory
    costs nothing twice) answers, citing a source and quoting it for each claim.

    Every citation is checked: its source must be one given, and its quote must be in
    that source. One that is not is dropped and said; a sentence left without support is
    marked [no source]. When nothing supports the answer, gb says so, shows the closest
    sources and exits 1. Needs a chat endpoint (else exit 5: gb facts and gb search
    read the memory without one).

    Example: gb ask "where did Alice Moreau work in 2016?" --at 2016-06-01
    """
    flags = {"database": db, "schema": schema, "dataset": dataset, "models.answer": model}
    service = memory(config_path, flags, {**FLAGS, "k": "-k", "question": "QUESTION"})
    if as_json:
        answered = service.ask(question, at=at, known_at=known_at, session=session, k=k)
        from gligabao.base.jsonl import json_line

        json_line(answered.as_json())
        if not answered.supported:
            raise typer.Exit(int(ExitCode.FAILURE))
        return
    from gligabao.cli import render

    stream = not no_stream and not render.plain()
    with _Streaming(render.stdout, enabled=stream) as shown:
        answered = service.ask(
            question,
            at=at,
            known_at=known_at,
            session=session,
            k=k,
            on_text=shown.add if stream else None,
        )
    _show(answered)
    if not answered.supported:
        raise typer.Exit(int(ExitCode.FAILURE))


class _Streaming:
    """The answer's words on a terminal as they come, cleared once it is whole: what
    stays is the answer as checked."""

    def __init__(self, console: Any, *, enabled: bool) -> None:
        self._console = console
        self._enabled = enabled
        self._text = ""
        self._live: Any = None

    def __enter__(self) -> _Streaming:
        return self

    def add(self, piece: str | None) -> None:
        """A piece of the answer; None: it begins again."""
        if not self._enabled:
            return
        from gligabao.cli.render import Text, visible

        if self._live is None:  # from the first words: notices of the search said before
            from rich.live import Live

            self._live = Live(console=self._console, transient=True, auto_refresh=False)
            self._live.start()

        self._text = "" if piece is None else self._text + piece
        self._live.update(Text(visible(self._text, lines=True), style="dim"), refresh=True)

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()


def _show(answered: Answered) -> None:
    """The answer and its sources, or, when nothing supports it, why and the closest."""
    from gligabao.cli import render

    if answered.dropped:
        reasons = "; ".join(f"[{d.source}] {d.why}" for d in answered.dropped)
        render.warning(f"{counted(len(answered.dropped), 'citation')} dropped: {reasons}")
    if not answered.supported:
        if not answered.sources:
            render.error("no support in the memory: nothing in it matches the question")
            return
        render.error("no support in the memory for an answer; the closest sources:")
        _sources(answered.sources[:CLOSEST])
        return
    head = _header(answered)
    if head:
        render.stdout.print(render.Text(head, style="bold"), soft_wrap=True)
    render.stdout.print(render.Text(render.visible(answered.answer, lines=True)), soft_wrap=True)
    render.stdout.print()
    for citation in answered.citations:
        line = render.Text(f"[{citation.n}] ", style="bold")
        line.append(citation.where, style="cyan")
        if citation.interval:
            line.append(f"  {citation.interval}", style="green")
        if not citation.exact:
            line.append("  (quoted loosely)", style="dim")
        render.stdout.print(line, soft_wrap=True)
        quote = render.Text(f'    "{render.visible(_flat(citation.quote))}"')
        render.stdout.print(quote, soft_wrap=True)


def _header(answered: Answered) -> str:
    """What time the answer is true for, and as the memory stood when; none for now."""
    parts = []
    if answered.at:
        parts.append(f"true at {answered.at[:10]}")
    if answered.known_at:
        parts.append(f"as the memory stood at {answered.known_at[:10]}")
    return f"Answer {', '.join(parts)}:" if parts else ""


def _sources(sources: list[Any]) -> None:
    from gligabao.cli import render

    for source in sources:
        line = render.Text(f"[{source.n}] ", style="bold")
        line.append(source.where, style="cyan")
        if source.interval:
            line.append(f"  {source.interval}", style="green")
        render.stdout.print(line, soft_wrap=True)
        text = render.Text(f"    {render.visible(_flat(source.text, 200))}")
        render.stdout.print(text, soft_wrap=True)


def _flat(text: str, limit: int = 400) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
