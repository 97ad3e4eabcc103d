"""Reading what a process writes to a pseudo-terminal (or a pipe), as a person would see
it arrive, without blocking past a deadline."""

from __future__ import annotations

import os
import select
import subprocess
import time

__all__ = ["read_until"]


def read_until(
    fd: int, want: bytes, limit: float, proc: subprocess.Popen[bytes] | None = None
) -> bytes:
    """What `fd` gives until `want` is in it, it ends, `proc` (if given) has ended with
    nothing more to read, or `limit` seconds pass."""
    seen = b""
    deadline = time.monotonic() + limit
    while want not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if not ready:
            if proc is not None and proc.poll() is not None:
                break
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        seen += data
    return seen
