"""`gb mcp` started by a person on a terminal: one line says it serves MCP on stdio and
how to stop it, and one Ctrl-C ends it at once (its line, exit 130). Driven in a real
pseudo-terminal that is the process's controlling terminal, so Ctrl-C is the byte a
keyboard sends and the terminal turns into SIGINT. On a pipe, as a client starts it,
nothing is said."""

from __future__ import annotations

import fcntl
import os
import pty
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.support.helpers import gb_env
from tests.support.terminal import read_until

HINT = "gb: serving MCP on stdio"


def _controlling_terminal() -> None:
    """In the child: a session of its own whose controlling terminal is its stdin."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _stored(gb_process) -> None:
    Path("notes.txt").write_text("Ada Lovelace wrote the first program.\n")
    assert gb_process("remember", "notes.txt", "--quiet", env={"GB_DB": "gb.db"}).returncode == 0


def test_one_ctrl_c_ends_gb_mcp_on_a_terminal_at_once(gb_process) -> None:
    _stored(gb_process)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gligabao", "mcp", "--db", "gb.db"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, **gb_env(None), "TERM": "xterm-256color"},
        preexec_fn=_controlling_terminal,  # the pty must be its controlling terminal
        close_fds=True,
    )
    os.close(slave)
    try:
        shown = read_until(master, b"Ctrl-C stops it", 60, proc)
        assert HINT.encode() in shown, shown
        # The line comes just before the server starts: a Ctrl-C then is one like any
        # other. The one that was ignored came once it read its input, waiting for a client.
        time.sleep(3)
        assert proc.poll() is None  # serving, waiting for a client
        os.write(master, b"\x03")  # Ctrl-C, once
        started = time.monotonic()
        shown += read_until(master, b"\x00never", 15, proc)
        assert proc.wait(timeout=15) == 130
        assert time.monotonic() - started < 10, "the first Ctrl-C did not end it at once"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    # The terminal echoes the Ctrl-C as ^C, where the cursor was.
    lines = [line.removeprefix("^C") for line in shown.decode().splitlines() if line.strip()]
    said = [line for line in lines if line.startswith("gb: ")]
    assert said[0].startswith(HINT)
    assert said[1:] == ["gb: interrupted by SIGINT: the MCP server stopped"], lines
    assert "Traceback" not in shown.decode()


def test_on_a_pipe_gb_mcp_says_nothing_on_stderr(gb_process) -> None:
    _stored(gb_process)
    result = gb_process("mcp", "--db", "gb.db", input=b"")  # the client closes at once
    assert result.returncode == 0
    assert result.stderr == b""
