"""The package's floors, as pyproject.toml's import-linter contracts write them: each
module imports only from the floors below it, no import circle anywhere, and only the
store speaks to the database. A planted upward import must break the contract."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(where)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(where / "pyproject.toml")],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_import_contracts_hold() -> None:
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copytree(
        ROOT / "gligabao", tmp_path / "gligabao", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    planted = tmp_path / "gligabao" / "store" / "fts.py"
    planted.write_text(planted.read_text() + "\nfrom gligabao.search import hybrid  # planted\n")
    done = _lint_imports(tmp_path)
    assert done.returncode != 0
    assert "gligabao.store.fts -> gligabao.search.hybrid" in done.stdout


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected sets of more than one module (Tarjan), each an import circle."""
    modules = sorted(graph.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in index or c.startswith("gligabao")), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))

    for module in modules:
        if module not in index:
            visit(module)
    return found


def test_no_import_circle_anywhere() -> None:
    graph = grimp.build_graph("gligabao")
    # A package's __init__ naming its own submodules is no circle of code.
    for module in list(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith(module + "."):
                graph.remove_import(importer=module, imported=imported)
    assert _circles(graph) == []
