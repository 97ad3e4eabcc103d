"""The prompt of every LLM stage and the JSON schema of its answer, in one place.

Each builder returns a `ChatRequest`: what to send (messages), what to expect back
(a strict JSON schema: every property required, no additional properties, nullable
as ``["string", "null"]``) and the output budget. The untrusted text always sits in the
user messages, inside a tag the model (and the test server) can find: ``<text>``
(extract_graph), ``<chunk>`` (summarize_chunk), ``<document>`` then ``<chunk>``
(contextualize_chunk), ``<items>`` (resolve), ``<query>`` then ``<passages>`` (rerank),
``<question>`` then ``<sources>`` (answer), ``<passage>`` (pseudo_query), ``<entities>``
(summarize_entity).
Instructions live in the system message, so they are the same for every call of a stage
and providers can cache them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

__all__ = [
    "ANSWER_SCHEMA",
    "CONTEXTUALIZE_SCHEMA",
    "EXTRACT_GRAPH_ANSWER_SCHEMA",
    "EXTRACT_GRAPH_SCHEMA",
    "PSEUDO_QUERY_SCHEMA",
    "RERANK_SCHEMA",
    "RESOLVE_SCHEMA",
    "SUMMARIZE_ENTITY_SCHEMA",
    "SUMMARIZE_SCHEMA",
    "ChatRequest",
    "answer_request",
    "check_answer",
    "contextualize_chunk_request",
    "extract_graph_request",
    "pseudo_query_request",
    "rerank_request",
    "resolve_request",
    "summarize_chunk_request",
    "summarize_entity_request",
]


@dataclass(frozen=True)
class ChatRequest:
    """One chat call, before a model is chosen: the model and reasoning come from the config."""

    stage: str
    messages: tuple[dict[str, str], ...]
    schema_name: str
    schema: dict[str, Any]
    max_output_tokens: int
    # An answer cut off at max_output_tokens is asked for once more: models sample, and a
    # small local one that ran into a loop of repeats often ends the next answer well. Not
    # for a batch whose caller asks again in smaller parts instead (resolve).
    retry_cut_off: bool = True
    # Whether the whole items an answer gave before it fell into a loop are an answer of
    # their own (some of a chunk's facts are facts); not where an item left out means
    # something (a resolve item not answered is new).
    prefix_answers: bool = False
    # What an answer is checked against when it may hold less than the strict schema sent
    # asks for (None: the schema itself). Not part of the request's hash.
    answer_schema: dict[str, Any] | None = None


def _obj(**properties: Any) -> dict[str, Any]:
    """A strict object: all properties required, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


_STR = {"type": "string"}
_NULLABLE_STR = {"type": ["string", "null"]}
_NULLABLE_INT = {"type": ["integer", "null"]}

EXTRACT_GRAPH_SCHEMA = _obj(
    entities=_array(_obj(name=_STR, type=_STR, summary=_STR)),
    edges=_array(
        _obj(
            source=_STR,
            target=_STR,
            relation=_STR,
            fact=_STR,
            quote=_STR,
            valid_at=_NULLABLE_STR,
            invalid_at=_NULLABLE_STR,
        )
    ),
)
# A fact whose model left out its quote is kept, with its chunk standing as its evidence
# (as a quote that cannot be found does): the strict schema sent still asks for it.
EXTRACT_GRAPH_ANSWER_SCHEMA = _obj(
    entities=EXTRACT_GRAPH_SCHEMA["properties"]["entities"],
    edges=_array(
        {
            **EXTRACT_GRAPH_SCHEMA["properties"]["edges"]["items"],
            "required": [
                key
                for key in EXTRACT_GRAPH_SCHEMA["properties"]["edges"]["items"]["required"]
                if key != "quote"
            ],
        }
    ),
)
SUMMARIZE_SCHEMA = _obj(summary=_STR)
CONTEXTUALIZE_SCHEMA = _obj(context=_STR)
RESOLVE_SCHEMA = _obj(
    entities=_array(_obj(id=_STR, duplicate_of=_NULLABLE_INT)),
    edges=_array(
        _obj(
            id=_STR,
            duplicate_of=_NULLABLE_INT,
            contradicts=_array({"type": "integer"}),
            reason=_STR,
        )
    ),
)

# ------------------------------------------------------------------ extract_graph

