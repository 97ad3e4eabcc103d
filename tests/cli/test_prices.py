"""Prices: built in for the default models where they are called at OpenAI's own API
(never at another server), overridden by [prices]; `gb stats` prices the calls recorded
without a price once a price is known, from the tokens their records kept.

Real SQLite files, and the real openai client over HTTP to the test server.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gligabao.config import BUILTIN_PRICES_AS_OF
from tests.support.helpers import count, gb, rows, story, write

PRICES = """\
[prices]
"gpt-4o-mini" = { input = 2.0, output = 8.0 }
"text-embedding-3-small" = { input = 1.0, output = 0 }
"""


def _config(gb_cli) -> dict:
    return json.loads(gb(gb_cli, "config", "--json").stdout)


def _stats(gb_cli) -> dict:
    return json.loads(gb(gb_cli, "stats", "--json").stdout)


def test_default_models_have_built_in_prices_with_their_date_at_openai_only(
    gb_cli, online, monkeypatch
) -> None:
    at_server = _config(gb_cli)  # a local server's gpt-4o-mini is not billed as OpenAI's
    assert not any(key.startswith("prices.") for key in at_server)

    monkeypatch.delenv("OPENAI_BASE_URL")
    shown = _config(gb_cli)
    chat, embed = shown["prices.gpt-4o-mini"], shown["prices.text-embedding-3-small"]
    assert chat["value"] == {"input": 0.15, "output": 0.6, "cached_input": 0.075}
    assert embed["value"]["input"] == 0.02
    assert BUILTIN_PRICES_AS_OF in chat["source"] and "built-in" in chat["source"]

    write("gligabao.toml", PRICES)  # [prices] overrides a built-in price
    assert _config(gb_cli)["prices.gpt-4o-mini"]["value"]["input"] == 2.0


def test_the_docs_state_the_date_of_the_built_in_prices() -> None:
    docs = Path(__file__).parents[2] / "docs"
    for page in ("llm.md", "usage.md"):
        assert f"as of {BUILTIN_PRICES_AS_OF}" in (docs / page).read_text(), page


def test_stats_prices_past_calls_once_prices_are_added(gb_cli, online) -> None:
    gb(gb_cli, "remember", str(write("a.md", story(3, paragraphs=3))))
    calls = count("SELECT count(*) FROM gb_inferences")
    assert calls > 0 and count("SELECT count(*) FROM gb_inferences WHERE cost IS NULL") == calls
    before = _stats(gb_cli)
    assert (before["cost"], before["unpriced"]) == (None, calls)

    write("gligabao.toml", PRICES)  # added after the calls were made

    after = _stats(gb_cli)
    # Recorded as the server answered (a dated snapshot), priced as its model.
    models = {r["name"] for r in rows("SELECT name FROM gb_models")}
    assert any(re.search(r"-\d{4}-\d{2}-\d{2}$", m) for m in models)
    expected = sum(
        (r["input_tokens"] * (1.0 if r["stage"] == "embed" else 2.0) + r["output_tokens"] * 8.0)
        / 1e6
        for r in rows("SELECT stage, input_tokens, output_tokens FROM gb_inferences")
    )
    assert after["unpriced"] == 0
    assert abs(after["cost"] - expected) < 1e-9
    assert count("SELECT count(*) FROM gb_inferences WHERE cost IS NULL") == calls  # read only
    table = gb(gb_cli, "stats").stdout
    assert f"${expected:.4f}" in table and "without a price" not in table
