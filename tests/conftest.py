"""Shared test fixtures: every test runs in its own folder with no user settings.

The autouse fixture chdirs into the test's tmp_path, drops GB_* and OPENAI_*
variables, and points the user config and cache folders (and tiktoken's cache)
into tmp_path, so nothing from the machine running the tests leaks in or is
written outside it. Subprocesses started by a test inherit that environment. No
socket of the tests or of the Python processes they start connects off the loopback
interface (tests/support/netguard).

`server` is a test LLM server of the test's own; `online` is that server with gb
configured for it through the environment (tests/support/helpers.py's ``gb_env``);
`corpus` is the licence texts of tests/support/corpus copied into the test's folder. The
plain helpers they use are in tests/support/helpers.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from tests.support.helpers import BACKEND_VARIABLE, CORPUS, CORPUS_DIR, configure
from tests.support.llm_server import LLMServer
from tests.support.netguard import loopback_only

NETGUARD = Path(__file__).parent / "support" / "netguard"
# No test may reach a network beyond loopback, whatever the code does with its endpoints.
loopback_only.install()


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("GB_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / ".cache" / "tiktoken"))
    # ...nor a Python process a test starts: its sitecustomize installs the same guard.
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(NETGUARD), path])))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def gb_cli() -> Callable[..., Result]:
    """Run `gb ARGS...` in this process (typer's CliRunner); stdout and stderr kept apart."""
    from gligabao.cli import load  # here, so tests that do not use gb never import it

    app = load()

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


@pytest.fixture
def server() -> Iterator[LLMServer]:
    """A test LLM server of this test's own (tests/support/llm_server.py), on a free port; gb is
    not pointed at it (see `online`)."""
    with LLMServer() as srv:
        yield srv


@pytest.fixture
def online(server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    """`server`, with gb configured for it in the environment as a user would: ./gb.db,
    64-dimension vectors, 128-token chunks, one retry, the key helpers.SECRET."""
    configure(monkeypatch, server)
    return server


@pytest.fixture
def corpus() -> list[str]:
    """The licence texts helpers.CORPUS (shipped in tests/support/corpus) copied into the test's
    folder, by their names."""
    for name in CORPUS:
        shutil.copy(CORPUS_DIR / name, name)
    return list(CORPUS)


# ---- PostgreSQL: one real server for the run (tests/support/postgres.py)

# The tests that ran on PostgreSQL: a run of the whole suite in CI where none passed fails.
_ON_POSTGRES: set[str] = set()
_POSTGRES_PASSED = 0


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    from tests.support import postgres as support

    yield from support.start()


@pytest.fixture
def pg_url(postgres: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a PostgreSQL database of this test's own, gb's schema in it."""
    _ON_POSTGRES.add(request.node.nodeid)
    name = postgres.new_database()
    yield postgres.url(name)
    postgres.drop(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test once on ./gb.db and once on a PostgreSQL database of its own: gb_env,
    rows() and count() (tests/support/helpers.py) use the one of this run."""
    if request.param == "postgresql":
        monkeypatch.setenv(BACKEND_VARIABLE, request.getfixturevalue("pg_url"))
    return str(request.param)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    global _POSTGRES_PASSED
    if report.when == "call" and report.passed and report.nodeid in _ON_POSTGRES:
        _POSTGRES_PASSED += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI, a run of the whole suite in which no PostgreSQL test passed fails: a green
    suite that skipped them would say nothing about the second store."""
    whole = session.testscollected > 500  # not one file or one test run by hand
    if os.environ.get("CI") == "true" and whole and _POSTGRES_PASSED == 0:
        session.exitstatus = 1
        sys.stderr.write("\nCI: no PostgreSQL test passed; the second store went untested\n")
