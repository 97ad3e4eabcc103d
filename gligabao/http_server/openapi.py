"""The OpenAPI description `/openapi.json` serves: each endpoint, the remember body as
the published client sends it, and the one error shape."""

from __future__ import annotations

from typing import Any

from gligabao import __version__
from gligabao.config import REASONING_LEVELS
from gligabao.http_server.requests import STAGES

__all__ = ["describe"]

_ERROR = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            "required": ["code", "message"],
        }
    },
}
_STATUSES = {
    "400": "Bad input (an unknown argument or stage named)",
    "401": "Missing or wrong bearer token",
    "404": "No such document, fact, entity or dataset",
    "413": "Body over 1 MiB",
    "501": "Not supported by gb (image, timeseries, web_search)",
    "502": "An LLM request failed (the chunk k of n said)",
    "503": "No LLM endpoint for a stage the request names, or the database busy",
}
_PER_STAGE = {
    "type": "object",
    "propertyNames": {"enum": list(STAGES)},
    "additionalProperties": {"type": "string"},
}
_REMEMBER = {
    "type": "object",
    "required": ["user_id", "text"],
    "properties": {
        "user_id": {"type": "string", "description": "Scopes datasets: <user_id>/<dataset>"},
        "text": {"type": "string"},
        "dataset": {"type": "string", "default": "main"},
        "reference_time": {"type": "string", "format": "date-time"},
        "kind": {"enum": ["knowledge", "episode"], "default": "knowledge"},
        "models": _PER_STAGE,
        "reasoning": {**_PER_STAGE, "additionalProperties": {"enum": list(REASONING_LEVELS)}},
    },
}
_READ = {
    "type": "object",
    "required": ["user_id"],
    "properties": {"user_id": {"type": "string"}, "dataset": {"type": "string"}},
    "additionalProperties": True,
}


def describe(paths: dict[str, tuple[tuple[str, ...], str]]) -> dict[str, Any]:
    described: dict[str, Any] = {}
    for path, (methods, summary) in paths.items():
        shown = path.replace(":int}", "}")
        body = _REMEMBER if path.endswith("/remember") else _READ
        described[shown] = {
            method.lower(): {
                "summary": summary,
                **(
                    {"requestBody": {"content": {"application/json": {"schema": body}}}}
                    if method == "POST"
                    else {}
                ),
                "responses": {
                    "200": {"description": "The object --json prints"},
                    **{
                        code: {
                            "description": said,
                            "content": {"application/json": {"schema": _ERROR}},
                        }
                        for code, said in _STATUSES.items()
                    },
                },
            }
            for method in methods
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "gb serve", "version": __version__},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": described,
    }
