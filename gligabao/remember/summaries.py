"""Stale entity summaries rewritten from the facts gb holds now.

The store marks an entity's summary stale when a fact touching it is closed, expired or
forgotten (store/entity_summaries.py). A run with a chat endpoint then rewrites the
dataset's stale summaries once its documents are stored (a batch after its last one),
several entities a call (stage summarize_entity), each from its current facts with their
intervals: the same facts give the same request, so a rerun reuses the answer recorded.
An entity with no fact left gets an empty summary, without a call: gb holds nothing it
could state. Each rewritten summary is embedded again, as the entity's vector is its name
and summary. Offline, or when a call fails, the marks stay for the next run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gligabao.calls import BudgetReached, Calls
from gligabao.llm import LLMError
from gligabao.llm.prompts import summarize_entity_request
from gligabao.llm.split import combine
from gligabao.store import Connection, transaction, vectors
from gligabao.store.entity_summaries import current_facts_of, rewrite_summary, stale_entities

__all__ = ["BATCH", "Followed", "follow_facts"]

BATCH = 8  # entities a call: short answers, and one failure leaves few stale
MOST_FACTS = 20  # the latest facts of one entity a prompt gives
MOST_A_RUN = 2_000  # stale entities one run rewrites; the rest wait for the next

Step = Callable[[str, str], None]


@dataclass
class Followed:
    """What a run did with the stale summaries: rewritten by a call, emptied (no fact
    left), still stale (a call failed or the budget stopped it: `failure` says why)."""

    rewritten: int = 0
    emptied: int = 0
    left: int = 0
    failure: str | None = None

    @property
    def changed(self) -> int:
        return self.rewritten + self.emptied


async def follow_facts(
    conn: Connection, dataset_id: int, calls: Calls, on_step: Step | None = None
) -> Followed:
    """Rewrite the dataset's stale entity summaries (see the module docstring)."""
    stale = stale_entities(conn, dataset_id, MOST_A_RUN)
    done = Followed()
    if not stale:
        return done
    facts = current_facts_of(conn, [e["id"] for e in stale], MOST_FACTS)
    with transaction(conn):
        for entity in stale:
            if not facts.get(entity["id"]) and rewrite_summary(
                conn, entity["id"], "", entity["summary_stale_at"]
            ):
                done.emptied += 1
    asked = [e for e in stale if facts.get(e["id"])]
    batches = [asked[i : i + BATCH] for i in range(0, len(asked), BATCH)]
    rewriter = _Rewriter(conn, dataset_id, calls, facts)
    outcomes = await asyncio.gather(*map(rewriter.rewrite, batches), return_exceptions=True)
    for batch, outcome in zip(batches, outcomes, strict=True):
        if isinstance(outcome, (LLMError, BudgetReached)):
            done.left += len(batch)
            done.failure = done.failure or str(outcome)
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            done.rewritten += outcome
            done.left += len(batch) - outcome
    if on_step is not None and done.changed + done.left:
        left = f"; {done.left} left stale ({done.failure})" if done.left else ""
        on_step(
            "summarize_entity",
            f"{done.rewritten} entity summaries rewritten from their facts, "
            f"{done.emptied} emptied{left}",
        )
    return done


@dataclass
class _Rewriter:
    """The calls that rewrite batches of entities' summaries from `facts` (by entity)."""

    conn: Connection
    dataset_id: int
    calls: Calls
    facts: dict[int, list[dict[str, Any]]]

    async def rewrite(self, batch: list[dict[str, Any]]) -> int:
        """One call for `batch`; the summaries stored, their vectors embedded again. How
        many. An answer cut off at its output limit is asked again as two halves of the
        batch, down to one entity, as resolve's batches are."""
        try:
            return await self._rewrite_whole(batch)
        except LLMError as exc:
            if not exc.cut_off or len(batch) < 2:
                raise
        half = len(batch) // 2
        return sum(await asyncio.gather(self.rewrite(batch[:half]), self.rewrite(batch[half:])))

    async def _rewrite_whole(self, batch: list[dict[str, Any]]) -> int:
        given = [
            {
                "id": f"e{i}",
                "name": entity["name"],
                "type": entity["type"],
                "facts": [
                    {"fact": f["fact"], "from": f["valid_at"], "until": f["invalid_at"]}
                    for f in self.facts[entity["id"]]
                ],
            }
            for i, entity in enumerate(batch)
        ]
        answer = await self.calls.ask(summarize_entity_request(given))
        written = {
            str(item.get("id")): str(item.get("summary") or "").strip()
            for item in answer.value.get("summaries", ())
        }
        new = [(e, written[f"e{i}"]) for i, e in enumerate(batch) if written.get(f"e{i}")]
        if not new:
            return 0
        embedded = await self.calls.embed([f"{e['name']}: {summary}" for e, summary in new])
        stored = 0
        with transaction(self.conn, whole=True):
            for (entity, summary), pieces in zip(new, embedded, strict=True):
                if rewrite_summary(self.conn, entity["id"], summary, entity["summary_stale_at"]):
                    row = vectors.entity_row(entity["id"], combine(pieces))
                    vectors.upsert_vectors(self.conn, self.dataset_id, "entities", [row])
                    stored += 1
        return stored
