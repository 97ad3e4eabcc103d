"""Files a batch leaves out: empty files in a folder walk are
skipped, not failed, and what was skipped is said in one line unless --verbose.

Real SQLite files with sqlite-vec, and the real openai client over HTTP to the test
server (the `online` fixture), as a cron job would run `gb`.
"""

from __future__ import annotations

import json

from tests.support.helpers import (
    absolute,
    current_by_source,
    gb,
    statuses,
    stderr_lines,
    story,
    write,
)


def package() -> None:
    """A folder laid out as a Python package: empty and blank `__init__.py` files, a
    module, a binary file and notes that `--glob '*.py'` leaves out."""
    write("pkg/__init__.py", b"")
    write("pkg/mime/__init__.py", b"")
    write("pkg/mime/text.py", story(1))
    write("pkg/sub/__init__.py", b"\n  \n")
    write("pkg/sub/core.py", story(2))
    write("pkg/sub/data.py", b"\x00\x01binary")
    write("pkg/README.txt", story(3))


def test_a_cron_run_over_a_package_with_empty_init_files_exits_0(gb_cli, online) -> None:
    package()

    result = gb(gb_cli, "remember", "-r", "pkg", "--glob", "*.py", "--quiet")

    assert result.stdout == "" and result.stderr == ""
    assert set(current_by_source()) == {absolute("pkg/mime/text.py"), absolute("pkg/sub/core.py")}
    # `gb status -r` walks the same way: the empty files are no unreadable inputs.
    status = gb(gb_cli, "status", "-r", "pkg", "--glob", "*.py", "--json")
    states = {line["source"]: line["state"] for line in map(json.loads, status.stdout.splitlines())}
    assert states == {"pkg/mime/text.py": "in sync", "pkg/sub/core.py": "in sync"}
    assert status.stderr == "gb: 2 files: 2 in sync\n"  # the summary line alone


def test_an_empty_file_named_explicitly_is_still_refused(gb_cli, online) -> None:
    package()

    result = gb(gb_cli, "remember", "pkg/__init__.py", "pkg/sub/__init__.py", "--json", code=3)

    assert statuses(result.stdout) == {"pkg/__init__.py": "failed", "pkg/sub/__init__.py": "failed"}
    assert "gb: pkg/__init__.py: is empty" in stderr_lines(result)
    assert "gb: pkg/sub/__init__.py: holds only whitespace" in stderr_lines(result)
    assert current_by_source() == {}


def test_files_from_skips_empty_listed_files(gb_cli, online) -> None:
    package()
    listing = b"pkg/__init__.py\0pkg/mime/__init__.py\0pkg/mime/text.py\0"

    result = gb(gb_cli, "remember", "--files-from", "-", "-0", "--json", input=listing)

    assert statuses(result.stdout) == {"pkg/mime/text.py": "remembered"}
    assert stderr_lines(result) == ["gb: skipped 2 empty"]


def test_skips_are_one_summary_line_and_counted_in_the_closing_summary(gb_cli, online) -> None:
    package()

    result = gb(gb_cli, "remember", "-r", "pkg", "--glob", "*.py")

    first, *middle, last = stderr_lines(result)
    assert first == "gb: skipped 1 binary, 1 not matching --glob, 3 empty"
    assert not any("skipped" in line for line in middle)  # no line per file
    assert last.startswith("gb: 2 inputs: 2 remembered (5 files skipped); ")
    assert len(result.stdout.splitlines()) == 2  # one line per input remembered


def test_verbose_lists_each_skipped_file_then_the_summary(gb_cli, online) -> None:
    package()

    result = gb(gb_cli, "remember", "-r", "pkg", "--glob", "*.py", "-v")

    assert stderr_lines(result)[:6] == [
        "gb: skipped pkg/README.txt: does not match --glob",
        "gb: skipped pkg/__init__.py: empty",
        "gb: skipped pkg/mime/__init__.py: empty",
        "gb: skipped pkg/sub/__init__.py: holds only whitespace",
        "gb: skipped pkg/sub/data.py: binary (NUL byte in the first 8 KiB)",
        "gb: skipped 1 binary, 1 not matching --glob, 3 empty",
    ]
    assert gb(gb_cli, "remember", "-r", "pkg", "--verbose", "--force").stderr.count("skipped") > 4


def test_quiet_says_nothing_about_skips_even_with_verbose(gb_cli, online) -> None:
    package()

    result = gb(gb_cli, "remember", "-r", "pkg", "--quiet", "-v", "--json")

    assert result.stderr == ""
    assert set(statuses(result.stdout)) == {"pkg/README.txt", "pkg/mime/text.py", "pkg/sub/core.py"}


def test_one_input_and_skips_the_summary_line_alone(gb_cli, online) -> None:
    write("pkg/__init__.py", b"")
    write("pkg/only.py", story(4))

    result = gb(gb_cli, "remember", "-r", "pkg", "--json")

    assert statuses(result.stdout) == {"pkg/only.py": "remembered"}
    assert stderr_lines(result) == ["gb: skipped 1 empty"]


def test_status_r_skips_empty_files_as_remember_does(gb_cli, online) -> None:
    package()
    gb(gb_cli, "remember", "pkg/mime/text.py", "pkg/sub/core.py", "--quiet")

    result = gb(gb_cli, "status", "-r", "pkg", "--glob", "*.py", "--json")  # exit 0: in sync

    assert [json.loads(line)["source"] for line in result.stdout.splitlines()] == [
        "pkg/mime/text.py",
        "pkg/sub/core.py",
    ]
    assert result.stderr == "gb: 2 files: 2 in sync\n"  # the summary line alone
