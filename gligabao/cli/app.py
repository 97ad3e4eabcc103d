"""The typer app, and how every command turns errors into one line and an exit code:
its GbErrors, a signal (SIGTERM and SIGHUP handled as SIGINT), and a standard output
that cannot be written (a full disk: one line; a reader gone, as `| head` does: quiet)."""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import typer

from gligabao import __version__
from gligabao.cli import signals
from gligabao.config import Config, load_config
from gligabao.errors import ExitCode, GbError, Interrupted, OutputClosed, OutputError
from gligabao.service.memory import Memory

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

# How gb's messages call the service's arguments: by the flags that give them.
FLAGS = {
    "k": "--limit",
    "limit": "--limit",
    "depth": "--depth",
    "max_depth": "--max-depth",
    "at": "--at",
    "known_at": "--known-at",
    "about": "--about",
    "method": "--method",
    "valid_at": "--valid-at",
    "reference_time": "--reference-time",
    "stages": "--stages",
    "max_cost": "--max-cost",
}


def command(name: str, **kwargs: Any) -> Callable[[F], F]:
    """Register a command whose GbErrors become one stderr line and their exit code."""

    def register(func: F) -> F:
        @functools.wraps(func)
        def run(*args: Any, **kw: Any) -> Any:
            # The signal may also land while an error is being said: caught outside it.
            try:
                try:
                    try:
                        # Nothing is returned: in run(), what typer returns is the exit code.
                        func(*args, **kw)
                        return None
                    finally:
                        sys.stdout.flush()  # what is still buffered fails here, not at exit
                except OutputClosed:
                    raise typer.Exit(int(ExitCode.OUTPUT_CLOSED)) from None  # `| head`: quiet
                except GbError as exc:
                    if isinstance(exc, Interrupted):
                        signals.told()
                    _say(str(exc))
                    raise typer.Exit(int(exc.exit_code)) from None
            except KeyboardInterrupt:
                stopped = interrupted("")
                signals.told()
                _say(str(stopped))
                raise typer.Exit(int(stopped.exit_code)) from None

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


def _say(message: str) -> None:
    """One line on stderr, unless stderr is gone too (a closed terminal after SIGHUP)."""
    with contextlib.suppress(OSError):
        from gligabao.cli import render  # rich: imported when there is something to say

        render.error(message)


# ---- signals: SIGTERM and SIGHUP end a run as SIGINT does (see signals.py)

interrupted = signals.interrupted


# ---- standard output: a write that fails is one line, not a traceback at exit


class _GuardedStdout:
    """sys.stdout, whose write errors are OutputError (OutputClosed for EPIPE). After
    one, the stream writes to /dev/null: the interpreter's last flush cannot fail again."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise self._broken(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise self._broken(exc) from None

    def _broken(self, exc: OSError) -> OutputError:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        return OutputClosed(exc) if isinstance(exc, BrokenPipeError) else OutputError(exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


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

    if sys.stdout is not None:
        sys.stdout = _GuardedStdout(sys.stdout)
    # Not standalone: click's usage errors come back here, to be said as every other gb
    # error is, in one line, rather than click's block of usage, hint and error.
    try:
        code = app(standalone_mode=False)
    except no_args as exc:
        exc.show()  # `gb` alone: the help is the answer
        sys.exit(exc.exit_code)
    except clicks.ClickException as exc:
        _say(_usage_line(exc))
        sys.exit(exc.exit_code)
    except (typer.Abort, clicks.Abort):
        _say("aborted")
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


def log_warnings(*, alone: bool = False) -> None:
    """What the library logs (an LLM server adapted to, say) printed as gb's own warnings,
    `gb: warning: ...`, instead of bare lines from logging's last-resort handler. With
    `alone`, said by gb only, not passed on to the root logger too: gb mcp's SDK gives
    the root logger a handler of its own, which would say each warning again its way."""
    import logging

    class Warn(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            from gligabao.cli import render

            render.warning(record.getMessage())

    logger = logging.getLogger("gligabao")
    if not any(type(h).__name__ == "Warn" for h in logger.handlers):
        logger.addHandler(Warn(logging.WARNING))
    if alone:
        logger.propagate = False


def configure(config_path: str | None, flags: dict[str, Any]) -> Config:
    """The configuration with flags applied, its warnings printed."""
    log_warnings()
    config = load_config(config_path, flags)
    for message in config.warnings:
        from gligabao.cli import render

        render.warning(message)
    return config


def notice(message: str) -> None:
    """A notice on stderr (rich: imported when there is one, not for a plain --json run)."""
    from gligabao.cli import render

    render.notice(message)


def memory(
    config_path: str | None,
    flags: dict[str, Any],
    names: Mapping[str, str] = FLAGS,
    *,
    quiet: bool = False,
) -> Memory:
    """The service a command calls: the configuration with its flags (warnings printed),
    its notices said on stderr unless `quiet`, its arguments called by their flags."""
    config = configure(config_path, flags)
    return Memory.of(config, on_notice=None if quiet else notice, names=names)
