"""`gb chunk-preview` on markdown: small sections packed when the configuration asks
(`[markdown] min_section_tokens`), and `--check`, what a chunk may lack on its own."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.helpers import CORPUS_DIR

CHANGELOG = CORPUS_DIR / "pyenv-CHANGELOG.md"


def preview(gb_cli, *args: str) -> dict:
    result = gb_cli("chunk-preview", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_min_section_tokens_from_the_file_or_the_environment_packs_sections(
    gb_cli, monkeypatch
) -> None:
    plain = preview(gb_cli, str(CHANGELOG))
    Path("gligabao.toml").write_text("[markdown]\nmin_section_tokens = 200\n")
    packed = preview(gb_cli, str(CHANGELOG))
    assert packed["chunk_count"] < plain["chunk_count"] / 2
    assert packed["tokens"] == plain["tokens"]
    assert any(" … " in (c["section"] or "") for c in packed["chunks"])
    monkeypatch.setenv("GB_MARKDOWN_MIN_SECTION_TOKENS", "0")  # the environment beats it
    assert preview(gb_cli, str(CHANGELOG)) == plain
    shown = json.loads(gb_cli("config", "--json").stdout)["markdown.min_section_tokens"]
    assert shown == {"value": 0, "source": "env GB_MARKDOWN_MIN_SECTION_TOKENS"}
