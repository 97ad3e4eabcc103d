"""Vector search through the one-bit companions of the chunks and summaries indexes: the
coarse Hamming pass finds the exact scan's nearest chunks, and `search.exact = true`
keeps the exact scan. On a real SQLite file with sqlite-vec, built through the store as
`gb remember` leaves it, large enough (more than 20 times the 400 candidates a search
rescores) for the quantized search to be chosen with its real thresholds."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from gligabao.search.hybrid import search
from gligabao.store import open_db, transaction, vectors
from gligabao.store.artifacts import insert_chunk, insert_document
from gligabao.store.datasets import find_dataset, get_or_create_dataset, set_embedding
from tests.support.helpers import gb_env, write
from tests.support.llm_server import LLMServer, embed_text

DIMS = 64  # what tests/support/helpers.gb_env configures, so `gb search` embeds queries so too
LATENT = 8
CHUNKS = 8_200  # > QUANTIZED_RATIO * OVERSAMPLE_MIN: the quantized search is chosen
PER_DOCUMENT = 100
MODEL = "text-embedding-3-small"  # the configured default: gb search takes the dataset


def _unit(values: list[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in values))
    return [x / norm for x in values]


class Embeddings:
    """A deterministic vector set shaped as real embeddings are: unit vectors of DIMS
    dimensions spanned by LATENT directions (a real model's vectors lie near a space of
    few dimensions, which is why one bit a dimension keeps their neighbours), with
    queries drawn the same way. Random isotropic vectors have no such structure."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.basis = [[self.rng.gauss(0, 1) for _ in range(LATENT)] for _ in range(DIMS)]

    def draw(self) -> list[float]:
        z = [self.rng.gauss(0, 1) for _ in range(LATENT)]
        return _unit([math.fsum(a * b for a, b in zip(row, z, strict=True)) for row in self.basis])


def _cosine_order(stored: dict[int, list[float]], query: list[float]) -> list[int]:
    """Chunk ids by exact cosine distance to `query` (the stored vectors are unit)."""
    q = _unit(query)
    return sorted(
        stored, key=lambda cid: -math.fsum(a * b for a, b in zip(stored[cid], q, strict=True))
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict[int, list[float]], Embeddings]:
    """A dataset 'q' of CHUNKS chunks, each with its vector in the chunks index."""
    path = tmp_path_factory.mktemp("quantized") / "gb.db"
    conn = open_db(path)
    ds = get_or_create_dataset(conn, "q")
    set_embedding(conn, ds.id, MODEL, DIMS)
    made = Embeddings(seed=5)
    stored: dict[int, list[float]] = {}
    for first in range(0, CHUNKS, PER_DOCUMENT):
        texts = [f"Chunk {first + i} of the quantized set.\n" for i in range(PER_DOCUMENT)]
        with transaction(conn):
            doc = insert_document(
                conn,
                dataset_id=ds.id,
                text="".join(texts),
                source=f"/q/doc-{first // PER_DOCUMENT}.txt",
                chunk_count=PER_DOCUMENT,
                status="complete",
                tokens=10 * PER_DOCUMENT,
            )
            rows, offset = [], 0
            for index, text in enumerate(texts):
                size = len(text.encode())
                chunk = insert_chunk(
                    conn,
                    document_id=doc,
                    text=text,
                    chunk_index=index,
                    start_offset=offset,
                    end_offset=offset + size,
                    tokens=10,
                )
                offset += size
                stored[chunk] = made.draw()
                rows.append(vectors.chunk_row(chunk, doc, index, stored[chunk]))
            vectors.upsert_vectors(conn, ds.id, "chunks", rows)
    conn.close()
    return path, stored, made


def _traced_vector_search(conn, dataset, query: list[float], **kwargs) -> tuple[list[int], bool]:
    """The vector search's hit ids, and whether it went through a bits table."""
    statements: list[str] = []
    conn.exec_trace = lambda _cursor, sql, _bindings: statements.append(sql) or True
    try:
        hits = search(conn, dataset, "unused", method="vector", k=20, query_vector=query, **kwargs)
    finally:
        conn.exec_trace = None
    return [h.artifact_id for h in hits], any("MATCH vec_quantize_binary" in s for s in statements)


def test_quantized_search_finds_the_exact_scans_top_20(built) -> None:
    path, stored, made = built
    conn = open_db(path, create=False)
    try:
        dataset = find_dataset(conn, "q")
        assert dataset is not None
        queries = [made.draw() for _ in range(30)]
        found = []
        for query in queries:
            quantized, through_bits = _traced_vector_search(conn, dataset, query)
            assert through_bits  # the chunks index is searched through its bits table
            exact, exact_through_bits = _traced_vector_search(conn, dataset, query, exact=True)
            assert not exact_through_bits
            truth = _cosine_order(stored, query)[:20]
            assert exact == truth  # the exact switch is the exact scan
            assert len(quantized) == 20
            found.append(len(set(quantized) & set(truth)) / 20)
            # What the quantized search returns is ranked by the true distance.
            assert quantized == [c for c in _cosine_order(stored, query) if c in quantized]
        recall = sum(found) / len(found)
        assert recall >= 0.98, (recall, found)
    finally:
        conn.close()


def test_search_exact_in_the_config_keeps_the_exact_scan(
    built, server: LLMServer, gb_process
) -> None:
    path, stored, _ = built
    write("exact.toml", "[search]\nexact = true\n")
    env = {**gb_env(server), "GB_DB": str(path), "GB_DATASET": "q"}
    query = "licence termination notice"  # the server embeds it as a sparse bag of words
    truth = _cosine_order(stored, embed_text(query, DIMS))[:20]

    def hits(*config: str) -> list[int]:
        done = gb_process(
            "search", query, "--method", "vector", "-k", "20", "--json", *config, env=env
        )
        assert done.returncode == 0, done.stderr
        assert b"unknown" not in done.stderr, done.stderr
        return [json.loads(line)["artifact_id"] for line in done.stdout.splitlines()]

    assert hits("--config", "exact.toml") == truth
    # By default the Hamming pass chooses the candidates: a query vector made of a few
    # coordinates (no real model's) is where one bit a dimension loses the most.
    default = hits()
    assert len(default) == 20 and default != truth
