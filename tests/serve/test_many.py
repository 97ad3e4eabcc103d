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


def test_a_remember_whose_client_went_away_runs_to_its_end(online, serve) -> None:
    """What it pays for is stored whole: the same text sent again is unchanged."""
    served = serve()
    text = story(12, paragraphs=6)
    # The second chunk's extraction waits until the client has gone.
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
    deadline = time.monotonic() + 60
    while held.waiting == 0:
        assert time.monotonic() < deadline, "the remember never reached the LLM"
        time.sleep(0.02)
    conn.close()  # the client goes away
    gone.set()

    # The second call waits for the first one's claim on the text, then finds it whole.
    status, done = served.call("POST", "/v1/gb/remember", {"user_id": "u", "text": text})
    assert status == 200, done
    assert done["status"] == "unchanged", done
    assert len(done["chunks"]) > 2 and all(c["summary"] for c in done["chunks"])
    status, listed = served.call("GET", "/v1/gb/documents?user_id=u")
    assert status == 200 and len(listed["documents"]) == 1
    assert_database_sound()


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
