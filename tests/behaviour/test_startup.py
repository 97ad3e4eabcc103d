"""Start-up: what `gb --version` and `gb search --help` import (nothing
heavy before it is needed, so the budget cannot regress unseen), and a signal during
start-up is one line and its exit code, never a traceback."""

from __future__ import annotations

import ast
import gc
import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gligabao.base import heap
from gligabao.cli import COMMANDS, load

# What the `gb` console script runs.
_AS_GB = "import sys; sys.argv = ['gb', *{args!r}]; from gligabao.cli import main; main()"


def _imported(*args: str) -> set[str]:
    """The modules a `gb ARGS` process imports, as `python -X importtime` lists them on
    stderr (gb ends its process without the interpreter's tear-down, so an atexit hook
    would never run)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _AS_GB.format(args=list(args))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and not line.endswith("| imported package")
    }


# What `gb ARGS` has loaded as it ends, with what importlib imports (not in importtime's list).
_LOADED = (
    "import sys; sys.argv = ['gb', *{args!r}]; import gligabao.cli.signals as s; "
    "leave = s.leave; s.leave = lambda code: leave(print(*sys.modules, file=sys.stderr) or code); "
    "from gligabao.cli import main; main()"
)


def _loaded(*args: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _LOADED.format(args=list(args))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return sorted(proc.stderr.split())


def _top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def _imports_typing(module: str) -> bool:
    """Whether `module` imports typing when it is loaded (not in an `if TYPE_CHECKING:`
    block, nor in a function)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if "typing" in names or (isinstance(node, ast.ImportFrom) and node.module == "typing"):
            return True
    return False


def test_version_imports_nothing_heavy() -> None:
    modules = _imported("--version")
    assert not _top(modules) & {"typer", "click", "rich", "apsw", "openai", "httpx", "tomlkit"}
    assert {m for m in modules if m.startswith("gligabao.")} <= {
        "gligabao.cli",
        "gligabao.cli.signals",
        "gligabao.errors",
    }


def test_search_help_imports_only_search() -> None:
    modules = _imported("search", "--help")
    assert "typer" in _top(modules)
    assert not _top(modules) & {"openai", "httpx", "mcp", "tiktoken"}
    other_commands = {f"gligabao.cli.{m}" for m in COMMANDS.values()} - {"gligabao.cli.search"}
    assert not modules & other_commands
    assert not {m for m in modules if m.startswith(("gligabao.remember", "gligabao.llm.client"))}


def test_every_command_names_its_module() -> None:
    """gb COMMAND imports COMMANDS[COMMAND] alone: each registered command must be there,
    in its module."""
    app = load()
    for command in app.registered_commands:
        assert command.name in COMMANDS, command.name
        assert command.callback.__module__ == f"gligabao.cli.{COMMANDS[command.name]}"


# A signal that lands while a module is being imported, as a Ctrl-C at a slow start would.
_SIGNAL_AT_START = """
import importlib.abc, os, signal, sys
class Stop(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            os.kill(os.getpid(), signal.{signal})
        return None
sys.meta_path.insert(0, Stop())
sys.argv = ["gb", *{args!r}]
from gligabao.cli import main
main()
"""


