"""Names a package exports but loads on first use, from the module that holds each.

A `gb` command pays only for what it touches: `gb search` must not load the openai SDK
through `gligabao.llm`, nor the store's every module through `gligabao.store`. A package
declares where each name lives and hands its `__getattr__` and `__dir__` to `exports`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["exports"]


def exports(
    package: str, homes: Mapping[str, str], *, listed: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: name N is attribute N of module
    `homes[N]`, or that module itself when its last part is N (a submodule loaded on first
    use). Each name is looked up once, then kept in the package. `listed` adds the
    package's other public names to `dir()`."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(home)
        value = module if home.rpartition(".")[2] == name else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes, *listed})

    return __getattr__, __dir__
