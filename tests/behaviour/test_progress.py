"""The batch progress display: counted in chunks, one live line above which everything is
printed, removed at the end. Driven in a real pseudo-terminal and read back
as the screen a user sees (pyte, a terminal emulator)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time

import pyte

from gligabao.remember.progress import ChunkProgress
from tests.support.helpers import CORPUS_DIR, gb_env, write

COLUMNS, LINES = 110, 40
BAR = "remembering "


def _screen_lines(screen: pyte.Screen) -> list[str]:
    return [line.rstrip() for line in screen.display if line.strip()]


def _run_in_pty(args: list[str], env: dict[str, str], timeout: float = 180) -> list[list[str]]:
    """Run `gb ARGS` with stdout and stderr on one pseudo-terminal of COLUMNS x LINES;
    return the screen after each read of its output, the last one after it exited."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gligabao", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={
            **os.environ,
            **env,
            "TERM": "xterm-256color",
            "COLUMNS": str(COLUMNS),
            "LINES": str(LINES),
        },
        close_fds=True,
    )
    os.close(slave)
    screen = pyte.Screen(COLUMNS, LINES)
    stream = pyte.ByteStream(screen)
    screens = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            stream.feed(data)
            screens.append(_screen_lines(screen))
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    screens.append(_screen_lines(screen))
    return screens


def test_batch_progress_in_a_terminal(server, isolated):
    """Several large files at 50 ms a call: one bar line at any moment, always the last
    line, every message above it; it counts chunks before any file is done, shows the
    cost, and is gone at the end; names with `[...]` are shown as they are, not markup."""
    server.latency = 0.05
    os.mkdir("docs")
    for name in ("GPL-3", "MPL-2.0", "Apache-2.0"):
        shutil.copy(CORPUS_DIR / name, f"docs/{name}")
    notes = (CORPUS_DIR / "Apache-2.0").read_text() + "\nNotes of our own.\n"
    write("docs/[red]notes[dim].txt", notes)
    screens = _run_in_pty(["remember", "-r", "docs"], gb_env(server))

    moving_before_a_file = False
    for lines in screens[:-1]:
        bars = [line for line in lines if line.startswith(BAR)]
        assert len(bars) <= 1, lines  # never copies of the bar
        if not bars:
            continue
        assert lines[-1] == bars[0], lines  # messages above it, never after nor onto it
        assert "$" in bars[0], bars[0]  # the cost field rendered, no markup swallowed
        done = re.search(r" (\d[\d,]*)/([\d,?]+) chunks", bars[0])
        assert done, bars[0]
        if not any(line.startswith("remembered ") for line in lines) and int(done[1]) > 0:
            moving_before_a_file = True
    assert moving_before_a_file, "the bar counted only whole files"

    final = screens[-1]
    assert not any(line.startswith(BAR) for line in final), final  # removed cleanly
    remembered = [line for line in final if line.startswith("remembered ")]
    assert len(remembered) == 4, final
    assert any("[red]notes[dim].txt" in line for line in remembered), remembered
    assert final[-1].startswith("gb: 4 inputs: 4 remembered"), final


def test_no_bar_off_a_terminal(server, isolated, gb_process):
    """Piped, nothing of the bar reaches stderr: a log holds the messages only."""
    os.mkdir("docs")
    for name in ("MPL-2.0", "Apache-2.0"):
        shutil.copy(CORPUS_DIR / name, f"docs/{name}")
    proc = gb_process("remember", "-r", "docs", env=gb_env(server))
    assert proc.returncode == 0, proc.stderr
    assert BAR.encode() not in proc.stderr
    assert b"\x1b[" not in proc.stderr + proc.stdout


# ------------------------------------------------------------------ the arithmetic


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_total_estimated_from_the_inputs_cut_so_far():
    progress = ChunkProgress(files=4)
    assert progress.total is None
    progress.on_step("a", "chunk_text", {"chunks": 10})
    progress.on_step("b", "chunk_text", {"chunks": 30})
    assert progress.total == 80  # two more inputs of 20 chunks expected
    progress.on_step("a", "extract_graph", {})
    progress.on_step("a", "store_artifact", {})
    assert progress.done == 1
    progress.finished("b")  # failed or completed: nothing left to do for it
    assert progress.done == 31
    assert progress.files_done == 1
    progress.on_step("a", "reuse", {})  # a chunk of the previous version: done at once
    assert progress.done == 32
    progress.finished("c")  # unchanged: cut never, cost nothing
    assert progress.total == 40 + 0 + (40 / 3)


def test_time_left_does_not_jump_with_bursts_of_answers():
    """Answers arriving in bursts (a concurrency window completing at once: 12 chunks in
    a second, then nothing for 5 s), 2 chunks a second on average: once warmed up, every
    estimate of the time left is within 10% of the truth, not swinging with each burst."""
    clock = _Clock()
    progress = ChunkProgress(files=1, clock=clock)
    progress.on_step("a", "chunk_text", {"chunks": 600})
    errors = []
    for burst in range(45):
        for second in (0.0, 0.5, 1.0):
            clock.now = burst * 6.0 + second
            for _ in range(8):  # 4 chunks a step: 12 a burst
                progress.on_step("a", "extract_graph", {})
        if burst >= 8 and progress.done <= 540:
            true_left = (600 - progress.done) / 2.0
            errors.append(abs(progress.eta() - true_left) / true_left)
    assert max(errors) <= 0.1, max(errors)
