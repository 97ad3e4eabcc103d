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

Each operation's work is in a module of its own beside this one (searching, facts,
records, remembering, sync, evaluation, exporting); they are imported by the call that
needs them, so that `gb search` loads the search and nothing else.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from gligabao.config import SETTINGS, Config, load_config
from gligabao.errors import InputError, UsageError
from gligabao.service import arguments

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO, TypeVar

    from gligabao.base.stopping import Stop
    from gligabao.graph.export import Graph
    from gligabao.graph.merges import Merge
    from gligabao.graph.paths import Paths
    from gligabao.graph.queries import Entity, EntityView, Fact
    from gligabao.remember.result import Remembered
    from gligabao.service.asking import Answered
    from gligabao.service.evaluation import Evaluation
    from gligabao.service.facts import Why
    from gligabao.service.graph_evaluation import GraphEvaluation
    from gligabao.service.preview import Preview
    from gligabao.service.remembering import Batch
    from gligabao.service.searching import Hits
    from gligabao.service.sizing import DryRun
    from gligabao.service.sync import Sync
    from gligabao.store import Connection
    from gligabao.store.copying import CopyReport
    from gligabao.store.datasets import Dataset
    from gligabao.store.forget import ForgetReport
    from gligabao.store.stats import Stats, VecIndexStats

    F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["Answered", "Memory", "Remembered", "Stop", "Why"]

# Keyword argument -> setting: `llm_base_url` is `llm.base_url`, as GB_LLM_BASE_URL is.
_SETTING_NAMES = {s.key.replace(".", "_"): s.key for s in SETTINGS}


