"""gligabao: cut documents into chunks, extract a temporal knowledge graph, keep it in SQLite.

The library comes first; `gb` (gligabao.cli) is a thin layer over it. Its public face is
`Memory` (gligabao.service.memory): `from gligabao import Memory`.
"""

# The one place the version is written (the build reads it here): `gb --version` and
# `import gligabao` import no module of the package for it.
__version__ = "0.1.0"

# Not `typing.TYPE_CHECKING`: importing typing alone costs `import gligabao` ~7 ms.
TYPE_CHECKING = False

__all__ = [
    "AmbiguousEntity",
    "Answered",
    "Entity",
    "EntityView",
    "Evidence",
    "Fact",
    "GbError",
    "Hit",
    "Memory",
    "Merge",
    "Remembered",
    "Stop",
    "Why",
    "__version__",
]

# Each public name and the module it lives in, imported on first use: `import gligabao`
# (and `gb --version`) must not pay for the store, the graph or the openai SDK.
_LAZY = {
    "AmbiguousEntity": "gligabao.graph.queries",
    "Answered": "gligabao.service.asking",
    "Entity": "gligabao.graph.queries",
    "EntityView": "gligabao.graph.queries",
    "Evidence": "gligabao.graph.queries",
    "Fact": "gligabao.graph.queries",
    "GbError": "gligabao.errors",
    "Hit": "gligabao.search.hybrid",
    "Memory": "gligabao.service.memory",
    "Merge": "gligabao.graph.merges",
    "Remembered": "gligabao.remember.result",
    "Stop": "gligabao.base.stopping",
    "Why": "gligabao.service.facts",
}

if TYPE_CHECKING:
    from gligabao.base.stopping import Stop
    from gligabao.errors import GbError
    from gligabao.graph.merges import Merge
    from gligabao.graph.queries import AmbiguousEntity, Entity, EntityView, Evidence, Fact
    from gligabao.remember.result import Remembered
    from gligabao.search.hybrid import Hit
    from gligabao.service.asking import Answered
    from gligabao.service.facts import Why
    from gligabao.service.memory import Memory


def __getattr__(name: str) -> object:
    # The helper is imported here, at the first look-up, not above: `import gligabao`
    # loads no module of the package.
    from gligabao.base.lazy import exports

    return exports(__name__, _LAZY)[0](name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
