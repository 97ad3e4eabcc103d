"""Whether files are stored as they read now (gb status): each input read and compared
with what is stored, then the files remembered from the folders walked that are gone."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gligabao.chunk import ChunkSettings
from gligabao.config import Config
from gligabao.errors import InputError
from gligabao.read.files import FOLDER_WALKED
from gligabao.read.sources import read_sources
from gligabao.remember.status import SyncStatus, deleted_files, sync_status

if TYPE_CHECKING:
    from gligabao.store import Connection

__all__ = ["Sync", "stages_owed"]

# (connection, dataset id or None): opened once a first input could be read.
Connect = Callable[[], tuple[Any, int | None]]


@dataclass
class Sync:
    """The inputs to check and, as they are checked, one SyncStatus per stored document
    they stand for, or the InputError of an input that cannot be read; the files gone
    from the `folders` walked come last."""

    inputs: list[str]
    folders: list[str]
    settings: ChunkSettings
    connect: Connect
    stages: tuple[str, ...]  # what a run does (stages_owed): what a document must have done
    files: int = 0  # inputs and files gone, as they are checked

    def __iter__(self) -> Iterator[SyncStatus | InputError]:
        conn: Connection | None = None
        dataset_id: int | None = None
        self.files = len(self.inputs)
        for name in self.inputs:
            try:
                # A chat export: each conversation, in turn.
                sources = read_sources(name, folder=FOLDER_WALKED)
                if conn is None:  # once a file is read: a missing file alone is still exit 3
                    conn, dataset_id = self.connect()
                results = [
                    sync_status(conn, s, dataset_id, self.settings, self.stages) for s in sources
                ]
            except InputError as exc:
                yield exc
                continue
            yield from results
        gone = deleted_files(conn, dataset_id, self.folders, self.inputs) if conn else []
        self.files += len(gone)
        yield from gone


def stages_owed(config: Config) -> tuple[str, ...]:
    """The stages a `gb remember` run of this configuration does, which a document in
    sync has done: config `stages`, embeddings alone where only they have an endpoint."""
    from gligabao.llm.endpoint import Endpoints
    from gligabao.remember.document import EMBED_ONLY, parse_stages

    stages = parse_stages(config["stages"], "config stages")
    endpoints = Endpoints.from_config(config)
    if not endpoints.chat_available and endpoints.embeddings_available:
        return EMBED_ONLY
    return stages


def folders_walked(paths: Sequence[str], recursive: bool) -> list[str]:
    """The folders named among `paths` that -r walks (whose deleted files are reported)."""
    return [p for p in paths if recursive and os.path.isdir(p)]
