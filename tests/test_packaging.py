"""The distribution gb is installed as: `gligabao` on the package index is an unrelated client
package, so gb's own name is another one, and everything that names it agrees."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import tomlkit

import gligabao
from gligabao.version import DISTRIBUTION

ROOT = Path(__file__).resolve().parent.parent


def test_the_project_is_named_as_the_messages_and_docs_name_it() -> None:
    project = tomlkit.parse((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    assert DISTRIBUTION != "gligabao"  # that name on the index is someone else's client
    usage = (ROOT / "docs" / "usage.md").read_text()
    assert f"pip install {DISTRIBUTION}" in usage
    assert f"pip install {DISTRIBUTION}" in (ROOT / "README.md").read_text()


def test_the_installed_distribution_gives_the_gb_command_and_the_package() -> None:
    dist = importlib.metadata.distribution(DISTRIBUTION)
    scripts = {e.name: e.value for e in dist.entry_points if e.group == "console_scripts"}
    assert scripts == {"gb": "gligabao.cli:main"}
    assert dist.version == gligabao.__version__


def test_install_hints_name_the_distribution() -> None:
    from gligabao.chunk import tokens

    assert f"'{DISTRIBUTION}[tiktoken]'" in tokens._INSTALL_HINT
