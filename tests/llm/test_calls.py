"""What a failed call costs the --max-cost budget (gligabao.calls), with the real
client against the test server: an error the server answered was not billed; a call that
timed out may have been, so it keeps its whole reservation."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gligabao.calls import Budget, Calls
from gligabao.config import load_config
from gligabao.llm import LLM, LLMError, summarize_chunk_request
from gligabao.store import datasets, open_db
from tests.support.llm_server import Fault, LLMServer

PRICES = """\
[prices]
"gpt-4o-mini" = { input = 0.5, output = 10.0 }
"text-embedding-3-small" = { input = 0.5, output = 0.0 }
"""
CHUNK = "The ferry to the island leaves at nine; the harbour master checks every ticket."


def _spent_after_a_failed_call(server: LLMServer, tmp_path: Path, **flags) -> float:
    Path("gligabao.toml").write_text(PRICES)
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-calls-test"}
    config = load_config(None, {"llm.max_retries": 0, **flags}, env=env)
    conn = open_db(tmp_path / "gb.db")
    dataset = datasets.get_or_create_dataset(conn, "default")
    budget = Budget(config, 5.0)
    llm = LLM(config, env=env)

    async def ask() -> None:
        try:
            await Calls(conn, llm, dataset.id, budget).ask(summarize_chunk_request(CHUNK))
        finally:
            await llm.aclose()

    with pytest.raises(LLMError):
        asyncio.run(ask())
    return budget.spent


def test_a_call_the_server_refused_costs_nothing(tmp_path) -> None:
    with LLMServer() as server:
        server.add_fault(Fault(kind="500", stage="summarize_chunk", times=-1))
        assert _spent_after_a_failed_call(server, tmp_path) == 0.0


def test_a_call_that_timed_out_keeps_its_reservation(tmp_path) -> None:
    with LLMServer() as server:
        server.timeout_sleep = 2.0
        server.add_fault(Fault(kind="timeout", stage="summarize_chunk", times=-1))
        spent = _spent_after_a_failed_call(server, tmp_path, **{"llm.timeout": 1})
    # The worst case: the prompt (schema included) and every answer's whole output limit.
    assert spent > 512 * 10.0 / 1e6
