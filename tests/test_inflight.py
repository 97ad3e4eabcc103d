"""When one call of a document fails, the others are stopped: those not sent yet are
dropped, and those already out are carried to their end and recorded, since they are paid
for (R11: a rerun reuses them instead of paying again)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gligabao.store import open_db
from tests.llm_server import Fault, LLMServer

PARAGRAPH = (
    "Report {n}: the committee met on the {n}th of May to review the harbour accounts, "
    "the ferry timetable and the lighthouse repairs, and agreed to meet again in June."
)


@pytest.fixture
def slow_server(monkeypatch: pytest.MonkeyPatch):
    with LLMServer(latency=0.15) as server:
        for name, value in {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-inflight-test",
            "GB_DB": str(Path.cwd() / "gb.db"),
            "GB_EMBEDDINGS_DIMENSIONS": "32",
            "GB_CHUNK_SIZE": "64",
            "GB_LLM_MAX_RETRIES": "0",
            "GB_CONCURRENCY": "8",
        }.items():
            monkeypatch.setenv(name, value)
        yield server


def _answered(server: LLMServer) -> int:
    """Requests the server answered with a usable 200: each one was paid for."""
    return sum(1 for r in server.requests if r.status == 200 and r.fault is None)


def test_requests_out_when_a_call_fails_are_recorded(gb_cli, slow_server) -> None:
    Path("minutes.txt").write_text("\n\n".join(PARAGRAPH.format(n=n) for n in range(1, 13)))
    slow_server.add_fault(Fault(kind="500", stage="summarize_chunk", match="Report 3:"))

    result = gb_cli("remember", "minutes.txt")

    assert result.exit_code == 1, result.stderr
    assert "summarize_chunk" in result.stderr
    conn = open_db("gb.db")
    recorded = next(iter(conn.execute("SELECT count(*) AS n FROM gb_inferences")))["n"]
    assert _answered(slow_server) > 1  # several calls were out when the fault came back
    assert recorded == _answered(slow_server)

    # The rerun pays only for what was never answered.
    before = len(slow_server.requests)
    assert gb_cli("remember", "minutes.txt").exit_code == 0
    asked_again = {
        (r.stage, str(r.body)) for r in slow_server.requests[:before] if r.status == 200
    } & {(r.stage, str(r.body)) for r in slow_server.requests[before:]}
    assert asked_again == set()
