"""Entity summaries follow the facts: a summary that may state a fact gb no longer holds
(closed by a contradiction, expired by a new version or --prune, forgotten with its
document) is marked stale and rewritten from the current facts by the next online run.

The test server writes an entity's summary as its name and the facts it was given,
joined (tests/support/llm_server.py `summarize_entity`), so each test can read which
facts a summary was written from.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gligabao.store import open_db, vectors
from gligabao.store.datasets import find_dataset
from tests.support.helpers import configure, count, database, gb, write
from tests.support.llm_server import Fault, embed_text

pytestmark = pytest.mark.usefixtures("backend")

ALICE = "Alice Moreau"


def _remember(gb_cli, *paths: str, code: int = 0) -> list[dict[str, Any]]:
    result = gb(gb_cli, "remember", *paths, "--json", code=code)
    return [json.loads(line) for line in result.stdout.splitlines()]


def _entity(gb_cli, name: str = ALICE) -> dict[str, Any]:
    return json.loads(gb(gb_cli, "entity", name, "--json").stdout)


def view_dataset(conn) -> int:
    return find_dataset(conn, "default").id


def _sent(server) -> list[dict[str, Any]]:
    """The entities the last summarize_entity request gave."""
    return _entities_of(server.requests_for("summarize_entity")[-1])


def _entities_of(request) -> list[dict[str, Any]]:
    user = request.body["messages"][-1]["content"]
    return json.loads(user.split("<entities>")[1].split("</entities>")[0])


def _alice_founded_acme_and_lives_in_nice(gb_cli) -> dict[str, Any]:
    """Alice's summary written from both her facts: the new version of b.md expired the
    fact only its first version stated, which made her summary stale."""
    (a,) = _remember(gb_cli, str(write("a.md", f"{ALICE} founded Acme Corp.\n")))
    write("b.md", f"{ALICE} lives in Lyon.\n")
    _remember(gb_cli, "b.md")
    write("b.md", f"{ALICE} moved to Nice.\n")
    (b,) = _remember(gb_cli, "b.md")
    assert b["previous_version"]["facts_expired"] == 1
    assert b["summaries_rewritten"] >= 1
    return a


def test_a_new_version_rewrites_the_summary_from_the_facts_held_now(gb_cli, online) -> None:
    _alice_founded_acme_and_lives_in_nice(gb_cli)
    view = _entity(gb_cli)
    # Both facts held now, in a stable order; none only the first version stated.
    assert view["summary"] == f"{ALICE}: {ALICE} moved to Nice; {ALICE} founded Acme Corp."
    assert view["summary_stale_at"] is None
    # Lyon lost its only fact: it has nothing to state.
    assert _entity(gb_cli, "Lyon")["summary"] == ""
    assert online.calls("summarize_entity") == 1  # Alice and Lyon, Lyon without a call


def test_a_forgotten_documents_fact_leaves_the_summary_after_the_next_online_run(
    gb_cli, online, monkeypatch
) -> None:
    a = _alice_founded_acme_and_lives_in_nice(gb_cli)
    gb(gb_cli, "forget", str(a["artifact_id"]))
    view = _entity(gb_cli)
    assert view["summary_stale_at"] is not None
    shown = gb(gb_cli, "entity", ALICE).stdout
    assert "summary stale since" in shown and "rewrites it" in shown

    # Offline, the summary stays as it was, marked stale.
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    (offline,) = _remember(gb_cli, str(write("c.md", "Bruno Tanaka reads books.\n")))
    assert offline["status"] == "offline" and "summaries_rewritten" not in offline
    assert _entity(gb_cli)["summary_stale_at"] == view["summary_stale_at"]

    # The next online run, whatever it remembers, rewrites it from the facts left.
    configure(monkeypatch, online)
    calls = online.calls("summarize_entity")
    (done,) = _remember(gb_cli, "b.md")
    assert done["status"] == "unchanged" and done["summaries_rewritten"] == 1
    view = _entity(gb_cli)
    assert view["summary"] == f"{ALICE}: {ALICE} moved to Nice."
    assert view["summary_stale_at"] is None
    assert online.calls("summarize_entity") == calls + 1
    assert count("SELECT count(*) FROM gb_entities WHERE summary_stale_at IS NOT NULL") == 0
    # Its vector is that of its name and new summary, as a new entity's is.
    conn = open_db(database())
    try:
        said = embed_text(f"{ALICE}: {view['summary']}", 64)
        similar = vectors.similarities(conn, view_dataset(conn), "entities", said, [view["id"]])
    finally:
        conn.close()
    assert similar[view["id"]] == pytest.approx(1.0, abs=1e-5)


def test_a_contradiction_rewrites_both_ends_summaries(gb_cli, online) -> None:
    _remember(gb_cli, str(write("acme.md", f"{ALICE} works at Acme Corp on 2020-01-06.\n")))
    assert online.calls("summarize_entity") == 0  # nothing closed: nothing to rewrite
    (done,) = _remember(
        gb_cli, str(write("beta.md", f"{ALICE} works at Beta Labs on 2024-05-01.\n"))
    )
    assert len(done["invalidated_edges"]) == 1
    view = _entity(gb_cli)
    # The closed fact stays in the graph with its end; the summary gives both, the
    # model told which one is over.
    alice = next(e for e in _sent(online) if e["name"] == ALICE)
    assert [f["until"] is not None for f in alice["facts"]].count(True) == 1
    assert done["summaries_rewritten"] >= 2  # Alice and Acme Corp at least
    assert view["summary_stale_at"] is None


def test_a_failed_rewrite_leaves_the_summary_stale_for_the_next_run(gb_cli, online) -> None:
    a = _alice_founded_acme_and_lives_in_nice(gb_cli)
    gb(gb_cli, "forget", str(a["artifact_id"]))
    online.add_fault(Fault(kind="500", stage="summarize_entity", times=10))
    result = gb(gb_cli, "remember", "b.md", "--json")
    (line,) = [json.loads(x) for x in result.stdout.splitlines()]
    assert line["status"] == "unchanged" and "summaries_rewritten" not in line
    assert "marked stale and the next run rewrites them" in result.stderr
    assert _entity(gb_cli)["summary_stale_at"] is not None
    online.clear_faults()
    (line,) = _remember(gb_cli, "b.md")
    assert line["summaries_rewritten"] == 1
    assert _entity(gb_cli)["summary"] == f"{ALICE}: {ALICE} moved to Nice."


def test_a_rewrite_cut_off_is_asked_again_in_halves(gb_cli, online) -> None:
    _remember(gb_cli, str(write("acme.md", f"{ALICE} works at Acme Corp on 2020-01-06.\n")))
    # An answer for more than one entity is cut off at its output limit: each is then
    # asked alone, and every summary is written all the same.
    online.cut_off_over["summarize_entity"] = 330
    (done,) = _remember(
        gb_cli, str(write("beta.md", f"{ALICE} works at Beta Labs on 2024-05-01.\n"))
    )
    asked = [len(_entities_of(r)) for r in online.requests_for("summarize_entity")]
    assert asked[0] >= 2 and asked.count(1) >= 2, asked
    assert done["summaries_rewritten"] == count(
        "SELECT count(*) FROM gb_entities WHERE summary <> 'Mentioned in the text.'"
    )
    assert count("SELECT count(*) FROM gb_entities WHERE summary_stale_at IS NOT NULL") == 0
    assert _entity(gb_cli)["summary"].startswith(f"{ALICE}: {ALICE} works at Beta Labs")


def test_a_batch_rewrites_each_stale_summary_once_after_its_last_document(gb_cli, online) -> None:
    _remember(gb_cli, str(write("acme.md", f"{ALICE} works at Acme Corp on 2020-01-06.\n")))
    jobs = {"beta.md": "Beta Labs on 2021", "gamma.md": "Gamma Inc on 2022"}
    jobs["delta.md"] = "Delta Ltd on 2023"
    for name, where in jobs.items():
        write(name, f"{ALICE} works at {where}-05-01.\n")
    lines = _remember(gb_cli, *jobs)
    # Whatever order they were stored in, Alice's facts were closed again and again, and
    # each closure left her stale; the batch asks for her summary once, when all three
    # are stored.
    assert sum(len(line["invalidated_edges"]) for line in lines) >= 3
    asked = [_entities_of(r) for r in online.requests_for("summarize_entity")]
    assert [e["name"] for batch in asked for e in batch].count(ALICE) == 1
    first_rewrite = min(r.started for r in online.requests_for("summarize_entity"))
    stored = [r for r in online.requests if r.stage in ("extract_graph", "resolve")]
    assert max(r.ended for r in stored) < first_rewrite
    # The run's last line says so; the others, which left it to that one, do not.
    assert [("summaries_rewritten" in line) for line in lines] == [False, False, True]
    view = _entity(gb_cli)
    assert view["summary_stale_at"] is None
    assert "Delta Ltd" in view["summary"] and "Beta Labs" in view["summary"]
