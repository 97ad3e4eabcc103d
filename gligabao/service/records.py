"""What the database holds, read back record by record: LLM calls (gb inferences), the
stages they are recorded under, and one call with the documents it served."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from gligabao.config import STAGES
from gligabao.errors import UsageError
from gligabao.llm.endpoint import EMBED_STAGE
from gligabao.store import inferences as rows
from gligabao.store.errors import NotFound

if TYPE_CHECKING:
    from gligabao.store import Connection

__all__ = ["INFERENCE_STAGES", "inference", "inferences"]

# Every stage an inference is recorded under: the chat stages and the embeddings.
INFERENCE_STAGES = (*STAGES, EMBED_STAGE)


def inferences(conn: Connection, limit: int, stage: str | None) -> list[dict[str, Any]]:
    """The newest `limit` calls, of one `stage` if named."""
    return rows.list_inferences(conn, limit, stage)


def check_stage(stage: str | None) -> str | None:
    """A stage to list, refused when unknown: it would match no row, and an empty table
    would look like "no calls"."""
    if stage is not None and stage not in INFERENCE_STAGES:
        raise UsageError(f"unknown stage {stage!r}: use one of {', '.join(INFERENCE_STAGES)}")
    return stage


def inference(conn: Connection, inference_id: int) -> dict[str, Any]:
    """One call whole: its record, the request it sent (`request`: `messages` of a chat,
    `input` of embeddings; None for a call recorded before requests were kept), its answer
    and the documents it served (`documents`)."""
    row = rows.get_inference(conn, inference_id)
    if row is None:
        raise NotFound(f"no inference with id {inference_id}; gb inferences lists them")
    sent = row["request"]
    row["request"] = None if sent is None else json.loads(sent)
    return {**row, "documents": rows.served_documents(conn, inference_id)}
