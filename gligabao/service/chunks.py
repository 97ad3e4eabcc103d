"""A document's stored chunks, and whether they are what its text is cut into now
(`in_sync`): the text is cut again with the current settings, as `gb status` judges a
file, and compared with the chunks the store holds."""

from __future__ import annotations

import os
from typing import Any

from gligabao.config import Config
from gligabao.read.files import STDIN, decode
from gligabao.read.sources import Source
from gligabao.remember.cut import cut_source
from gligabao.remember.status import layout
from gligabao.store import Connection, artifacts
from gligabao.store.errors import NotFound

__all__ = ["stored_chunks"]

_SHOWN = ("id", "chunk_index", "start_offset", "end_offset", "tokens", "section", "anchor")


def stored_chunks(
    config: Config, conn: Connection, document_id: int, dataset_id: int
) -> dict[str, Any]:
    """The chunks stored of a document of the dataset, each with its text and summary,
    and `in_sync`: true when they are exactly what its text and the current settings cut,
    the document complete. A document of another dataset is not found."""
    document = artifacts.get_document(conn, document_id)
    if document.get("parent_id") is not None or document["dataset_id"] != dataset_id:
        raise NotFound(f"no document {document_id} in this dataset")
    chunks = document["chunks"]
    return {
        "document_id": document_id,
        "source": document["source"],
        "status": document["status"],
        "in_sync": _in_sync(config, conn, document),
        "chunk_count": len(chunks),
        "chunks": [
            {
                **{key: chunk.get(key) for key in _SHOWN},
                "text": chunk["text"],
                "summary": (chunk.get("summary") or {}).get("text"),
            }
            for chunk in chunks
        ],
    }


def _in_sync(config: Config, conn: Connection, document: dict[str, Any]) -> bool:
    """Whether a plain text's stored chunks are its cut now; a read document (a PDF, a
    chat) is cut from its file, which the server does not read: judged by its state."""
    if document["status"] != "complete":  # stages pending, or superseded
        return False
    if document.get("locations"):
        return True
    stored = document["source"] or STDIN
    data = document["text"].encode("utf-8", "surrogatepass")
    # A file is stored by its absolute path and cut in the mode its name says; a text
    # given on standard input (or to gb serve) was cut as plain text, whatever its name.
    name = stored if os.path.isabs(stored) else STDIN
    source = Source(name, data, decode(stored, data))
    cut = cut_source(source, config.chunk_settings())
    return artifacts.chunk_layout(conn, document["id"]) == layout(cut)
