"""The remember pipeline: split, fetch concurrently, store each chunk in order."""

from gligabao.pipeline.remember import ChunkFailed, FetchFailed, Options, Outcome, remember

__all__ = ["ChunkFailed", "FetchFailed", "Options", "Outcome", "remember"]
