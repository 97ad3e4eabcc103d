"""Extraction measured on a user's own documents (gb eval --graph): each gold document's
stored facts, entities and LLM calls read back, relations compared by meaning where an
embeddings endpoint is configured (every distinct phrase embedded once), by words
otherwise; the matching itself is graph/evaluate.py."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gligabao.graph.evaluate import (
    COSINE_THRESHOLD,
    DocumentScore,
    GoldDocument,
    relation_phrase,
    same_entity,
    score_document,
    total,
    words_match,
)
from gligabao.graph.merges import merged_names
from gligabao.store.artifacts import find_by_source
from gligabao.store.errors import NotFound
from gligabao.store.extraction import document_entities, document_facts, document_usage

if TYPE_CHECKING:
    from gligabao.config import Config
    from gligabao.store import Connection
    from gligabao.store.datasets import Dataset

__all__ = ["GraphEvaluation", "evaluate_graph"]

BY_MEANING = "embeddings"
BY_WORDS = "words"


@dataclass(frozen=True)
class GraphEvaluation:
    """Each gold document's figures, their total, and how relations were compared."""

    dataset: str
    documents: list[DocumentScore]
    total: DocumentScore
    relations: str  # BY_MEANING or BY_WORDS


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _by_meaning(config: Config, phrases: list[str]) -> Callable[[str, str], bool]:
    """Relations the same when their words say so or their embeddings are close."""
    from gligabao.service.evaluation import _embed_all

    vectors = _embed_all(config, [relation_phrase(p) for p in phrases])

    def same(stored: str, gold: str) -> bool:
        if words_match(stored, gold):
            return True
        a, b = vectors.get(relation_phrase(stored)), vectors.get(relation_phrase(gold))
        return a is not None and b is not None and _cosine(a, b) >= COSINE_THRESHOLD

    return same


def evaluate_graph(
    config: Config,
    conn: Connection,
    dataset: Dataset,
    gold: list[GoldDocument],
    *,
    notice: Callable[[str], None],
    use_embeddings: bool = True,
) -> GraphEvaluation:
    """The dataset's extraction of each gold document scored against its gold facts.
    NotFound names the first gold source the dataset does not hold."""
    from gligabao.llm.endpoint import Endpoints

    found = []
    for doc in gold:
        row = find_by_source(conn, dataset.id, doc.source)
        if row is None:
            raise NotFound(
                f"line {doc.line}: {doc.source} is not remembered in dataset "
                f"'{dataset.name}' (gb remember it with --dataset {dataset.name})"
            )
        found.append((doc, row["id"], document_facts(conn, row["id"])))
    same_relation: Callable[[str, str], bool] = words_match
    relations = BY_WORDS
    if use_embeddings and Endpoints.from_config(config).embeddings_available:
        phrases = [f["relation"] for _, _, facts in found for f in facts]
        phrases += [f.relation for doc in gold for f in doc.facts]
        same_relation, relations = _by_meaning(config, phrases), BY_MEANING
    else:
        notice("no embeddings endpoint configured: relations compared by their words")
    # A gold name that an extracted entity was merged under stands for the entity kept.
    aliases = merged_names(conn, dataset)

    def same_name(stored: str, gold: str) -> bool:
        return same_entity(stored, gold, aliases)

    scores = [
        score_document(
            doc,
            facts,
            document_entities(conn, doc_id),
            document_usage(conn, doc_id),
            same_relation=same_relation,
            same_name=same_name,
        )
        for doc, doc_id, facts in found
    ]
    return GraphEvaluation(dataset.name, scores, total(scores), relations)
