"""Entities one by name are one without the LLM; every merge is kept, listed, undone.

The test LLM server extracts the graph each text is written for (its `extract_with`), so
that names can differ in case, accents, punctuation and suffix, and types can be chosen.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.helpers import absolute, configure, count, database, gb, write
from tests.support.llm_server import LLMServer, resolve


def _entity(name: str, type_: str) -> dict[str, str]:
    return {"name": name, "type": type_, "summary": f"{name}, as one text says."}


def _edge(source: str, target: str, relation: str, fact: str) -> dict[str, Any]:
    return {
        "source": source,
        "target": target,
        "relation": relation,
        "fact": fact,
        "quote": fact,
        "valid_at": None,
        "invalid_at": None,
    }


# Each text, by a word only it has, and the graph the server extracts from it.
GRAPHS: dict[str, dict[str, Any]] = {
    "first": {
        "entities": [_entity("Acme Corporation", "Organization"), _entity("Zoë Ålund", "Person")],
        "edges": [_edge("Zoë Ålund", "Acme Corporation", "WORKS_AT", "Zoë Ålund works at Acme.")],
    },
    "second": {
        "entities": [
            _entity("ACME corp.", "organization"),
            _entity("Zoe  Alund", "Person"),
            _entity("The Harbour Bank", "Organization"),
            _entity("Harbour Bank, Inc.", "Organization"),
        ],
        "edges": [
            _edge("Zoe  Alund", "Harbour Bank, Inc.", "BANKS_WITH", "Zoe banks with Harbour."),
            _edge("ACME corp.", "The Harbour Bank", "OWES", "Acme owes the Harbour Bank."),
        ],
    },
    "product": {
        "entities": [_entity("ACME", "Product"), _entity("Zoë Ålund", "Person")],
        "edges": [_edge("Zoë Ålund", "ACME", "SELLS", "Zoë sells the ACME.")],
    },
}
TEXTS = {
    "first": "The first text: Zoë Ålund works at Acme.\n",
    "second": "The second text: Zoe banks with Harbour. Acme owes the Harbour Bank.\n",
    "product": "The product text: Zoë sells the ACME.\n",
}


def extract(text: str) -> dict[str, Any]:
    (word,) = [w for w in GRAPHS if f"The {w} text" in text]
    return GRAPHS[word]


def resolve_calls(server: LLMServer) -> int:
    return sum(1 for r in server.requests if r.stage == "resolve")


def entities(gb_cli) -> dict[str, str]:
    shown = gb(gb_cli, "entities", "--json", "-k", "100").stdout.splitlines()
    return {e["name"]: e["type"] for e in map(json.loads, shown)}


def remember(gb_cli, *names: str) -> None:
    for name in names:
        write(f"{name}.txt", TEXTS[name])
        gb(gb_cli, "remember", f"{name}.txt", "--quiet")


def test_names_one_but_for_case_accents_punctuation_or_suffix_are_one_entity_unasked(
    gb_cli, backend, online
) -> None:
    online.extract_with = extract
    remember(gb_cli, "first", "second")
    # Within the second text too: "The Harbour Bank" and "Harbour Bank, Inc." are one.
    assert entities(gb_cli) == {
        "Acme Corporation": "Organization",
        "Zoë Ålund": "Person",
        "The Harbour Bank": "Organization",
    }
    assert resolve_calls(online) == 0


def test_one_name_of_another_type_stays_apart(gb_cli, backend, online) -> None:
    online.extract_with = extract
    remember(gb_cli, "first", "product")
    assert entities(gb_cli) == {
        "Acme Corporation": "Organization",
        "Zoë Ålund": "Person",
        "ACME": "Product",
    }


# ---- merges kept, listed and undone

# "Zoë" is not "Zoë Ålund" by name: the LLM (the test server's `resolve`) says it is.
GRAPHS["alias"] = {
    "entities": [_entity("Acme Corporation", "Organization"), _entity("Zoë", "Person")],
    "edges": [_edge("Acme Corporation", "Zoë", "EMPLOYS", "Acme employs Zoë.")],
}
TEXTS["alias"] = "The alias text: Acme employs Zoë.\n"
GRAPHS["again"] = {
    "entities": [_entity("Zoë", "Person"), _entity("Acme Corporation", "Organization")],
    "edges": [_edge("Zoë", "Acme Corporation", "VISITS", "Zoë visits Acme.")],
}
TEXTS["again"] = "The again text: Zoë visits Acme.\n"


def merges(gb_cli, *args: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gb(gb_cli, "merges", "--json", *args).stdout.splitlines()]


def no_entity_merges(items: dict[str, Any]) -> dict[str, Any]:
    """The test server's answer, but no entity a duplicate: the LLM that tells apart."""
    answer = resolve(items)
    return {**answer, "entities": [{**e, "duplicate_of": None} for e in answer["entities"]]}


