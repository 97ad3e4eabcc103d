"""How far a batch is, counted in chunks rather than whole files, and how long is left.

A few large files are most of a batch's time: counted by files, the bar would sit at 0
while hundreds of calls complete. Each chunk counts half when its extraction and summary
have answered and half when it is stored (its resolve and embeddings done). The batch's
total is the chunks of the inputs cut so far plus, for the inputs not yet cut, as many as
the cut ones had on average. The time left is the work left over a smoothed rate, so
it does not jump with each burst of answers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Steps of the remember pipeline (its trajectory) that move a chunk forward.
_CUT, _ANSWERED, _STORED = "chunk_text", "extract_graph", "store_artifact"
_REUSED = "reuse"  # a chunk of the file's previous version, copied whole: no call
# How fast the rate forgets: an answer burst moves it, a pause of a few seconds does not.
_SMOOTHING_S = 20.0
_SAMPLE_S = 1.0  # the rate is sampled at most this often


@dataclass
class ChunkProgress:
    """The batch's progress; `on_step` is the pipeline's `Options.on_step`."""

    files: int
    clock: Callable[[], float] = time.monotonic
    files_done: int = 0
    _planned: dict[str, int] = field(default_factory=dict)
    _work: dict[str, float] = field(default_factory=dict)
    _ended: set[str] = field(default_factory=set)
    _rate: float | None = None  # chunks a second, smoothed
    _work_sum: float = 0.0
    _time_sum: float = 0.0
    _sample: tuple[float, float] | None = None  # (time, done) of the last rate sample

    def on_step(self, name: str, step: str, data: dict[str, Any]) -> None:
        if name in self._ended:
            return
        if step == _CUT:
            self._planned[name] = max(1, int(data.get("chunks", 1)))
        elif step in (_ANSWERED, _STORED, _REUSED):
            planned = self._planned.get(name, 1)
            gained = 1.0 if step == _REUSED else 0.5
            self._work[name] = min(planned, self._work.get(name, 0.0) + gained)
        self._observe()

    def finished(self, name: str) -> None:
        """An input ended, however: what it had planned counts done (a failed or unchanged
        input has nothing left to do either)."""
        if name in self._ended:
            return
        self._ended.add(name)
        self.files_done += 1
        self._planned.setdefault(name, 0)
        self._work[name] = float(self._planned[name])
        self._observe()

    @property
    def done(self) -> float:
        return sum(self._work.values())

    @property
    def planned(self) -> int:
        """Chunks of the inputs cut so far."""
        return sum(self._planned.values())

    @property
    def total(self) -> float | None:
        """The batch's chunks, estimated for the inputs not cut yet; None before any."""
        if not self._planned:
            return None
        mean = self.planned / len(self._planned)
        return self.planned + mean * max(0, self.files - len(self._planned))

    def eta(self) -> float | None:
        """Seconds left, or None while there is no rate to go by."""
        total = self.total
        if total is None or not self._rate:
            return None
        return max(0.0, total - self.done) / self._rate

    def _observe(self) -> None:
        # The rate is work over time, both summed with weights that fade over
        # _SMOOTHING_S: a burst and the pause after it average out, and an old pace is
        # forgotten as a new one sets in.
        now, done = self.clock(), self.done
        if self._sample is None:
            self._sample = (now, done)
            return
        then, before = self._sample
        elapsed = now - then
        if elapsed < _SAMPLE_S:
            return
        fade = math.exp(-elapsed / _SMOOTHING_S)
        self._work_sum = self._work_sum * fade + (done - before)
        self._time_sum = self._time_sum * fade + elapsed
        self._rate = self._work_sum / self._time_sum if self._work_sum > 0 else None
        self._sample = (now, done)
