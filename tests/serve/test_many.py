"""`gb serve` serving many at once: one text sent twice at once, a client that goes away
mid-remember, and the resolve stage's model."""

from __future__ import annotations

import json
import socket
import threading
import time

from tests.graph.test_facts import DOCS
from tests.support.helpers import assert_database_sound, gb, story
from tests.support.llm_server import Hold


def test_one_text_sent_twice_at_once_is_stored_once(online, serve) -> None:
    served = serve()
    online.latency = 0.05
    body = {"user_id": "u", "text": story(11, paragraphs=4)}
    answers: list[tuple[int, dict]] = []
    calls = [
        threading.Thread(
            target=lambda: answers.append(served.call("POST", "/v1/gb/remember", body))
        )
        for _ in range(2)
    ]
    for call in calls:
        call.start()
    for call in calls:
        call.join(timeout=120)

    assert [status for status, _ in answers] == [200, 200], answers
    assert sorted(done["status"] for _, done in answers) == ["remembered", "unchanged"]
    assert len({done["artifact_id"] for _, done in answers}) == 1
    status, listed = served.call("GET", "/v1/gb/documents?user_id=u")
    assert status == 200 and len(listed["documents"]) == 1


def test_a_remember_whose_client_went_away_stops_keeping_what_it_paid_for(online, serve) -> None:
    """It ends as Ctrl-C ends gb: no request after it, nothing stored half, and the same
    text sent again goes on from the answers already paid for, never asking them again."""
    served = serve()
    text = story(12, paragraphs=6)
    # Every extraction but the first chunk's waits until the client has gone.
    gone = threading.Event()
    held = online.hold(
        Hold(
            select=lambda stage, prompt: stage == "extract_graph" and "Report 12." not in prompt,
            until=gone.is_set,
        )
    )
    body = json.dumps({"user_id": "u", "text": text}).encode()
    host, port = served.url.removeprefix("http://").split(":")
    conn = socket.create_connection((host, int(port)))
    conn.sendall(
        b"POST /v1/gb/remember HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )

    def first_chunk_paid_for() -> bool:  # its answers in, each recorded, the rest held
        if held.waiting == 0 or not _first_extractions(online):
            return False
        status, stats = served.call("GET", "/v1/gb/stats?user_id=u")
        return status == 200 and stats["inferences"] == online.calls()

    _wait_for(first_chunk_paid_for, "the first chunk's answers were never recorded")
    conn.close()  # the client goes away
    _wait_for(lambda: "POST /v1/gb/remember 499" in served.log.read_text(), "no 499 logged")
    made = online.calls(include_faults=True)
    gone.set()
    time.sleep(0.5)
    assert online.calls(include_faults=True) == made, "a request was made after the stop"
    status, listed = served.call("GET", "/v1/gb/documents?user_id=u")
    assert status == 200 and listed["documents"] == [], "a document was stored half"

    status, done = served.call("POST", "/v1/gb/remember", {"user_id": "u", "text": text})
    assert status == 200, done
    assert done["status"] == "remembered", done
    assert len(done["chunks"]) > 2 and all(c["summary"] for c in done["chunks"])
    assert len(_first_extractions(online)) == 1, "the first chunk was paid for twice"
    status, listed = served.call("GET", "/v1/gb/documents?user_id=u")
    assert status == 200 and len(listed["documents"]) == 1
    assert_database_sound()


def _first_extractions(online) -> list:
    """The extraction requests of the first chunk answered."""
    return [
        r
        for r in online.requests_for("extract_graph")
        if r.status == 200 and "Report 12." in json.dumps(r.body)
    ]


def _wait_for(condition, failing: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, failing
        time.sleep(0.05)


def test_the_resolve_stage_runs_on_the_model_named_for_it(online, serve, gb_cli) -> None:
    served = serve()
    models = {"resolve_edges": "model-r"}
    for name in ("y2015.txt", "y2018.txt"):  # the second contradicts the first: resolved
        body = {"user_id": "u", "text": DOCS[name], "models": models}
        status, done = served.call("POST", "/v1/gb/remember", body)
        assert status == 200, done
    calls = [
        json.loads(line)
        for line in gb(gb_cli, "inferences", "--json", "--limit", "500").stdout.splitlines()
    ]
    resolved = {c["model"].rsplit("-2", 1)[0] for c in calls if c["stage"] == "resolve"}
    assert resolved == {"model-r"}
