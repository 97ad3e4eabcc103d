"""One memory on SQLite and on PostgreSQL: the same texts remembered into each give the
same answers, ids and the moments of storing aside: facts at a time, why, an entity's
view, the export and a search."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gligabao import Memory
from gligabao.store import copying
from gligabao.store.db import now_iso
from tests.graph.test_facts import DOCS, _answers, _remember
from tests.support.helpers import configure, gb, vec_stats, write

# Keys that differ between two memories of the same texts: ids, and when they were stored.
_VARYING = {"id", "created_at", "expired_at", "score"}
_STARTED = now_iso()  # a time from here on is a moment of storing (an undated fact's start)


def _alike(value: Any) -> Any:
    """`value` with what differs between two stores of the same texts left out: ids, and
    the moments they were stored at, everywhere in it."""
    if isinstance(value, dict):
        return {
            k: _alike(v)
            for k, v in value.items()
            if k not in _VARYING and not k.endswith(("_id", "_ids"))
        }
    if isinstance(value, list):
        return [_alike(v) for v in value]
    if isinstance(value, str) and value[:4].isdigit() and value >= _STARTED:
        return "(when stored)"
    return value


def _lines(gb_cli, *args: str) -> list[Any]:
    return [json.loads(line) for line in gb(gb_cli, *args).stdout.splitlines()]


def _everything(gb_cli) -> dict[str, Any]:
    acme = next(
        f
        for f in _lines(gb_cli, "facts", "--json", "--about", "Alice Moreau", "--all")
        if f["target"] == "Acme Corp"
    )
    return {
        "facts": _answers(gb_cli),
        "all facts": _alike(_lines(gb_cli, "facts", "--json", "--all", "-k", "100")),
        "why": _alike(json.loads(gb(gb_cli, "why", str(acme["id"]), "--json").stdout)),
        "entity": _alike(json.loads(gb(gb_cli, "entity", "Alice Moreau", "--json").stdout)),
        "entity then": _alike(
            json.loads(gb(gb_cli, "entity", "Acme Corp", "--at", "2016-01-01", "--json").stdout)
        ),
        "export": _alike(_lines(gb_cli, "export", "--format", "jsonl")),
        "search": _alike(_lines(gb_cli, "search", "where does Alice work", "--json")),
        "keywords": _alike(_lines(gb_cli, "search", "Acme Corp led", "--method", "bm25", "--json")),
    }


@pytest.mark.parametrize("order", ["chronological", "reverse"])
def test_sqlite_and_postgresql_give_the_same_answers(
    gb_cli, server, monkeypatch, tmp_path, pg_url, order
) -> None:
    names = list(DOCS) if order == "chronological" else list(DOCS)[::-1]
    for name in names:
        write(name, DOCS[name])
    seen = {}
    for backend, database in (("sqlite", str(tmp_path / "gb.db")), ("postgresql", pg_url)):
        configure(monkeypatch, server, GB_DB=database)
        _remember(gb_cli, names)
        seen[backend] = _everything(gb_cli)
    for part in seen["sqlite"]:
        assert seen["postgresql"][part] == seen["sqlite"][part], part


def _export(gb_cli) -> list[str]:
    return gb(gb_cli, "export", "--format", "jsonl").stdout.splitlines()


def test_copy_to_postgresql_and_back_keeps_everything_and_asks_nothing(
    gb_cli, server, monkeypatch, tmp_path, pg_url
) -> None:
    for name, text in DOCS.items():
        write(name, text)
    first, back = str(tmp_path / "first.db"), str(tmp_path / "back.db")
    configure(monkeypatch, server, GB_DB=first)
    _remember(gb_cli, list(DOCS))
    export = _export(gb_cli)
    search = gb(gb_cli, "search", "where does Alice work", "--json").stdout
    assert len(export) > 15
    server.requests.clear()

    copied = json.loads(gb(gb_cli, "copy", "--from", first, "--to", pg_url, "--json").stdout)
    assert copied["vectors"] > 0 and copied["rows"]["gb_edges"] > 5 and not copied["resumed"]
    gb(gb_cli, "copy", "--from", pg_url, "--to", back)

    assert server.requests == []  # nothing asked of the LLM, nothing paid again
    for database in (pg_url, back):
        configure(monkeypatch, server, GB_DB=database)
        assert _export(gb_cli) == export  # every row with its id, time and evidence
    assert gb(gb_cli, "search", "where does Alice work", "--json").stdout == search
    # A store that holds a memory is never copied into.
    refused = gb(gb_cli, "copy", "--from", first, "--to", back, code=6)
    assert "holds" in refused.stderr and "empty" in refused.stderr


def test_a_copy_cut_short_goes_on_where_it_stopped(
    gb_cli, server, monkeypatch, tmp_path, pg_url
) -> None:
    for name, text in DOCS.items():
        write(name, text)
    first = str(tmp_path / "first.db")
    configure(monkeypatch, server, GB_DB=first)
    _remember(gb_cli, list(DOCS))
    export = _export(gb_cli)

    def stop_at_the_facts(what: str, done: int, total: int) -> None:
        if what == "gb_edges":
            raise KeyboardInterrupt

    # Pages of two rows: every table, the keyword index and the vectors read in many.
    monkeypatch.setattr(copying, "BATCH", 2)
    into = Memory(pg_url)
    with pytest.raises(KeyboardInterrupt):
        into.copy_from(first, on_progress=stop_at_the_facts)
    report = into.copy_from(first)

    assert report.resumed and report.rows["gb_edges"] > 5
    held = {name: row["held"] for name, row in vec_stats(gb_cli).items()}
    configure(monkeypatch, server, GB_DB=pg_url)
    assert _export(gb_cli) == export
    copied = vec_stats(gb_cli)
    assert {name: row["held"] for name, row in copied.items()} == held  # every vector
    assert all(row["orphans"] == row["missing"] == 0 for row in copied.values())
    hits = _lines(gb_cli, "search", "Acme Corp led", "--method", "bm25", "--json")
    assert hits  # the keyword index, written again page by page
