"""Input reading: every refusal, its exit code and its one line.

A refused input exits 3 when it was the only one and 4 when others of the same
run were fine; the reason is one line on stderr, and there is never a traceback.
Bytes are read as they are, so a CRLF file's byte offsets slice the file itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gligabao.read.files import MAX_BYTES
from tests.support.privileges import as_user, permissions_apply

MIB = 1_048_576
GOOD = "A good file.\n\nIt has two paragraphs, and it is read without complaint.\n"


def one_line(stderr: str | bytes) -> str:
    """The single line on stderr; fails on a traceback or on more than one line."""
    text = stderr.decode("utf-8") if isinstance(stderr, bytes) else stderr
    assert "Traceback" not in text
    lines = text.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {text!r}"
    return lines[0]


def text_of_size(size: int) -> bytes:
    """Valid UTF-8 prose, exactly ``size`` bytes, with a non-ASCII character in it."""
    unit = "Ünïcode words and more words, line after line.\n".encode()
    data = (unit * (size // len(unit) + 1))[:size]
    return data[:-1] + b"\n"


# (file name, content, what the message must say)
REFUSED_FILES = [
    ("big.txt", text_of_size(MIB + 1), ["larger than 1 MiB", "1,048,576 bytes"]),
    ("empty.txt", b"", ["is empty"]),
    ("blank.txt", b" \n\t\r\n  \n", ["only whitespace"]),
    ("latin1.txt", "café au lait\n".encode("latin-1"), ["not valid UTF-8 (byte 0xe9 at offset 3)"]),
    ("cut.txt", "ok €".encode()[:-1], ["not valid UTF-8 (byte 0xe2 at offset 3)"]),
    ("binary.bin", b"PK\x03\x04 some text\x00more", ["NUL byte at offset 14:"]),
]


def test_max_bytes_is_one_mebibyte() -> None:
    assert MAX_BYTES == MIB


@pytest.mark.parametrize(("name", "data", "says"), REFUSED_FILES, ids=[r[0] for r in REFUSED_FILES])
def test_refused_file_alone_exits_3(gb_cli, name: str, data: bytes, says: list[str]) -> None:
    Path(name).write_bytes(data)
    result = gb_cli("chunk-preview", "--json", name)
    assert result.exit_code == 3
    assert result.stdout == ""
    line = one_line(result.stderr)
    assert line.startswith(f"gb: {name}: ")
    for fragment in says:
        assert fragment in line


@pytest.mark.parametrize(("name", "data", "says"), REFUSED_FILES, ids=[r[0] for r in REFUSED_FILES])
def test_refused_file_among_good_ones_exits_4(
    gb_cli, name: str, data: bytes, says: list[str]
) -> None:
    Path("good.txt").write_text(GOOD)
    Path(name).write_bytes(data)
    result = gb_cli("chunk-preview", "--json", "good.txt", name, "good.txt")
    assert result.exit_code == 4
    # The good inputs are still previewed, in order; the bad one is one line on stderr.
    sources = [json.loads(line)["source"] for line in result.stdout.splitlines()]
    assert sources == ["good.txt", "good.txt"]
    line = one_line(result.stderr)
    assert line.startswith(f"gb: {name}: ")
    assert says[0] in line


def test_exactly_one_mebibyte_is_accepted(gb_cli) -> None:
    data = text_of_size(MIB)
    assert len(data) == MIB
    Path("limit.txt").write_bytes(data)
    result = gb_cli("chunk-preview", "--json", "--chunk-size", "8000", "limit.txt")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    preview = json.loads(result.stdout)
    assert preview["chunked"] is True
    assert preview["chunks"][-1]["end_offset"] == MIB


def test_missing_path_is_refused(gb_cli) -> None:
    result = gb_cli("chunk-preview", "nope.txt")
    assert result.exit_code == 3
    assert one_line(result.stderr) == "gb: nope.txt: no such file"


def test_dangling_symlink_is_refused_as_missing(gb_cli) -> None:
    Path("link.txt").symlink_to("gone.txt")
    result = gb_cli("chunk-preview", "link.txt")
    assert result.exit_code == 3
    assert one_line(result.stderr) == "gb: link.txt: no such file"


def test_directory_is_refused(gb_cli) -> None:
    Path("folder").mkdir()
    (Path("folder") / "inside.txt").write_text(GOOD)
    result = gb_cli("chunk-preview", "folder")
    assert result.exit_code == 3
    assert one_line(result.stderr) == (
        "gb: folder: is a directory; use -r (--recursive) for the files in it and below, "
        "or name the files"
    )


def test_missing_path_among_good_ones_exits_4(gb_cli) -> None:
    Path("good.txt").write_text(GOOD)
    result = gb_cli("chunk-preview", "good.txt", "nope.txt")
    assert result.exit_code == 4
    assert "good.txt" in result.stdout
    assert one_line(result.stderr) == "gb: nope.txt: no such file"


def test_every_input_refused_exits_3(gb_cli) -> None:
    Path("empty.txt").write_bytes(b"")
    result = gb_cli("chunk-preview", "empty.txt", "nope.txt")
    assert result.exit_code == 3
    assert result.stderr.splitlines() == ["gb: empty.txt: is empty", "gb: nope.txt: no such file"]


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="running as root: chmod 000 does not stop root from reading a file",
)
def test_unreadable_file_is_refused(gb_cli) -> None:
    path = Path("secret.txt")
    path.write_text(GOOD)
    path.chmod(0)
    try:
        result = gb_cli("chunk-preview", "secret.txt")
    finally:
        path.chmod(0o644)
    assert result.exit_code == 3
    assert one_line(result.stderr) == "gb: secret.txt: cannot be read: permission denied"


# Standard input, through a real process: what a pipe into `gb ... -` does.
STDIN_CASES = [
    ("over-1-MiB", text_of_size(MIB + 1), 3, "gb: -: is larger than 1 MiB"),
    ("empty", b"", 3, "gb: -: is empty"),
    ("whitespace", b"\n \r\n\t\n", 3, "gb: -: holds only whitespace"),
    ("invalid-utf8", b"ok \xff\xfe bytes", 3, "gb: -: is not valid UTF-8 (byte 0xff at offset 3)"),
    ("nul", b"text\x00", 3, "gb: -: contains a NUL byte at offset 4"),
    ("exactly-1-MiB", text_of_size(MIB), 0, None),
]


@pytest.mark.parametrize(
    ("data", "code", "says"), [c[1:] for c in STDIN_CASES], ids=[c[0] for c in STDIN_CASES]
)
def test_stdin_refusals_in_a_real_process(gb_process, data: bytes, code: int, says) -> None:
    done = gb_process("chunk-preview", "--json", "--chunk-size", "8000", "-", input=data)
    assert done.returncode == code, done.stderr
    if says is None:
        assert done.stderr == b""
        preview = json.loads(done.stdout)
        assert preview["source"] == "-"
        assert preview["chunks"][-1]["end_offset"] == len(data)
    else:
        assert done.stdout == b""
        assert one_line(done.stderr).startswith(says)


def test_crlf_offsets_slice_the_file_bytes(gb_cli) -> None:
    paragraph = "Ligne une, café crème.\r\nLigne deux: 東京 and more words here.\r\n"
    text = "\r\n".join(f"{i}. {paragraph}" * 3 for i in range(12))
    Path("crlf.txt").write_bytes(text.encode("utf-8"))
    data = Path("crlf.txt").read_bytes()
    assert b"\r\n" in data and len(data) != len(text)  # multi-byte characters too

    result = gb_cli("chunk-preview", "--json", "--chunk-size", "48", "crlf.txt")
    assert result.exit_code == 0, result.stderr
    preview = json.loads(result.stdout)
    chunks = preview["chunks"]
    assert len(chunks) >= 5
    for chunk in chunks:
        assert data[chunk["start_offset"] : chunk["end_offset"]] == chunk["text"].encode("utf-8")
        assert chunk["tokens"] <= 48
    assert "\r\n" in "".join(c["text"] for c in chunks)
    assert chunks[0]["start_offset"] == 0
    assert chunks[-1]["end_offset"] == len(data)


@pytest.mark.skipif(
    os.name != "posix" or not permissions_apply(),
    reason="file modes cannot be enforced here (root whose capabilities cannot be dropped)",
)
def test_permission_denied_message_even_as_root() -> None:
    """The same refusal where chmod alone cannot show it (root): a real process that file
    modes apply to (tests/support/privileges.py)."""
    import subprocess
    import sys

    path = Path("secret.txt")
    path.write_text(GOOD)
    path.chmod(0)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gligabao", "chunk-preview", "secret.txt"],
            capture_output=True,
            preexec_fn=as_user,
            timeout=60,
            check=False,
        )
    finally:
        path.chmod(0o644)
    assert done.returncode == 3
    assert one_line(done.stderr) == "gb: secret.txt: cannot be read: permission denied"


def test_no_input_on_a_terminal_is_a_usage_error_not_a_hang() -> None:
    """`gb chunk-preview` typed alone at a terminal says what to give instead of waiting."""
    import subprocess
    import sys

    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gligabao", "chunk-preview"],
            stdin=follower,
            capture_output=True,
            timeout=30,
            check=False,
        )
    finally:
        os.close(leader)
        os.close(follower)
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        "gb: no input: name a PATH, or pipe text into `gb chunk-preview -`"
    )
