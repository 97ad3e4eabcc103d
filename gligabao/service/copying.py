"""gb copy: a whole memory into this one from another store (store/copying.py), or one
dataset of it into a new dataset here (store/dataset_copy.py)."""

from __future__ import annotations

import os
from collections.abc import Callable

from gligabao.config import Config
from gligabao.errors import UsageError
from gligabao.store.copying import CopyReport, copy_store, same_store
from gligabao.store.dataset_copy import copy_dataset
from gligabao.store.datasets import require_dataset
from gligabao.store.opening import is_url, open_db, safe_db_url

__all__ = ["copy_into"]


def copy_into(
    config: Config,
    source: str,
    *,
    source_schema: str | None = None,
    dataset: str | None = None,
    into: str | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> CopyReport:
    """Copy the store at `source` into the configured database, which must be empty (or
    hold this copy cut short); or, `into` named, copy its dataset `dataset` (else the
    configured one) into a new dataset `into` of the configured database, whatever else
    that holds. The source is only read; nothing is asked of an LLM."""
    if dataset is not None and into is None:
        raise UsageError(
            "--dataset names the dataset that --into NAME copies; without --into every "
            "dataset is copied"
        )
    destination = config["database"]
    if same_store(source, destination) and (source_schema or config["schema"]) == config["schema"]:
        raise UsageError(f"--from and --to are the same store ({_named(source)}); name two")
    wait = int(config["busy_timeout"] * 1000)
    src = open_db(
        source, busy_timeout_ms=wait, create=False, schema=source_schema or config["schema"]
    )
    try:
        if into is not None:  # no such dataset: refused before the destination is made
            dataset = require_dataset(src, dataset or config["dataset"]).name
        dst = open_db(destination, busy_timeout_ms=wait, create=True, schema=config["schema"])
        try:
            if into is None:
                return copy_store(src, dst, source_name=_named(source), on_progress=on_progress)
            return copy_dataset(
                src,
                dst,
                dataset=dataset or config["dataset"],
                into=into,
                source_name=_named(source),
                on_progress=on_progress,
            )
        finally:
            dst.close()
    finally:
        src.close()


def _named(target: str) -> str:
    """A store as the copy records and says it: a URL without its password, a file by
    its absolute path."""
    return safe_db_url(target) if is_url(target) else os.path.abspath(target)
