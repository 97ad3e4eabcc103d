"""The errors the store raises on purpose.

They derive from the project's error types (`gligabao.errors`) so that `gb` turns each
into a one-line message and its exit code without knowing about SQLite.
"""

from __future__ import annotations

from gligabao.errors import ConfigError, DatabaseError, GbError

__all__ = [
    "Conflict",
    "DatabaseBusy",
    "DatabaseError",
    "EmbeddingMismatch",
    "NoDatabase",
    "NotFound",
    "SchemaTooNew",
]


class DatabaseBusy(DatabaseError):
    """Another connection held the write lock for longer than the busy timeout."""

    def __init__(self, path: str, waited_ms: int) -> None:
        super().__init__(
            f"database {path} is locked by another process (waited {waited_ms / 1000:g} s); "
            "try again, or raise busy_timeout"
        )
        self.path = path
        self.waited_ms = waited_ms


class Conflict(DatabaseError):
    """A row the schema holds once (a chunk's index in its document, an entity's name and
    type) given a second time; or another rule of the schema broken."""


class NoDatabase(DatabaseError):
    """There is no gligabao database at the path yet (no file, or an empty one), and the
    command only uses one: it is never created by a command that only reads."""

    def __init__(self, path: str, detail: str = "") -> None:
        super().__init__(f"there is no database at {path} yet{detail}; `gb remember` creates it")
        self.path = path


class SchemaTooNew(DatabaseError):
    """The file was written by a newer gligabao; guessing at its schema could corrupt it."""

    def __init__(self, path: str, found: int, known: int) -> None:
        super().__init__(
            f"database {path} has schema version {found}, but this gligabao knows only up to "
            f"{known}; upgrade gligabao to use it"
        )
        self.found = found
        self.known = known


class EmbeddingMismatch(ConfigError):
    """A dataset's vectors were made with another embedding model or dimension."""


class NotFound(GbError, LookupError):
    """No row with that id (an artifact, an entity, a dataset...)."""
