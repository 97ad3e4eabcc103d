"""The public Python API: one `Memory`, the face the CLI, `gb mcp` and programs share.

    from gligabao import Memory

    with Memory("notes.db", dataset="default") as memory:
        memory.remember("notes.md")
        for hit in memory.search("licence termination", k=5):
            print(f"{hit.source}:{hit.line_start}-{hit.line_end}", hit.text[:60])
        for fact in memory.facts(about="Acme", at="2024-01-01"):
            print(fact.fact, fact.evidence[0].where if fact.evidence else "")

Configuration is taken as `gb` takes it: keyword arguments (the settings of
`gligabao.toml.example`, with `_` for `.`: `chunk_size=512`, `llm_base_url=...`) over the
environment (`GB_*`, `OPENAI_*`) over the config file (`config=PATH`, else `GB_CONFIG`,
`./gligabao.toml`, the user's) over the defaults. Results are the objects `--json`
prints (each has `as_json()`, or is that dict already); errors are `gligabao.errors`
GbErrors, each with the message and exit code `gb` gives it. Only `remember` creates the
database; every other method needs one (NoDatabase otherwise), opened at first use and
kept. A Memory may be shared by threads: its calls take turns.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from gligabao.config import SETTINGS, Config, load_config
from gligabao.errors import UsageError
from gligabao.graph.queries import Entity, EntityView, Fact
from gligabao.search.hybrid import METHODS, Hit

if TYPE_CHECKING:
    from gligabao.remember.batch import Result
    from gligabao.store.datasets import Dataset
    from gligabao.store.forget import ForgetReport
    from gligabao.store.stats import Stats

__all__ = ["Memory", "Remembered", "Why"]

F = TypeVar("F", bound=Callable[..., Any])

# Keyword argument -> setting: `llm_base_url` is `llm.base_url`, as GB_LLM_BASE_URL is.
_SETTING_NAMES = {s.key.replace(".", "_"): s.key for s in SETTINGS}


@dataclass(frozen=True)
class Why(Fact):
    """A fact with each place that states it and, when closed, the fact that closed it
    (with its own evidence): what `gb why --json` prints."""

    closer: Fact | None = None

    def as_json(self) -> dict[str, Any]:
        return {**super().as_json(), "closer": self.closer.as_json() if self.closer else None}


@dataclass(frozen=True)
class Remembered:
    """How one input of `remember` ended: `status` remembered, completed, unchanged,
    offline, pending or failed; `response` the stored document (artifact_id, chunks,
    entities, edges...), `error` why it failed, `notices` what the run said of it."""

    source: str
    status: str
    response: dict[str, Any]
    error: str | None = None
    notices: tuple[str, ...] = ()

    @property
    def document_id(self) -> int | None:
        return self.response.get("artifact_id")

    def as_json(self) -> dict[str, Any]:
        """The line `gb remember --json` prints for this input."""
        shown: dict[str, Any] = {"source": self.source, "status": self.status}
        if self.error is not None:
            shown["error"] = self.error
        return {**shown, **self.response}

    @classmethod
    def from_result(cls, result: Result, source: str | None = None) -> Remembered:
        outcome = result.outcome
        return cls(
            source=source or result.name,
            status=result.status,
            response=dict(outcome.response) if outcome else {},
            error=str(result.error) if result.error is not None else None,
            notices=tuple(outcome.notices) if outcome else (),
        )


def _one_at_a_time(method: F) -> F:
    """One call of a Memory at a time: its connection is shared by the threads using it."""

    @functools.wraps(method)
    def run(self: Memory, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return run  # type: ignore[return-value]


class Memory:
    """A gligabao database and the dataset its calls use, configured as `gb` is."""

    def __init__(
        self,
        db: str | os.PathLike[str] | None = None,
        dataset: str | None = None,
        *,
        config: str | os.PathLike[str] | None = None,
        on_notice: Callable[[str], None] | None = None,
        **settings: Any,
    ) -> None:
        """`db` and `dataset` as --db and --dataset; `config` as --config; `settings`
        override the rest; `on_notice` hears what `gb` would say on stderr (a search by
        BM25 only, a document stored offline)."""
        flags: dict[str, Any] = {"database": os.fspath(db) if db is not None else None}
        flags["dataset"] = dataset
        for name, value in settings.items():
            if name not in _SETTING_NAMES:
                raise TypeError(f"Memory() got an unknown setting {name!r}")
            flags[_SETTING_NAMES[name]] = value
        self.config: Config = load_config(os.fspath(config) if config else None, flags)
        self.on_notice = on_notice
        self._conn: Any = None
        self._lock = threading.RLock()

    # ---- the database

    @property
    def path(self) -> str:
        return self.config["database"]

    @property
    def dataset(self) -> str:
        return self.config["dataset"]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _store(self, *, create: bool = False) -> Any:
        """The connection, opened at first use (and again after a failed open: a database
        locked or not created yet may be there the next time)."""
        if self._conn is None:
            from gligabao.store import open_db

            self._conn = open_db(
                self.path, busy_timeout_ms=int(self.config["busy_timeout"] * 1000), create=create
            )
        return self._conn

    def _dataset(self, name: str | None) -> tuple[Any, Dataset]:
        """(connection, dataset) of a call that reads one dataset (NotFound if none)."""
        from gligabao.store.datasets import require_dataset

        if name is not None:
            _check_text(name, "dataset name")
        conn = self._store()
        return conn, require_dataset(conn, name or self.dataset)

    def _filter(self, name: str | None) -> tuple[Any, int | None]:
        """(connection, dataset id) of a call over every dataset unless one is named here
        or in the configuration (as `gb list` and `gb stats`)."""
        from gligabao.store.datasets import require_dataset

        if name is not None:
            _check_text(name, "dataset name")
        conn = self._store()
        name = name or self.config.dataset_named()
        return conn, None if name is None else require_dataset(conn, name).id

    def _notice(self, message: str) -> None:
        if self.on_notice is not None:
            self.on_notice(message)

    def _query_vector(
        self, conn: Any, dataset: Dataset, text: str, index: str, *, quiet: bool = False
    ) -> Any:
        """A function embedding `text` to compare with `index` vectors, or None (BM25
        alone, with a notice saying why) when they cannot be compared."""
        from gligabao.search.hybrid import bm25_only, vector_obstacle

        obstacle = vector_obstacle(self.config, conn, dataset, (index,))
        if obstacle is not None:
            if not quiet:
                self._notice(bm25_only(obstacle, dataset, index))
            return None
        from gligabao.llm.query import embed_query  # its HTTP: only when embedding

        return lambda: embed_query(self.config, text)

    # ---- reading

    @_one_at_a_time
    def search(
        self, query: str, k: int = 10, *, method: str = "hybrid", dataset: str | None = None
    ) -> list[Hit]:
        """The k best chunks for `query` (as `gb search`): `method` hybrid, bm25 or
        vector; hybrid falls back to BM25 (with a notice) where vectors cannot be used."""
        from gligabao.search.hybrid import (
            OTHER_MODEL,
            bm25_only,
            fusion_for,
            search,
            vector_obstacle,
        )

        if method not in METHODS:
            raise UsageError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
        _check_count("k", k)
        _check_text(query, "query")
        conn, found = self._dataset(dataset)
        vector = None
        if method != "bm25":
            obstacle = vector_obstacle(self.config, conn, found)
            if obstacle == OTHER_MODEL:
                # Its vectors and the query's would not compare: the CLI's refusal
                # (ConfigError), raised before it would print anything.
                from gligabao.search.hybrid import other_model

                raise other_model(self.config, found)
            if obstacle is not None:
                self._notice(bm25_only(obstacle, found))
                method = "bm25"
            else:
                from gligabao.llm.query import embed_query  # its HTTP: only now

                def vector() -> Any:
                    return embed_query(self.config, query)

        return search(
            conn,
            found,
            query,
            method=method,
            k=k,
            query_vector=vector,
            depth=self.config["search.depth"],
            fusion=fusion_for(self.config, found),
            exact=self.config["search.exact"],
        )

    @_one_at_a_time
    def facts(
        self,
        query: str | None = None,
        *,
        about: str | None = None,
        at: str | None = None,
        known_at: str | None = None,
        include_closed: bool = False,
        relation: str | None = None,
        session: str | None = None,
        k: int = 20,
        dataset: str | None = None,
    ) -> list[Fact]:
        """The facts of the dataset (as `gb facts`): current ones, newest first, each with
        its evidence; `query` searches them, `about` names an entity (name or id), `at`
        asks what was true then, `known_at` what the graph held then."""
        from gligabao.graph import queries as facts

        _check_count("k", k)
        if query is not None:
            _check_text(query, "query")
        if about is not None:
            _check_text(about, "about name")
        at, known_at = _time("at", at), _time("known_at", known_at)
        conn, found = self._dataset(dataset)
        entity_ids = [e["id"] for e in facts.find_entities(conn, found, about)] if about else None
        vector = self._query_vector(conn, found, query, "edges") if query else None
        return facts.facts(
            conn,
            found,
            query,
            about=entity_ids,
            at=at,
            known_at=known_at,
            closed=include_closed,
            relation=relation.upper() if relation else None,
            session=session,
            limit=k,
            query_vector=vector,
            depth=self.config["search.depth"],
            rrf_k=self.config["search.rrf_k"],
        )

    @_one_at_a_time
    def entity(
        self, name: str, *, depth: int = 1, at: str | None = None, dataset: str | None = None
    ) -> EntityView:
        """One entity by name (any case, accents, spacing) or id, as `gb entity`: its
        facts as a timeline, its neighbours up to `depth`, the documents that mention it.
        Several close matches raise AmbiguousEntity, which lists them."""
        from gligabao.graph import queries as facts

        _check_count("depth", depth, low=0)
        _check_text(name, "name")
        at = _time("at", at)
        conn, found = self._dataset(dataset)
        # Only for a name no entity has: no word on how it was looked up.
        vector = self._query_vector(conn, found, name, "entities", quiet=True)
        return facts.entity(conn, found, name, at=at, depth=depth, query_vector=vector)

    @_one_at_a_time
    def entities(
        self, query: str | None = None, *, k: int = 20, dataset: str | None = None
    ) -> list[Entity]:
        """Entities by name, or searched by `query` (as `gb entities`)."""
        from gligabao.graph import queries as facts

        _check_count("k", k)
        if query is not None:
            _check_text(query, "query")
        conn, found = self._dataset(dataset)
        vector = self._query_vector(conn, found, query, "entities") if query else None
        return facts.entities(
            conn,
            found,
            query,
            limit=k,
            query_vector=vector,
            depth=self.config["search.depth"],
            rrf_k=self.config["search.rrf_k"],
        )

    @_one_at_a_time
    def why(self, fact_id: int, *, dataset: str | None = None) -> Why:
        """A fact with its evidence and, when closed, what closed it (as `gb why`)."""
        from gligabao.graph.queries import get_fact
        from gligabao.store.errors import NotFound

        conn, found = self._dataset(dataset)
        fact = get_fact(conn, found, _check_id(fact_id, "fact"))
        if fact is None:
            raise NotFound(f"no fact {fact_id} in dataset '{found.name}'; gb facts lists them")
        closer = get_fact(conn, found, fact.closed_by["id"]) if fact.closed_by else None
        return Why(
            **{f.name: getattr(fact, f.name) for f in dataclasses.fields(fact)}, closer=closer
        )

    @_one_at_a_time
    def document(self, artifact_id: int) -> dict[str, Any]:
        """A document with its text, chunks (offsets, sections, summaries), entities and
        edges, or, for a chunk's id, the chunk: what `gb show --json` prints."""
        from gligabao.store import artifacts

        conn = self._store()
        artifact_id = _check_id(artifact_id, "artifact")
        if artifacts.artifact_place(conn, artifact_id)["role"] == "document":
            return artifacts.get_document(conn, artifact_id)
        return artifacts.get_chunk(conn, artifact_id)

    @_one_at_a_time
    def documents(
        self, *, dataset: str | None = None, limit: int = 50, include_superseded: bool = False
    ) -> list[dict[str, Any]]:
        """Documents, newest first, without their text (as `gb list --json`): of
        `dataset`, else of the one configured, else of every dataset."""
        from gligabao.store import artifacts

        _check_count("limit", limit)
        conn, dataset_id = self._filter(dataset)
        return artifacts.list_documents(
            conn, dataset_id, include_superseded=include_superseded, limit=limit
        )

    @_one_at_a_time
    def stats(self, *, dataset: str | None = None) -> Stats:
        """Counts of documents, chunks, graph, LLM calls and cost (as `gb stats`)."""
        from gligabao.store import stats

        conn, dataset_id = self._filter(dataset)
        return stats.stats(conn, dataset_id)

    # ---- writing

    @_one_at_a_time
    def forget(self, document_id: int) -> ForgetReport:
        """Delete a document with its chunks, summaries, links, keyword rows and vectors
        (as `gb forget`); a chunk's id is refused, naming its document."""
        from gligabao.store import forget

        return forget.forget(self._store(), _check_id(document_id, "artifact"))

    @_one_at_a_time
    def remember(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        recursive: bool = False,
        glob: Sequence[str] = (),
        session: str | None = None,
        valid_at: str | None = None,
        kind: str = "document",
        force: bool = False,
    ) -> list[Remembered]:
        """Remember files as `gb remember PATH...` does (folders with `recursive`, their
        files narrowed by `glob` patterns, what is skipped said as a notice), one result
        each: one that fails is reported with its error and never stops the others.
        Offline (no endpoint) texts and chunks are stored keyword-indexed, stages pending."""
        from gligabao.read.discovery import discover, skip_summary
        from gligabao.remember.batch import remember_all

        given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        if not given:
            raise UsageError("no input: name a path to remember")
        found = discover([os.fspath(p) for p in given], recursive=recursive, globs=glob)
        skipped = skip_summary(found.skipped)
        if skipped is not None:
            self._notice(skipped)
        results: list[Remembered] = []
        llm, options = self._pipeline(session, valid_at, kind, force)
        remember_all(
            self._store(create=True),
            found.inputs,
            self.config,
            llm,
            options,
            lambda r: results.append(Remembered.from_result(r)),
        )
        return results

    @_one_at_a_time
    def remember_text(
        self,
        text: str,
        *,
        name: str | None = None,
        session: str | None = None,
        valid_at: str | None = None,
        kind: str = "document",
        force: bool = False,
    ) -> Remembered:
        """Remember a text as `gb remember -` remembers standard input (`name` is how the
        result and messages call it); a text refused or a run that fails raises."""
        from gligabao.read.files import STDIN, decode
        from gligabao.read.sources import Source
        from gligabao.remember import document as remember
        from gligabao.remember.batch import Result

        if not isinstance(text, str):
            raise UsageError(f"the text to remember must be a str, not {type(text).__name__}")
        shown = name or STDIN
        data = text.encode("utf-8", "surrogatepass")
        source = Source(STDIN, data, decode(shown, data))
        llm, options = self._pipeline(session, valid_at, kind, force)
        outcome = remember(self._store(create=True), source, self.config, llm, options)
        return Remembered.from_result(Result(shown, outcome.status, outcome), shown)

    def _pipeline(
        self, session: str | None, valid_at: str | None, kind: str, force: bool
    ) -> tuple[Any, Any]:
        """The LLM client (imports the openai SDK: only to remember) and the options."""
        from gligabao.llm import LLM
        from gligabao.remember import Options

        moment = _time("valid_at", valid_at)
        options = Options(
            dataset=self.dataset,
            kind=kind,
            session=session,
            valid_at=moment,
            reference_time=moment,
            force=force,
            on_notice=self.on_notice,
        )
        return LLM(self.config), options


# ---- arguments, checked as the CLI checks its options


def _check_count(name: str, value: int, *, low: int = 1) -> int:
    from gligabao.service.arguments import count

    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be a whole number, not {value!r}")
    return count(name, value, low=low)


def _check_text(value: str, what: str) -> str:
    from gligabao.service.arguments import query_text

    if not isinstance(value, str):
        raise UsageError(f"the {what} must be a text, not {value!r}")
    return query_text(value, optional=False, what=what) or value


def _check_id(value: int, what: str) -> int:
    from gligabao.service.arguments import stored_id

    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"a {what} id is a whole number, not {value!r}")
    return stored_id(value, what)


def _time(name: str, value: str | None) -> str | None:
    from gligabao.service.arguments import iso_time

    return iso_time(name, value)
