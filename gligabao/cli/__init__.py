"""The `gb` command line: a thin layer that parses options, calls the library, renders."""

from gligabao.cli import chunking, evaluate, memory, reading, search  # noqa: F401 - registers the commands
from gligabao.cli.app import app, main

__all__ = ["app", "main"]
