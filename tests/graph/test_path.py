"""`gb path`: the shortest chains of facts linking two entities, on a graph built by the
test server from documents that each state one or two facts (its extraction links the
first two names of a sentence, by the words between them, from the date it holds; a fact
with the same source and relation but another target closes the older one).

Alice Moreau and Dmitri Novak are linked now only through three facts of three files,
Alice -> Acme Corp -> Bruno Tanaka <- Dmitri (the last stated the other way round), and
through Acme Corp and Ines Brandt since 2021-05; once, directly, by a fact closed in 2020.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from gligabao import AmbiguousEntity, Memory
from gligabao.errors import ExitCode, UsageError
from tests.mcp.test_server import call, over_stdio, refused
from tests.support.helpers import absolute, database, gb, write

DOCS = {
    "job.txt": "Alice Moreau works at Acme Corp since 2019-03-01.\n",
    "owner.txt": "Acme Corp is owned by Bruno Tanaka since 2020-05-01.\n",
    "office.txt": "Alice Moreau shares an office with Dmitri Novak since 2017-01-01.\n",
    "moved.txt": "Alice Moreau shares an office with Hugo Silva since 2020-01-01.\n",
    "mentor.txt": (
        "Acme Corp employs Ines Brandt since 2020-02-01.\n"
        "Ines Brandt mentors Dmitri Novak since 2021-05-01.\n"
    ),
    "labs.txt": "Acme Labs hired Elena Rossi since 2022-02-01.\n",
}
# Remembered last, after the moment `graph` notes: --known-at that moment lacks it.
LAST = ("reports.txt", "Dmitri Novak reports to Bruno Tanaka since 2021-01-10.\n")

BRUNO = [
    ("Alice Moreau", "WORKS_AT", "Acme Corp", False, "job.txt", 1),
    ("Acme Corp", "IS_OWNED_BY", "Bruno Tanaka", False, "owner.txt", 1),
    ("Dmitri Novak", "REPORTS_TO", "Bruno Tanaka", True, "reports.txt", 1),
]
INES = [
    ("Alice Moreau", "WORKS_AT", "Acme Corp", False, "job.txt", 1),
    ("Acme Corp", "EMPLOYS", "Ines Brandt", False, "mentor.txt", 1),
    ("Ines Brandt", "MENTORS", "Dmitri Novak", False, "mentor.txt", 2),
]


@pytest.fixture
def graph(gb_cli, backend, online) -> str:
    """The documents remembered one by one; the moment before the last one was."""
    for name, text in DOCS.items():
        write(name, text)
        gb(gb_cli, "remember", name, "--quiet")
    time.sleep(0.05)
    before = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    time.sleep(0.05)
    write(*LAST)
    gb(gb_cli, "remember", LAST[0], "--quiet")
    return before


def _path(gb_cli, *args: str, code: int = 0) -> dict[str, Any]:
    return json.loads(gb(gb_cli, "path", "--json", *args, code=code).stdout)


def _chains(found: dict[str, Any]) -> list[list[tuple[Any, ...]]]:
    """Each chain as (source, relation, target, reversed, file, line) a hop."""
    return [
        [
            (
                hop["source"],
                hop["relation"],
                hop["target"],
                hop["reversed"],
                Path(hop["evidence"][0]["source"]).name,
                hop["evidence"][0]["line_start"],
            )
            for hop in chain
        ]
        for chain in found["paths"]
    ]


def test_the_chains_now_each_fact_with_its_evidence(gb_cli, graph) -> None:
    found = _path(gb_cli, "Alice Moreau", "dmitri novak")
    assert found["found"] is True and found["at"] is None and found["known_at"] is None
    assert (found["from"]["name"], found["to"]["name"]) == ("Alice Moreau", "Dmitri Novak")
    assert sorted(_chains(found)) == sorted([BRUNO, INES])
    for chain in found["paths"]:
        for hop in chain:
            assert hop["status"] == "current" and hop["invalid_at"] is None
            (evidence,) = hop["evidence"]
            assert evidence["exact"] and evidence["quote"] == hop["fact"]
            lines = Path(evidence["source"]).read_text().splitlines()
            assert lines[evidence["line_start"] - 1] == hop["fact"]
    # Chains in the order of their facts' ids: the same answer each time.
    firsts = [[hop["id"] for hop in chain] for chain in found["paths"]]
    assert firsts == sorted(firsts)
    assert _path(gb_cli, "Alice Moreau", "Dmitri Novak") == found


def test_the_view_shows_each_hop_its_interval_and_place(gb_cli, graph) -> None:
    shown = gb(gb_cli, "path", "Alice Moreau", "Dmitri Novak", "--at", "2021-03-01").stdout
    assert "Alice Moreau ... Dmitri Novak: 1 chain of 3 facts, through facts true at" in shown
    for needle in (
        "Alice Moreau —WORKS_AT→ Acme Corp  2019-03-01 → now",
        "Acme Corp —IS_OWNED_BY→ Bruno Tanaka  2020-05-01 → now",
        "Dmitri Novak —REPORTS_TO→ Bruno Tanaka  2021-01-10 → now",
        "(linked from its target to its source)",
        f"{absolute('job.txt')}:1",
        f"{absolute('owner.txt')}:1",
        f"{absolute('reports.txt')}:1",
    ):
        assert needle in shown, (needle, shown)
    assert shown.index("WORKS_AT") < shown.index("IS_OWNED_BY") < shown.index("REPORTS_TO")


def test_at_a_time_uses_the_facts_true_then(gb_cli, graph) -> None:
    # Before Dmitri reported to Bruno, and before Ines mentored him: no chain at all.
    before = gb(
        gb_cli, "path", "--json", "Alice Moreau", "Dmitri Novak", "--at", "2020-06-01", code=1
    )
    assert json.loads(before.stdout)["found"] is False
    assert json.loads(before.stdout)["paths"] == []
    assert "no chain of at most 4 facts links Alice Moreau and Dmitri Novak" in before.stderr
    # Between the two: the chain through Bruno alone.
    assert _chains(_path(gb_cli, "Alice Moreau", "Dmitri Novak", "--at", "2021-03-01")) == [BRUNO]
    # While they shared an office: that one fact, closed since.
    (direct,) = _path(gb_cli, "Alice Moreau", "Dmitri Novak", "--at", "2018-06-01")["paths"]
    (hop,) = direct
    assert (hop["relation"], hop["status"], hop["invalid_at"][:10]) == (
        "SHARES_AN_OFFICE",
        "closed",
        "2020-01-01",
    )
    assert Path(hop["evidence"][0]["source"]).name == "office.txt"
    view = gb(gb_cli, "path", "Alice Moreau", "Dmitri Novak", "--at", "2018-06-01").stdout
    assert "2017-01-01 → 2020-01-01" in view and "closed" in view


def test_known_at_uses_what_the_graph_held_then(gb_cli, graph) -> None:
    then = _path(gb_cli, "Alice Moreau", "Dmitri Novak", "--known-at", graph)
    assert then["found"] and then["known_at"]
    assert all(
        "Bruno Tanaka" not in (hop["source"], hop["target"]) for c in then["paths"] for hop in c
    )
    early = _path(gb_cli, "Alice Moreau", "Dmitri Novak", "--known-at", "2000-01-01", code=1)
    assert early["found"] is False


def test_max_depth_bounds_the_chains(gb_cli, graph) -> None:
    result = gb(gb_cli, "path", "Alice Moreau", "Dmitri Novak", "--max-depth", "2", code=1)
    assert result.stdout == ""
    assert "no chain of at most 2 facts links Alice Moreau and Dmitri Novak" in result.stderr
    assert _path(gb_cli, "Alice Moreau", "Dmitri Novak", "--max-depth", "3")["found"]
    (one,) = _path(gb_cli, "Alice Moreau", "Acme Corp", "--max-depth", "1")["paths"]
    assert [hop["relation"] for hop in one] == ["WORKS_AT"]
    refused = gb(gb_cli, "path", "Alice Moreau", "Acme Corp", "--max-depth", "0", code=2)
    assert "--max-depth must be a whole number from 1" in refused.stderr


def test_names_as_gb_entity_takes_them(gb_cli, graph) -> None:
    ambiguous = gb(gb_cli, "path", "Acme", "Dmitri Novak", code=1)
    assert "Acme Corp" in ambiguous.stderr and "Acme Labs" in ambiguous.stderr
    assert ambiguous.stdout == ""
    entity = gb(gb_cli, "entity", "Acme", code=1)
    assert entity.stderr == ambiguous.stderr
    unknown = gb(gb_cli, "path", "--json", "Alice Moreau", "Nobody Atall", code=1)
    assert "no entity is named 'Nobody Atall'" in unknown.stderr and unknown.stdout == ""
    dmitri = _path(gb_cli, "Dmitri Novak", "Alice Moreau")["from"]["id"]
    by_id = _path(gb_cli, str(dmitri), "alice  MOREAU")
    assert by_id["from"]["name"] == "Dmitri Novak" and by_id["found"]
    same = gb(gb_cli, "path", "Alice Moreau", "alice moreau", code=2)
    assert "one entity" in same.stderr
    assert gb(gb_cli, "path", "", "Alice Moreau", code=2).stderr


def test_memory_gives_what_gb_path_json_prints(gb_cli, graph) -> None:
    with Memory(database()) as memory:
        for args, at in (((), None), (("--at", "2021-03-01"), "2021-03-01")):
            printed = _path(gb_cli, "Alice Moreau", "Dmitri Novak", *args)
            found = memory.path("Alice Moreau", "Dmitri Novak", at=at)
            assert found.found and found.as_json() == printed
        assert not memory.path("Alice Moreau", "Dmitri Novak", max_depth=2).found
        with pytest.raises(AmbiguousEntity) as ambiguous:
            memory.path("Acme", "Dmitri Novak")
        assert ambiguous.value.exit_code == ExitCode.FAILURE
        assert {c["name"] for c in ambiguous.value.candidates} == {"Acme Corp", "Acme Labs"}
        with pytest.raises(UsageError, match="max_depth"):
            memory.path("Alice Moreau", "Dmitri Novak", max_depth=0)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # gb mcp --db ./gb.db
def test_the_mcp_tool_gives_what_gb_path_json_prints(gb_cli, graph) -> None:
    printed = _path(gb_cli, "Alice Moreau", "Dmitri Novak")
    none = _path(gb_cli, "Alice Moreau", "Dmitri Novak", "--at", "2020-06-01", code=1)
    ends = {"a": "Alice Moreau", "b": "Dmitri Novak"}

    async def check(session: Any) -> None:
        found = await call(session, "path", ends)
        assert found.structured_content == printed
        assert f"{absolute('reports.txt')}:1" in found.content[0].text
        missing = await call(session, "path", {**ends, "at": "2020-06-01"})
        assert missing.structured_content == none
        assert "no chain of at most 4 facts" in missing.content[0].text
        two = await call(session, "path", {**ends, "at": "2021-03-01", "max_depth": 3})
        assert _chains(two.structured_content) == [BRUNO]
        ambiguous = await refused(session, "path", {**ends, "a": "Acme"})
        assert "Acme Corp" in ambiguous and "Acme Labs" in ambiguous
        assert "max_depth" in await refused(session, "path", {**ends, "max_depth": 0})

    over_stdio(check, offline=True)  # no LLM endpoint: nothing is asked of one