WHEN = ("--valid-at", "2024-01-01")  # a fact's time: one in both datasets


def exported(gb_cli, dataset: str) -> list[dict[str, Any]]:
    """`gb export --format jsonl` of a dataset, its ids aside: entities by name, facts by
    their ends' names, evidence by its document and lines."""
    records = [
        json.loads(line)
        for line in gb(
            gb_cli, "export", "--format", "jsonl", "--dataset", dataset
        ).stdout.splitlines()
    ]
    names = {r["id"]: r["name"] for r in records if r["type"] == "entity"}
    out = []
    for r in records:
        r = {k: v for k, v in r.items() if k not in ("id", "created_at", "dataset")}
        for end in ("source", "target", "source_id", "target_id", "invalidated_by"):
            if isinstance(r.get(end), int):
                r[end] = names.get(r[end], "fact")
        for e in r.get("evidence", ()):
            e.update(document_id=None, chunk_id=None, chunk_ids=None)
        out.append(r)
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True))


def test_a_merge_is_listed_with_its_reason(gb_cli, backend, online) -> None:
    online.extract_with = extract
    remember(gb_cli, "first", "second", "alias")
    listed = merges(gb_cli)
    by_name = {m["name"]: m for m in listed}
    assert set(by_name) == {"ACME corp.", "Zoe  Alund", "Harbour Bank, Inc.", "Zoë"}
    # Within one chunk too: a name after the one it is by key.
    assert by_name["Harbour Bank, Inc."]["entity_name"] == "The Harbour Bank"
    assert by_name["ACME corp."]["rule"] == "same normalized name"
    assert by_name["ACME corp."]["entity_name"] == "Acme Corporation"
    assert by_name["ACME corp."]["inference_id"] is None
    llm = by_name["Zoë"]
    assert llm["rule"] == "resolve" and llm["entity_name"] == "Zoë Ålund"
    shown = json.loads(gb(gb_cli, "inferences", str(llm["inference_id"]), "--json").stdout)
    assert shown["stage"] == "resolve"
    assert merges(gb_cli, "--since", "2999-01-01") == []
    shown = gb(gb_cli, "merges").stdout
    assert "'ACME corp.' (organization) into" in shown and "by same normalized name" in shown
    assert f"by resolve (inference {llm['inference_id']})" in shown
    view = json.loads(gb(gb_cli, "entity", "Zoë Ålund", "--json").stdout)
    assert view["aliases"] == ["Zoe  Alund", "Zoë"]
    assert [m["id"] for m in view["merges"]] == [by_name["Zoe  Alund"]["id"], llm["id"]]
    assert "also named:" in gb(gb_cli, "entity", "Zoë Ålund").stdout


