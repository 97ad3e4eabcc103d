"""What kind of failure an error of the service is, for a face that answers in other
terms than an exit code (`gb serve`'s HTTP statuses): told here, where the store's and the
LLM client's errors are known, so a face never imports them."""

from __future__ import annotations

from typing import Literal

from gligabao.errors import ConfigError, InputError, Stopped, UsageError
from gligabao.llm.endpoint import LLMError
from gligabao.remember.document import ChunkFailed, FetchFailed
from gligabao.store.errors import DatabaseBusy, NoDatabase, NotFound

__all__ = ["Kind", "kind_of"]

Kind = Literal["bad_input", "not_found", "llm", "busy", "config", "stopped", "failure"]


def kind_of(exc: BaseException) -> Kind:
    """bad_input (the call's arguments or text), not_found (an id, a dataset, no database
    yet), llm (an LLM request failed: its chunk said), busy (the database locked past
    the busy timeout), config (the server's own settings), stopped (asked to stop by
    the caller), failure (anything else)."""
    if isinstance(exc, NotFound | NoDatabase):
        return "not_found"
    if isinstance(exc, LLMError | ChunkFailed | FetchFailed):
        return "llm"
    if isinstance(exc, DatabaseBusy):
        return "busy"
    if isinstance(exc, UsageError | InputError):
        return "bad_input"
    if isinstance(exc, ConfigError):
        return "config"
    if isinstance(exc, Stopped):
        return "stopped"
    return "failure"
