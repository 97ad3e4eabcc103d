"""How one input of `remember` ended: the one result a run hands back, to the CLI, to
`gb mcp` and to programs alike, and what `gb remember --json` prints of it.

It imports nothing heavy: `Memory` and the MCP server name it at import time, and the
pipeline it describes (the LLM layer, the store) is loaded only by a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gligabao.calls import Spend
    from gligabao.errors import GbError

__all__ = ["FAILED", "LEFT", "PENDING", "Remembered"]

LEFT = "left"  # not started, or stopped, because of --max-cost
FAILED = "failed"
# Stored with stages left to do: the endpoint could not be reached, or a chunk's
# extraction was cut off even in its smallest parts. A later run completes it.
PENDING = "pending"


@dataclass
class Remembered:
    """How one input ended: `status` remembered, completed, unchanged, embedded, offline,
    pending, failed or left; `response` the stored document (artifact_id, chunks,
    entities, edges...), `failure` the error that stopped it, `notices` what the run
    said of it, `spend` what its calls cost, `trajectory` its steps (with --trace)."""

    source: str
    status: str
    response: dict[str, Any] = field(default_factory=dict)
    failure: GbError | None = None
    notices: list[str] = field(default_factory=list)
    spend: Spend | None = None  # None: it made no call
    trajectory: list[dict[str, Any]] = field(default_factory=list)

    @property
    def error(self) -> str | None:
        """Why it failed, in one line, or None."""
        return None if self.failure is None else str(self.failure)

    @property
    def stored(self) -> bool:
        """Whether a document was stored (or found stored) for it."""
        return self.status not in (FAILED, LEFT)

    @property
    def left(self) -> bool:
        """Whether --max-cost left it, not started or stopped part-way."""
        return self.status == LEFT

    @property
    def document_id(self) -> int | None:
        return self.response.get("artifact_id")

    def as_json(self) -> dict[str, Any]:
        """The line `gb remember --json` prints for this input."""
        shown: dict[str, Any] = {"source": self.source, "status": self.status}
        if self.failure is not None:
            shown["error"] = str(self.failure)
        return {**shown, **self.response}
