"""Shared test fixtures: every test runs in its own folder with no user settings.

The autouse fixture chdirs into the test's tmp_path, drops GB_* and OPENAI_*
variables, and points the user config and cache folders (and tiktoken's cache)
into tmp_path, so nothing from the machine running the tests leaks in or is
written outside it. Subprocesses started by a test inherit that environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("GB_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / ".cache" / "tiktoken"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def gb_cli() -> Callable[..., Result]:
    """Run `gb ARGS...` in this process (typer's CliRunner); stdout and stderr kept apart."""
    from gligabao.cli import app  # here, so tests that do not use gb never import it

    runner = CliRunner()

    def run(*args: str, input: bytes | str | None = None) -> Result:
        return runner.invoke(app, list(args), input=input)

    return run


@pytest.fixture
def gb_process() -> Callable[..., subprocess.CompletedProcess[bytes]]:
    """Run `python -m gligabao ARGS...` as a real process: input bytes in, bytes out."""

    def run(
        *args: str, input: bytes = b"", env: dict[str, str] | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "gligabao", *args],
            input=input,
            capture_output=True,
            env={**os.environ, **(env or {})},
            timeout=timeout,
            check=False,
        )

    return run
