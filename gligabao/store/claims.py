"""Claims: one run at a time works on a text, and the moment its prompts are written against.

A `gb remember` claims (dataset, sha256) before its first LLM call. Another run given
the same content meanwhile (a second cron process, the same file under two names) finds
the claim held and waits for it to end, then finds the document stored whole: one
document, one set of facts, nothing paid twice. The claim also keeps the run's moment
(valid_at, reference_time): a rerun after a failure that stored nothing writes the same
prompts, so the answers already paid for are found by their request hash.

A claim is held by an owner "host:pid:token" and renewed (`heartbeat_at`) while its run
works; one whose process is gone (on this host) or, from another host, that has not
been renewed for `STALE_AFTER_S`, is free to take over. Released (owner NULL) when a
run fails, so the moment stays; deleted when the document is stored whole, so a later
`--force` starts afresh.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from gligabao.store.connection import Connection
from gligabao.store.db import now_iso, query_one, transaction, write

__all__ = ["STALE_AFTER_S", "Claim", "Holder", "claim", "drop", "new_owner", "release", "renew"]

STALE_AFTER_S = 120.0  # a claim not renewed for this long is a dead run's

# The machine a claim's run is on. The tests set it to run two processes as two machines.
_HOST = os.environ.get("GB_TEST_HOSTNAME") or socket.gethostname()


@dataclass(frozen=True)
class Claim:
    """Held by us: the moment to write the prompts against (stored, or the one given)."""

    owner: str
    valid_at: str
    reference_time: str


@dataclass(frozen=True)
class Holder:
    """Held by another run, alive."""

    owner: str

    @property
    def pid(self) -> int | None:
        host, pid, _ = _parts(self.owner)
        return pid if host == _HOST else None


def new_owner() -> str:
    return f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def claim(
    conn: Connection,
    dataset_id: int,
    sha256: str,
    owner: str,
    valid_at: str,
    reference_time: str,
    *,
    fresh: bool = False,
) -> Claim | Holder:
    """Take the claim on (dataset, sha256) for `owner`, unless a live run holds it.

    A stored moment wins over the one given (a rerun keeps the first run's), unless
    `fresh` (the caller was given its moment explicitly, or remembers a new version)."""
    with transaction(conn):
        row = query_one(
            conn,
            "SELECT * FROM gb_claims WHERE dataset_id = ? AND content_sha256 = ?",
            (dataset_id, sha256),
        )
        if row is not None and row["owner"] not in (None, owner) and _alive(row):
            return Holder(row["owner"])
        if row is None:
            conn.execute(
                """INSERT INTO gb_claims(dataset_id, content_sha256, valid_at, reference_time,
                       owner, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)""",
                (dataset_id, sha256, valid_at, reference_time, owner, now_iso()),
            )
            return Claim(owner, valid_at, reference_time)
        if fresh:
            row["valid_at"], row["reference_time"] = valid_at, reference_time
        conn.execute(
            """UPDATE gb_claims SET owner = ?, heartbeat_at = ?, valid_at = ?, reference_time = ?
               WHERE dataset_id = ? AND content_sha256 = ?""",
            (owner, now_iso(), row["valid_at"], row["reference_time"], dataset_id, sha256),
        )
        return Claim(owner, row["valid_at"], row["reference_time"])


def renew(conn: Connection, dataset_id: int, sha256: str, owner: str) -> None:
    write(
        conn,
        """UPDATE gb_claims SET heartbeat_at = ?
           WHERE dataset_id = ? AND content_sha256 = ? AND owner = ?""",
        (now_iso(), dataset_id, sha256, owner),
    )


def release(conn: Connection, dataset_id: int, sha256: str, owner: str) -> None:
    """The run ended without storing the document whole: the claim is free, its moment
    kept for the next run."""
    write(
        conn,
        """UPDATE gb_claims SET owner = NULL, heartbeat_at = NULL
           WHERE dataset_id = ? AND content_sha256 = ? AND owner = ?""",
        (dataset_id, sha256, owner),
    )


def drop(conn: Connection, dataset_id: int, sha256: str) -> None:
    """The document is stored whole: nothing left to claim."""
    write(
        conn,
        "DELETE FROM gb_claims WHERE dataset_id = ? AND content_sha256 = ?",
        (dataset_id, sha256),
    )


def _parts(owner: str) -> tuple[str, int | None, str]:
    pieces = owner.rsplit(":", 2)
    if len(pieces) != 3:
        return owner, None, ""
    host, pid, token = pieces
    try:
        return host, int(pid), token
    except ValueError:
        return host, None, token


def _alive(row: dict[str, Any]) -> bool:
    """Whether the claim's run may still be working. On this host its process says so
    (a run busy for minutes between two renewals is alive all the same); a claim from
    another host is alive while it is renewed."""
    host, pid, _ = _parts(row["owner"])
    if host == _HOST and pid is not None:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # someone else's process, alive
        return True
    beat = row["heartbeat_at"]
    try:
        when = datetime.fromisoformat(beat.replace("Z", "+00:00")) if beat else None
    except ValueError:
        return False
    return when is not None and datetime.now(timezone.utc) - when <= timedelta(
        seconds=STALE_AFTER_S
    )