def test_unmerge_gives_the_graph_as_had_the_llm_told_them_apart(gb_cli, backend, online) -> None:
    online.extract_with = extract
    # Told apart: what the graph would be had the merge never been made.
    online.resolve_with = no_entity_merges
    for name in ("first", "alias"):
        write(f"{name}.txt", TEXTS[name])
        gb(gb_cli, "remember", f"{name}.txt", "--quiet", "--dataset", "apart", *WHEN)
    online.resolve_with = None
    for name in ("first", "alias"):
        gb(gb_cli, "remember", f"{name}.txt", "--quiet", "--dataset", "merged", *WHEN)
    assert exported(gb_cli, "merged") != exported(gb_cli, "apart")
    (merge,) = merges(gb_cli, "--dataset", "merged")
    undone = json.loads(gb(gb_cli, "unmerge", str(merge["id"]), "--json").stdout)
    assert undone["undone_at"] and undone["restored_id"]
    assert exported(gb_cli, "merged") == exported(gb_cli, "apart")
    # The kept entity's summary may state what is the restored one's again: the next
    # online run rewrites it.
    kept = gb(gb_cli, "entity", str(merge["entity_id"]), "--json", "--dataset", "merged")
    assert json.loads(kept.stdout)["summary_stale_at"] is not None
    # Its vector came back with it: a search by meaning finds it as before the merge.
    stats = gb(gb_cli, "vec-stats", "--json", "--dataset", "merged").stdout.splitlines()
    assert all(s["missing"] == 0 and s["orphans"] == 0 for s in map(json.loads, stats))
    hits = gb(gb_cli, "entities", "Zoë", "--json", "--dataset", "merged").stdout
    assert "Zoë" in [json.loads(line)["name"] for line in hits.splitlines()]
    # Once: a second time is refused, and nothing changes.
    gb(gb_cli, "unmerge", str(merge["id"]), code=1)
    gb(gb_cli, "unmerge", "999999", code=1)
    assert exported(gb_cli, "merged") == exported(gb_cli, "apart")

    # Remembered again, the names are not merged again: each goes to its own.
    asked = resolve_calls(online)
    write("again.txt", TEXTS["again"])
    gb(gb_cli, "remember", "again.txt", "--quiet", "--dataset", "merged")
    assert [m["id"] for m in merges(gb_cli, "--dataset", "merged")] == [merge["id"]]
    names = entities_of(gb_cli, "merged")
    assert sorted(names) == ["Acme Corporation", "Zoë", "Zoë Ålund"]
    assert resolve_calls(online) >= asked


def entities_of(gb_cli, dataset: str) -> list[str]:
    shown = gb(gb_cli, "entities", "--json", "-k", "100", "--dataset", dataset).stdout
    return [json.loads(line)["name"] for line in shown.splitlines()]


def test_a_copy_keeps_merges_and_what_keeps_them_apart(
    gb_cli, backend, online, monkeypatch
) -> None:
    online.extract_with = extract
    remember(gb_cli, "first", "second", "alias")
    (llm,) = [m for m in merges(gb_cli) if m["rule"] == "resolve"]
    gb(gb_cli, "unmerge", str(llm["id"]))
    before = merges(gb_cli)
    source = database()
    # Whole, every row keeps its id; one dataset into another store, new ids there.
    gb(gb_cli, "copy", "--from", source, "--to", absolute("whole.db"))
    gb(gb_cli, "copy", "--from", source, "--to", absolute("into.db"), "--into", "moved")
    configure(monkeypatch, online, GB_DB=absolute("whole.db"))
    assert merges(gb_cli) == before
    configure(monkeypatch, online, GB_DB=absolute("into.db"))
    moved = merges(gb_cli, "--dataset", "moved")
    assert [_no_ids(m) for m in moved] == [_no_ids(m) for m in before]
    assert count("SELECT count(*) FROM gb_kept_apart", db=absolute("into.db")) == 1
    assert count("SELECT count(*) FROM gb_merge_edges", db=absolute("into.db")) == count(
        "SELECT count(*) FROM gb_merge_edges", db=source
    )


def _no_ids(merge: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in merge.items() if k != "id" and not k.endswith("_id")}


