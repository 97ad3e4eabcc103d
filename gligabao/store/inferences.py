"""The record of every LLM call (gb_models, gb_inferences), and answers kept for reuse.

Nobody pays twice: an answer is stored with a hash of its request, so a rerun after a failure finds
it (find_answer) instead of paying for the same call again. The caller computes the
hash over what decides the answer (model, messages, schema, settings), never over an
API key or a header, and nothing secret is stored here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from gligabao.store import dialect
from gligabao.store.connection import Connection
from gligabao.store.db import insert, now_iso, query, query_one, scalar, transaction

__all__ = [
    "REASONING_LEVELS",
    "CachedAnswer",
    "asked_before",
    "find_answer",
    "get_inference",
    "list_inferences",
    "model_id",
    "record_inference",
]

REASONING_LEVELS = ("none", "low", "medium", "high")


class CachedAnswer(NamedTuple):
    inference_id: int
    answer: str
    model_name: str


def model_id(conn: Connection, name: str) -> int:
    """The id of a model name as the API reported it, registering it the first time."""
    if not name:
        raise ValueError("a model name cannot be empty")
    # Read first: every call of a run names a model known since its first.
    found = scalar(conn, "SELECT id FROM gb_models WHERE name = ?", (name,))
    if found is not None:
        return int(found)
    with transaction(conn):
        conn.execute("INSERT INTO gb_models(name) VALUES (?) ON CONFLICT DO NOTHING", (name,))
        return int(scalar(conn, "SELECT id FROM gb_models WHERE name = ?", (name,)))


def record_inference(
    conn: Connection,
    *,
    stage: str,
    model: str,
    reasoning: str = "none",
    input_tokens: int = 0,
    output_tokens: int = 0,
    cached_tokens: int = 0,
    cost: float | None = None,
    duration_ms: int | None = None,
    request_hash: str | None = None,
    answer: str | None = None,
    dataset_id: int | None = None,
    created_at: str | None = None,
    request: str | None = None,
) -> int:
    """Insert one inference row; returns its id. `cost` is None when no price is known;
    `request` is what was sent (JSON, its keys already kept out by the caller)."""
    if reasoning not in REASONING_LEVELS:
        raise ValueError(
            f"reasoning must be one of {', '.join(REASONING_LEVELS)}, not {reasoning!r}"
        )
    with transaction(conn):
        mid = model_id(conn, model)
        return insert(
            conn,
            """INSERT INTO gb_inferences(stage, model_id, reasoning, input_tokens,
                   output_tokens, cached_tokens, cost, duration_ms, request_hash, answer,
                   dataset_id, created_at, request)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                stage,
                mid,
                reasoning,
                input_tokens,
                output_tokens,
                cached_tokens,
                cost,
                duration_ms,
                request_hash,
                answer,
                dataset_id,
                created_at or now_iso(),
                request,
            ),
        )


def find_answer(conn: Connection, request_hash: str) -> CachedAnswer | None:
    """The latest stored answer to a request with this hash, if any."""
    row = query_one(
        conn,
        """SELECT i.id, i.answer, m.name FROM gb_inferences i JOIN gb_models m ON m.id = i.model_id
           WHERE i.request_hash = ? AND i.answer IS NOT NULL ORDER BY i.id DESC LIMIT 1""",
        (request_hash,),
    )
    return None if row is None else CachedAnswer(row["id"], row["answer"], row["name"])


def asked_before(conn: Connection, request_hash: str) -> bool | None:
    """Whether a request with this hash was answered (True), asked with no answer kept
    (False: it failed), or never asked (None)."""
    row = query_one(
        conn,
        """SELECT count(answer) AS answered, count(*) AS asked FROM gb_inferences
           WHERE request_hash = ?""",
        (request_hash,),
    )
    if row is None or not row["asked"]:
        return None
    return bool(row["answered"])


_COLUMNS = """i.id, i.stage, m.name AS model, i.reasoning, i.input_tokens, i.output_tokens,
    i.cached_tokens, i.cost, i.duration_ms, i.created_at, i.request_hash, i.dataset_id"""


def get_inference(conn: Connection, inference_id: int) -> dict[str, Any] | None:
    """One inference with its model name, its request and its answer."""
    return query_one(
        conn,
        f"""SELECT {_COLUMNS}, i.request, i.answer FROM gb_inferences i
            JOIN gb_models m ON m.id = i.model_id WHERE i.id = ?""",
        (inference_id,),
    )


def link_document(conn: Connection, inference_ids: Sequence[int], document_id: int) -> None:
    """Say which document these calls served (those not linked to one already: a reused
    answer keeps the document it was first given for)."""
    if not inference_ids:
        return
    with transaction(conn):
        conn.execute(
            f"""UPDATE gb_inferences SET document_id = ?
               WHERE id IN {dialect.of(conn).id_list("?")} AND document_id IS NULL""",
            (document_id, json.dumps(sorted(set(inference_ids)))),
        )


def served_documents(conn: Connection, inference_id: int) -> list[dict[str, Any]]:
    """The document an inference served: `id`, `source`, and `chunk_index` when the call
    wrote a chunk's summary or context (else None: an extraction, a resolve or an
    embeddings call serves the document's chunks together)."""
    return query(
        conn,
        """SELECT d.id, d.source,
                  (SELECT c.chunk_index FROM gb_artifacts s
                     JOIN gb_artifacts c ON c.id = s.parent_id
                    WHERE s.inference_id = i.id ORDER BY c.chunk_index LIMIT 1) AS chunk_index
           FROM gb_inferences i JOIN gb_artifacts d ON d.id = i.document_id
           WHERE i.id = ?""",
        (inference_id,),
    )


def list_inferences(
    conn: Connection,
    limit: int = 50,
    stage: str | None = None,
    *,
    dataset_id: int | None = None,
) -> list[dict[str, Any]]:
    """The latest inferences first, with the model's name (answers left out: they are long)."""
    where, params = [], []
    if stage is not None:
        where.append("i.stage = ?")
        params.append(stage)
    if dataset_id is not None:
        where.append("i.dataset_id = ?")
        params.append(dataset_id)
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    return query(
        conn,
        f"""SELECT {_COLUMNS} FROM gb_inferences i JOIN gb_models m ON m.id = i.model_id
            {clause} ORDER BY i.id DESC LIMIT ?""",
        [*params, limit],
    )
