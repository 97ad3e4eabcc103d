"""Costs as the prices known now give them: a call recorded without a price (its model
had none then) is priced by `gb stats` once [prices] or a built-in price names it, from
the tokens its record kept. What was recorded with a cost keeps it: it is what was paid."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from gligabao.store import stats as rows

if TYPE_CHECKING:
    from gligabao.config import Config
    from gligabao.store import Connection
    from gligabao.store.stats import Stats

__all__ = ["priced_stats"]


def priced_stats(config: Config, conn: Connection, dataset_id: int | None) -> Stats:
    """The counts of `gb stats`, each call without a recorded cost priced if it can be now."""
    counted = rows.stats(conn, dataset_id)
    if not counted.unpriced:
        return counted
    cost, unpriced = counted.cost, counted.unpriced
    for group in rows.unpriced_by_model(conn, dataset_id):
        price = config.price_of(str(group["model"]))
        if price is None:
            continue
        paid = price.cost(
            int(group["input_tokens"]), int(group["output_tokens"]), int(group["cached_tokens"])
        )
        cost = (cost or 0.0) + paid
        unpriced -= int(group["calls"])
    return dataclasses.replace(counted, cost=cost, unpriced=unpriced)
