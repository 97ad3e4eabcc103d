"""`gb search` over a file remembered in many versions: the older versions are kept, with
their keyword rows and vectors, but they must neither be hit nor take the places of the
current version in a method's list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gligabao.search.hybrid import search
from gligabao.store import open_db
from gligabao.store.datasets import find_dataset
from tests.support.llm_server import LLMServer, embed_text

PARAGRAPH = "The licence terminates when the licensee stops complying with its terms. "


@pytest.fixture
def versions(gb_cli, monkeypatch: pytest.MonkeyPatch):
    """notes.txt remembered in six versions, each a new last line; the newest is current.
    Every version is cut into several chunks that all say the same."""
    with LLMServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("GB_DB", str(Path.cwd() / "gb.db"))
        monkeypatch.setenv("GB_EMBEDDINGS_DIMENSIONS", "64")
        monkeypatch.setenv("GB_CHUNK_SIZE", "32")
        for version in range(6):
            Path("notes.txt").write_text(PARAGRAPH * 3 + f"\nVersion {version}.\n")
            result = gb_cli("remember", "notes.txt", "--quiet")
            assert result.exit_code == 0, result.stderr
        yield server


def _current(conn) -> int:
    rows = list(
        conn.execute(
            "SELECT id FROM gb_artifacts WHERE parent_id IS NULL AND superseded_by IS NULL"
        )
    )
    (row,) = rows
    return row["id"]


def test_only_the_current_version_is_hit_even_at_depth_one(versions) -> None:
    conn = open_db("gb.db")
    ds = find_dataset(conn, "default")
    current = _current(conn)
    vector = embed_text("licence terminates", 64)
    for method in ("bm25", "vector", "hybrid"):
        hits = search(
            conn, ds, "licence terminates", method=method, k=1, depth=1, query_vector=vector
        )
        # depth 1: each method's one candidate must be of the current version
        assert [h.document_id for h in hits] == [current], method
        assert set(hits[0].ranks.values()) == {1}, method


def test_gb_search_ranks_the_current_version_first(gb_cli, versions) -> None:
    result = gb_cli("search", "licence terminates", "--method", "bm25", "--json")
    assert result.exit_code == 0, result.stderr
    hits = [json.loads(line) for line in result.stdout.splitlines()]
    current = _current(open_db("gb.db"))
    assert len(hits) > 1 and {h["document_id"] for h in hits} == {current}
    assert [h["ranks"]["bm25"] for h in hits] == list(range(1, len(hits) + 1))
