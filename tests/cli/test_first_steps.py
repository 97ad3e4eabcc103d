"""What a new user hits first: the small things gb says on the way, said once, right and
in agreement with each other. Real parts: the test LLM server, a real SQLite file.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.helpers import gb, story, write


def test_a_folder_without_r_points_to_r(gb_cli, online) -> None:
    Path("notes").mkdir()
    write("notes/a.txt", story(1))
    said = gb(gb_cli, "remember", "notes", code=3).stderr.strip()
    assert said == (
        "gb: notes: is a directory; use -r (--recursive) for the files in it and below, "
        "or name the files"
    )
    # gb status walks folders with -r as well, and says so alike.
    said = gb(gb_cli, "status", "notes", code=3).stderr.strip()
    assert "use -r (--recursive)" in said
    gb(gb_cli, "remember", "-r", "notes")
