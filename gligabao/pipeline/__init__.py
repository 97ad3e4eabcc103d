"""The remember pipeline: split, fetch concurrently, store each chunk in order.

Importing it does not import the openai SDK (~0.45 s): the pipeline is handed an `LLM`,
and `gligabao.pipeline.status` (gb status) never makes one.
"""

from gligabao.pipeline.remember import ChunkFailed, FetchFailed, Options, Outcome, remember

__all__ = ["ChunkFailed", "FetchFailed", "Options", "Outcome", "remember"]
