"""gligabao: cut documents into chunks, extract a temporal knowledge graph, keep it in SQLite.

The library comes first; `gb` (gligabao.cli) is a thin layer over it.
"""

__version__ = "0.1.0"