def __getattr__(name: str) -> Any:
    # The results named here load on first use: `gb search` needs neither the graph's
    # queries (a Why is a Fact) nor the remember package.
    if name == "Why":
        from gligabao.service.facts import Why

        return Why
    if name == "Remembered":
        from gligabao.remember.result import Remembered

        return Remembered
    if name == "Stop":
        from gligabao.base.stopping import Stop

        return Stop
    if name == "Answered":
        from gligabao.service.asking import Answered

        return Answered
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        self._start(load_config(os.fspath(config) if config else None, flags), on_notice, {})

    @classmethod
    def of(
        cls,
        config: Config,
        *,
        on_notice: Callable[[str], None] | None = None,
        names: Mapping[str, str] | None = None,
    ) -> Memory:
        """A Memory of a configuration already loaded (a face's, its flags applied);
        `names` says how that face calls each argument in messages (`{"k": "-k"}`)."""
        memory = cls.__new__(cls)
        memory._start(config, on_notice, names or {})
        return memory

    def _start(
        self, config: Config, on_notice: Callable[[str], None] | None, names: Mapping[str, str]
    ) -> None:
        self.config: Config = config
        self.on_notice = on_notice
        self._args = arguments.Checks(names)
        self._conn: Connection | None = None
        self._lock = threading.RLock()

    # ---- the database

    @property
    def database(self) -> str:
        """The database: a file's path, or a postgresql:// URL."""
        return self.config["database"]

    @property
    def dataset(self) -> str:
        return self.config["dataset"]

    @property
    def secrets(self) -> tuple[str, ...]:
        """The keys of the configured endpoints: what no answer may carry."""
        from gligabao.service.settings import secrets

        return secrets(self.config)

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
        locked or not created yet may be there the next time). Only `remember` creates
        the file: a typo in --db is one line (exit 6) rather than a new empty database,
        and another program's SQLite file is refused rather than given gligabao's tables."""
        if self._conn is None:
            from gligabao.store import open_db

            self._conn = open_db(
                self.database,
                busy_timeout_ms=int(self.config["busy_timeout"] * 1000),
                create=create,
                schema=self.config["schema"],
            )
        return self._conn

    def _dataset(self, name: str | None) -> tuple[Any, Dataset]:
        """(connection, dataset) of a call that reads one dataset (NotFound if none)."""
        from gligabao.store.datasets import require_dataset

        if name is not None:
            self._args.text("dataset", name, what="dataset name")
        conn = self._store()
        return conn, require_dataset(conn, name or self.dataset)

    def _filter(self, name: str | None) -> tuple[Any, int | None]:
        """(connection, dataset id) of a call over every dataset unless one is named here
        or in the configuration (as `gb list` and `gb stats`)."""
        from gligabao.store.datasets import require_dataset

        if name is not None:
            self._args.text("dataset", name, what="dataset name")
        conn = self._store()
        name = name or self.config.dataset_named()
        return conn, None if name is None else require_dataset(conn, name).id

    def _notice(self, message: str) -> None:
        if self.on_notice is not None:
            self.on_notice(message)

    # ---- searching and the graph

    @_one_at_a_time
    def search(
        self,
        query: str,
        k: int = 10,
        *,
        method: str = "hybrid",
        dataset: str | None = None,
        session: str | None = None,
        role: str | None = None,
        rerank: bool | None = False,
    ) -> Hits:
        """The k best chunks for `query` (as `gb search`): `method` hybrid, bm25 or
        vector; hybrid falls back to BM25 (with a notice) where vectors cannot be used.
        `session` and `role` narrow them (a session's documents, chat chunks holding a
        message by that role); `rerank` lets the chat model order the best (None: as
        the configuration's search.rerank says)."""
        from gligabao.service.searching import search_chunks

        method = self._args.choice("method", method, ("hybrid", "bm25", "vector"))
        k = self._args.count("k", k)
        query = self._args.text("query", query)
        conn, found = self._dataset(dataset)
        return search_chunks(
            self.config,
            conn,
            found,
            query,
            method=method,
            k=k,
            session=session,
            role=role,
            rerank=self.config["search.rerank"] if rerank is None else rerank,
            notice=self._notice,
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
        from gligabao.service import facts

        k = self._args.count("k", k)
        query = self._args.text("query", query, optional=True)
        about = self._args.text("about", about, optional=True, what="{} name")
        at, known_at = self._args.time("at", at), self._args.time("known_at", known_at)
        conn, found = self._dataset(dataset)
        return facts.facts(
            self.config,
            conn,
            found,
            query,
            about=about,
            at=at,
            known_at=known_at,
            closed=include_closed,
            relation=relation,
            session=session,
            limit=k,
            notice=self._notice,
        )

    @_one_at_a_time
    def entity(
        self, name: str, *, depth: int = 1, at: str | None = None, dataset: str | None = None
    ) -> EntityView:
        """One entity by name (any case, accents, spacing) or id, as `gb entity`: its
        facts as a timeline, its neighbours up to `depth`, the documents that mention it.
        Several close matches raise AmbiguousEntity, which lists them."""
        from gligabao.service import facts

        depth = self._args.count("depth", depth, low=0)
        name = self._args.text("name", name)
        at = self._args.time("at", at)
        conn, found = self._dataset(dataset)
        return facts.entity(self.config, conn, found, name, at=at, depth=depth)

    @_one_at_a_time
    def entities(
        self, query: str | None = None, *, k: int = 20, dataset: str | None = None
    ) -> list[Entity]:
        """Entities by name, or searched by `query` (as `gb entities`)."""
        from gligabao.service import facts

        k = self._args.count("k", k)
        query = self._args.text("query", query, optional=True)
        conn, found = self._dataset(dataset)
        return facts.entities(self.config, conn, found, query, limit=k, notice=self._notice)

    @_one_at_a_time
    def merges(self, *, since: str | None = None, dataset: str | None = None) -> list[Merge]:
        """The entities merged into others, oldest first (as `gb merges`): each with what
        it was extracted as, from which chunk, and the rule or `resolve` call that
        decided; from `since` on (ISO-8601) when given."""
        from gligabao.graph import merges

        since = self._args.time("since", since)
        conn, found = self._dataset(dataset)
        return merges.list_merges(conn, found, since=since)

    @_one_at_a_time
    def unmerge(self, merge_id: int) -> Merge:
        """Undo a merge (as `gb unmerge`), in one transaction: the entity as extracted is
        its own again with its facts and its link to the chunk, and the two are kept
        apart by later resolution. NotFound for no such merge; CannotUnmerge once undone."""
        from gligabao.graph import merges

        conn = self._store()
        return merges.unmerge(conn, self._args.stored_id("merge_id", merge_id, "merge"))

    @_one_at_a_time
    def path(
        self,
        a: str,
        b: str,
        *,
        at: str | None = None,
        known_at: str | None = None,
        max_depth: int = 4,
        dataset: str | None = None,
    ) -> Paths:
        """The shortest chains of facts linking two entities, each named as `entity`
        names one (as `gb path`): through the facts current now, or true `at` a time, or
        held `known_at` one, each fact crossed either way, at most `max_depth` of them;
        a few chains at most, each fact with its evidence. `found` is False for none."""
        from gligabao.service import facts

        a = self._args.text("a", a, what="entity name")
        b = self._args.text("b", b, what="entity name")
        max_depth = self._args.count("max_depth", max_depth)
        at, known_at = self._args.time("at", at), self._args.time("known_at", known_at)
        conn, found = self._dataset(dataset)
        return facts.path(conn, found, a, b, at=at, known_at=known_at, max_depth=max_depth)

    @_one_at_a_time
    def why(self, fact_id: int, *, dataset: str | None = None) -> Why:
        """A fact with its evidence and, when closed, what closed it (as `gb why`)."""
        from gligabao.service import facts
        from gligabao.store.errors import NotFound

        fact_id = self._args.whole("fact_id", fact_id, what="a fact id")
        conn, found = self._dataset(dataset)
        # An id beyond 64 bits names no fact either: the same answer.
        shown = facts.why(conn, found, fact_id) if arguments.fits(fact_id) else None
        if shown is None:
            raise NotFound(f"no fact {fact_id} in dataset '{found.name}'; gb facts lists them")
        return shown

    @_one_at_a_time
    def ask(
        self,
        question: str,
        *,
        at: str | None = None,
        known_at: str | None = None,
        session: str | None = None,
        k: int = 6,
        dataset: str | None = None,
        on_text: Callable[[str | None], None] | None = None,
    ) -> Answered:
        """`question` answered by the chat model (stage `answer`) from the memory, as `gb
        ask`: from the `k` facts that match it and up to `k` of the entities it names
        (current ones; `at` those true then, `known_at` those the graph held then) and the
        `k` best chunks, each citation checked against its source. `supported` is False
        when none holds: the answer is then not known. `on_text` hears the answer's text
        as it streams (None: it begins again). No chat endpoint: ConfigError."""
        from gligabao.service.asking import ask, require_chat

        require_chat(self.config)
        k = self._args.count("k", k)
        question = self._args.text("question", question)
        at, known_at = self._args.time("at", at), self._args.time("known_at", known_at)
        conn, found = self._dataset(dataset)
        return ask(
            self.config,
            conn,
            found,
            question,
            at=at,
            known_at=known_at,
            session=session,
            k=k,
            notice=self._notice,
            on_text=on_text,
        )

    @_one_at_a_time
    def evidence_lines(self, document_id: int, start: int, end: int) -> tuple[bytes, int]:
        """The lines around bytes `start`..`end` of a document (a quote's, as `gb why`
        shows it), and the offset they begin at."""
        from gligabao.service.facts import evidence_lines

        return evidence_lines(self._store(), document_id, start, end)

    @_one_at_a_time
    def export(
        self,
        fmt: str,
        *,
        at: str | None = None,
        output: str | os.PathLike[str] | None = None,
        stream: TextIO | None = None,
    ) -> Graph:
        """The graph of the dataset written as `gb export` writes it, in `fmt` (jsonl,
        graphml or csv), of the facts true `at` a time if given: to `output` (a file
        replaced once written whole; for csv a folder), else to `stream`."""
        import sys
        from pathlib import Path  # ~1 ms of every command's start: here, for this one

        from gligabao.service.exporting import export_graph

        at = self._args.time("at", at)
        conn, found = self._dataset(None)
        return export_graph(
            conn,
            found,
            fmt,
            at=at,
            output=None if output is None else Path(output),
            stream=stream or sys.stdout,
            database=Path(self.database),
        )

    # ---- records

    @_one_at_a_time
    def document(self, artifact_id: int) -> dict[str, Any]:
        """A document with its text, chunks (offsets, sections, summaries), entities and
        edges, or, for a chunk's id, the chunk (with its `place`): what `gb show --json`
        prints."""
        from gligabao.store import artifacts
        from gligabao.store.errors import NotFound

        conn = self._store()
        try:
            artifact_id = self._args.stored_id("artifact_id", artifact_id, "artifact")
            if artifacts.artifact_place(conn, artifact_id)["role"] == "document":
                return artifacts.get_document(conn, artifact_id)
            return artifacts.get_chunk(conn, artifact_id)
        except NotFound:
            raise self._no_document(artifact_id, "document or chunk") from None

    @_one_at_a_time
    def documents(
        self,
        *,
        dataset: str | None = None,
        limit: int = 50,
        include_superseded: bool = False,
        session: str | None = None,
    ) -> list[dict[str, Any]]:
        """Documents, newest first, without their text (as `gb list --json`): of
        `dataset`, else of the one configured, else of every dataset."""
        from gligabao.store import artifacts

        limit = self._args.count("limit", limit)
        conn, dataset_id = self._filter(dataset)
        return artifacts.list_documents(
            conn, dataset_id, include_superseded=include_superseded, limit=limit, session=session
        )

    @_one_at_a_time
    def stats(self, *, dataset: str | None = None) -> Stats:
        """Counts of documents, chunks, graph, LLM calls and cost (as `gb stats`); calls
        recorded without a price are priced where one is known now."""
        from gligabao.service.pricing import priced_stats

        conn, dataset_id = self._filter(dataset)
        return priced_stats(self.config, conn, dataset_id)

    @_one_at_a_time
    def vector_stats(self, *, dataset: str | None = None) -> list[VecIndexStats]:
        """What each vector index of the dataset holds, and should (as `gb vec-stats`)."""
        from gligabao.store import vectors

        conn, found = self._dataset(dataset)
        return vectors.vec_stats(conn, found.id)

    @_one_at_a_time
    def inferences(self, *, limit: int = 50, stage: str | None = None) -> list[dict[str, Any]]:
        """The record of LLM calls, newest first, of one `stage` if named (as `gb
        inferences`)."""
        from gligabao.service import records

        limit = self._args.count("limit", limit)
        stage = records.check_stage(stage)
        return records.inferences(self._store(), limit, stage)

    @_one_at_a_time
    def inference(self, inference_id: int) -> dict[str, Any]:
        """One LLM call whole: its record, its answer and the documents it served."""
        from gligabao.service import records

        inference_id = self._args.stored_id("inference_id", inference_id, "inference")
        return records.inference(self._store(), inference_id)

    def preview_text(self, text: str, *, name: str | None = None) -> Preview:
        """How a text would be cut, nothing stored (as `gb chunk-preview -` cuts standard
        input), shown as `name`, else `-`."""
        from gligabao.service.preview import preview_text

        return preview_text(self.config, text, name)

    @_one_at_a_time
    def stored_chunks(self, document_id: int, *, dataset: str | None = None) -> dict[str, Any]:
        """A document's stored chunks (offsets, tokens, section, text, summary) and
        `in_sync`: whether they are what its text and the current settings cut now."""
        from gligabao.service.chunks import stored_chunks

        conn, found = self._dataset(dataset)
        document_id = self._args.stored_id("document_id", document_id, "artifact")
        return stored_chunks(self.config, conn, document_id, found.id)

    @property
    def offline(self) -> bool:
        """Whether no chat endpoint is configured: a remember then stores its texts with
        the graph and summaries pending."""
        from gligabao.llm.endpoint import Endpoints

        return not Endpoints.from_config(self.config).chat_available

    def preview(
        self,
        paths: Sequence[str],
        *,
        all_branches: bool = False,
        contexts: bool = False,
        recursive: bool = False,
        glob: Sequence[str] = (),
        each_skipped: bool = False,
    ) -> Iterator[Preview | InputError]:
        """How each input would be cut, nothing stored (as `gb chunk-preview`): one
        Preview a document, or the InputError of an input that cannot be read; with
        `contexts`, each chunk's situating context where the database has it. Folders
        with `recursive`, their files narrowed by `glob`, as `remember` walks them (what
        is skipped said as a notice, each file with `each_skipped`)."""
        from gligabao.service.preview import inputs, previews

        self.config.chunk_settings()  # a cut that cannot be: refused before the walk
        names = inputs(
            paths, recursive=recursive, glob=glob, notice=self._notice, each_skipped=each_skipped
        )
        return previews(
            self.config, names, all_branches=all_branches, contexts=contexts, notice=self._notice
        )

    @_one_at_a_time
    def status(
        self, paths: Sequence[str], *, recursive: bool = False, glob: Sequence[str] = ()
    ) -> Sync:
        """Whether files are stored as they and the settings cut them now, with the
        stages a remember of this configuration does (as `gb status`): iterate the
        result for each one's state."""
        from gligabao.read.discovery import discover
        from gligabao.service.sync import Sync, folders_walked, stages_owed

        settings = self.config.chunk_settings()  # a cut that cannot be: refused first
        stages = stages_owed(self.config)
        names = discover(list(paths), recursive=recursive, globs=glob).inputs
        if not names:
            raise UsageError("name the files to check (or -r FOLDER)")

        def connect() -> tuple[Any, int | None]:
            from gligabao.store.datasets import find_dataset

            conn = self._store()
            found = find_dataset(conn, self.dataset)
            return conn, found and found.id

        return Sync(names, folders_walked(paths, recursive), settings, connect, stages)

    # ---- writing

    @_one_at_a_time
    def forget(self, document_id: int) -> ForgetReport:
        """Delete a document with its chunks, summaries, links, keyword rows and vectors
        (as `gb forget`); a chunk's id is refused, naming its document."""
        from gligabao.store import forget
        from gligabao.store.errors import NotFound

        conn = self._store()
        try:
            return forget.forget(conn, self._args.stored_id("document_id", document_id, "artifact"))
        except NotFound:
            raise self._no_document(document_id, "document") from None

    @_one_at_a_time
    def copy_from(
        self,
        source: str | os.PathLike[str],
        *,
        schema: str | None = None,
        into: str | None = None,
        dataset: str | None = None,
        on_progress: Callable[[str, int, int], None] | None = None,
    ) -> CopyReport:
        """Copy the whole memory at `source` (a file or a postgresql:// URL; `schema`, its
        schema there) into this one, which must be empty or hold this copy cut short (as
        `gb copy`). Every row keeps its id; no LLM is asked anything. `on_progress(what,
        done, total)` hears each step.

        With `into`, only the source's dataset `dataset` (else the configured one) is
        copied, into a new dataset `into` here, beside what this memory holds: its rows
        get new ids, and a copy cut short leaves nothing (Conflict when `into` is taken)."""
        from gligabao.service.copying import copy_into

        if into is not None:
            into = self._args.text("into", into, what="dataset name")
        if dataset is not None:
            dataset = self._args.text("dataset", dataset, what="dataset name")
        self.close()  # the copy opens the destination itself, created if need be
        return copy_into(
            self.config,
            os.fspath(source),
            source_schema=schema,
            dataset=dataset,
            into=into,
            on_progress=on_progress,
        )

    def _database_name(self) -> str:
        """The database as a message names it: a file by its name, a server's URL with
        no password."""
        from gligabao.store.opening import is_url, safe_db_url

        return (
            safe_db_url(self.database) if is_url(self.database) else os.path.basename(self.database)
        )

    def _no_document(self, artifact_id: int, what: str) -> Exception:
        """The answer for an id that names nothing stored, in the words of the one who
        gave it: ids are the database's (shared by every dataset), so it names the file."""
        from gligabao.store.errors import NotFound

        return NotFound(
            f"no {what} {artifact_id} in {self._database_name()}; "
            "gb list shows the documents with their ids"
        )

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
        given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        if not given:
            raise UsageError("no input: name a path to remember")
        batch = self.batch(
            [os.fspath(p) for p in given],
            recursive=recursive,
            glob=glob,
            session=session,
            valid_at=valid_at,
            kind=kind,
            force=force,
        )
        results: list[Remembered] = []
        batch.run(results.append)
        return results

    @_one_at_a_time
    def tune_if_due(self) -> Any:
        """After an import, with search.tune_after_import = N: the configured dataset's
        fusion weight learnt from N pseudo-queries when none holds for it (as `gb eval
        --tune --synthetic --sample N`); the Tuning, or None when nothing was due."""
        from gligabao.service.evaluation import tune_if_due
        from gligabao.store.datasets import find_dataset

        if int(self.config["search.tune_after_import"]) <= 0:
            return None  # no database opened for nothing
        conn = self._store()
        found = find_dataset(conn, self.dataset)
        return None if found is None else tune_if_due(self.config, conn, found, self._notice)

    @_one_at_a_time
    def batch(self, paths: Sequence[str], **how: Any) -> Batch:
        """The inputs of `gb remember PATH...` found and ready: a Batch whose `run`
        remembers them. `how` takes recursive, glob, files_from, null (its list
        NUL-separated), max_cost, each_skipped (a notice for each file skipped) and the
        options of service.remembering.run_options."""
        from gligabao.service.remembering import prepare

        return prepare(self.config, self._args, self.on_notice, self._writer, paths, **how)

    @_one_at_a_time
    def dry_run(
        self,
        paths: Sequence[str],
        *,
        recursive: bool = False,
        glob: Sequence[str] = (),
        files_from: str | None = None,
        null: bool = False,
        stages: str | None = None,
        all_branches: bool = False,
        name: str | None = None,
        each_skipped: bool = False,
    ) -> DryRun:
        """What `remember` of these inputs would cut, and the LLM calls and input tokens
        it would take, priced where prices are known (as `gb remember --dry-run`): nothing
        stored, no request made, no database opened or created."""
        from gligabao.read.discovery import discover
        from gligabao.read.files import STDIN
        from gligabao.remember.document import parse_stages
        from gligabao.service.preview import previews
        from gligabao.service.remembering import run_options, skip_notices
        from gligabao.service.sizing import dry_run

        options = run_options(
            self.config, self._args, None, stages=stages, name=name, all_branches=all_branches
        )
        found = discover(
            paths, recursive=recursive, globs=glob, files_from=files_from, null_sep=null
        )
        if options.stdin_name is not None and STDIN not in found.inputs:
            raise UsageError(f"{self._args.name('name')} names standard input: use it with -")
        for said in skip_notices(found, each=each_skipped):
            self._notice(said)
        return dry_run(
            self.config,
            lambda: previews(
                self.config,
                found.inputs,
                all_branches=all_branches,
                contexts=False,
                notice=self._notice,
            ),
            stages=options.stages or parse_stages(self.config["stages"]),
            stdin_name=options.stdin_name,
        )

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
        stop: Stop | None = None,
    ) -> Remembered:
        """Remember a text as `gb remember -` remembers standard input: stored and shown
        as `name` (the source of its document, as --name gives it), else as `-`; a text
        refused or a run that fails raises. Another thread may `stop.request(why)` to end
        the run as Ctrl-C does (it raises Stopped; the answers paid for are kept)."""
        from gligabao.service.remembering import remember_text

        how = {"session": session, "valid_at": valid_at, "kind": kind, "force": force, "stop": stop}
        return remember_text(self.config, self._args, self.on_notice, self._writer, text, name, how)

    def _writer(self) -> Any:
        """The connection of a call that writes: the only one that creates the database."""
        return self._store(create=True)

    # ---- search measured

    @_one_at_a_time
    def evaluate(
        self,
        queries: str | os.PathLike[str] | None = None,
        *,
        datasets: Sequence[str] = (),
        methods: Sequence[str] = (),
        tune: bool = False,
        on_tuned: Callable[[Any], None] | None = None,
        synthetic: int = 0,
        use_llm: bool = True,
    ) -> Evaluation:
        """failure@1/5/20 of each method (bm25, vector, hybrid unless `methods` names
        some, rerank among them) on each dataset (the configured one unless `datasets`
        names some), measured on the gold queries of a JSON Lines file (as `gb eval`);
        `tune` learns and stores each dataset's vector weight first (told to `on_tuned`):
        from those queries, or with `synthetic` from that many pseudo-queries each
        dataset makes for itself (by the chat model unless not `use_llm`), which needs
        no query file."""
        from gligabao.search.evaluate import EVAL_METHODS, METHOD_CHOICES, read_queries
        from gligabao.service.evaluation import evaluate
        from gligabao.store.datasets import require_dataset

        if synthetic < 0:
            raise UsageError(f"--sample must be a positive number of chunks, not {synthetic}")
        if synthetic and not tune:
            raise UsageError("pseudo-queries are for tuning: give --tune with --synthetic")
        if queries is None and not synthetic:
            raise UsageError("give a QUERIES.jsonl file to measure on, or --tune --synthetic")
        chosen = list(dict.fromkeys(methods or EVAL_METHODS))
        for method in chosen:
            self._args.choice("method", method, METHOD_CHOICES)
        gold = read_queries(queries) if queries is not None else []
        names = list(dict.fromkeys(datasets or [self.dataset]))
        conn = self._store()
        found = [require_dataset(conn, name) for name in names]
        return evaluate(
            self.config,
            conn,
            found,
            gold,
            chosen,
            tune=tune,
            notice=self._notice,
            synthetic=synthetic,
            use_llm=use_llm,
            on_tuned=on_tuned or (lambda tuning: None),
        )

    def evaluate_graph(
        self,
        gold: str | os.PathLike[str],
        *,
        dataset: str | None = None,
        use_embeddings: bool = True,
    ) -> GraphEvaluation:
        """Extraction measured on the documents of a gold JSON Lines file (as `gb eval
        --graph`): each one's stored facts paired with its gold facts, for precision,
        recall, duplicate entities, interval agreement and LLM tokens per document token.
        Relations are compared by embeddings where an endpoint is configured (unless not
        `use_embeddings`), else by their words."""
        from gligabao.graph.evaluate import read_gold
        from gligabao.service.graph_evaluation import evaluate_graph

        documents = read_gold(gold)
        conn, found = self._dataset(dataset)
        return evaluate_graph(
            self.config,
            conn,
            found,
            documents,
            notice=self._notice,
            use_embeddings=use_embeddings,
        )
