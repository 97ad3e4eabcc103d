"""The writer (gligabao.remember.write) on a real database: what it does when another
process stored a chunk of the same document first."""

from __future__ import annotations

from gligabao.base.lines import LineIndex
from gligabao.chunk import ChunkSettings, cut
from gligabao.remember.resolve import Extraction, Resolver
from gligabao.remember.write import Piece, Writer
from gligabao.store import artifacts, datasets, open_db

DIMS = 8
FACT = {
    "entities": [
        {"name": "Ada Lovelace", "type": "Person", "summary": "A mathematician."},
        {"name": "Analytical Engine", "type": "Machine", "summary": "A computer design."},
    ],
    "edges": [
        {
            "source": "Ada Lovelace",
            "target": "Analytical Engine",
            "relation": "WROTE_ABOUT",
            "fact": "Ada Lovelace wrote notes on the Analytical Engine.",
            "valid_at": None,
            "invalid_at": None,
        }
    ],
}


def _pieces(text: str, conn, dataset_id: int) -> list[Piece]:
    """Every chunk extracts the same fact, planned as one run plans them: each later
    chunk's fact is an exact duplicate of the first's."""
    result = cut(text, ChunkSettings(chunk_size=32, overlap_percent=0), None)
    assert len(result.chunks) >= 2
    resolver = Resolver(conn, dataset_id)
    pieces = []
    for chunk in result.chunks:
        piece = Piece(chunk.index, chunk.text, chunk, Extraction.from_answer(FACT), "summary")
        piece.plan = resolver.plan(chunk.index, piece.extraction)
        piece.vectors = {key: [1.0] * DIMS for key in ("summary", "entity:0", "entity:1", "edge:0")}
        piece.vectors["chunk"] = [[1.0] * DIMS]  # a vector a piece of the chunk: one
        pieces.append(piece)
    return pieces


def test_a_chunk_stored_by_another_process_lends_its_facts_to_later_chunks(tmp_path) -> None:
    conn = open_db(tmp_path / "gb.db")
    ds = datasets.get_or_create_dataset(conn, "default")
    datasets.set_embedding(conn, ds.id, "test-embedding", DIMS)
    text = ("Ada Lovelace wrote notes on the engine. " * 4) + "\n\n" + ("She met Babbage. " * 6)
    mine = _pieces(text, conn, ds.id)  # this process planned every chunk before storing
    theirs = _pieces(text, conn, ds.id)
    doc_id = artifacts.insert_document(conn, dataset_id=ds.id, text=text, chunk_count=len(mine))
    document = artifacts.get_artifact(conn, doc_id)
    lines = LineIndex(text)
    Writer(conn, ds.id, document, lines).store(theirs[0])  # another process stores chunk 1 first

    writer = Writer(conn, ds.id, document, lines)
    assert writer.store(mine[0]).edges == []  # already stored: skipped
    later = [writer.store(piece) for piece in mine[1:]]

    (edge,) = list(conn.execute("SELECT id FROM gb_edges"))  # one fact, not a copy a chunk
    for written in later:
        assert [(e["id"], e["created"]) for e in written.edges] == [(edge["id"], False)]
