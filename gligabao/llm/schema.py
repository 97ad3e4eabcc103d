"""Reading an answer: JSON (strict, or lenient for prompt mode) checked against its schema.

Structured output is a promise of the server, not a guarantee (a local server in prompt
mode, a proxy, a model that ignores it), so every answer is checked here all the same.
Supported keywords: ``type`` (a name or a list of names), ``properties``, ``required``,
``additionalProperties: false``, ``items`` and ``enum``. No dependency is needed for that.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gligabao.llm.endpoint import no_surrogates
from gligabao.llm.prompts import ChatRequest, check_answer

__all__ = [
    "SchemaMismatch",
    "TooDeep",
    "checked",
    "load_answer",
    "only_reasoning",
    "parse_answer",
    "parse_lenient",
    "repaired",
    "validate",
]


class SchemaMismatch(ValueError):
    """The answer does not match the schema; the message names the path and the problem."""


class TooDeep(ValueError):
    """The answer is JSON nested deeper than Python's parser goes (a RecursionError)."""


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _type_name(value: Any) -> str:
    for name, kinds in _TYPES.items():
        # bool is an int in Python, never an integer in JSON
        if isinstance(value, kinds) and not (isinstance(value, bool) and name != "boolean"):
            return name
    return type(value).__name__


def _is(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return name == "boolean"
    if name == "integer" and isinstance(value, float):
        return value.is_integer()  # 3.0 is an integer in JSON
    return isinstance(value, _TYPES[name])


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> None:
    """Raise SchemaMismatch at the first place `value` breaks `schema`."""
    wanted = schema.get("type")
    if wanted is not None and not (
        _is(value, wanted) if isinstance(wanted, str) else any(_is(value, n) for n in wanted)
    ):
        names = [wanted] if isinstance(wanted, str) else list(wanted)
        raise SchemaMismatch(f"{path}: expected {' or '.join(names)}, got {_type_name(value)}")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaMismatch(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                raise SchemaMismatch(f"{path}: missing {key!r}")
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(properties))
            if extra:
                raise SchemaMismatch(f"{path}: unexpected {', '.join(map(repr, extra))}")
        for key, sub in properties.items():
            if key in value:
                validate(value[key], sub, f"{path}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            validate(item, schema["items"], f"{path}[{i}]")


# ------------------------------------------------------------------ answers

_THINK = re.compile(r"^\s*<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)


def parse_lenient(text: str) -> Any:
    """The outermost JSON object in a model's prose: a leading <think> block and code fences
    are dropped first. Raises ValueError when there is none."""
    text = _THINK.sub("", text, count=1)
    if "</think>" in text:  # an unclosed or repeated think block: keep what follows it
        text = text.rsplit("</think>", 1)[1]
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1), text] if fenced else [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for match in re.finditer(r"\{", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
            except json.JSONDecodeError:
                continue
            except RecursionError:  # and so would every "{" inside it be: stop here
                raise TooDeep("the answer is JSON nested too deeply to read") from None
            if isinstance(value, dict):
                return value
    raise ValueError("no JSON object in the answer")


def only_reasoning(text: str) -> bool:
    """Whether an answer is a <think> block with no JSON object after it: a reasoning
    model that spent its answer thinking, to be asked for the JSON alone."""
    if "</think>" not in text.lower():
        return False
    after = re.split(r"</think>", text, flags=re.IGNORECASE)[-1]
    return "{" not in after


def parse_answer(text: str, lenient: bool) -> Any:
    """JSON from a model; strict first unless `lenient`. Raises ValueError (TooDeep when
    it is nested too deeply to parse)."""
    if not lenient:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass  # some servers wrap even structured output in fences: try leniently
        except RecursionError:
            raise TooDeep("the answer is JSON nested too deeply to read") from None
    return parse_lenient(text)


def repaired(value: Any) -> Any:
    """A checked answer with every lone surrogate in its strings (a JSON "\\udc80"
    without its pair) replaced by U+FFFD, so it can be stored and printed. Recursive:
    only for values already checked against a schema, which bounds their depth."""
    if isinstance(value, str):
        return no_surrogates(value)
    if isinstance(value, list):
        return [repaired(v) for v in value]
    if isinstance(value, dict):
        return {no_surrogates(k): repaired(v) for k, v in value.items()}
    return value


def checked(request: ChatRequest, value: Any) -> dict[str, Any]:
    """The answer if it fits the request's schema and checks; raises ValueError
    (SchemaMismatch when it is the schema)."""
    validate(value, request.answer_schema or request.schema)
    problem = check_answer(request.stage, value)
    if problem:
        raise ValueError(problem)
    return value


def load_answer(request: ChatRequest, text: str) -> dict[str, Any]:
    """A stored answer (Inference.answer) parsed and validated again, for reuse.
    Raises ValueError when it no longer fits: then call again."""
    return checked(request, parse_answer(text, lenient=True))
