"""SIGTERM and SIGHUP end a `gb` run as SIGINT does, from the first moment of start-up.

Installed before typer, rich or any command is imported: a Ctrl-C, or the SIGTERM of
cron or systemd, during the few hundred milliseconds of start-up is one line and its
exit code too, never a traceback. Only the standard library here, for that reason.
"""

from __future__ import annotations

import os
import signal
import sys

# Not typing's: importing typing alone would widen the moment before signals are handled.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gligabao.errors import Interrupted

_received: list[int] = []
_told: list[bool] = []  # whether the line saying the run was interrupted was printed


def told() -> None:
    """The line saying what the signal left has been printed (see main)."""
    _told.append(True)


def untold() -> bool:
    """Whether a signal stopped the run and nothing said so: typer turns a Ctrl-C that
    lands outside every command (while it parses the arguments) into a silent exit 130,
    whatever the signal was."""
    return not _told


def interrupted(detail: str) -> Interrupted:
    """The error for a run stopped by the signal received (SIGINT if none was seen
    here); `detail` says what was kept and how to go on."""
    from gligabao.errors import Interrupted

    signum = _received[0] if _received else signal.SIGINT
    name = signal.Signals(signum).name
    return Interrupted(f"interrupted by {name}{': ' + detail if detail else ''}", signum)


def _as_sigint(signum: int, frame: Any) -> None:
    """SIGTERM or SIGHUP handled exactly as SIGINT is: by the handler SIGINT has now
    (asyncio's, which cancels the run so that it unwinds, rolling back an unfinished
    chunk's transaction), or by raising KeyboardInterrupt."""
    _received.append(signum)
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:  # SIGINT ignored (a background job): stop all the same
        raise KeyboardInterrupt


def forward() -> None:
    for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        # One ignored on purpose (nohup, a supervisor) stays ignored.
        if signum is not None and signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, _as_sigint)


# The exit codes of a run a signal stopped (see errors.ExitCode).
STOPPED = (129, 130, 143)


def stopped_at_start() -> None:
    """Stopped before any command began: one line, the signal's exit code."""
    stop_now("before anything was done; nothing changed")


def stop_now(detail: str) -> None:
    """One line saying the run was stopped by the signal received, and its exit code, now
    (for a handler: what waits in another thread is not waited for)."""
    stopped = interrupted(detail)
    try:  # noqa: SIM105 (contextlib: one more import before the signals are handled)
        sys.stderr.write(f"gb: {stopped}\n")
    except OSError:  # stderr gone too (a closed terminal after SIGHUP)
        pass
    leave(int(stopped.exit_code))


def leave(code: int) -> None:
    """Exit with `code` now. A KeyboardInterrupt that went through the interpreter's own
    code (an import) makes it end by SIGINT instead, whatever the code given, and a
    shell would then say 130 for a SIGTERM: so the process ends here, its output
    flushed; what was stored is already committed or rolled back."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)
