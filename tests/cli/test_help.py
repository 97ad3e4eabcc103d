"""Each command's --help says its first line once: the short line of `gb --help` is the
summary of the longer help, so `gb NAME --help` shows the longer one alone rather than
the summary and then the same thing again in other words."""

from __future__ import annotations

import re


def _commands():
    """Each gb command, walked from the typer app as tests/test_docs.py does."""
    import typer

    from gligabao.cli import load

    return typer.main.get_command(load()).commands


def _paragraphs(help_text: str) -> list[str]:
    """The description of a command's --help: its paragraphs, each on one line, between
    the usage line and the first list of arguments or options."""
    description = help_text.split("\n", 1)[1]
    description = re.split(r"^(?:Arguments|Options):$", description, flags=re.M)[0]
    return [" ".join(p.split()) for p in description.split("\n\n") if p.strip()]


def test_each_help_says_its_first_line_once(gb_cli) -> None:
    commands = _commands()
    assert len(commands) >= 18
    for name, command in commands.items():
        result = gb_cli(name, "--help")
        assert result.exit_code == 0, (name, result.output)
        assert result.stdout.startswith(f"Usage: gb {name} "), name
        first_line = result.stdout.split("\n")[2].strip()  # after the usage and a blank
        assert first_line, name
        assert result.stdout.count(first_line) == 1, (name, first_line)
        # The summary `gb --help` lists is not its own paragraph above its restatement.
        summary = " ".join(command.get_short_help_str(limit=200).split())
        paragraphs = _paragraphs(result.stdout)
        assert summary not in paragraphs or paragraphs == [summary], (name, paragraphs)
