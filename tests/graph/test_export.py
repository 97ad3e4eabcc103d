"""`gb export`: the graph of a dataset as JSON Lines, GraphML and CSV, checked
against what `gb stats`, `gb facts --all` and `gb facts --at` say of the same database,
and read back by a real graph library (networkx)."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from gligabao.graph import export as export_module
from gligabao.graph.queries import Entity, Evidence, Fact
from gligabao.store import open_db
from gligabao.store.datasets import find_dataset
from tests.graph.test_facts import DOCS, TRUTH
from tests.support.helpers import DB, gb, write

ALL = ("-k", "100000")
NS = {"g": "http://graphml.graphdrawing.org/xmlns"}
PYTHON_TYPES = {"string": str, "int": int, "boolean": bool}
# A text XML cannot hold as it is: control characters, markup, a carriage return.
ODD = "Hugo Silva visits Porto \x01\x1b with <b>&amp;</b> \"Q\" 'q' \x0c since 2020-02-02.\r\n"


@pytest.fixture
def graph(gb_cli, backend, online) -> dict[str, Any]:
    """The texts of test_facts remembered newest first (so older facts are stored closed),
    and one odd text; what gb stats and gb facts --all say of them."""
    names = [*DOCS, "odd.txt"]
    for name, text in DOCS.items():
        write(name, text)
    write("odd.txt", ODD)
    for name in names[::-1]:
        gb(gb_cli, "remember", name, "--quiet")
    stats = json.loads(gb(gb_cli, "stats", "--json").stdout)
    facts = _lines(gb(gb_cli, "facts", "--all", "--json", *ALL).stdout)
    assert {f["status"] for f in facts} == {"current", "closed"}
    return {"stats": stats, "facts": {f["id"]: f for f in facts}}


def _odd_id(facts: dict[int, dict[str, Any]]) -> int:
    (found,) = [i for i, f in facts.items() if "Porto" in f["fact"]]
    return found


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.split("\n") if line]


def _kept(text: str) -> str:
    """`text` with what XML cannot hold as U+FFFD."""
    bad = {c for c in text if (ord(c) < 0x20 and c not in "\t\n\r") or c in "\ud800\ufffe\uffff"}
    return "".join("\ufffd" if c in bad else c for c in text)


def _compact(evidence: list[dict[str, Any]]) -> str:
    def one(e: dict[str, Any]) -> str:
        lines = str(e["line_start"])
        if e["line_end"] != e["line_start"]:
            lines += f"-{e['line_end']}"
        return f"{e['source']}:{lines}"

    return "; ".join(one(e) for e in evidence)


def test_graphml_reads_back_in_networkx_as_gb_stats_counts_it(gb_cli, graph) -> None:
    result = gb(gb_cli, "export", "--format", "graphml", "-o", "graph.graphml")
    assert result.stdout == "" and "graph.graphml" in result.stderr
    assert gb(gb_cli, "export", "--format", "graphml").stdout == Path("graph.graphml").read_text(
        encoding="utf-8"
    )
    g = nx.read_graphml("graph.graphml", force_multigraph=True)
    assert g.is_directed()
    stats, facts = graph["stats"], graph["facts"]
    assert g.number_of_nodes() == stats["entities"]
    assert g.number_of_edges() == stats["edges_valid"] + stats["edges_closed"] == len(facts)

    # Every attribute is declared, with the type it is read back as.
    keys = ET.parse("graph.graphml").getroot().findall("g:key", NS)
    declared = {(k.get("for"), k.get("attr.name")): k.get("attr.type") for k in keys}
    assert {name for kind, name in declared if kind == "node"} >= {
        "name",
        "entity_type",
        "summary",
    }
    assert declared[("node", "fact_count")] == declared[("edge", "closed_by")] == "int"
    assert declared[("edge", "current")] == "boolean"
    for node, data in g.nodes(data=True):
        assert node.startswith("n") and data["name"] and data["entity_type"] == "Entity"
        for name, value in data.items():
            assert type(value) is PYTHON_TYPES[declared[("node", name)]], (name, value)
    for source, target, key, data in g.edges(keys=True, data=True):
        for name, value in data.items():
            assert type(value) is PYTHON_TYPES[declared[("edge", name)]], (name, value)
        fact = facts[int(key.removeprefix("e"))]
        assert (g.nodes[source]["name"], g.nodes[target]["name"]) == (
            fact["source"],
            fact["target"],
        )
        shown = {
            "relation": fact["relation"],
            "fact": fact["fact"],
            "valid_at": fact["valid_at"],
            "invalid_at": fact["invalid_at"],
            "created_at": fact["created_at"],
            "expired_at": fact["expired_at"],
            "status": fact["status"],
            "current": fact["status"] == "current",
            "closed_by": (fact["closed_by"] or {}).get("id"),
            "closed_reason": (fact["closed_by"] or {}).get("reason"),
            "evidence": _compact(fact["evidence"]),
            "evidence_count": len(fact["evidence"]),
        }
        assert {k: data.get(k) for k in shown} == {
            k: _kept(v) if isinstance(v, str) else v for k, v in shown.items()
        }, fact
    # The odd text's control characters became U+FFFD; its markup and quotes are intact.
    (odd,) = [d["fact"] for _, _, d in g.edges(data=True) if "Porto" in d["fact"]]
    assert "\x01" in facts[_odd_id(facts)]["fact"]
    assert "Porto \ufffd\ufffd with <b>&amp;</b> \"Q\" 'q'" in odd


def test_jsonl_rebuilds_the_graph_gb_facts_shows(gb_cli, graph) -> None:
    out = gb(gb_cli, "export").stdout
    assert gb(gb_cli, "export", "--format", "jsonl", "-o", "graph.jsonl").stdout == ""
    assert Path("graph.jsonl").read_text(encoding="utf-8") == out
    assert out.endswith("\n") and len(out.splitlines()) == out.count("\n")
    records = _lines(out)
    kinds = [r["type"] for r in records]
    assert kinds == sorted(kinds)  # entities first, then facts
    entities = {r["id"]: r for r in records if r["type"] == "entity"}
    facts = {r["id"]: r for r in records if r["type"] == "fact"}
    assert len(entities) == kinds.count("entity") == graph["stats"]["entities"]
    assert len(facts) == kinds.count("fact")
    assert set(facts) == set(graph["facts"])
    for entity in entities.values():
        assert entity["entity_type"] == "Entity" and entity["name"]
    for fact_id, fact in facts.items():
        source, target = entities[fact.pop("source_id")], entities[fact.pop("target_id")]
        assert (source["name"], target["name"]) == (fact["source"], fact["target"])
        assert fact.pop("type") == "fact"
        assert fact == graph["facts"][fact_id]  # every temporal field, closed_by, evidence


def test_csv_holds_the_same_graph(gb_cli, graph) -> None:
    result = gb(gb_cli, "export", "--format", "csv", "-o", "out/graph")
    assert result.stdout == ""
    assert sorted(p.name for p in Path("out/graph").iterdir()) == ["entities.csv", "facts.csv"]
    with open("out/graph/entities.csv", newline="", encoding="utf-8") as f:
        entities = list(csv.DictReader(f))
    with open("out/graph/facts.csv", newline="", encoding="utf-8") as f:
        facts = list(csv.DictReader(f))
    assert list(entities[0]) == list(export_module.ENTITY_COLUMNS)
    assert list(facts[0]) == list(export_module.FACT_COLUMNS)
    assert len(entities) == graph["stats"]["entities"]
    assert len(facts) == len(graph["facts"])
    names = {int(e["id"]): e["name"] for e in entities}
    for row in facts:
        fact = graph["facts"][int(row["id"])]
        assert (names[int(row["source_id"])], names[int(row["target_id"])]) == (
            fact["source"],
            fact["target"],
        )
        for column in ("fact", "valid_at", "invalid_at", "created_at", "expired_at", "status"):
            assert row[column] == (fact[column] or ""), column
        closer = fact["closed_by"] or {}
        assert row["closed_by"] == str(closer.get("id") or "")
        assert row["evidence"] == _compact(fact["evidence"])
    # Again into the same folder: replaced, no temporary file left beside them.
    gb(gb_cli, "export", "--format", "csv", "-o", "out/graph", "--at", "2016-01-01")
    assert sorted(p.name for p in Path("out/graph").iterdir()) == ["entities.csv", "facts.csv"]
    with open("out/graph/facts.csv", newline="", encoding="utf-8") as f:
        assert 0 < len(list(csv.DictReader(f))) < len(facts)


def test_at_keeps_exactly_the_facts_gb_facts_at_finds(gb_cli, graph) -> None:
    times = [*sorted({at for _, at in TRUTH}), "2020-06-01T12:00:00+02:00", "2999-01-01"]
    sizes = set()
    for at in times:
        expected = {
            f["id"]: f for f in _lines(gb(gb_cli, "facts", "--at", at, "--json", *ALL).stdout)
        }
        records = _lines(gb(gb_cli, "export", "--at", at).stdout)
        facts = {r["id"]: r for r in records if r["type"] == "fact"}
        entities = {r["id"] for r in records if r["type"] == "entity"}
        assert set(facts) == set(expected), at
        assert entities == {f["source_id"] for f in facts.values()} | {
            f["target_id"] for f in facts.values()
        }, at
        for fact_id, fact in facts.items():
            assert {k: v for k, v in fact.items() if k in expected[fact_id]} == expected[fact_id]
        gb(gb_cli, "export", "--at", at, "--format", "graphml", "-o", "at.graphml")
        g = nx.read_graphml("at.graphml", force_multigraph=True)
        assert (g.number_of_nodes(), g.number_of_edges()) == (len(entities), len(facts)), at
        sizes.add(len(facts))
    assert 0 in sizes and len(sizes) >= 3  # nothing true in 2014; other counts later


def test_reading_only_a_missing_database_is_exit_6(gb_cli) -> None:
    for args in (
        ["--format", "jsonl"],
        ["--format", "graphml", "-o", "g.graphml"],
        ["--format", "csv", "-o", "out"],
    ):
        result = gb_cli("export", "--db", "missing.db", *args)
        assert result.exit_code == 6 and "no database" in result.stderr, args
    assert sorted(p.name for p in Path.cwd().iterdir() if not p.name.startswith(".")) == []


def test_usage_errors(gb_cli, graph) -> None:
    result = gb_cli("export", "--format", "csv")
    assert result.exit_code == 2 and "-o" in result.stderr
    result = gb_cli("export", "--format", "gexf", "-o", "x")
    assert result.exit_code == 2 and "jsonl, graphml, csv" in result.stderr
    write("afile", "x")
    assert gb_cli("export", "--format", "csv", "-o", "afile").exit_code == 2
    Path("adir").mkdir()
    assert gb_cli("export", "--format", "graphml", "-o", "adir").exit_code == 2
    result = gb_cli("export", "--at", "yesterday")
    assert result.exit_code == 2 and "ISO-8601" in result.stderr
    assert not Path("x").exists()
    result = gb_cli("export", "--dataset", "nope")
    assert result.exit_code == 1 and "no dataset named 'nope'" in result.stderr
    assert "Example" in gb_cli("export", "--help").stdout


def test_a_failed_export_leaves_the_old_file_whole(gb_cli, graph, monkeypatch) -> None:
    write("graph.graphml", "old")

    def broken(graph: Any, out: Any) -> None:
        out.write("<graphml>half")
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(export_module, "write_graphml", broken)
    result = gb_cli("export", "--format", "graphml", "-o", "graph.graphml")
    assert isinstance(result.exception, RuntimeError)
    assert Path("graph.graphml").read_text() == "old"
    assert [p.name for p in Path.cwd().iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the file itself
def test_batches_and_one_read_give_the_same_export(gb_cli, graph) -> None:
    conn = open_db(DB, create=False)
    try:
        dataset = find_dataset(conn, "default")
        assert dataset is not None
        whole, batched = io.StringIO(), io.StringIO()
        export_module.export(conn, dataset, "jsonl", whole)
        export_module.export(conn, dataset, "jsonl", batched, batch=2)
    finally:
        conn.close()
    assert whole.getvalue() == batched.getvalue() == gb(gb_cli, "export").stdout
    assert len(_lines(whole.getvalue())) > 2 + graph["stats"]["entities"]


def _one_fact_graph(text: str) -> export_module.Graph:
    fact = Fact(
        id=7,
        source=text,
        relation="REL",
        target="B",
        fact=text,
        valid_at=None,
        invalid_at=None,
        created_at="2024-01-01T00:00:00.000Z",
        expired_at=None,
        status="current",
        closed_by=None,
        evidence=[Evidence(1, 2, f"/p/{text}", 0, 3, 4, 5, text, True)],
        source_id=1,
        target_id=2,
    )
    entities = [
        Entity(1, text, text, text, 1, 1, "2024-01-01"),
        Entity(2, "B", "", "", 1, 1, "2024-01-01"),
    ]
    return export_module.Graph("d\x00s", None, entities, 1, lambda: iter([fact]))


@pytest.mark.parametrize(
    "text",
    [
        "a\x00b\x08c\x0bd\x1fe\ud800f\ufffeg\uffffh",  # nothing XML can hold
        '<x a="1">&amp; &lt; ]]> \'"\'</x>',  # markup
        "line\r\nbreak\rtab\there\u2028sep\x85nel",  # whitespace XML parsers normalize
    ],
)
def test_any_text_gives_a_graphml_that_parses_and_jsonl_lines(text: str) -> None:
    out = io.StringIO()
    export_module.write_graphml(_one_fact_graph(text), out)
    document = out.getvalue()
    g = nx.parse_graphml(document, force_multigraph=True)
    kept = _kept(text)
    assert g.nodes["n1"]["name"] == g.nodes["n1"]["entity_type"] == kept
    assert g.nodes["n1"]["summary"] == kept
    assert "entity_type" not in g.nodes["n2"]  # empty: left out
    (data,) = [d for _, _, d in g.edges(data=True)]
    assert data["fact"] == kept and data["evidence"] == f"/p/{kept}:4-5"
    root = ET.fromstring(document.encode("utf-8"))
    (node,) = [n for n in root.iter(f"{{{NS['g']}}}node") if n.get("id") == "n1"]
    assert node.get("labels") == ":Entity:" + _kept(" ".join(text.replace(":", "_").split()))
    lines = io.StringIO()
    export_module.write_jsonl(_one_fact_graph(text), lines)
    records = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert [r["type"] for r in records] == ["entity", "entity", "fact"]
    assert records[2]["fact"] == records[0]["name"] == text


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the file itself
def test_an_export_never_replaces_the_database(gb_cli, graph) -> None:
    before = Path(DB).read_bytes()
    for args in (["-o", DB], ["--format", "graphml", "-o", DB]):
        result = gb_cli("export", *args)
        assert result.exit_code == 2, result.stderr
        assert "is the database itself" in result.stderr
    assert Path(DB).read_bytes() == before
    assert gb(gb_cli, "facts", "--all", "--json").stdout  # still a database
