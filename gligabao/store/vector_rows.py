"""What a vector is, whichever database holds it: the four indexes, a vector's id and
the rows written to an index. The databases' own modules (sqlite/vectors.py,
postgres/vectors.py) store and search them; the rest of the package reaches them as
`store.vectors`.
"""

from __future__ import annotations

from array import array
from collections import namedtuple
from collections.abc import Mapping, Sequence

from gligabao.base.record import Frozen

__all__ = [
    "INDEXES",
    "KIND",
    "KNN_MAX",
    "METADATA",
    "Neighbor",
    "VectorRow",
    "check_index",
    "chunk_row",
    "chunk_rows",
    "edge_row",
    "entity_row",
    "parse_vector_id",
    "summary_row",
    "to_blob",
    "vector_id",
]

INDEXES = ("entities", "edges", "chunks", "summaries")

# The largest k a KNN query is asked for (vec0 accepts no more).
KNN_MAX = 4096

# Prefix of the vector ids, and the `kind` metadata value, of each index.
_PREFIX = {"entities": "entity", "edges": "edge", "chunks": "chunk", "summaries": "summary"}
KIND = _PREFIX
_PREFIX_INDEX = {v: k for k, v in _PREFIX.items()}

# The metadata columns of each index after `kind`, in declaration order.
METADATA: dict[str, tuple[str, ...]] = {
    "entities": (),
    "edges": (),
    "chunks": ("artifact_id", "parent_id", "index"),
    "summaries": ("artifact_id", "chunk_id", "parent_id", "index"),
}


class VectorRow(Frozen):
    """One vector to write: its id, the embedding, and the index's metadata columns."""

    vector_id: str
    embedding: Sequence[float] | bytes
    metadata: Mapping[str, int]

    def __init__(
        self,
        vector_id: str,
        embedding: Sequence[float] | bytes,
        metadata: Mapping[str, int] | None = None,  # None: {}
    ) -> None:
        self._fill(vector_id, embedding, {} if metadata is None else metadata)


# Not typing's NamedTuple: `gb search` loads no typing (~3 ms of its start).
class Neighbor(namedtuple("Neighbor", ["vector_id", "distance"])):
    __slots__ = ()
    vector_id: str
    distance: float


def check_index(index_name: str) -> None:
    # Table names cannot be bound as parameters, so only the four known names get in.
    if index_name not in INDEXES:
        raise ValueError(f"unknown vector index {index_name!r}; one of {', '.join(INDEXES)}")


def vector_id(index_name: str, row_id: int) -> str:
    """`entity-3`, `edge-7`, `chunk-12` or `summary-13`."""
    check_index(index_name)
    return f"{_PREFIX[index_name]}-{int(row_id)}"


def parse_vector_id(vid: str) -> tuple[str, int]:
    """`chunk-12` -> ('chunks', 12); a chunk's piece, `chunk-12.3`, -> ('chunks', 12)."""
    prefix, _, number = vid.partition("-")
    if prefix == "chunk":
        number = number.partition(".")[0]
    if prefix not in _PREFIX_INDEX or not number.isdigit():
        raise ValueError(f"not a gligabao vector id: {vid!r}")
    return _PREFIX_INDEX[prefix], int(number)


def entity_row(entity_id: int, embedding: Sequence[float] | bytes) -> VectorRow:
    return VectorRow(vector_id("entities", entity_id), embedding)


def edge_row(edge_id: int, embedding: Sequence[float] | bytes) -> VectorRow:
    return VectorRow(vector_id("edges", edge_id), embedding)


def chunk_row(
    chunk_id: int, parent_id: int, index: int, embedding: Sequence[float] | bytes
) -> VectorRow:
    meta = {"artifact_id": chunk_id, "parent_id": parent_id, "index": index}
    return VectorRow(vector_id("chunks", chunk_id), embedding, meta)


def chunk_rows(
    chunk_id: int, parent_id: int, index: int, embeddings: Sequence[Sequence[float] | bytes]
) -> list[VectorRow]:
    """A chunk's vectors, one a piece it was embedded as (the first keeps the chunk's
    plain id, so a chunk embedded whole is written as before)."""
    meta = {"artifact_id": chunk_id, "parent_id": parent_id, "index": index}
    base = vector_id("chunks", chunk_id)
    return [
        VectorRow(base if n == 0 else f"{base}.{n}", embedding, meta)
        for n, embedding in enumerate(embeddings)
    ]


def summary_row(
    summary_id: int,
    chunk_id: int,
    parent_id: int,
    index: int,
    embedding: Sequence[float] | bytes,
) -> VectorRow:
    meta = {"artifact_id": summary_id, "chunk_id": chunk_id, "parent_id": parent_id, "index": index}
    return VectorRow(vector_id("summaries", summary_id), embedding, meta)


def to_blob(embedding: Sequence[float] | bytes, dimensions: int | None = None) -> bytes:
    """float32 bytes as vec0 takes them; checks the dimension when it is given."""
    if isinstance(embedding, array) and embedding.typecode == "f":
        blob = embedding.tobytes()  # float32 already, as the LLM layer keeps vectors
    elif isinstance(embedding, bytes | bytearray | memoryview):
        blob = bytes(embedding)
    else:
        blob = array("f", embedding).tobytes()
    if len(blob) % 4:
        raise ValueError("an embedding blob must be float32 (a multiple of 4 bytes)")
    if dimensions is not None and len(blob) // 4 != dimensions:
        raise ValueError(
            f"embedding has {len(blob) // 4} dimensions, the dataset's vectors have {dimensions}"
        )
    return blob
