"""The one thing the store asks of a database: a connection that speaks this facade.

The store's SQL is written once, above this facade, in the subset of SQL the databases
share: `?` or `:name` placeholders, rows that come back as dicts keyed by column name.
What differs between databases (connecting and locking, the schema, keyword search,
vectors) lives in a module per database (`store/sqlite/`); the connection it opens
satisfies this protocol, and nothing above the store sees more than this type.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager

# Not typing's: `gb search` loads no typing (~3 ms of its start). The protocol is for
# type checkers: at run time it is a plain class (no isinstance asks it), and Params the
# union without its parameters.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    Params = Sequence[Any] | Mapping[str, Any]
else:
    Protocol = object
    Params = Sequence | Mapping

__all__ = ["Connection", "Params"]


class Connection(Protocol):
    """An open database: run SQL, group it in transactions, say what it is."""

    dialect: str  # the database's name: "sqlite" or "postgresql"
    path: str  # what error messages name: the file, or ":memory:"
    busy_timeout_ms: int  # how long a statement waits for another writer's lock
    read_only: bool  # opened read-only: every write is refused

    def execute(self, statements: str, bindings: Params | None = None) -> Iterator[Any]:
        """Run SQL; iterate over its rows, each a dict keyed by column name."""
        ...

    def executemany(self, statements: str, sequenceofbindings: Iterable[Params]) -> Any:
        """Run one statement once for each set of parameters."""
        ...

    def changes(self) -> int:
        """Rows changed by the latest writing statement."""
        ...

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (what a commit would end)."""
        ...

    def transaction(self, *, whole: bool = False) -> AbstractContextManager[Connection]:
        """A writing transaction, or a savepoint inside one already open (see
        db.transaction, the way the store opens one)."""
        ...

    def read_transaction(self) -> AbstractContextManager[Connection]:
        """One consistent view of the data across several reads (db.read_transaction)."""
        ...

    def for_search(self) -> Connection:
        """This connection, set up for a search, which reads much of the database."""
        ...

    def sibling(self) -> Connection:
        """A second connection to the same database, for work on a second thread
        (this one where there can be no second)."""
        ...

    def integrity_problems(self) -> list[str]:
        """Everything the database finds wrong with itself; empty when healthy."""
        ...

    def close(self, force: bool = False) -> None: ...
