"""The LLM layer: stage prompts and schemas (prompts), endpoints, failures and vectors
checked (endpoint), the SDK-based client (client) with its adaptive limit (limiter),
streamed answers (streaming) and embeddings inputs cut to what the server takes (split),
one query's embedding without the SDK (query), answers (schema).

Nothing here touches the database; each call returns an `Inference` for the pipeline to
record, with the request's hash so a stored answer can be reused. The names
of the client, the prompts and the schemas load on first use: importing the ``openai``
SDK takes ~0.45 s, which a command that makes no chat call (`gb search`, `gb list`)
should not pay.
"""

from __future__ import annotations

from gligabao.base.lazy import exports
from gligabao.base.redact import scrub
from gligabao.llm.endpoint import EMBED_STAGE, Flight, LLMError

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from gligabao.llm.client import LLM, Answer, Embeddings, Inference
    from gligabao.llm.prompts import (
        ChatRequest,
        answer_request,
        check_answer,
        contextualize_chunk_request,
        extract_graph_request,
        resolve_request,
        summarize_chunk_request,
    )
    from gligabao.llm.schema import SchemaMismatch, load_answer, parse_lenient, validate

# Names loaded on first use, by module: `gb search` embeds its query with endpoint and
# query alone, and needs neither the stage prompts nor the schemas (~3 ms of regexes).
_LAZY = {
    **dict.fromkeys(("LLM", "Answer", "Embeddings", "Inference"), "gligabao.llm.client"),
    **dict.fromkeys(
        (
            "ChatRequest",
            "answer_request",
            "check_answer",
            "contextualize_chunk_request",
            "extract_graph_request",
            "resolve_request",
            "summarize_chunk_request",
        ),
        "gligabao.llm.prompts",
    ),
    **dict.fromkeys(
        ("SchemaMismatch", "load_answer", "parse_lenient", "validate"), "gligabao.llm.schema"
    ),
}

__all__ = [
    "EMBED_STAGE",
    "LLM",
    "Answer",
    "ChatRequest",
    "Embeddings",
    "Flight",
    "Inference",
    "LLMError",
    "SchemaMismatch",
    "answer_request",
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


__getattr__, __dir__ = exports(__name__, _LAZY, listed=__all__)
