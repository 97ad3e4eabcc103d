"""gligabao: cut documents into chunks, extract a temporal knowledge graph, keep it in SQLite.

The library comes first; `gb` (gligabao.cli) is a thin layer over it. Its public face is
`Memory` (gligabao.api): `from gligabao import Memory`.
"""

# Not `typing.TYPE_CHECKING`: importing typing alone costs `import gligabao` ~7 ms.
TYPE_CHECKING = False

__version__ = "0.1.0"

__all__ = [
    "AmbiguousEntity",
    "Entity",
    "EntityView",
    "Evidence",
    "Fact",
    "GbError",
    "Hit",
    "Memory",
    "Remembered",
    "Why",
    "__version__",
]

# Each public name and the module it lives in, imported on first use: `import gligabao`
# (and `gb --version`) must not pay for the store, the graph or the openai SDK.
_LAZY = {
    "AmbiguousEntity": "gligabao.facts",
    "Entity": "gligabao.facts",
    "EntityView": "gligabao.facts",
    "Evidence": "gligabao.facts",
    "Fact": "gligabao.facts",
    "GbError": "gligabao.errors",
    "Hit": "gligabao.search",
    "Memory": "gligabao.api",
    "Remembered": "gligabao.api",
    "Why": "gligabao.api",
}

if TYPE_CHECKING:
    from gligabao.api import Memory, Remembered, Why
    from gligabao.errors import GbError
    from gligabao.facts import AmbiguousEntity, Entity, EntityView, Evidence, Fact
    from gligabao.search import Hit


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gligabao' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later look-ups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
