"""The bytes a command is given: a path, or `-` for standard input.

Bytes are read exactly as they are (no newline translation), so the UTF-8 byte offsets of
a chunk slice the file itself. A path that is missing, unreadable, a folder, or not a
regular file at all (a FIFO, a device, a socket: opening or reading one could wait forever
or never end) is refused with one line that says why; so is a text over 1 MiB, empty or
only whitespace, not valid UTF-8, or holding a NUL byte. Standard input is read whatever
it is, a pipe included, and every read is bounded: a document at 1 MiB, a list
(--files-from, a query file) at 64 MiB.

File names that are not valid UTF-8 reach gb as `os.fsdecode` gives them (lone surrogates,
which SQLite and a UTF-8 terminal refuse); `shown_name` writes such a name with its odd
bytes escaped, as it is stored and shown.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import BinaryIO

from gligabao.errors import InputError

__all__ = [
    "FOLDER",
    "FOLDER_WALKED",
    "MAX_BYTES",
    "MAX_LIST_BYTES",
    "STDIN",
    "decode",
    "list_too_large",
    "open_file",
    "read_file_bytes",
    "read_list",
    "read_list_text",
    "read_stdin",
    "shown_name",
]

MAX_BYTES = 1 << 20  # 1 MiB, accepted; one byte more is refused
MAX_LIST_BYTES = 64 << 20  # a list of paths or of queries: a million lines of 64 bytes
STDIN = "-"
# What a folder named as an input is told to do instead: where the command walks
# folders (-r) the user is pointed at it, since that is what they most likely meant.
FOLDER = "give the files in it"
FOLDER_WALKED = "use -r (--recursive) for the files in it and below, or name the files"

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO with no writer must not wait
_OPEN_FLAGS = os.O_RDONLY | _NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def shown_name(name: str) -> str:
    """``name`` as gb stores and prints it: the bytes of a file name that are not UTF-8
    (lone surrogates in ``name``, from os.fsdecode) written as Python writes bytes,
    ``bad\\xff.txt``; any other name as it is."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        pass
    try:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no file name decodes to
        return name.encode("utf-8", "backslashreplace").decode("ascii")


def open_file(name: str, *, pipes: bool = False, given: str = "", folder: str = FOLDER) -> BinaryIO:
    """The file ``name``, open to read; InputError (its name, ``given`` and why) for a
    path that is missing, unreadable, a folder (``folder`` says what to do instead), or
    not a regular file. With ``pipes`` a FIFO is read too (a list from `<(find ...)`):
    without a writer it reads as empty. The open never blocks, so a FIFO or a device is
    never waited on."""
    shown = shown_name(name)
    try:
        fd = os.open(name, _OPEN_FLAGS)
    except FileNotFoundError:
        raise InputError(shown, f"no such file{given}") from None
    except PermissionError:
        raise InputError(shown, f"cannot be read{given}: permission denied") from None
    except IsADirectoryError:
        raise InputError(shown, f"is a directory; {folder}") from None
    except OSError as exc:
        raise InputError(shown, f"cannot be read{given}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(shown, f"is a directory; {folder}")
        if not stat.S_ISREG(mode) and not (pipes and stat.S_ISFIFO(mode)):
            instead = "a regular file or a pipe" if pipes else "its content on standard input (-)"
            raise InputError(
                shown,
                f"is {_kind(mode)}, not a regular file{given}: not read, as that could wait "
                f"forever or never end; give {instead} instead",
            )
        if _NONBLOCK:  # open now: a FIFO's reads wait for its writer's data
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def read_list(name: str, what: str) -> bytes:
    """The whole of a list file (``what`` names it in errors: "query file"), at most
    MAX_LIST_BYTES; a FIFO is read, a device or a larger file refused."""
    with open_file(name, pipes=True, given=f" (a {what})") as handle:
        try:
            data = handle.read(MAX_LIST_BYTES + 1)
        except OSError as exc:
            raise InputError(shown_name(name), f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_LIST_BYTES:
        raise list_too_large(name, what)
    return data


def read_list_text(name: str, what: str) -> str:
    """read_list's bytes as UTF-8 text, or an InputError saying they are not."""
    data = read_list(name, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(shown_name(name), "not UTF-8 text") from None


def list_too_large(name: str, what: str) -> InputError:
    return InputError(
        shown_name(name),
        f"is larger than {MAX_LIST_BYTES >> 20} MiB, too large for a {what}; split it",
    )


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


def read_stdin(stdin: BinaryIO | None) -> bytes:
    stream = stdin if stdin is not None else sys.stdin.buffer
    return stream.read(MAX_BYTES + 1)


def read_file_bytes(name: str, most: int = MAX_BYTES, *, folder: str = FOLDER) -> bytes:
    with open_file(name, folder=folder) as handle:
        try:
            return handle.read(most + 1)
        except OSError as exc:  # EIO, or a file that is not what its mode said
            raise InputError(shown_name(name), f"cannot be read: {exc.strerror or exc}") from None
