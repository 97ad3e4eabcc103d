"""When one call of a document fails, the others are stopped: those not sent yet are
dropped, and those already out are carried to their end and recorded, since they are paid
for (a rerun reuses them instead of paying again)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gligabao.calls import Calls
from gligabao.store import open_db
from tests.support.llm_server import Fault, Hold, LLMServer

PARAGRAPH = (
    "Report {n}: the committee met on the {n}th of May to review the harbour accounts, "
    "the ferry timetable and the lighthouse repairs, and agreed to meet again in June."
)
CONCURRENCY = 8


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch):
    with LLMServer() as server:
        for name, value in {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-inflight-test",
            "GB_DB": str(Path.cwd() / "gb.db"),
            "GB_EMBEDDINGS_DIMENSIONS": "32",
            "GB_CHUNK_SIZE": "64",
            "GB_LLM_MAX_RETRIES": "0",
            "GB_CONCURRENCY": str(CONCURRENCY),
        }.items():
            monkeypatch.setenv(name, value)
        yield server


def _answered(server: LLMServer) -> int:
    """Requests the server answered with a usable 200: each one was paid for."""
    return sum(1 for r in server.requests if r.status == 200 and r.fault is None)


def test_requests_out_when_a_call_fails_are_recorded(gb_cli, served, monkeypatch) -> None:
    Path("minutes.txt").write_text("\n\n".join(PARAGRAPH.format(n=n) for n in range(1, 13)))
    served.add_fault(Fault(kind="500", stage="summarize_chunk", match="Report 3:"))

    def failing(stage: str | None, text: str) -> bool:
        return stage == "summarize_chunk" and "Report 3:" in text

    # Every request slot is taken when the fault comes back: the requests wait in the
    # server until all of them are out; then the failing one is answered, and the others
    # wait until the run has stopped its calls (and awaits those still out).
    stopped = threading.Event()
    finish = Calls.finish

    async def stop_then_finish(self: Calls) -> None:
        stopped.set()
        await finish(self)

    monkeypatch.setattr(Calls, "finish", stop_then_finish)
    full = served.hold(Hold(count=CONCURRENCY))
    rest = served.hold(
        Hold(select=lambda s, t: not failing(s, t), until=stopped.is_set, timeout=10)
    )

    result = gb_cli("remember", "minutes.txt")

    assert result.exit_code == 1, result.stderr
    assert "summarize_chunk" in result.stderr
    assert full.opened and rest.opened
    out, late = served.requests[:CONCURRENCY], served.requests[CONCURRENCY:]
    assert [r.status for r in out].count(500) == 1  # the failed call, out with 7 others
    # The calls not sent when it failed are dropped: they never reach the server, not even
    # the one the failed call's slot would let in (stopped before the slot is freed).
    assert late == [], [(r.stage, r.started) for r in late]
    asked = {n for r in served.requests for n in range(1, 13) if f"Report {n}:" in str(r.body)}
    assert asked <= {1, 2, 3, 4}  # nothing of the chunks queued behind them
    # Those out when it failed were carried to their end: answered, and recorded.
    assert all(r.status == 200 for r in served.requests if r.status != 500)
    conn = open_db("gb.db")
    recorded = next(iter(conn.execute("SELECT count(*) AS n FROM gb_inferences")))["n"]
    assert recorded == _answered(served) == len(served.requests) - 1 >= CONCURRENCY - 1

    # The rerun pays only for what was never answered.
    before = len(served.requests)
    assert gb_cli("remember", "minutes.txt").exit_code == 0
    asked_again = {(r.stage, str(r.body)) for r in served.requests[:before] if r.status == 200} & {
        (r.stage, str(r.body)) for r in served.requests[before:]
    }
    assert asked_again == set()


def test_the_failure_is_what_is_reported_not_the_calls_it_stopped(
    gb_cli, online, monkeypatch
) -> None:
    """One call at a time: chunk 2's embeddings fail for good while the resolve call of
    chunk 1 waits its turn. It is stopped, and the message names the failure (HTTP 500
    from embeddings), not "stopped"."""
    monkeypatch.setenv("GB_CONCURRENCY", "1")
    monkeypatch.setenv("GB_LLM_MAX_RETRIES", "0")
    paragraph = (
        "Report {n}: the committee met on the {n}th of May to review the harbour accounts, "
        "the ferry timetable and the lighthouse repairs, and agreed to meet again in June."
    )
    Path("m.txt").write_text("\n\n".join(paragraph.format(n=n) for n in range(1, 9)))
    online.add_fault(Fault("500", stage="embed", match="Report 2:", times=-1))

    result = gb_cli("remember", "m.txt", "--chunk-size", "64")

    assert result.exit_code == 1, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("gb: ")]
    assert "embed (text-embedding-3-small): HTTP 500" in line and "stopped" not in line
