"""The package's public names, as httpx checks its own (tests/test_exports.py there):
`gligabao.__all__` is sorted, each of its names resolves, and every public name the
package exposes is in it. gligabao exports its names lazily (a module `__getattr__`
imports each on first use), so the names it exposes are its module-level names and the
ones that `__getattr__` resolves; submodules and `TYPE_CHECKING` are not exports."""

from __future__ import annotations

import types

import gligabao


def public_names() -> set[str]:
    """Every name `gligabao.NAME` gives that is meant for users: its module-level names
    and its lazy exports, less the private ones, the submodules and `TYPE_CHECKING`."""
    lazy = getattr(gligabao, "_LAZY", {})
    names = {*vars(gligabao), *lazy, *dir(gligabao)}
    return {
        name
        for name in names
        if not name.startswith("_")
        and name != "TYPE_CHECKING"
        and not isinstance(getattr(gligabao, name), types.ModuleType)
    }


def test_all_is_sorted() -> None:
    assert gligabao.__all__ == sorted(gligabao.__all__)


def test_all_has_no_duplicates() -> None:
    assert len(gligabao.__all__) == len(set(gligabao.__all__))


def test_every_name_in_all_resolves() -> None:
    for name in gligabao.__all__:
        assert getattr(gligabao, name) is not None, name


def test_every_public_name_is_in_all() -> None:
    assert public_names() <= set(gligabao.__all__), public_names() - set(gligabao.__all__)


def test_star_import_gives_all() -> None:
    namespace: dict[str, object] = {}
    exec("from gligabao import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(gligabao.__all__)
