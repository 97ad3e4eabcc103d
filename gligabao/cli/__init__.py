"""The `gb` command line: a thin layer that parses options, calls the library, renders.

Start-up is most of what a user waits for in a command like `gb search`, so nothing is
imported before it is needed: signals are handled first (signals.py), `gb --version`
answers with nothing else imported, `gb search` with plain arguments runs without typer
(searching.py), and `gb COMMAND` imports the module of that command only; `gb --help`,
an unknown command or `load()` import them all.
"""

from __future__ import annotations

import sys

# Not typing's: gb --version imports nothing it does not need (see signals.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# Each command's module, in the order of `gb --help`.
COMMANDS = {
    "remember": "remember",
    "search": "search",
    "ask": "ask",
    "facts": "graph",
    "entity": "graph",
    "entities": "graph",
    "path": "graph",
    "why": "graph",
    "merges": "merges",
    "unmerge": "merges",
    "export": "export",
    "show": "documents",
    "list": "documents",
    "forget": "documents",
    "stats": "documents",
    "vec-stats": "documents",
    "inferences": "documents",
    "status": "documents",
    "eval": "evaluate",
    "copy": "copying",
    "chunk-preview": "chunking",
    "config": "chunking",
    "mcp": "mcp",
    "serve": "serve",
}


def load(command: str | None = None):  # -> typer.Typer
    """The typer app with `command`'s module imported (its commands registered), or
    every command's when `command` is None or not one of them."""
    import importlib

    modules = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in modules:
        importlib.import_module(f"gligabao.cli.{module}")
    from gligabao.cli.app import app

    return app


def main() -> None:
    """The `gb` command."""
    from gligabao.cli import signals

    signals.forward()
    args = sys.argv[1:]
    try:
        if args == ["--version"]:
            from gligabao import __version__

            print(f"gb {__version__}")
            return
        from gligabao.base import heap

        heap.own_process()
        with heap.loading():  # typer and the command's modules: ~6 ms of collections
            plain = _plain(args)
            if plain is None:
                load(args[0] if args else None)
        if plain is None:
            from gligabao.cli.app import run
        else:
            from gligabao.cli.running import guard_stdout, outcome

            guard_stdout()
    except KeyboardInterrupt:
        signals.stopped_at_start()
    if plain is not None:  # run as the typer app runs a command (app.command)
        func, arguments = plain
        finish(outcome(func, **arguments))
    try:
        run()
    except SystemExit as stop:
        if stop.code in signals.STOPPED:
            if signals.untold():  # stopped by typer itself, before any command ran
                signals.stopped_at_start()
            signals.leave(int(stop.code))
        if not isinstance(stop.code, int | None):
            raise  # a message to print: the interpreter says it
        finish(stop.code or 0)
    finish(0)


def _plain(args: list[str]) -> tuple[Callable[..., None], dict[str, Any]] | None:
    """The command and its arguments where gb runs it without typer (`gb search` with a
    plain argument list: cli/searching.py), its modules imported; else None."""
    if args[:1] != ["search"]:
        return None
    from gligabao.cli import searching

    arguments = searching.plain(args[1:])
    if arguments is None:
        return None
    from gligabao.cli import running  # noqa: F401 - the configuration and the service

    return searching.search, arguments


def finish(code: int) -> None:
    """End a command that has done its work: its databases closed (as the interpreter's
    own exit would, so a writer's WAL is checkpointed), its output flushed, and then the
    process ended at once. The interpreter's tear-down of every module typer, rich and the
    rest imported would add ~15 ms to each command for nothing. A thread still working
    (none of gb's are, by then) gets the ordinary exit, which waits for it."""
    import threading

    from gligabao.cli import signals

    apsw = sys.modules.get("apsw")  # not imported: no database was opened
    for conn in apsw.connections() if apsw is not None else ():
        conn.close(True)  # statements left unfinished are dropped, as at exit
    main = threading.main_thread()
    if any(t.is_alive() and not t.daemon and t is not main for t in threading.enumerate()):
        sys.exit(code)
    signals.leave(code)
