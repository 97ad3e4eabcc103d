"""The typer app, and how every command turns errors into one line and an exit code."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from gligabao import __version__, render
from gligabao.config import Config, load_config
from gligabao.errors import ExitCode, GbError

HELP = """\
gb cuts documents into chunks, extracts a temporal knowledge graph from them with an
LLM, and keeps documents, chunks, summaries, graph and vector indexes in one SQLite file.

Examples:

\b
  gb remember notes.md             graph, summaries, vectors -> gligabao.db
  gb remember -r docs --quiet      a whole folder, as from cron
  gb chunk-preview notes.md        how a file would be cut; nothing stored
  cat notes.md | gb chunk-preview -
  gb config                        every setting and where it came from
"""

EPILOG = """\
Exit codes: 0 success; 1 failure while working (LLM, network, store); 2 usage error;
3 an input was refused (too large, empty, not UTF-8, NUL bytes, missing); 4 partial:
some inputs failed or were left by --max-cost, the others succeeded; 5 configuration
error; 6 database unusable (locked, not a database); 130 interrupted.
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


def command(name: str, **kwargs: Any) -> Callable[[F], F]:
    """Register a command whose GbErrors become one stderr line and their exit code."""

    def register(func: F) -> F:
        @functools.wraps(func)
        def run(*args: Any, **kw: Any) -> Any:
            try:
                return func(*args, **kw)
            except GbError as exc:
                render.error(str(exc))
                raise typer.Exit(int(exc.exit_code)) from None
            except KeyboardInterrupt:
                render.error("interrupted")
                raise typer.Exit(int(ExitCode.INTERRUPTED)) from None

        app.command(name, **kwargs)(run)
        return func

    return register


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


def main() -> None:
    app()


def configure(config_path: str | None, flags: dict[str, Any]) -> Config:
    """The configuration with flags applied, its warnings printed."""
    config = load_config(config_path, flags)
    for message in config.warnings:
        render.warning(message)
    return config


def open_store(config: Config) -> Any:
    """The database the configuration names, waiting `busy_timeout` for other writers."""
    from gligabao.store import open_db

    return open_db(config["database"], busy_timeout_ms=int(config["busy_timeout"] * 1000))
