"""Selectable stages: an embeddings-only run stores chunk vectors and no graph;
a later run with every stage on completes the graph and summaries of the same documents."""

from __future__ import annotations

import json

import pytest

from tests.support.helpers import configure, count, gb, rows, story, vec_stats, write
from tests.support.llm_server import LLMServer

TEXT = story(11, paragraphs=6)


def _chunk_vectors() -> list[dict]:
    # The default dataset is the first: its chunks index, as sqlite-vec stores it.
    return rows('SELECT vector_id, embedding FROM "dataset-1-chunks" ORDER BY vector_id')


def _graph_counts() -> tuple[int, int, int]:
    return (
        count("SELECT count(*) FROM gb_entities"),
        count("SELECT count(*) FROM gb_edges"),
        count("SELECT count(*) FROM gb_artifacts WHERE kind = 'chunk_summary'"),
    )


def _embedded_texts(server: LLMServer) -> list[str]:
    texts: list[str] = []
    for request in server.requests_for("embed"):
        given = request.body["input"]
        texts += [given] if isinstance(given, str) else given
    return texts


def _embed_only(gb_cli, online: LLMServer, *flags: str) -> dict:
    write("notes.md", TEXT)
    result = gb(gb_cli, "remember", "notes.md", "--json", *flags)
    line = json.loads(result.stdout)
    assert line["status"] == "embedded", line
    return line


@pytest.mark.parametrize("flags", [("--stages", "embed"), ("--no-graph",)])
def test_embed_only_run_stores_vectors_and_no_graph(gb_cli, online: LLMServer, flags) -> None:
    line = _embed_only(gb_cli, online, *flags)
    chunks = count("SELECT count(*) FROM gb_artifacts WHERE chunk_index IS NOT NULL")
    assert chunks > 1
    assert len(_chunk_vectors()) >= chunks
    assert _graph_counts() == (0, 0, 0)
    assert online.calls() == online.calls("embed") > 0  # no chat request at all
    assert line["stages_left"] == ["extract_graph", "summarize_chunk"]
    assert vec_stats(gb_cli)["chunks"]["pending"] == 0
    status = gb(gb_cli, "status", "notes.md", code=1).stdout  # 1: not all stages done
    assert "still to do: extract_graph summarize_chunk" in status


def test_later_full_run_completes_graph_without_chunk_vectors_again(
    gb_cli, online: LLMServer
) -> None:
    _embed_only(gb_cli, online, "--stages", "embed")
    before = _chunk_vectors()
    chunk_texts = [r["text"] for r in rows("SELECT text FROM gb_artifacts WHERE chunk_index >= 0")]
    online.requests.clear()
    line = json.loads(gb(gb_cli, "remember", "notes.md", "--json").stdout)
    assert line["status"] == "remembered", line  # every chunk had work left
    assert "stages_left" not in line  # only a document with stages left has it
    entities, edges, summaries = _graph_counts()
    assert entities and edges and summaries == len(chunk_texts)
    assert online.calls("extract_graph") == len(chunk_texts)
    assert _chunk_vectors() == before  # the same blobs


def test_later_full_run_sends_no_chunk_text_to_embeddings(gb_cli, online: LLMServer) -> None:
    _embed_only(gb_cli, online, "--stages", "embed")
    online.requests.clear()
    gb(gb_cli, "remember", "notes.md", "--json")
    sent = _embedded_texts(online)
    stored = [r["text"] for r in rows("SELECT text FROM gb_artifacts WHERE chunk_index >= 0")]
    assert sent and not any(chunk in text for chunk in stored for text in sent)


def test_only_an_embeddings_endpoint_embeds_alone(
    gb_cli, server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, None, GB_EMBEDDINGS_BASE_URL=server.base_url)
    write("notes.md", TEXT)
    result = gb(gb_cli, "remember", "notes.md", "--json")
    assert json.loads(result.stdout)["status"] == "embedded"
    assert "only an embeddings endpoint" in result.stderr
    assert server.calls() == server.calls("embed") > 0
    assert _chunk_vectors() and _graph_counts() == (0, 0, 0)


def test_config_stages_is_respected(gb_cli, online: LLMServer, monkeypatch) -> None:
    monkeypatch.setenv("GB_STAGES", "embed")
    _embed_only(gb_cli, online)
    assert online.calls() == online.calls("embed")


@pytest.mark.parametrize("value", ["foo", "graph,embed"])
def test_bad_stages_is_a_usage_error_naming_the_valid_ones(
    gb_cli, online: LLMServer, value: str
) -> None:
    write("notes.md", TEXT)
    result = gb(gb_cli, "remember", "notes.md", "--stages", value, code=2)
    assert "graph" in result.stderr and "summaries" in result.stderr and "embed" in result.stderr
    assert online.calls() == 0


def test_bad_config_stages_is_refused_before_any_call(
    gb_cli, online: LLMServer, monkeypatch
) -> None:
    monkeypatch.setenv("GB_STAGES", "graph,vectors")
    write("notes.md", TEXT)
    result = gb(gb_cli, "remember", "notes.md", code=2)
    assert "config stages: unknown stage vectors" in result.stderr
    assert online.calls() == 0


def test_embed_only_again_embeds_nothing_again(gb_cli, online: LLMServer) -> None:
    _embed_only(gb_cli, online, "--stages", "embed")
    before = _chunk_vectors()
    online.requests.clear()
    _embed_only(gb_cli, online, "--stages", "embed")
    assert online.calls() == 0
    assert _chunk_vectors() == before


def test_status_judges_an_embeddings_only_setup_by_its_own_stages(
    gb_cli, online: LLMServer, monkeypatch
) -> None:
    monkeypatch.setenv("GB_STAGES", "embed")
    _embed_only(gb_cli, online)
    status = gb(gb_cli, "status", "notes.md").stdout  # all it does is done: in sync
    assert "in sync" in status and "still to do" not in status

    monkeypatch.delenv("GB_STAGES")  # the graph and summaries are owed again
    status = gb(gb_cli, "status", "notes.md", code=1).stdout
    assert "still to do: extract_graph summarize_chunk" in status

    # Only an embeddings endpoint: what gb remember then does alone is all that is owed.
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("GB_EMBEDDINGS_BASE_URL", online.base_url)
    assert "in sync" in gb(gb_cli, "status", "notes.md").stdout