GRAPHS["restated"] = {
    "entities": [_entity("Zoë", "Person"), _entity("Acme Corporation", "Organization")],
    "edges": [_edge("Zoë", "Acme Corporation", "WORKS_AT", "Zoë works at Acme.")],
}
TEXTS["restated"] = "The restated text: Zoë works at Acme.\n"


def restating(items: dict[str, Any]) -> dict[str, Any]:
    """The test server's answer, but each fact with a candidate restates the first."""
    answer = resolve(items)
    firsts = {e["id"]: (e["candidates"] or [{}])[0].get("id") for e in items.get("edges", ())}
    edges = [{**e, "duplicate_of": firsts.get(e["id"]), "contradicts": []} for e in answer["edges"]]
    return {**answer, "edges": edges}


def test_unmerge_copies_a_fact_the_chunk_only_restated(gb_cli, backend, online) -> None:
    online.extract_with = extract
    online.resolve_with = restating
    remember(gb_cli, "first", "restated")
    (merge,) = merges(gb_cli)
    assert (merge["name"], merge["entity_name"]) == ("Zoë", "Zoë Ålund")
    (fact,) = json.loads(gb(gb_cli, "entity", "Zoë Ålund", "--json").stdout)["facts"]
    assert sorted(e["source"].rsplit("/", 1)[-1] for e in fact["evidence"]) == [
        "first.txt",
        "restated.txt",
    ]
    gb(gb_cli, "unmerge", str(merge["id"]))
    kept = json.loads(gb(gb_cli, "entity", "Zoë Ålund", "--json").stdout)
    restored = json.loads(gb(gb_cli, "entity", "Zoë", "--json").stdout)
    (old,) = kept["facts"]
    (new,) = restored["facts"]
    assert [e["source"].rsplit("/", 1)[-1] for e in old["evidence"]] == ["first.txt"]
    assert [e["source"].rsplit("/", 1)[-1] for e in new["evidence"]] == ["restated.txt"]
    assert (new["source"], new["target"]) == ("Zoë", old["target"])
    assert new["fact"] == old["fact"] and kept["aliases"] == restored["aliases"] == []
    assert [d["source"].rsplit("/", 1)[-1] for d in restored["documents"]] == ["restated.txt"]
    assert [d["source"].rsplit("/", 1)[-1] for d in kept["documents"]] == ["first.txt"]
    stats = gb(gb_cli, "vec-stats", "--json").stdout.splitlines()
    assert all(s["missing"] == 0 and s["orphans"] == 0 for s in map(json.loads, stats))


GRAPHS["apart"] = {
    "entities": [_entity("Acme Corp", "Organization"), _entity("Zoë Ålund", "Person")],
    "edges": [_edge("Zoë Ålund", "Acme Corp", "VISITS", "Zoë visits Acme Corp.")],
}
TEXTS["apart"] = "The apart text: Zoë visits Acme Corp.\n"


def test_a_pair_unmerged_is_not_merged_again_by_name(gb_cli, backend, online) -> None:
    online.extract_with = extract
    remember(gb_cli, "first", "second")
    (merge,) = [m for m in merges(gb_cli) if m["name"] == "ACME corp."]
    gb(gb_cli, "unmerge", str(merge["id"]))
    assert entities(gb_cli)["ACME corp."] == "organization"
    # "Acme Corp" is both by name: which one is the LLM's to say, not the rule's.
    asked = resolve_calls(online)
    remember(gb_cli, "apart")
    assert resolve_calls(online) == asked + 1
    new = [m for m in merges(gb_cli) if m["id"] > merge["id"]]
    assert [(m["name"], m["rule"]) for m in new if m["name"] == "Acme Corp"] == [
        ("Acme Corp", "resolve")
    ]
    # The first text again, changed: "Acme Corporation" is still its own.
    write("first.txt", TEXTS["first"] + "Nothing else.\n")
    gb(gb_cli, "remember", "first.txt", "--quiet")
    assert not [
        m
        for m in merges(gb_cli)
        if m["name"] in ("ACME corp.", "Acme Corporation") and m["id"] != merge["id"]
    ]
