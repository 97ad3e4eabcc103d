"""How a command runs, without typer: its errors as one line and an exit code, a standard
output that cannot be written (a full disk: one line; a reader gone, as `| head` does:
quiet), and the configured `Memory` it calls. The typer app (app.py) runs every command
through it, and `gb search` with plain arguments runs through it alone (searching.py)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Mapping

from gligabao.cli import signals
from gligabao.config import Config, load_config
from gligabao.errors import ExitCode, GbError, Interrupted, OutputClosed, OutputError
from gligabao.service.memory import Memory

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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


def outcome(func: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """Run a command's function: 0, or the exit code of how it ended, its GbError (or the
    signal that stopped it) said in one line on stderr."""
    # The signal may also land while an error is being said: caught outside it.
    try:
        try:
            try:
                func(*args, **kwargs)
                return 0
            finally:
                sys.stdout.flush()  # what is still buffered fails here, not at exit
        except OutputClosed:
            return int(ExitCode.OUTPUT_CLOSED)  # `| head`: quiet
        except GbError as exc:
            if isinstance(exc, Interrupted):
                signals.told()
            say(str(exc))
            return int(exc.exit_code)
    except KeyboardInterrupt:
        stopped = signals.interrupted("")
        signals.told()
        say(str(stopped))
        return int(stopped.exit_code)


def say(message: str) -> None:
    """One line on stderr, unless stderr is gone too (a closed terminal after SIGHUP)."""
    with contextlib.suppress(OSError):
        from gligabao.cli import render  # rich: imported when there is something to say

        render.error(message)


# ---- standard output: a write that fails is one line, not a traceback at exit


def guard_stdout() -> None:
    """sys.stdout from now on a GuardedStdout (once)."""
    if sys.stdout is not None and not isinstance(sys.stdout, GuardedStdout):
        sys.stdout = GuardedStdout(sys.stdout)


class GuardedStdout:
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


# ---- the configuration and the service of a command


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


def configure(config_path: str | None, flags: dict[str, Any], *, logs: bool = True) -> Config:
    """The configuration with flags applied, its warnings printed; with `logs`, what the
    library logs printed too (see log_warnings)."""
    if logs:
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
    logs: bool = True,
) -> Memory:
    """The service a command calls: the configuration with its flags (warnings printed),
    its notices said on stderr unless `quiet`, its arguments called by their flags; what
    the library logs is printed unless `logs` is False (a command that cannot log)."""
    config = configure(config_path, flags, logs=logs)
    return Memory.of(config, on_notice=None if quiet else notice, names=names)
