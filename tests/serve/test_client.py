"""`gb serve` through the published client (gligabao 0.7.0, in its own venv)."""

from __future__ import annotations

import json

from tests.support.helpers import gb, story

SHORT = "Alice Moreau works at Acme in Rome since 2021."


def test_remembers_short_and_long_texts_with_models_and_reasoning_per_stage(
    online, serve, client, gb_cli
) -> None:
    served = serve()
    long_text = story(7, paragraphs=6)
    answers = client(
        served.url,
        f"""
c = Client(BASE)
short = c.remember("alice", {SHORT!r}, reference_time="2024-05-01T00:00:00Z")
long = c.remember(
    "alice", {long_text!r}, kind="episode",
    models={{"extract_graph": "model-x", "summarize_chunk": "model-s", "resolve_edges": "model-r"}},
    reasoning={{"summarize_chunk": "low", "extract_graph": "high"}},
)
print(json.dumps([short, long]))
""",
    )
    short, long = answers
    assert short["status"] == "remembered" and short["artifact_id"] >= 1
    for key in ("entities", "edges", "invalidated_edges", "embedded_entities", "embedded_edges"):
        assert key in short
    assert short["edges"] and short["edges"][0]["valid_at"].startswith("2024-05-01")
    assert len(long["chunks"]) > 1
    for chunk in long["chunks"]:
        summary = chunk["summary"]
        assert summary["text"] and summary["inference_id"]
        # The test server answers as an API does: the model's dated snapshot.
        assert summary["model"].startswith("model-s-") and summary["reasoning"] == "low"
    assert long["embedded_chunks"] == len(long["chunks"])
    calls = [
        json.loads(line)
        for line in gb(gb_cli, "inferences", "--json", "--limit", "500").stdout.splitlines()
    ]
    used = {(c["stage"], c["model"].rsplit("-2", 1)[0], c["reasoning"]) for c in calls}
    assert ("extract_graph", "model-x", "high") in used
    assert ("summarize_chunk", "model-s", "low") in used
    # The short text's call kept the server's own settings.
    assert ("extract_graph", "gpt-4o-mini", "none") in used


def test_users_are_kept_apart_and_what_gb_does_not_do_is_refused(online, serve, client) -> None:
    served = serve()
    found = client(
        served.url,
        f"""
c = Client(BASE)
a = c.remember("alice", {SHORT!r})
b = c.remember("bruno", {SHORT!r})
refused = []
for call in (
    lambda: c.remember("alice", image=b"\\x89PNG0000"),
    lambda: c.remember("alice", "text", timeseries=[{{"key": "k", "points": []}}]),
    lambda: c.remember("alice", "text", models={{"extract_grap": "m"}}),
):
    try:
        call()
        refused.append(None)
    except GligabaoError as e:
        refused.append([e.status, str(e)])
print(json.dumps([a, b, refused]))
""",
    )
    a, b, refused = found
    assert a["artifact_id"] != b["artifact_id"]  # the same text, two users: two documents
    assert b["status"] == "remembered"
    (image, image_said), (series, series_said), (stage, stage_said) = refused
    assert (image, series) == (501, 501)
    assert "not supported" in image_said and "not supported" in series_said
    assert stage == 400 and "extract_grap" in stage_said
    hits = served.call("GET", "/v1/gb/documents?user_id=bruno")[1]["documents"]
    assert [d["id"] for d in hits] == [b["artifact_id"]]
    assert [d["dataset"] for d in hits] == ["bruno/main"]
