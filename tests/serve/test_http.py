"""`gb serve` over plain HTTP, as curl calls it: the same JSON as the CLI's --json,
the token, the body limit, the statuses of what fails."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys

from tests.support.helpers import configure, gb, story
from tests.support.llm_server import Fault

TOKEN = "s3cret-token-for-tests"


def lines(result) -> list:
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_reads_answer_what_the_cli_prints(online, serve, gb_cli) -> None:
    served = serve()
    text = story(3, paragraphs=5)
    status, done = served.call("POST", "/v1/gb/remember", {"user_id": "ann", "text": text})
    assert status == 200 and len(done["chunks"]) > 1

    status, preview = served.call("POST", "/v1/gb/chunk-preview", {"text": text})
    assert status == 200
    assert [preview] == lines(gb(gb_cli, "chunk-preview", "-", "--json", input=text.encode()))
    assert preview["chunk_count"] == len(done["chunks"])

    path = f"/v1/gb/documents/{done['artifact_id']}/chunks?user_id=ann"
    status, stored = served.call("GET", path)
    assert status == 200 and stored["in_sync"] is True, stored
    assert [c["start_offset"] for c in stored["chunks"]] == [
        c["start_offset"] for c in preview["chunks"]
    ]
    # Another user's dataset does not hold it; settings that cut otherwise: not in sync.
    assert served.call("GET", path.replace("ann", "bob"))[0] == 404

    cli = ["--dataset", "ann/main", "--json"]
    query = "met in Rome"
    status, hits = served.call("GET", f"/v1/gb/search?user_id=ann&query={query.replace(' ', '+')}")
    assert status == 200 and hits["hits"]
    assert hits["hits"] == lines(gb(gb_cli, "search", query, *cli))
    status, facts = served.call("POST", "/v1/gb/facts", {"user_id": "ann", "k": 5})
    assert status == 200 and facts["facts"]
    assert facts["facts"] == lines(gb(gb_cli, "facts", "-k", "5", *cli))
    fact = facts["facts"][0]
    status, why = served.call("GET", f"/v1/gb/why?user_id=ann&fact_id={fact['id']}")
    assert status == 200 and why == lines(gb(gb_cli, "why", str(fact["id"]), *cli))[0]
    status, stats = served.call("GET", "/v1/gb/stats?user_id=ann")
    assert status == 200 and stats == lines(gb(gb_cli, "stats", *cli))[0]
    assert served.call("GET", "/v1/gb/search?user_id=ann&query=x&kk=1")[0] == 400
    assert served.call("GET", "/openapi.json")[1]["paths"]["/v1/gb/remember"]["post"]


def test_a_stored_text_cut_otherwise_now_is_not_in_sync(online, serve, monkeypatch) -> None:
    served = serve()
    status, done = served.call("POST", "/v1/gb/remember", {"user_id": "u", "text": story(4, 4)})
    served.process.terminate()
    served.process.wait(timeout=30)
    again = serve(env={"GB_CHUNK_SIZE": "200"})
    path = f"/v1/gb/documents/{done['artifact_id']}/chunks?user_id=u"
    status, stored = again.call("GET", path)
    assert status == 200 and stored["in_sync"] is False


def test_a_token_is_needed_on_every_request_and_never_said(online, serve) -> None:
    served = serve("--token", TOKEN, token=TOKEN)
    assert served.call("GET", "/v1/gb/stats?user_id=u", token=None)[0] == 401
    status, said = served.call("GET", "/openapi.json", token="wrong")
    assert status == 401 and TOKEN not in json.dumps(said)
    assert served.call("GET", "/openapi.json")[0] == 200
    assert served.call("POST", "/v1/gb/remember", {"user_id": "u", "text": "Hi there."})[0] == 200
    log = served.log.read_text()
    assert TOKEN not in log and "POST /v1/gb/remember 200" in log


def test_beyond_loopback_without_a_token_is_refused(online) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gligabao", "serve", "--http", "0.0.0.0:7878"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and b"needs a token" in done.stderr


def test_a_body_over_1_mib_is_refused_before_it_is_read_whole(online, serve) -> None:
    served = serve()
    port = int(served.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        # 2 MiB announced, a few bytes sent: the answer comes without the rest.
        conn.sendall(
            b"POST /v1/gb/remember HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 2097152\r\n\r\n{"user_id": "u", "text": "'
        )
        answer = b""
        while piece := conn.recv(65536):  # the server closes once it answered
            answer += piece
        answer = answer.decode()
    assert answer.startswith("HTTP/1.1 413"), answer
    assert '"too_large"' in answer
    # Streamed without a length (chunked): refused once past the limit.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(
            b"POST /v1/gb/chunk-preview HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        piece = b"x" * 65536
        for _ in range(17):  # just over 1 MiB; never the end of the body
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        assert conn.recv(65536).startswith(b"HTTP/1.1 413")


def test_an_llm_failure_is_a_502_saying_its_chunk(online, serve) -> None:
    served = serve()
    online.add_fault(Fault("500", stage="summarize_chunk", times=-1))
    status, said = served.call("POST", "/v1/gb/remember", {"user_id": "u", "text": story(5, 5)})
    assert status == 502 and re.search(r"chunk \d+ of \d+", said["error"]["message"]), said


def test_offline_a_text_is_stored_pending_unless_it_names_stages(
    server, serve, monkeypatch
) -> None:
    configure(monkeypatch, None)  # no endpoint at all
    served = serve()
    status, done = served.call("POST", "/v1/gb/remember", {"user_id": "u", "text": "Hi there."})
    assert status == 200 and done["status"] == "offline" and done["notices"]
    body = {"user_id": "u", "text": "Hi.", "models": {"extract_graph": "m"}}
    status, said = served.call("POST", "/v1/gb/remember", body)
    assert status == 503 and said["error"]["code"] == "no_endpoint"
