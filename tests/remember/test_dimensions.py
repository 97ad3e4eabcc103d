"""A first run whose embedding model makes vectors of another size than configured fails
with a line saying what to set, and stores no vector: the dataset is not bound to the
size it was configured for, and the run with the right size goes in the same dataset."""

from __future__ import annotations

import json
from typing import Any

from tests.support.helpers import absolute, assert_documents_complete, gb, rows, story, write
from tests.support.llm_server import LLMServer


def _held(gb_cli) -> dict[str, int]:
    """How many vectors each index holds, by `gb vec-stats`."""
    lines = gb(gb_cli, "vec-stats", "--json").stdout.splitlines()
    stats: list[dict[str, Any]] = [json.loads(line) for line in lines]
    return {row["index"]: row["held"] for row in stats}


def test_a_first_run_of_the_wrong_size_does_not_bind_the_dataset(
    gb_cli, backend, online: LLMServer, monkeypatch
) -> None:
    write("notes.txt", story(5, paragraphs=2))
    online.embed_size = 32  # the model's own size, whatever gb asks (64)

    failed = gb(gb_cli, "remember", "notes.txt", code=1)

    said = " ".join(failed.stderr.split())
    assert "32 dimensions, not 64" in said and "embeddings.dimensions" in said
    assert not any(_held(gb_cli).values()), "a vector was stored"

    monkeypatch.setenv("GB_EMBEDDINGS_DIMENSIONS", "32")
    gb(gb_cli, "remember", "notes.txt", "-q")  # the same dataset, not refused

    (dataset,) = rows("SELECT name, embedding_dimensions FROM gb_datasets")
    assert dataset["embedding_dimensions"] == 32
    assert _held(gb_cli)["chunks"] > 0
    assert_documents_complete()
    stored = rows("SELECT source FROM gb_artifacts WHERE parent_id IS NULL")
    assert stored == [{"source": absolute("notes.txt")}]
