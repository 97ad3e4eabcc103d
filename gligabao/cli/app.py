"""The typer app: its commands registered, each run as running.py runs a command (its
GbErrors, a signal, an output that cannot be written: one line and an exit code), and
click's usage errors said the same way."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from gligabao import __version__
from gligabao.cli import signals
from gligabao.cli.running import (  # noqa: F401 - the commands' modules take them from here
    FLAGS,
    configure,
    guard_stdout,
    log_warnings,
    memory,
    notice,
    outcome,
    say,
)
from gligabao.errors import ExitCode

HELP = """\
gb cuts documents into chunks, extracts a temporal knowledge graph from them with an
LLM, and keeps documents, chunks, summaries, graph and vector indexes in one SQLite file.

Examples:

\b
  gb remember notes.md             graph, summaries, vectors -> gligabao.db
  gb remember -r docs --quiet      a whole folder, as from cron
  gb search "licence termination"  keywords and meaning, path:LINE-LINE hits
  gb facts --about Acme --at 2019-06-01   what was true then, and where it is said
  gb why 42                        the lines that state fact 42
  gb chunk-preview notes.md        how a file would be cut; nothing stored
  cat notes.md | gb chunk-preview -
  gb config                        every setting and where it came from
"""

EPILOG = """\
Exit codes: 0 success; 1 failure while working (LLM, network, store, writing the
output), or gb status: a file not in sync, or gb chunk-preview --check: a chunk flagged;
2 usage error; 3 an input was refused (too large, empty, not UTF-8, NUL bytes, missing, a
FIFO or a device); 4 partial: some inputs failed or were left by --max-cost, the others
succeeded; 5 configuration error; 6 database unusable (locked, not a database, another
program's, read-only for a command that writes, a full disk) or none yet (only gb remember
creates one); 129 hung up (SIGHUP), 130 interrupted (SIGINT), 143 terminated (SIGTERM):
what was stored is kept, run the same command again to continue; 141 output closed (its
reader went away).
"""

app = typer.Typer(
    name="gb",
    help=HELP,
    epilog=EPILOG,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

F = TypeVar("F", bound=Callable[..., Any])

# SIGTERM and SIGHUP end a run as SIGINT does (see signals.py).
interrupted = signals.interrupted


def command(name: str, **kwargs: Any) -> Callable[[F], F]:
    """Register a command whose GbErrors become one stderr line and their exit code."""

    def register(func: F) -> F:
        @functools.wraps(func)
        def run(*args: Any, **kw: Any) -> None:
            code = outcome(func, *args, **kw)
            if code:
                raise typer.Exit(code)
            # Nothing is returned: in run(), what typer returns is the exit code.

        app.command(name, **_helps(func), **kwargs)(run)
        return func

    return register


def _helps(func: Callable[..., Any]) -> dict[str, str]:
    """A command's docstring as its two helps. Its first paragraph is the short line of
    `gb --help`; the rest, which says the same at length, is `gb NAME --help`: shown
    both, the command's help would say its first line twice in other words."""
    doc = inspect.getdoc(func) or ""
    summary, _, body = doc.partition("\n\n")
    if not body.strip():
        return {"help": summary}
    return {"short_help": summary.replace("\n", " "), "help": body}


def _version(value: bool) -> None:
    if value:
        print(f"gb {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    pass


def run() -> None:
    """The typer app, its commands registered (see gligabao.cli.main). Exits with the
    code of the command (SystemExit)."""
    # typer 0.28 carries its own copy of click; earlier ones use click itself: the
    # exceptions are taken from where typer's own BadParameter comes from.
    clicks = sys.modules[typer.BadParameter.__module__]
    no_args = getattr(clicks, "NoArgsIsHelpError", ())  # click 8.2 and later

    guard_stdout()
    # Not standalone: click's usage errors come back here, to be said as every other gb
    # error is, in one line, rather than click's block of usage, hint and error.
    try:
        code = app(standalone_mode=False)
    except no_args as exc:
        exc.show()  # `gb` alone: the help is the answer
        sys.exit(exc.exit_code)
    except clicks.ClickException as exc:
        say(_usage_line(exc))
        sys.exit(exc.exit_code)
    except (typer.Abort, getattr(clicks, "Abort", typer.Abort)):  # not in typer 0.28's click
        say("aborted")
        sys.exit(int(ExitCode.FAILURE))
    sys.exit(code if isinstance(code, int) else 0)


def _usage_line(exc: Any) -> str:
    """A click error (`-k abc`, an unknown option, a missing argument) as gb's one line:
    its message, and where the command's options are listed."""
    message = exc.format_message().strip().rstrip(".")
    message = message[:1].lower() + message[1:]
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return message
    if ctx.parent is None:
        return f"{message}; gb -h lists the commands"
    return f"{message}; gb {ctx.info_name} -h lists the options"
