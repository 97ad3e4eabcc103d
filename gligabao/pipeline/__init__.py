"""The remember pipeline: split, fetch concurrently, store each chunk in order."""

from gligabao.pipeline.remember import ChunkFailed, Options, Outcome, remember

__all__ = ["ChunkFailed", "Options", "Outcome", "remember"]
