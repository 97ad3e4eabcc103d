"""Reading what a command is given: a path, or `-` for standard input.

Bytes are read exactly as they are (no newline translation), so the UTF-8 byte
offsets of a chunk slice the file itself. A text is refused, with one line that
says why, when it is over 1 MiB, empty or only whitespace, not valid UTF-8, or
holds a NUL byte; and so is a path that is missing, unreadable, or a folder.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from gligabao.errors import InputError

MAX_BYTES = 1 << 20  # 1 MiB, accepted; one byte more is refused
STDIN = "-"


@dataclass(frozen=True, slots=True)
class Source:
    """One input, read and checked: its name as given, bytes and text."""

    name: str
    data: bytes
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def path(self) -> Path | None:
        return None if self.name == STDIN else Path(self.name)


def read_source(name: str, stdin: BinaryIO | None = None) -> Source:
    """Read and check one input; raises InputError with the reason it was refused."""
    data = _read_stdin(stdin) if name == STDIN else _read_file(name)
    return Source(name, data, decode(name, data))


def decode(name: str, data: bytes) -> str:
    """The text of ``data``, or an InputError saying what is wrong with it."""
    if len(data) > MAX_BYTES:
        raise InputError(name, f"is larger than 1 MiB ({MAX_BYTES:,} bytes); split it first")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(name, f"contains a NUL byte at offset {nul}: binary files are not read")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            name,
            f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "convert it first, e.g. iconv -t UTF-8",
        ) from None
    if not text.strip():
        raise InputError(name, "is empty" if not data else "holds only whitespace")
    return text


def _read_stdin(stdin: BinaryIO | None) -> bytes:
    stream = stdin if stdin is not None else sys.stdin.buffer
    return stream.read(MAX_BYTES + 1)


def _read_file(name: str) -> bytes:
    path = Path(name)
    try:
        if path.is_dir():
            raise InputError(name, "is a directory; give the files in it")
        with path.open("rb") as handle:
            return handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise InputError(name, "no such file") from None
    except PermissionError:
        raise InputError(name, "cannot be read: permission denied") from None
    except IsADirectoryError:
        raise InputError(name, "is a directory; give the files in it") from None
    except OSError as exc:
        raise InputError(name, f"cannot be read: {exc.strerror or exc}") from None
