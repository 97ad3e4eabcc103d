"""Discovery: which inputs a batch holds, before any is read in full.

Every test builds real files under tmp_path (the autouse fixture chdirs there), so
the paths below are relative to it.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from gligabao.errors import ExitCode, InputError, UsageError
from gligabao.read.discovery import (
    BINARY,
    EMPTY,
    HIDDEN,
    NO_GLOB,
    NOT_REGULAR,
    SNIFF_BYTES,
    WHITESPACE,
    Discovery,
    discover,
    skip_summary,
)
from gligabao.read.sources import read_source

TEXT = b"Some words.\n"
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file system features")


def make(*paths: str, data: bytes = TEXT) -> None:
    for path in paths:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)


def skipped(found: Discovery) -> list[tuple[str, str]]:
    return [(s.path, s.reason) for s in found.skipped]


# -- names given explicitly ---------------------------------------------------------------


def test_explicit_files_are_kept_in_the_order_given() -> None:
    make("b.md", "a.md", "c.txt")
    found = discover(["c.txt", "a.md", "-", "b.md"])
    assert found.inputs == ["c.txt", "a.md", "-", "b.md"]
    assert found.skipped == []


def test_the_same_file_named_twice_is_one_input_shown_as_first_named() -> None:
    make("x.md", "d/y.md")
    found = discover(
        ["./x.md", "x.md", "d/y.md", "d/../x.md", "d//y.md", str(Path("x.md").resolve())]
    )
    assert found.inputs == ["./x.md", "d/y.md"]


def test_explicit_files_are_never_filtered_and_are_refused_when_read() -> None:
    make(".hidden.md")
    make("blob.bin", data=b"PK\x03\x04\x00\x00binary")
    found = discover([".hidden.md", "blob.bin", "missing.md"], recursive=True, globs=["*.txt"])
    assert found.inputs == [".hidden.md", "blob.bin", "missing.md"]
    assert found.skipped == []
    with pytest.raises(InputError, match="contains a NUL byte") as refused:
        read_source(found.inputs[1])
    assert refused.value.exit_code == ExitCode.BAD_INPUT


def test_a_directory_without_r_stays_an_input_and_reading_it_says_so() -> None:
    make("docs/a.md")
    found = discover(["docs"])
    assert found.inputs == ["docs"]
    with pytest.raises(InputError, match="is a directory"):
        read_source("docs")


def test_stdin_named_twice_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="only once") as error:
        discover(["-", "a.md", "-"])
    assert error.value.exit_code == ExitCode.USAGE == 2


def test_stdin_named_and_files_from_stdin_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as error:
        discover(["-"], files_from="-", stdin=io.BytesIO(b"a.md\n"))
    assert error.value.exit_code == 2


# -- walking with -r ----------------------------------------------------------------------


def test_r_walks_depth_first_in_sorted_order() -> None:
    make("docs/c.md", "docs/a.md", "docs/b/z.md", "docs/b/y/x.md", "docs/B.md")
    found = discover(["docs"], recursive=True)
    assert found.inputs == [
        "docs/B.md",
        "docs/a.md",
        "docs/b/y/x.md",
        "docs/b/z.md",
        "docs/c.md",
    ]
    assert found.skipped == []


def test_r_on_the_current_directory_shows_plain_relative_paths() -> None:
    make("a.md", "sub/b.md")
    assert discover(["."], recursive=True).inputs == ["a.md", "sub/b.md"]


def test_r_skips_hidden_files_and_directories_with_one_notice_each() -> None:
    make("docs/a.md", "docs/.secret.md", "docs/.git/HEAD", "docs/.git/objects/1", "docs/.git/x")
    found = discover(["docs"], recursive=True)
    assert found.inputs == ["docs/a.md"]
    assert skipped(found) == [("docs/.git", HIDDEN), ("docs/.secret.md", HIDDEN)]


def test_r_skips_binary_files_by_their_first_8_kib_only() -> None:
    make("docs/text.md")
    make("docs/nul-first.bin", data=b"\x89PNG\r\n\x1a\n\x00\x00")
    make("docs/nul-at-8191.txt", data=b"a" * 8191 + b"\x00")
    make("docs/nul-at-8192.txt", data=b"a" * 8192 + b"\x00")  # past the sniffed part: kept
    found = discover(["docs"], recursive=True)
    assert found.inputs == ["docs/nul-at-8192.txt", "docs/text.md"]
    assert skipped(found) == [("docs/nul-at-8191.txt", BINARY), ("docs/nul-first.bin", BINARY)]


def test_r_skips_empty_and_whitespace_only_files_as_reading_would_refuse_them() -> None:
    make("pkg/__init__.py", data=b"")
    make("pkg/sub/__init__.py", data=" \n\t\r\n\u3000\n".encode())  # str.strip's whitespace
    make("pkg/sub/long.py", data=b" \n" * SNIFF_BYTES)  # blank past the 8 KiB sniffed
    make("pkg/sub/late.py", data=b" " * (SNIFF_BYTES + 10) + b"x = 1\n")  # words after it
    make("pkg/sub/mod.py")

    found = discover(["pkg"], recursive=True)

    assert found.inputs == ["pkg/sub/late.py", "pkg/sub/mod.py"]
    assert skipped(found) == [
        ("pkg/__init__.py", EMPTY),
        ("pkg/sub/__init__.py", WHITESPACE),
        ("pkg/sub/long.py", WHITESPACE),
    ]
    for path, _ in skipped(found):  # what reading it (named explicitly) would say
        with pytest.raises(InputError, match=r"is empty|holds only whitespace"):
            read_source(path)


def test_r_keeps_a_blank_looking_file_that_reading_refuses_for_another_reason() -> None:
    make("pkg/latin1.py", data=b" \xa0\n")  # not UTF-8: reading says so, not "empty"
    make("pkg/huge.py", data=b" " * (2 << 20))  # over 1 MiB: reading says so

    found = discover(["pkg"], recursive=True)

    assert found.inputs == ["pkg/huge.py", "pkg/latin1.py"] and found.skipped == []


def test_an_empty_file_named_explicitly_is_kept_and_refused_when_read() -> None:
    make("empty.py", data=b"")

    found = discover(["empty.py"], recursive=True)

    assert found.inputs == ["empty.py"] and found.skipped == []
    with pytest.raises(InputError, match="is empty") as exc:
        read_source("empty.py")
    assert exc.value.exit_code == ExitCode.BAD_INPUT


def test_files_from_skips_empty_listed_files_and_keeps_the_others_as_given() -> None:
    make("pkg/__init__.py", data=b"")
    make("pkg/blank.py", data=b"\n\n")
    make("pkg/.hidden.py", "pkg/mod.py")
    Path("list.txt").write_text(
        "pkg/__init__.py\npkg/blank.py\npkg/.hidden.py\nmissing.py\npkg/mod.py\n"
    )

    found = discover([], files_from="list.txt")

    assert found.inputs == ["pkg/.hidden.py", "missing.py", "pkg/mod.py"]
    assert skipped(found) == [("pkg/__init__.py", EMPTY), ("pkg/blank.py", WHITESPACE)]


def test_skip_summary_counts_the_skipped_files_by_kind_in_one_line() -> None:
    make("d/.h1", "d/.h2", "d/a.txt", "d/b.md")
    make("d/x.md", "d/y.md", data=b"\0")
    make("d/__init__.md", data=b"")
    make("d/blank.md", data=b" \n")
    os.mkfifo("d/pipe.md")

    found = discover(["d"], recursive=True, globs=["*.md"])

    assert found.inputs == ["d/b.md"]
    assert skip_summary(found.skipped) == (
        "skipped 2 hidden, 2 binary, 1 not matching --glob, 2 empty, 1 not regular files"
    )
    assert skip_summary(discover(["d/b.md"], recursive=True).skipped) is None


def test_r_keeps_files_that_reading_will_refuse() -> None:
    make("docs/latin1.md", data="café".encode("latin-1"))
    make("docs/huge.md", data=b"word " * (1 << 18))
    found = discover(["docs"], recursive=True)
    assert found.inputs == ["docs/huge.md", "docs/latin1.md"]


@posix_only
def test_r_skips_a_fifo_with_a_notice_without_opening_it() -> None:
    make("docs/a.md")
    os.mkfifo("docs/pipe")  # opening it for reading would block: the test would hang
    found = discover(["docs"], recursive=True)
    assert found.inputs == ["docs/a.md"]
    assert skipped(found) == [("docs/pipe", NOT_REGULAR)]


@posix_only
def test_r_does_not_follow_a_symlink_loop() -> None:
    make("docs/sub/a.md")
    os.symlink("..", "docs/sub/up")  # docs/sub/up -> docs: a loop if followed
    os.symlink(os.path.abspath("docs"), "docs/sub/abs")
    found = discover(["docs"], recursive=True)
    assert found.inputs == ["docs/sub/a.md"]
    assert [path for path, _ in skipped(found)] == ["docs/sub/abs", "docs/sub/up"]
    assert all("symbolic link to a directory" in reason for _, reason in skipped(found))


@posix_only
def test_r_follows_a_symlink_to_a_file_once_per_file() -> None:
    make("outside.md", "docs/real.md")
    os.symlink("../outside.md", "docs/link.md")
    os.symlink("real.md", "docs/same.md")  # the same file as docs/real.md
    os.symlink("nowhere.md", "docs/dangling.md")
    found = discover(["docs"], recursive=True)
    assert found.inputs == ["docs/link.md", "docs/real.md"]
    assert skipped(found) == [("docs/dangling.md", "broken symbolic link")]
    assert read_source("docs/link.md").data == TEXT


@posix_only
def test_r_walks_a_directory_named_through_a_symlink() -> None:
    make("real/a.md")
    os.symlink("real", "alias")
    assert discover(["alias", "real"], recursive=True).inputs == ["alias/a.md"]


def test_r_dedups_a_file_both_named_and_walked() -> None:
    make("docs/a.md", "docs/b.md")
    found = discover(["docs/b.md", "docs", "./docs/a.md"], recursive=True)
    assert found.inputs == ["docs/b.md", "docs/a.md"]


@posix_only
def test_r_with_a_non_utf8_file_name_does_not_crash_and_reads_back() -> None:
    os.mkdir("docs")
    try:
        fd = os.open(b"docs/caf\xe9.md", os.O_WRONLY | os.O_CREAT)
    except OSError:
        pytest.skip("this file system refuses non-UTF-8 names")
    os.write(fd, TEXT)
    os.close(fd)
    found = discover(["docs"], recursive=True)
    assert found.inputs == [os.fsdecode(b"docs/caf\xe9.md")]
    assert read_source(found.inputs[0]).data == TEXT


# -- --glob -------------------------------------------------------------------------------


@pytest.mark.parametrize("glob", ["*.md", "**/*.md"])
def test_glob_takes_matching_walked_files_at_every_depth(glob: str) -> None:
    make("docs/a.md", "docs/a.txt", "docs/sub/b.md", "docs/sub/b.rst")
    found = discover(["docs"], recursive=True, globs=[glob])
    assert found.inputs == ["docs/a.md", "docs/sub/b.md"]
    assert skipped(found) == [("docs/a.txt", NO_GLOB), ("docs/sub/b.rst", NO_GLOB)]


def test_glob_without_a_directory_part_matches_the_file_name_at_any_depth() -> None:
    make("docs/readme.md", "docs/sub/readme-2.md", "docs/sub/other.md")
    found = discover(["docs"], recursive=True, globs=["readme*"])
    assert found.inputs == ["docs/readme.md", "docs/sub/readme-2.md"]


def test_glob_with_a_directory_part_matches_the_relative_path() -> None:
    make("docs/a.md", "docs/notes/b.md", "docs/notes/deep/c.md", "docs/other/d.md")
    found = discover(["docs"], recursive=True, globs=["notes/**/*.md"])
    assert found.inputs == ["docs/notes/b.md", "docs/notes/deep/c.md"]


def test_several_globs_take_the_union() -> None:
    make("d/a.md", "d/b.txt", "d/c.rst", "d/e.py")
    found = discover(["d"], recursive=True, globs=["*.md", "*.txt"])
    assert found.inputs == ["d/a.md", "d/b.txt"]
    assert [path for path, _ in skipped(found)] == ["d/c.rst", "d/e.py"]


def test_glob_does_not_filter_files_named_explicitly() -> None:
    make("d/a.md", "notes.txt")
    found = discover(["notes.txt", "d"], recursive=True, globs=["*.md"])
    assert found.inputs == ["notes.txt", "d/a.md"]


# -- --files-from -------------------------------------------------------------------------


def test_files_from_a_file_ignores_blank_lines_and_crlf_and_dedups() -> None:
    make("a.md", "b c.md", "d/e.md", "last.md")
    Path("list.txt").write_bytes(b"a.md\r\n\r\nb c.md\n   \nd/e.md\n./a.md\na.md\nlast.md")
    found = discover([], files_from="list.txt")
    assert found.inputs == ["a.md", "b c.md", "d/e.md", "last.md"]  # last line: no newline


def test_files_from_comes_after_names_and_is_not_filtered() -> None:
    make("a.md", ".hidden.md", "blob.bin")
    Path("list.txt").write_text(".hidden.md\nblob.bin\nmissing.md\n")
    found = discover(["a.md"], files_from="list.txt", recursive=True, globs=["*.txt"])
    assert found.inputs == ["a.md", ".hidden.md", "blob.bin", "missing.md"]


def test_files_from_stdin() -> None:
    make("a.md", "b.md")
    found = discover([], files_from="-", stdin=io.BytesIO(b"b.md\na.md\nb.md\n"))
    assert found.inputs == ["b.md", "a.md"]


def test_files_from_stdin_with_null_separators_keeps_newlines_and_spaces() -> None:
    names = ["line\nbreak.md", " spaced name .md", "tail\r"]
    make(*names)
    listing = b"".join(os.fsencode(name) + b"\0" for name in names)
    found = discover([], files_from="-", null_sep=True, stdin=io.BytesIO(listing))
    assert found.inputs == names
    assert all(read_source(name).data == TEXT for name in found.inputs)


def test_files_from_with_null_separators_as_find_print0_writes_them() -> None:
    make("docs/a.md", "docs/b c.md")
    Path("list").write_bytes(b"docs/a.md\0docs/b c.md\0\0")
    assert discover([], files_from="list", null_sep=True).inputs == ["docs/a.md", "docs/b c.md"]


def test_files_from_a_directory_in_the_list_is_walked_with_r() -> None:
    make("docs/a.md", "docs/.h.md")
    found = discover([], files_from="-", recursive=True, stdin=io.BytesIO(b"docs\n"))
    assert found.inputs == ["docs/a.md"]
    assert skipped(found) == [("docs/.h.md", HIDDEN)]


def test_files_from_a_dash_line_names_the_file_not_stdin() -> None:
    make("-")
    Path("list").write_text("-\n")
    found = discover(["-"], files_from="list")
    assert found.inputs == ["-", os.path.join(os.curdir, "-")]
    assert read_source(found.inputs[1]).data == TEXT


def test_files_from_non_utf8_bytes_do_not_crash() -> None:
    listing = io.BytesIO(b"caf\xe9.md\n")
    found = discover([], files_from="-", stdin=listing)
    assert found.inputs == [os.fsdecode(b"caf\xe9.md")]
    with pytest.raises(InputError, match="no such file"):
        read_source(found.inputs[0])


def test_files_from_a_missing_file_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no such file") as error:
        discover([], files_from="nope.txt")
    assert error.value.source == "nope.txt"
    assert "--files-from" in str(error.value)
    assert error.value.exit_code == ExitCode.BAD_INPUT


def test_files_from_a_directory_is_an_input_error() -> None:
    os.mkdir("lists")
    with pytest.raises(InputError, match="is a directory"):
        discover([], files_from="lists")


def test_files_from_a_long_list_read_in_blocks() -> None:
    names = [f"d/{i:05d}-{'x' * 40}.md" for i in range(3000)]  # over one 64 KiB block
    listing = "".join(f"{name}\n" for name in names).encode()
    found = discover([], files_from="-", stdin=io.BytesIO(listing))
    assert found.inputs == names


# -- many files ---------------------------------------------------------------------------


def test_ten_thousand_files_are_all_discovered_in_order() -> None:
    for d in range(20):
        os.makedirs(f"tree/d{d:02d}")
        for f in range(500):
            with open(f"tree/d{d:02d}/f{f:03d}.md", "wb") as handle:
                handle.write(TEXT)
    found = discover(["tree"], recursive=True, globs=["**/*.md"])
    assert len(found.inputs) == 10_000
    assert found.inputs[0] == "tree/d00/f000.md"
    assert found.inputs[-1] == "tree/d19/f499.md"
