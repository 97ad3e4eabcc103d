"""Errors gligabao raises on purpose, each with the exit code `gb` gives it.

    GbError                 1  a failure while working (LLM, network, store)
    ├── UsageError          2  options or inputs named in a way that cannot work
    ├── InputError          3  an input was refused; nothing of it was stored
    ├── ConfigError         5  a setting is wrong or missing
    ├── DatabaseError       6  the database file cannot be used (locked, not a database,
    │                          read-only for a command that writes, the disk full)
    ├── OutputError         1  standard output cannot be written (a full disk)
    │   └── OutputClosed  141  its reader went away (`gb list | head -1`): nothing said
    ├── Stopped             1  stopped by the program that started it (a client of
    │                          `gb serve` went away): what was paid for is kept
    └── Interrupted   128 + N  stopped by signal N: 129 SIGHUP, 130 SIGINT, 143 SIGTERM

Exit code 2 is also what typer gives an unknown option or a missing argument;
4 means some inputs of a batch failed; 128 + N is how a shell reports a process that
signal N ended.
The message of every error is one line meant for the user: it names what was
wrong and what to do, and never holds a secret.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1
    USAGE = 2
    BAD_INPUT = 3
    PARTIAL = 4
    CONFIG = 5
    DATABASE = 6
    HANGUP = 129
    INTERRUPTED = 130
    OUTPUT_CLOSED = 141
    TERMINATED = 143


class GbError(Exception):
    """Base of the errors that `gb` reports as one line and an exit code."""

    exit_code: ExitCode = ExitCode.FAILURE


class UsageError(GbError):
    """Options or inputs named in a way that cannot work (standard input twice, -k 0...)."""

    exit_code = ExitCode.USAGE


class InputError(GbError):
    """An input was refused (too large, empty, not UTF-8, NUL bytes, missing...)."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


class ConfigError(GbError):
    """A configuration value is out of range, of the wrong type, or missing."""

    exit_code = ExitCode.CONFIG


class DatabaseError(GbError):
    """The database file cannot be opened or written."""

    exit_code = ExitCode.DATABASE


class OutputError(GbError):
    """Standard output could not be written (a full disk, /dev/full, an I/O error)."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(
            f"cannot write the output: {exc.strerror or exc}; "
            "free some space or send it elsewhere, and run again"
        )


class OutputClosed(OutputError):
    """The reader of standard output went away (EPIPE), as `head -1` does: not an error
    worth a word, but the run stops, as it would if killed by SIGPIPE."""

    exit_code = ExitCode.OUTPUT_CLOSED


class Stopped(GbError):
    """A run stopped by the program that started it (as `gb serve` stops a remember whose
    client went away): nothing is stored half, and the answers it paid for are kept."""


class Interrupted(GbError):
    """The run was stopped by a signal (SIGINT, SIGTERM, SIGHUP): its exit code is
    128 + the signal's number, as a shell reports a process the signal ended."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.exit_code = ExitCode(128 + signum)
