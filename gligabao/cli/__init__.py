"""The `gb` command line: a thin layer that parses options, calls the library, renders."""

# The order of the imports is the order of the commands in `gb --help`.
from gligabao.cli import memory, search, graph, export, reading, evaluate, chunking  # noqa: F401, I001
from gligabao.cli.app import app, main

__all__ = ["app", "main"]
