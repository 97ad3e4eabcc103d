"""The LLM layer: stage prompts and schemas (prompts), the client (client), answers (schema).

Nothing here touches the database; each call returns an `Inference` for the pipeline to
record, with the request's hash so a stored answer can be reused (SPEC R11).
"""

from gligabao.llm.client import (
    EMBED_STAGE,
    LLM,
    Answer,
    Embeddings,
    Inference,
    LLMError,
    scrub,
)
from gligabao.llm.prompts import (
    ChatRequest,
    check_answer,
    contextualize_chunk_request,
    extract_graph_request,
    resolve_request,
    summarize_chunk_request,
)
from gligabao.llm.schema import SchemaMismatch, load_answer, parse_lenient, validate

__all__ = [
    "EMBED_STAGE",
    "LLM",
    "Answer",
    "ChatRequest",
    "Embeddings",
    "Inference",
    "LLMError",
    "SchemaMismatch",
    "check_answer",
    "contextualize_chunk_request",
    "extract_graph_request",
    "load_answer",
    "parse_lenient",
    "resolve_request",
    "scrub",
    "summarize_chunk_request",
    "validate",
]
