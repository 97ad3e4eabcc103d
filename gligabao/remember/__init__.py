"""Remembering: a document cut, its calls made concurrently, each chunk stored in order.

The pipeline's names load on first use: `Remembered` (result.py) is named by every face
at import time, and the pipeline behind it (the LLM layer, the store) costs a command
that remembers nothing tens of milliseconds.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from gligabao.remember.result import FAILED, LEFT, PENDING, Remembered

if TYPE_CHECKING:
    from gligabao.remember.document import ChunkFailed, FetchFailed, Options, remember

__all__ = [
    "FAILED",
    "LEFT",
    "PENDING",
    "ChunkFailed",
    "FetchFailed",
    "Options",
    "Remembered",
    "remember",
]

_PIPELINE = ("ChunkFailed", "FetchFailed", "Options", "remember")


def __getattr__(name: str) -> Any:
    if name in _PIPELINE:
        return getattr(importlib.import_module("gligabao.remember.document"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
