"""Chunks are numbered the same way in every view a person reads: from 1, as `chunk k of
n` says it (gb chunk-preview's and gb show's `#`, gb show of a chunk, gb inferences);
`--json`'s `index` and `chunk_index` are positions from 0, the same chunk's number less one.

Offline: the file is stored with its chunks, no LLM call.
"""

from __future__ import annotations

import json
import re

from tests.support.helpers import configure, gb, rows, story, write


def _numbers(stdout: str) -> list[str]:
    """The first field of each body row of a table printed off a terminal."""
    return [line.split("\t")[0] for line in stdout.splitlines() if "\t" in line][1:]


def test_preview_show_and_json_number_the_same_chunk_alike(gb_cli, monkeypatch) -> None:
    configure(monkeypatch, None)
    path = str(write("a.md", story(4, paragraphs=6)))
    gb(gb_cli, "remember", path)
    chunks = rows("SELECT id, chunk_index FROM gb_artifacts WHERE chunk_index IS NOT NULL")
    assert len(chunks) >= 3
    third = next(c for c in chunks if c["chunk_index"] == 2)

    preview = gb(gb_cli, "chunk-preview", path).stdout
    assert _numbers(preview) == [str(n) for n in range(1, len(chunks) + 1)]
    [as_json] = map(json.loads, gb(gb_cli, "chunk-preview", path, "--json").stdout.splitlines())
    assert as_json["chunks"][2]["index"] == 2

    shown = " ".join(gb(gb_cli, "show", str(third["id"])).stdout.split())
    assert re.search(rf"chunk 3 of {len(chunks)} \(id {third['id']}\)", shown)
    document = rows("SELECT parent_id FROM gb_artifacts WHERE id = ?", (third["id"],))
    table = gb(gb_cli, "show", str(document[0]["parent_id"])).stdout
    assert _numbers(table)[2] == "3"
