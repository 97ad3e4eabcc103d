"""The result of each operation of the service, as faces name them (the MCP server
declares them as its tools' output schemas): one type an operation."""

from __future__ import annotations

from gligabao.graph.export import Graph
from gligabao.graph.paths import Hop, Paths
from gligabao.graph.queries import Entity, EntityView, Evidence, Fact
from gligabao.remember.result import Remembered
from gligabao.remember.status import SyncStatus
from gligabao.search.evaluate import EvalResult
from gligabao.search.hybrid import Hit
from gligabao.service.asking import Answered
from gligabao.service.evaluation import Evaluation
from gligabao.service.facts import Why
from gligabao.service.preview import Preview
from gligabao.service.searching import Hits
from gligabao.service.sync import Sync
from gligabao.store.forget import ForgetReport
from gligabao.store.stats import Stats, VecIndexStats

__all__ = [
    "Answered",
    "Entity",
    "EntityView",
    "EvalResult",
    "Evaluation",
    "Evidence",
    "Fact",
    "ForgetReport",
    "Graph",
    "Hit",
    "Hits",
    "Hop",
    "Paths",
    "Preview",
    "Remembered",
    "Stats",
    "Sync",
    "SyncStatus",
    "VecIndexStats",
    "Why",
]