_EXTRACT_SYSTEM = """\
Extract a temporal knowledge graph from the text in <text>. Answer with JSON only.
"entities": the named things it speaks of (people, organizations, places, products, \
events, concepts): "name" in full as written (never a pronoun), "type" one capitalized \
word, "summary" what the text says of it in at most 12 words.
"edges": the facts it states between two of them: "source" and "target" their names as \
listed, "relation" in UPPER_SNAKE_CASE, "fact" one self-contained sentence of at most 20 \
words, "quote" the first words (up to eight) of the text's sentence stating it, copied \
exactly, "valid_at" and "invalid_at" when it became and stopped being true (ISO-8601 \
UTC; relative dates from the reference time), else null.
Only what the text says; nothing named: empty lists."""


def _iso(moment: datetime | str) -> str:
    if isinstance(moment, str):
        return moment
    if moment.tzinfo is None:  # a naive time is taken as UTC, never as local time
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.isoformat()


def extract_graph_request(text: str, reference_time: datetime | str) -> ChatRequest:
    user = f"Reference time: {_iso(reference_time)}\n\n<text>\n{text}\n</text>"
    return ChatRequest(
        stage="extract_graph",
        messages=(
            {"role": "system", "content": _EXTRACT_SYSTEM},
            {"role": "user", "content": user},
        ),
        schema_name="extract_graph",
        schema=EXTRACT_GRAPH_SCHEMA,
        answer_schema=EXTRACT_GRAPH_ANSWER_SCHEMA,
        prefix_answers=True,
        # About twice the text's tokens (a character is ~1/4 token): a dense chunk fits, and a
        # short one does not ask a small-context local server for room it does not have.
        max_output_tokens=min(8192, max(2048, len(text) // 2)),
    )


# ------------------------------------------------------------------ summarize_chunk

_SUMMARIZE_SYSTEM = """\
Summarize the chunk of a document in the <chunk> tag faithfully, in two to four \
sentences: name the people, organizations, places and dates that matter, keep figures \
exact, add nothing. Answer with JSON only: {"summary": "..."}."""


def summarize_chunk_request(chunk: str) -> ChatRequest:
    return ChatRequest(
        stage="summarize_chunk",
        messages=(
            {"role": "system", "content": _SUMMARIZE_SYSTEM},
            {"role": "user", "content": f"<chunk>\n{chunk}\n</chunk>"},
        ),
        schema_name="summarize_chunk",
        schema=SUMMARIZE_SCHEMA,
        max_output_tokens=512,
    )


# ------------------------------------------------------------------ summarize_entity

SUMMARIZE_ENTITY_SCHEMA = _obj(summaries=_array(_obj(id=_STR, summary=_STR)))

_SUMMARIZE_ENTITY_SYSTEM = """\
You rewrite the summaries of entities in a knowledge graph from the facts it holds about \
them now. The <entities> tag holds a JSON list; each entity has an id, a name, a type and \
its facts, each with when it held ("from", "until"; null when unknown). For each entity \
write one or two sentences in plain prose that state only what its facts say; a fact \
with an "until" is over: say it in the past tense. Add nothing the facts do not say. \
Answer with JSON only: {"summaries": [{"id": "...", "summary": "..."}]}, one for each \
entity, in the order given."""


def summarize_entity_request(entities: list[dict[str, Any]]) -> ChatRequest:
    """`entities`: [{"id": "e0", "name", "type", "facts": [{"fact", "from", "until"}]}]."""
    payload = json.dumps(entities, ensure_ascii=False, separators=(",", ":"))
    return ChatRequest(
        stage="summarize_entity",
        messages=(
            {"role": "system", "content": _SUMMARIZE_ENTITY_SYSTEM},
            {"role": "user", "content": f"<entities>\n{payload}\n</entities>"},
        ),
        schema_name="summarize_entity",
        schema=SUMMARIZE_ENTITY_SCHEMA,
        max_output_tokens=max(512, 160 * len(entities)),
        retry_cut_off=False,  # the pipeline halves a batch whose answer is cut off
    )


# ------------------------------------------------------------------ contextualize_chunk

_CONTEXTUALIZE_SYSTEM = """\
You situate a chunk within its whole document, to improve search retrieval of the chunk. \
Answer with JSON only: {"context": "..."}, the context being 50 to 100 tokens of plain \
prose and nothing else."""


def contextualize_chunk_request(document: str, chunk: str) -> ChatRequest:
    # The whole document comes first and the chunk last: every chunk of a document then
    # shares the same long prefix, which is what providers' prompt caching bills less.
    return ChatRequest(
        stage="contextualize_chunk",
        messages=(
            {"role": "system", "content": _CONTEXTUALIZE_SYSTEM},
            {"role": "user", "content": f"<document>\n{document}\n</document>"},
            {
                "role": "user",
                "content": "Here is the chunk we want to situate within the whole document:\n"
                f"<chunk>\n{chunk}\n</chunk>\n"
                "Give a short, succinct context to situate this chunk within the overall "
                "document, for the purposes of improving search retrieval of the chunk.",
            },
        ),
        schema_name="contextualize_chunk",
        schema=CONTEXTUALIZE_SCHEMA,
        max_output_tokens=256,
    )


# ------------------------------------------------------------------ resolve

_RESOLVE_SYSTEM = """\
You deduplicate a temporal knowledge graph. The <items> tag holds JSON: newly extracted \
"entities" and "edges" (facts), each with an "id" and "candidates": the ids of existing \
entities or facts, each listed once in "candidate_entities" or "candidate_facts".

For each entity: "duplicate_of" is the id of the candidate that is the same real-world \
thing (a different spelling or a fuller name counts), else null.

For each edge: "duplicate_of" is the id of the candidate fact that states the same thing \
(it is restated, not new), else null. A candidate may be a closed fact (its \
"invalid_at" set). The same fact with another "valid_at" of its own is not a duplicate \
but another stretch of time it held (a second stint, true again). "contradicts" lists the ids of \
candidate facts that cannot be true at the same time as the new fact (a new employer \
replaces the old one, a moved person no longer lives at the old place), whichever \
began first: gb orders them by "valid_at". Facts that can both be true are not \
contradicted. "reason" says in a few words why.

Answer every entity and edge of the input exactly once, by its id, with JSON only. Use \
only ids from its candidates."""

# As much of a candidate entity's summary as resolve shows: enough to tell which thing it
# is. A small model's summary may run to a whole clause of its text.
CANDIDATE_SUMMARY_CHARS = 200


def resolve_request(items: Mapping[str, Any]) -> ChatRequest:
    """`items`: {"entities": [{"id": "e0", "name", "type", "candidates": [{"id": 12, "name",
    "type", "summary"}]}], "edges": [{"id": "r0", "source", "target", "relation", "fact",
    "valid_at", "invalid_at", "candidates": [{"id", "source", "target", "relation", "fact",
    "valid_at", "invalid_at"}]}]}. The prompt lists each candidate once (`_listed_once`)."""
    payload = json.dumps(_listed_once(items), ensure_ascii=False, separators=(",", ":"))
    return ChatRequest(
        stage="resolve",
        messages=(
            {"role": "system", "content": _RESOLVE_SYSTEM},
            {"role": "user", "content": f"<items>\n{payload}\n</items>"},
        ),
        schema_name="resolve",
        schema=RESOLVE_SCHEMA,
        # What the items' answers need, with room for a wordy reason each: an answer that
        # runs on past that (a small model counting ids up) is halved sooner, paying less.
        max_output_tokens=min(
            4096, 256 + 96 * (len(items.get("entities", ())) + len(items.get("edges", ())))
        ),
        retry_cut_off=False,  # the pipeline halves a batch whose answer is cut off
    )


def _listed_once(items: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """`items` as the prompt gives them: each candidate once, in the order first offered,
    under "candidate_entities" or "candidate_facts", then the items, their candidates by
    id. A hub's facts and a document's main entities are offered to item after item:
    written out in each, they made most of a call's prompt."""
    candidates: dict[str, list[dict[str, Any]]] = {}
    listed: dict[str, list[dict[str, Any]]] = {}
    for kind, under in (("entities", "candidate_entities"), ("edges", "candidate_facts")):
        known: dict[Any, dict[str, Any]] = {}
        listed[kind] = []
        for item in items.get(kind, ()):
            for candidate in item["candidates"]:
                known.setdefault(candidate["id"], _shown(candidate))
            listed[kind].append({**item, "candidates": [c["id"] for c in item["candidates"]]})
        if known:
            candidates[under] = list(known.values())
    return {**candidates, **listed}


def _shown(candidate: dict[str, Any]) -> dict[str, Any]:
    summary = candidate.get("summary")
    if not summary or len(summary) <= CANDIDATE_SUMMARY_CHARS:
        return candidate
    cut = summary[:CANDIDATE_SUMMARY_CHARS].rsplit(" ", 1)[0]
    return {**candidate, "summary": cut.rstrip(" ,;:") + "…"}


# ------------------------------------------------------------------ rerank

RERANK_SCHEMA = _obj(order=_array({"type": "integer"}))

_RERANK_SYSTEM = """\
You rank search results. The <query> tag holds a search query; the <passages> tag holds \
numbered passages, [1] to [N], found for it. Order the passages by how well each answers \
the query, the best first. Answer with JSON only: {"order": [numbers]}, each passage \
number once, and only numbers that are shown."""


def rerank_request(query: str, passages: list[str]) -> ChatRequest:
    """`passages`: the candidates' texts in fused order, already cut to a length the
    model's context holds all of; numbered from 1 in the prompt."""
    numbered = "\n\n".join(f"[{n}] {text}" for n, text in enumerate(passages, start=1))
    return ChatRequest(
        stage="rerank",
        messages=(
            {"role": "system", "content": _RERANK_SYSTEM},
            {
                "role": "user",
                "content": f"<query>\n{query}\n</query>\n\n<passages>\n{numbered}\n</passages>",
            },
        ),
        schema_name="rerank",
        schema=RERANK_SCHEMA,
        # A few tokens a number, and room for a model that writes them spaced out.
        max_output_tokens=64 + 8 * len(passages),
    )


# ------------------------------------------------------------ pseudo_query

PSEUDO_QUERY_SCHEMA = _obj(query=_STR)

# In other words than the passage's: a query that repeats the passage is found by its
# words alone, and fusion tuned on such queries would learn that the vectors add nothing.
_PSEUDO_QUERY_SYSTEM = """\
You write the search query that someone who needs the passage in the <passage> tag would \
type, without having read it. Ask for what the passage says or lets one do, in your own \
words: do not copy its sentences or its headings, and use a name from it (a command, a \
function, an option) only when the need cannot be said without it. One query of at most \
20 words. Answer with JSON only: {"query": "..."}."""


def pseudo_query_request(passage: str) -> ChatRequest:
    """`passage`: a chunk's text, already cut to what the query should be about."""
    return ChatRequest(
        stage="pseudo_query",
        messages=(
            {"role": "system", "content": _PSEUDO_QUERY_SYSTEM},
            {"role": "user", "content": f"<passage>\n{passage}\n</passage>"},
        ),
        schema_name="pseudo_query",
        schema=PSEUDO_QUERY_SCHEMA,
        # 20 words, with room for a model that says a little more.
        max_output_tokens=96,
    )


# ------------------------------------------------------------------ answer

# The answer first: a streamed answer's text can be shown before its citations come.
ANSWER_SCHEMA = _obj(
    answer=_STR,
    citations=_array(_obj(source={"type": "integer"}, quote=_STR)),
)

_ANSWER_SYSTEM = """\
You answer a question from a memory, using only the numbered sources given. The \
<question> tag holds the question; the <sources> tag holds the sources [1] to [N]: facts \
(each with the time it held and the passage that states it) and passages of documents.

Answer in a few plain sentences. End each sentence that states something with the \
marker of the source that supports it, [n] (several: [1][3]). For each marker, give a \
citation: "source" the number n, "quote" the words of that source that support the \
sentence, copied character for character (one sentence at most). Cite only sources \
that are shown; use only what they say, and invent nothing. When they do not answer the \
question, say so in "answer" and give no citations. Answer with JSON only: \
{"answer": "...", "citations": [{"source": n, "quote": "..."}]}."""


def answer_request(
    question: str, sources: list[str], *, at: str | None = None, known_at: str | None = None
) -> ChatRequest:
    """`sources`: each source's text as the model reads it (a first line saying what it
    is and where, then its text), numbered from 1 in the prompt; `at` the time the
    answer is to be true at, `known_at` the time the memory is read as of."""
    numbered = "\n\n".join(f"[{n}] {text}" for n, text in enumerate(sources, start=1))
    when = []
    if at is not None:
        when.append(f"Answer for the time {at}: the facts given are those true then.")
    if known_at is not None:
        when.append(f"Answer as the memory stood at {known_at}.")
    head = "".join(f"{line}\n\n" for line in when)
    return ChatRequest(
        stage="answer",
        messages=(
            {"role": "system", "content": _ANSWER_SYSTEM},
            {
                "role": "user",
                "content": f"{head}<question>\n{question}\n</question>\n\n"
                f"<sources>\n{numbered}\n</sources>",
            },
        ),
        schema_name="answer",
        schema=ANSWER_SCHEMA,
        max_output_tokens=2048,
    )


# ------------------------------------------------------------------ checks beyond the schema


def check_answer(stage: str, value: Mapping[str, Any]) -> str | None:
    """What a schema cannot say (strict mode has no minLength): a blank summary or context
    is no answer. Returns the problem, or None."""
    field = {"summarize_chunk": "summary", "contextualize_chunk": "context"}.get(stage)
    if field is not None and not str(value.get(field, "")).strip():
        return f"the {field} is empty"
    return None
