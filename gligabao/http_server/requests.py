"""A request's arguments: its JSON body (refused past the size limit before it is read
whole) or its query string, each taken by name and type, anything else refused; and the
body of `POST /v1/gb/remember` as the published client sends it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from gligabao.config import REASONING_LEVELS
from gligabao.http_server.errors import Refusal, bad

__all__ = ["Args", "RememberCall", "read_args", "remember_call"]

# The client's stage names -> gb's (models.* and reasoning.* settings).
STAGES = {
    "extract_graph": "extract_graph",
    "summarize_chunk": "summarize_chunk",
    "resolve_edges": "resolve",
    "contextualize_chunk": "contextualize_chunk",
}
# Stages of the API that gb does not have: a 501, not a silent drop.
NOT_DONE_STAGES = ("extract_image", "resolve_series", "web_search")
KINDS = {"knowledge": "document", "episode": "episode"}  # the API's kind -> gb's


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused (413) from its Content-Length or, without one, as soon as what
    came exceeds `limit`: never read whole past it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdecimal() and int(declared) > limit:
        raise _too_large(limit)
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise _too_large(limit)
    return bytes(body)


def _too_large(limit: int) -> Refusal:
    return Refusal(413, "too_large", f"the request body is over {limit:,} bytes (1 MiB)")


async def read_args(request: Request, limit: int) -> Args:
    """The arguments of a request: its query string for GET, its JSON object otherwise."""
    if request.method == "GET":
        return Args(dict(request.query_params), textual=True)
    raw = await read_body(request, limit)
    try:
        values = json.loads(raw) if raw.strip() else {}
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad(f"the body is not JSON: {exc}") from None
    if not isinstance(values, dict):
        raise bad("the body must be a JSON object")
    return Args(values, textual=False)


@dataclass
class Args:
    """Arguments taken one by one by name and type; `done` refuses those left, naming them.
    A query string's are text: its numbers and booleans are parsed."""

    values: dict[str, Any]
    textual: bool
    taken: set[str] = field(default_factory=set)

    def _get(self, name: str) -> Any:
        self.taken.add(name)
        return self.values.get(name)

    def text(self, name: str, default: str | None = None, *, required: bool = False) -> Any:
        value = self._get(name)
        if value is None:
            if required:
                raise bad(f"{name} is required")
            return default
        if not isinstance(value, str):
            raise bad(f"{name} must be a string, not {json.dumps(value)[:60]}")
        return value

    def whole(self, name: str, default: int | None = None, *, required: bool = False) -> Any:
        value = self._get(name)
        if value is None:
            if required:
                raise bad(f"{name} is required")
            return default
        if self.textual and isinstance(value, str) and value.lstrip("-").isdecimal():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad(f"{name} must be a whole number, not {json.dumps(value)[:60]}")
        return value

    def flag(self, name: str, default: bool = False) -> bool:
        value = self._get(name)
        if value is None:
            return default
        if self.textual and value in ("true", "false", "1", "0"):
            return value in ("true", "1")
        if not isinstance(value, bool):
            raise bad(f"{name} must be true or false, not {json.dumps(value)[:60]}")
        return value

    def dataset(self) -> str:
        """The dataset of the call, scoped by its user: `<user_id>/<dataset>`, so two
        users' `main` never mix. A user id holds no `/`, so no two pairs give one name."""
        user = self.text("user_id", required=True)
        if not user.strip() or "/" in user:
            raise bad(f"user_id must be a name without '/', not {json.dumps(user)[:60]}")
        name = self.text("dataset", "main")
        if not name.strip():
            raise bad("dataset must not be blank")
        return f"{user}/{name}"

    def done(self) -> None:
        left = sorted(set(self.values) - self.taken)
        if left:
            shown = ", ".join(sorted(self.taken))
            raise bad(f"unknown argument {', '.join(left)}; this endpoint takes {shown}")


@dataclass(frozen=True)
class RememberCall:
    """A remember request: the text, its dataset, its moment and kind, and the settings
    it names (models.* and reasoning.* of gb's stages)."""

    text: str
    dataset: str
    valid_at: str | None
    kind: str
    settings: dict[str, str]


def remember_call(args: Args) -> RememberCall:
    """The client's remember body, checked; what gb does not do is a 501 saying so."""
    if args.values.get("image") is not None:
        raise _not_done("images (image)")
    if args.values.get("timeseries") is not None:
        raise _not_done("timeseries")
    if args.values.get("web_search"):
        raise _not_done("web search (web_search)")
    for name in ("image", "timeseries", "web_search"):
        args.taken.add(name)
    dataset = args.dataset()
    text = args.text("text", required=True)
    kind = args.text("kind", "knowledge")
    if kind not in KINDS:
        raise bad(f"kind must be knowledge or episode, not {json.dumps(kind)[:60]}")
    valid_at = args.text("reference_time")
    settings: dict[str, str] = {}
    for stage, model in _per_stage(args, "models").items():
        if not isinstance(model, str) or not model.strip():
            raise bad(f"models.{stage} must name a model, not {json.dumps(model)[:60]}")
        settings[f"models.{STAGES[stage]}"] = model
    for stage, level in _per_stage(args, "reasoning").items():
        if level not in REASONING_LEVELS:
            raise bad(
                f"reasoning.{stage} must be one of {', '.join(REASONING_LEVELS)}, "
                f"not {json.dumps(level)[:60]}"
            )
        settings[f"reasoning.{STAGES[stage]}"] = level
    args.done()
    return RememberCall(text, dataset, valid_at, KINDS[kind], settings)


def _per_stage(args: Args, name: str) -> dict[str, Any]:
    """`models` or `reasoning`: an object by stage; a stage gb does not know is a 400
    naming it, one of the API's that gb does not do a 501."""
    value = args._get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad(f"{name} must be an object of stage names, not {json.dumps(value)[:60]}")
    for stage in value:
        if stage in NOT_DONE_STAGES:
            raise _not_done(f"the {stage} stage ({name}.{stage})")
        if stage not in STAGES:
            raise bad(f"unknown stage {stage!r} in {name}; the stages are {', '.join(STAGES)}")
    return value


def _not_done(what: str) -> Refusal:
    return Refusal(501, "not_supported", f"{what} is not supported: gb remembers texts only")
