"""Cost shown honestly where totals are shown, unknown
stages refused by `gb inferences`, `gb status` ending with a summary line, and `gb config`
saying which file it read and which endpoints it reaches.

Real SQLite files, and the real openai client over HTTP to the test server.
"""

from __future__ import annotations

import re

import pytest

from tests.support.helpers import SECRET, configure, count, gb, stderr_lines, story, write

STAGES = ("extract_graph", "summarize_chunk", "resolve", "contextualize_chunk", "embed")
# Prices for the chat model only: every embeddings call is a call without a price.
CHAT_PRICE_ONLY = """\
[prices]
"gpt-4o-mini" = { input = 0.5, output = 10.0 }
"""


def cost_of(stdout: str) -> str:
    """The value of the `cost` line or row of a panel or table, box drawing left out."""
    for line in stdout.splitlines():
        found = re.match(r"^[\s│|]*cost\s+(.*?)[\s│|]*$", line)
        if found:
            return found.group(1)
    raise AssertionError(f"no cost in {stdout!r}")


def unpriced_calls() -> int:
    return count("SELECT count(*) FROM gb_inferences WHERE cost IS NULL")


# ------------------------------------------------------------------ 10. cost


def test_stats_of_a_store_without_calls_costs_nothing(gb_cli, monkeypatch) -> None:
    configure(monkeypatch, None)  # offline: the document is stored, no call is made
    write("a.md", story(1))
    gb(gb_cli, "remember", "a.md")
    assert count("SELECT count(*) FROM gb_inferences") == 0

    assert cost_of(gb(gb_cli, "stats").stdout) == "$0"


def test_cost_is_the_known_part_plus_the_calls_without_a_price(gb_cli, online) -> None:
    write("gligabao.toml", CHAT_PRICE_ONLY)
    write("a.md", story(1))

    panel = cost_of(gb(gb_cli, "remember", "a.md").stdout)

    priced = count("SELECT count(*) FROM gb_inferences WHERE cost IS NOT NULL")
    unpriced = unpriced_calls()
    assert priced > 0 and unpriced > 0  # chat priced, embeddings not
    known = rf"\$\d+\.\d{{4}} \+ {unpriced} calls? without a price"
    assert re.fullmatch(known, panel), panel
    stats = cost_of(gb(gb_cli, "stats").stdout)
    assert re.fullmatch(known, stats), stats
    # The known part is the sum of the priced calls, not passed off as the whole.
    total = float(stats.split()[0].lstrip("$"))
    spent = count("SELECT CAST(round(sum(cost) * 10000) AS INTEGER) FROM gb_inferences")
    assert round(total * 10000) == spent


def test_a_batch_summary_counts_the_calls_without_a_price(gb_cli, online) -> None:
    write("gligabao.toml", CHAT_PRICE_ONLY)
    write("docs/a.md", story(1))
    write("docs/b.md", story(2))

    result = gb(gb_cli, "remember", "-r", "docs")

    *_, summary = stderr_lines(result)
    assert re.search(rf"cost \$\d+\.\d{{4}} \+ {unpriced_calls()} calls without a price, ", summary)


def test_a_batch_without_prices_does_not_say_free(gb_cli, online) -> None:
    write("docs/a.md", story(1))
    write("docs/b.md", story(2))

    *_, summary = stderr_lines(gb(gb_cli, "remember", "-r", "docs"))

    assert f"cost $0 + {unpriced_calls()} calls without a price, " in summary


# ------------------------------------------------------------------ 11. inferences --stage


def test_inferences_refuses_an_unknown_stage_naming_the_known_ones(gb_cli, online) -> None:
    write("a.md", story(1))
    gb(gb_cli, "remember", "a.md")

    result = gb(gb_cli, "inferences", "--stage", "bogus", code=2)

    (message,) = stderr_lines(result)
    assert "bogus" in message
    for stage in STAGES:
        assert stage in message
    assert result.stdout == ""


@pytest.mark.parametrize("stage", STAGES)
def test_inferences_takes_every_known_stage(gb_cli, online, stage: str) -> None:
    write("a.md", story(1))
    gb(gb_cli, "remember", "a.md")

    gb(gb_cli, "inferences", "--stage", stage)


# ------------------------------------------------------------------ 11. status summary


def test_status_ends_with_a_summary_line_of_counts_per_state(gb_cli, online) -> None:
    for name in ("a", "b", "c"):
        write(f"docs/{name}.md", story(ord(name)))
    gb(gb_cli, "remember", "-r", "docs")
    write("docs/c.md", story(7))  # changed since
    write("docs/d.md", story(100))  # never remembered

    result = gb(gb_cli, "status", "-r", "docs", code=1)

    assert stderr_lines(result)[-1] == "gb: 4 files: 2 in sync, 1 changed, 1 not remembered"
    assert len(result.stdout.splitlines()) == 4  # the summary is not a record


def test_status_summary_counts_a_file_it_cannot_read(gb_cli, monkeypatch) -> None:
    configure(monkeypatch, None)  # stored offline: extraction, summaries, vectors to do
    write("a.md", story(1))
    gb(gb_cli, "remember", "a.md")

    result = gb(gb_cli, "status", "a.md", "missing.md", code=3)

    assert stderr_lines(result)[-1] == "gb: 2 files: 1 incomplete, 1 unreadable"


# ------------------------------------------------------------------ 11. config


def summary(stdout: str) -> dict[str, str]:
    """The lines under `gb config`'s table, by what they describe."""
    found = {}
    for what in ("config file", "LLM (chat)", "embeddings"):
        (line,) = [line for line in stdout.splitlines() if line.startswith(what + " ")]
        found[what] = line[len(what) :].strip()
    return found


def test_config_says_no_file_was_found_and_no_endpoint_is_configured(gb_cli) -> None:
    said = summary(gb(gb_cli, "config").stdout)

    assert said["config file"].startswith("none found (looked for ./gligabao.toml and ")
    assert said["LLM (chat)"].startswith("not configured: set OPENAI_API_KEY")
    assert said["embeddings"].startswith("not configured: set OPENAI_API_KEY")


def test_config_names_the_file_it_read_and_the_endpoints_never_the_key(gb_cli, online) -> None:
    write("gligabao.toml", 'chunk_size = 256\n[embeddings]\nbase_url = "http://embed.test/v1"\n')

    result = gb(gb_cli, "config")

    said = summary(result.stdout)
    assert said["config file"] == "gligabao.toml"
    assert said["LLM (chat)"] == f"configured: {online.base_url}, with an API key"
    # Another server, and no embeddings.api_key_env: the chat key is not sent there.
    assert said["embeddings"] == "configured: http://embed.test/v1, without an API key"
    assert SECRET not in result.stdout + result.stderr
