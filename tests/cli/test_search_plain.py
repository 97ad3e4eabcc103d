"""`gb search` with plain arguments runs without typer (cli/searching.py): it must read
every argument list as typer does, hand typer whatever it does not read itself, and
answer as the typer command answers."""

from __future__ import annotations

import inspect

import pytest
import typer

from gligabao.cli import load, searching


def _typer_reads(args: list[str]) -> dict[str, object]:
    """search()'s arguments as typer (click) reads `gb search ARGS`."""
    group = typer.main.get_command(load("search"))
    with group.commands["search"].make_context("search", list(args)) as ctx:  # type: ignore[attr-defined]
        return dict(ctx.params)


_DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(searching.search).parameters.items()
    if p.default is not inspect.Parameter.empty
}

PLAIN = [
    ["licence terms"],
    ["licence terms", "--json", "-k", "20"],
    ["-k", "20", "--json", "licence terms"],
    ["licence", "-n", "3", "--limit", "7"],  # the last one given counts, as in click
    ["licence", "--limit=5", "--db=x.db", "--dataset", "d", "--schema", "s"],
    ["licence", "--method", "bm25", "--config", "c.toml", "--session", "s1", "--role", "user"],
    ["licence", "--full", "--rerank"],
    ["licence", "--rerank", "--no-rerank"],
    ["licence", "-k", " 12"],  # int() as click's own
    ["", "--json"],
    ["two words", "--method", "nonsense"],  # the service refuses it, not the parser
    ["licence", "-k", "0"],
]

TYPER_S = [
    [],
    ["--help"],
    ["licence", "-h"],
    ["licence", "-k"],
    ["licence", "-k", "abc"],
    ["licence", "-k", "-3"],
    ["licence", "-k5"],
    ["licence", "-k=5"],
    ["licence", "--json=1"],
    ["licence", "--limit", "2.5"],
    ["one", "two"],
    ["--", "-licence"],
    ["-"],
    ["licence", "--unknown"],
    ["licence", "--lim", "3"],
    ["licence", "--version"],
]


@pytest.mark.parametrize("args", PLAIN)
def test_plain_arguments_are_read_as_typer_reads_them(args: list[str]) -> None:
    read = searching.plain(args)
    assert read is not None
    assert {**_DEFAULTS, **read} == _typer_reads(args)


@pytest.mark.parametrize("args", TYPER_S)
def test_anything_else_is_left_to_typer(args: list[str]) -> None:
    assert searching.plain(args) is None


@pytest.mark.parametrize(
    "args",
    [
        ["licence terms", "--json", "-k", "3"],
        ["licence terms", "-k", "2"],
        ["licence terms", "--method", "bm25", "--full", "-k", "1"],
        ["licence terms", "--method", "vectors"],
        ["licence terms", "--dataset", "none"],
        ["licence terms", "--db", "missing.db"],
    ],
)
def test_a_plain_search_answers_as_the_typer_command(
    args: list[str], gb_cli, gb_process, online, corpus
) -> None:
    stored = gb_process("remember", *corpus, "--quiet")
    assert stored.returncode == 0, stored.stderr
    plain = gb_process("search", *args, env={"COLUMNS": "80"})
    typed = gb_cli("search", *args)
    assert plain.returncode == typed.exit_code
    assert plain.stdout.decode() == typed.stdout
    assert plain.stderr.decode() == typed.stderr