@pytest.mark.parametrize(
    ("args", "module"),
    [
        (["list"], "typer"),  # a command typer reads
        (["search", "anything"], "gligabao.service.memory"),  # one read without it
    ],
)
@pytest.mark.parametrize(("signum", "code"), [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_signal_during_start_up_is_one_line(
    signum: str, code: int, args: list[str], module: str
) -> None:
    script = _SIGNAL_AT_START.format(signal=signum, module=module, args=args)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert proc.stderr.splitlines() == [
        f"gb: interrupted by {signal.Signals[signum].name}: before anything was done; "
        "nothing changed"
    ]


# The signal lands while gb says an error (rich is imported to print it): still its line.
_SIGNAL_WHILE_SAYING = """
import importlib.abc, os, signal, sys
class Stop(importlib.abc.MetaPathFinder):
    sent = False
    def find_spec(self, name, path=None, target=None):
        if name == "gligabao.cli.render" and not Stop.sent:
            Stop.sent = True
            os.kill(os.getpid(), signal.SIGTERM)
        return None
sys.meta_path.insert(0, Stop())
sys.argv = ["gb", "search", "anything", "--db", {db!r}]
from gligabao.cli import main
main()
"""


def test_a_signal_while_an_error_is_said_is_its_line_and_code(tmp_path) -> None:
    """Typer would turn it into a silent exit 130, whatever the signal."""
    proc = subprocess.run(
        [sys.executable, "-c", _SIGNAL_WHILE_SAYING.format(db=str(tmp_path / "none.db"))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 143, (proc.returncode, proc.stderr)
    assert proc.stderr.splitlines()[-1].startswith("gb: interrupted by SIGTERM"), proc.stderr


def test_a_json_search_imports_only_what_it_needs(online, corpus, monkeypatch) -> None:
    """`gb search --json` is the command scripts run most: hybrid, its query embedded over
    the standard library's HTTP, its hits printed as JSON lines. Its budget, each item
    measured: no typer (its plain arguments are read without it, ~20 ms), no rich (~20
    ms, for a terminal), no openai SDK (~0.45 s, for chat calls), no tomlkit (no config
    file here), no platformdirs (~6 ms: the XDG folder is named without it), no logging
    (~3 ms: only a rerank's client logs), nothing of PostgreSQL's side of the store for
    an SQLite file, nothing of remember. A plain-HTTP endpoint with no proxy gets its one
    request over a socket: not urllib's http.client and email (~20 ms), nor the idna
    codec (~5 ms), nor OpenSSL's hashes (~3 ms). Its classes are records, not dataclasses
    (dataclasses and inspect: ~7 ms, and ~0.5 ms a class); its modules name typing's
    types for type checkers only (~3 ms); pathlib, datetime and random (~1 ms each) wait
    for the cases that use them."""
    for name in [n for n in os.environ if n.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)
    stored = subprocess.run(
        [sys.executable, "-m", "gligabao", "remember", *corpus, "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert stored.returncode == 0, stored.stderr
    modules = _imported("search", "licence terms", "--json", "-k", "3")
    # And what importlib loads (the store's lazy names), which importtime leaves out.
    modules |= set(_loaded("search", "licence terms", "--json", "-k", "3"))
    assert "gligabao.store.hits" in modules
    assert "gligabao.llm.query" in modules  # the query was embedded: a hybrid search
    assert "gligabao.store.sqlite.vectors" in modules
    unwanted = {"typer", "click", "rich", "openai", "httpx", "tomlkit", "platformdirs", "logging"}
    assert not _top(modules) & unwanted
    # No dataclass on its path (base/record.py): dataclasses imports inspect, ~7 ms.
    assert not _top(modules) & {"dataclasses", "inspect"}
    # Nor what only another command or a rarer case needs, ~1 ms each: pathlib (a config
    # file found, a database created), datetime (a time given or written), random (a
    # retry's jitter).
    assert not _top(modules) & {"pathlib", "datetime", "random"}
    # Nor typing (~3 ms; the tests' network guard imports it before gb runs, so each of
    # the search's modules is read): its names are for type checkers only.
    assert not [m for m in sorted(modules) if m.startswith("gligabao") and _imports_typing(m)]
    assert not {
        m
        for m in modules
        if m.startswith(("gligabao.remember", "gligabao.chunk.text", "gligabao.llm.client"))
        or (m.startswith("gligabao.store.postgres.") and m != "gligabao.store.postgres.urls")
    }
    assert not modules & {"gligabao.cli.app", "gligabao.cli.search", "gligabao.cli.render"}
    assert not modules & {"urllib.request", "http.client", "encodings.idna", "hashlib"}


def test_a_quiet_or_json_remember_imports_no_rich(online, corpus) -> None:
    """Cron's `gb remember -r --quiet`, and a script's `--json` of one file, print nothing
    for a person: rich (~35 ms of each run) stays unimported. A person's run (a panel, a
    batch's summary line) imports it."""
    quiet = _imported("remember", *corpus, "--quiet")
    assert "gligabao.remember.document" in quiet  # the files were remembered...
    assert "rich" not in _top(quiet)  # ...without rich
    # The PDF and HTML libraries come with every install, and are imported only for such files.
    assert not _top(quiet) & {"pypdfium2", "pdfium", "markdownify", "bs4"}
    as_json = _imported("remember", corpus[0], "--json", "--db", "other.db")
    assert "gligabao.remember.document" in as_json
    assert "rich" not in _top(as_json)
    shown = _imported("remember", corpus[0], "--db", "third.db")
    assert "rich" in _top(shown)  # a person's run: its panel is rich's


def test_gb_freezes_what_its_imports_left_and_collects_the_rest() -> None:
    """In the `gb` process, typer's and the command's objects are frozen once imported
    (the collector no longer walks them at every collection), and the collector runs."""
    probe = (
        "import gc, sys; sys.argv = ['gb', 'config']; import gligabao.cli.signals as s; "
        "s.leave = lambda code: print(gc.isenabled(), gc.get_freeze_count() > 10000); "
        "from gligabao.cli import main; main()"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "True True"


def test_a_library_user_keeps_its_collector_as_it_was() -> None:
    """gligabao used as a library pauses the collector around a heavy import only: it is
    running again after, and nothing of the host program is frozen."""
    frozen = gc.get_freeze_count()
    with heap.loading():
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    gc.disable()
    try:
        with heap.loading():
            pass
        assert not gc.isenabled()  # a host that had turned it off keeps it off
    finally:
        gc.enable()
