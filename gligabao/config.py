"""Configuration: every setting, where it came from, and its validation.

Each setting is looked up, first hit wins, in: a command-line flag, the
environment (`GB_<KEY>`, `GB_<SECTION>_<KEY>`, and `GB_DB` for the database),
the config file, the default. The file is the first of `--config`,
`GB_CONFIG`, `./gligabao.toml`, and `gligabao.toml` in the user config dir.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
import sys
from collections.abc import Mapping

from gligabao.base.record import Frozen
from gligabao.chunk import MODES
from gligabao.errors import ConfigError, UsageError

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from gligabao.chunk import ChunkSettings

# The chat stages, each with its models.* and reasoning.* setting; rerank is gb search's,
# answer gb ask's, pseudo_query gb eval --synthetic's (a query written for a chunk),
# summarize_entity remember's once facts an entity's summary may state have changed.
STAGES = (
    "extract_graph",
    "summarize_chunk",
    "resolve",
    "contextualize_chunk",
    "rerank",
    "answer",
    "pseudo_query",
    "summarize_entity",
)
REASONING_LEVELS = ("none", "low", "medium", "high")
CONFIG_NAME = "gligabao.toml"


class Setting(Frozen):
    __slots__ = ("choices", "default", "help", "high", "key", "kind", "low", "secret")
    key: str  # dotted: "chunk_size", "llm.base_url"
    kind: type
    default: Any
    help: str
    low: float | None
    high: float | None
    choices: tuple[str, ...] | None
    secret: bool

    def __init__(
        self,
        key: str,
        kind: type,
        default: Any,
        help: str,
        low: float | None = None,
        high: float | None = None,
        choices: tuple[str, ...] | None = None,
        secret: bool = False,
    ) -> None:
        self._fill(key, kind, default, help, low, high, choices, secret)

    @property
    def env(self) -> str:
        return "GB_DB" if self.key == "database" else "GB_" + self.key.replace(".", "_").upper()


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "database",
        str,
        "gligabao.db",
        "the SQLite file everything is stored in, or a postgresql:// URL",
    ),
    Setting("schema", str, "gligabao", "the PostgreSQL schema gb keeps its tables in"),
    Setting("dataset", str, "default", "the namespace documents, graph and vectors belong to"),
    Setting("chunk_size", int, 1024, "largest chunk in tokens, overlap included", 32, 8000),
    Setting("chunk_overlap_percent", int, 20, "share of a chunk that repeats the previous", 0, 50),
    Setting("mode", str, "auto", "how texts are cut", choices=MODES),
    Setting("tokenizer", str, "estimator", "estimator, or tiktoken:ENCODING for exact counts"),
    Setting("concurrency", int, 8, "LLM requests in flight at once", 1, 64),
    Setting(
        "busy_timeout", float, 10.0, "seconds to wait for a database another process locks", 0, 3600
    ),
    Setting("contextual", bool, False, "write a situating context for each chunk"),
    Setting(
        "chat.window",
        str,
        "multi",
        "a chat cut in 256-token windows of whole messages (multi) or a message a chunk",
        choices=("multi", "single"),
    ),
    Setting(
        "markdown.min_section_tokens",
        int,
        0,
        "pack sibling markdown sections smaller than this into one chunk (0: never)",
        0,
        8000,
    ),
    # Comma-separated; checked by gligabao.remember.document.parse_stages, which names the
    # valid ones.
    Setting("stages", str, "graph,summaries,embed", "what gb remember does (or: embed)"),
    Setting("llm.base_url", str, None, "OpenAI-compatible endpoint; else OPENAI_BASE_URL"),
    Setting("llm.api_key_env", str, "OPENAI_API_KEY", "environment variable holding the key"),
    Setting("llm.api_key", str, None, "the key itself (prefer api_key_env)", secret=True),
    Setting("llm.timeout", float, 60.0, "seconds before a request is retried", 1, 3600),
    Setting("llm.max_retries", int, 4, "retries on 429, 5xx and timeouts", 0, 20),
    Setting("llm.stream", bool, True, "stream answers: llm.timeout bounds gaps, not answers"),
    Setting("embeddings.model", str, "text-embedding-3-small", "embedding model of every index"),
    Setting("embeddings.dimensions", int, 1536, "vector dimensions", 1, 8192),
    Setting("embeddings.base_url", str, None, "endpoint for embeddings; else llm.base_url"),
    Setting("embeddings.api_key_env", str, None, "key variable for embeddings; else llm's"),
    Setting(
        "embeddings.max_tokens",
        int,
        0,
        "tokens the embedding model reads; larger chunks get a vector a piece (0: learnt)",
        0,
        1_000_000,
    ),
    Setting(
        "search.fusion",
        str,
        "convex",
        "how hybrid search fuses BM25 and vectors: convex (weighted scores) or rrf",
        choices=("convex", "rrf"),
    ),
    Setting(
        "search.vector_weight",
        float,
        0.5,
        "the vectors' share of a convex fusion; gb eval --tune learns one per dataset",
        0,
        1,
    ),
    Setting(
        "search.tune_after_import",
        int,
        0,
        "after gb remember, learn the fusion weight from N pseudo-queries if none holds",
        0,
        10000,
    ),
    Setting(
        "search.guard",
        bool,
        True,
        "halve a query's vector weight where its vectors do not separate or miss BM25's best",
    ),
    Setting("search.rrf_k", int, 60, "constant of search.fusion = rrf", 1, 10000),
    Setting("search.depth", int, 50, "candidates each method gives the fusion", 1, 10000),
    Setting(
        "search.query_timeout",
        float,
        2.0,
        "seconds a search waits for its query's vector before going on by BM25 alone",
        0.1,
        3600,
    ),
    Setting("search.exact", bool, False, "rank vectors by the exact scan, not the quantized one"),
    Setting("search.rerank", bool, False, "let the chat model reorder the fused candidates"),
    Setting("search.rerank_depth", int, 20, "fused candidates the chat model reorders", 2, 100),
    Setting(
        "search.rerank_chars", int, 600, "characters of each candidate the model reads", 50, 20000
    ),
    Setting("models.default", str, "gpt-4o-mini", "model of every stage not named below"),
    *(Setting(f"models.{s}", str, None, f"model of the {s} stage") for s in STAGES),
    *(
        Setting(f"reasoning.{s}", str, "none", f"reasoning of {s}", choices=REASONING_LEVELS)
        for s in STAGES
    ),
)
BY_KEY = {s.key: s for s in SETTINGS}
# Names that must name something: blank, they would reach the store as an empty name.
_NOT_BLANK = frozenset({"database", "dataset", "models.default", "embeddings.model"})
_SECTIONS = {
    "llm",
    "embeddings",
    "models",
    "reasoning",
    "prices",
    "search",
    "chat",
    "markdown",
}


class Price(Frozen):
    """USD per million tokens."""

    __slots__ = ("cached_input", "input", "output")
    input: float
    output: float
    cached_input: float | None

    def __init__(self, input: float, output: float, cached_input: float | None = None) -> None:
        self._fill(input, output, cached_input)

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        cached_rate = self.input if self.cached_input is None else self.cached_input
        fresh = max(input_tokens - cached_tokens, 0)
        return (
            fresh * self.input + cached_tokens * cached_rate + output_tokens * self.output
        ) / 1e6


# OpenAI's list prices of the default models (USD per million tokens), as of the date
# below: they apply where a model is called at OpenAI's own API (no base_url, or
# api.openai.com), never to a local or other server, and [prices] overrides them.
BUILTIN_PRICES_AS_OF = "2025-06-01"
BUILTIN_CHAT_PRICES = {"gpt-4o-mini": Price(0.15, 0.60, 0.075)}
BUILTIN_EMBEDDING_PRICES = {"text-embedding-3-small": Price(0.02, 0.0)}
BUILTIN_SOURCE = f"built-in (OpenAI, as of {BUILTIN_PRICES_AS_OF})"
# A model as an API answers its name: the one asked for and the snapshot's date.
_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")


class Config(Frozen):
    values: Mapping[str, Any]
    sources: Mapping[str, str]
    prices: Mapping[str, Price]
    path: Path | None
    warnings: tuple[str, ...]

    def __init__(
        self,
        values: Mapping[str, Any],
        sources: Mapping[str, str],
        prices: Mapping[str, Price] | None = None,
        path: Path | None = None,
        warnings: tuple[str, ...] = (),
    ) -> None:
        self._fill(values, sources, {} if prices is None else prices, path, warnings)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def model_for(self, stage: str) -> str:
        return self.values.get(f"models.{stage}") or self.values["models.default"]

    def price_of(self, model: str) -> Price | None:
        """The price of a model as a call named it, or as the API answered it: a snapshot
        (`gpt-4o-mini-2024-07-18`) is priced as its model unless [prices] names it."""
        return self.prices.get(model) or self.prices.get(_DATED.sub("", model))

    def reasoning_for(self, stage: str) -> str:
        return self.values.get(f"reasoning.{stage}", "none")

    def overridden(self, values: Mapping[str, Any], origin: str) -> Config:
        """This configuration with `values` (by key) in place, each checked as a flag is
        and said to come from `origin` (a request of `gb serve`): a value that cannot
        work is a UsageError naming it."""
        known = {s.key: s for s in SETTINGS}
        changed, sources = dict(self.values), dict(self.sources)
        for key, raw in values.items():
            if key not in known:
                raise UsageError(f"{key} is not a setting")
            try:
                changed[key] = _coerce(known[key], raw, origin)
            except ConfigError as exc:
                raise UsageError(str(exc)) from None
            sources[key] = origin
        return Config(changed, sources, self.prices, self.path, self.warnings)

    def dataset_named(self) -> str | None:
        """The dataset --dataset, GB_DATASET or the config file names; None when only the
        default applies (`gb list` and `gb stats` then cover every dataset)."""
        return None if self.sources.get("dataset", "default") == "default" else self["dataset"]

    def chunk_settings(self) -> ChunkSettings:
        from gligabao.chunk import ChunkSettings, get_tokenizer  # not for reading commands
        from gligabao.chunk.tokens import UnknownTokenizer

        try:
            tokenizer = get_tokenizer(self["tokenizer"])
        except UnknownTokenizer as exc:
            if self.sources.get("tokenizer") == "flag":  # --tokenizer: a usage error
                raise UsageError(str(exc)) from None
            raise
        return ChunkSettings(
            chunk_size=self["chunk_size"],
            overlap_percent=self["chunk_overlap_percent"],
            mode=self["mode"],
            tokenizer=tokenizer,
            chat_window=self["chat.window"],
            min_section_tokens=self["markdown.min_section_tokens"],
        )

    def shown(self) -> list[tuple[str, Any, str]]:
        """(key, value, source) for `gb config`, secrets masked."""
        # Here, not at the top: only `gb config` shows settings, and every command reads them.
        from gligabao.base.redact import mask, safe_url

        rows = []
        for setting in SETTINGS:
            value = self.values[setting.key]
            if setting.secret and value:
                value = mask(value)
            elif (setting.key.endswith("base_url") or setting.key == "database") and value:
                # A key given as the URL's user or password, or in its query string.
                value = safe_url(value)
            rows.append((setting.key, value, self.sources[setting.key]))
        for model, price in sorted(self.prices.items()):
            rows.append((f"prices.{model}", price, self.sources.get(f"prices.{model}", "file")))
        return rows


def find_config_file(explicit: str | None, env: Mapping[str, str]) -> Path | None:
    # Looked for with os.stat (_is_file): pathlib (~1 ms of a start) is imported only
    # where a file is named or found, and most runs have none.
    if explicit:
        if not _is_file(explicit):
            raise ConfigError(f"config file {explicit} does not exist")
        found = explicit
    elif env.get("GB_CONFIG"):
        found = env["GB_CONFIG"]
        if not _is_file(found):
            raise ConfigError(f"GB_CONFIG points to {found}, which does not exist")
    else:
        found = CONFIG_NAME  # in the working folder, else the user's
        if not _is_file(found):
            found = os.path.join(_user_config_folder(), CONFIG_NAME)
            if not _is_file(found):
                return None
    from pathlib import Path

    return Path(found)


# What Path.is_file() takes for "no such file" rather than an error to raise.
_ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})


def _is_file(name: str) -> bool:
    """Path(name).is_file(), without pathlib."""
    try:
        return stat.S_ISREG(os.stat(name).st_mode)
    except OSError as exc:
        if exc.errno not in _ABSENT:
            raise
    except ValueError:  # a NUL in the name
        pass
    return False


def user_config_dir() -> Path:
    """The user's configuration folder, as platformdirs names it."""
    from pathlib import Path

    return Path(_user_config_folder())


def _user_config_folder() -> str:
    """user_config_dir(). On Linux that is the XDG one, said here: platformdirs' import is
    ~6 ms of every `gb search`."""
    if sys.platform == "linux" and "ANDROID_DATA" not in os.environ:
        base = os.environ.get("XDG_CONFIG_HOME", "")
        if not os.path.isabs(base):  # unset, empty or relative: ignored, as XDG says
            base = os.path.expanduser("~/.config")
        return os.path.join(base, "gligabao")
    from platformdirs import user_config_dir as platform_dir

    return platform_dir("gligabao")


def load_config(
    config_path: str | None = None,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """Resolve every setting (flag > environment > file > default) and validate it."""
    env = os.environ if env is None else env
    path = find_config_file(config_path, env)
    file_values, prices, warnings = _read_file(path) if path else ({}, {}, [])
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for setting in SETTINGS:
        flag = (flags or {}).get(setting.key)
        if flag is not None:
            values[setting.key] = _coerce(setting, flag, "flag")
            sources[setting.key] = "flag"
        elif env.get(setting.env) not in (None, ""):
            values[setting.key] = _coerce(setting, env[setting.env], f"env {setting.env}")
            sources[setting.key] = f"env {setting.env}"
        elif setting.key in file_values:
            values[setting.key] = _coerce(setting, file_values[setting.key], str(path))
            sources[setting.key] = str(path)
        else:
            values[setting.key] = setting.default
            sources[setting.key] = "default"
    if values["llm.base_url"] is None and env.get("OPENAI_BASE_URL"):
        values["llm.base_url"] = env["OPENAI_BASE_URL"]
        sources["llm.base_url"] = "env OPENAI_BASE_URL"
    for key in ("llm.base_url", "embeddings.base_url"):
        _check_url(key, values[key], sources[key])
    builtin = _builtin_prices(values)
    for model in builtin:
        sources[f"prices.{model}"] = BUILTIN_SOURCE
    for model in prices:
        sources[f"prices.{model}"] = str(path)
    return Config(values, sources, {**builtin, **prices}, path, tuple(warnings))


def _openai(url: str | None) -> bool:
    """Whether a base URL is OpenAI's own API (no base URL: the openai client's default)."""
    if not url:
        return True
    from urllib.parse import urlsplit

    return (urlsplit(url.strip()).hostname or "").lower() == "api.openai.com"


def _builtin_prices(values: Mapping[str, Any]) -> dict[str, Price]:
    """The built-in prices that apply: a chat model's where chat goes to OpenAI, an
    embedding model's where embeddings do. A local server's model of the same name is
    not billed at OpenAI's prices."""
    prices: dict[str, Price] = {}
    if _openai(values["llm.base_url"]):
        prices.update(BUILTIN_CHAT_PRICES)
    if _openai(values["embeddings.base_url"] or values["llm.base_url"]):
        prices.update(BUILTIN_EMBEDDING_PRICES)
    return prices


def _read_file(path: Path) -> tuple[dict[str, Any], dict[str, Price], list[str]]:
    # Imported here: most runs have no configuration file, and tomlkit takes ~25 ms.
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        document = tomlkit.parse(path.read_text(encoding="utf-8")).unwrap()
    except (TOMLKitError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read: {exc.strerror}") from None
    values: dict[str, Any] = {}
    warnings: list[str] = []
    prices: dict[str, Price] = {}
    for key, value in document.items():
        if key == "prices":
            prices = _read_prices(path, value)
        elif key in _SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [{key}] must be a table")
            for sub, sub_value in value.items():
                _take(path, f"{key}.{sub}", sub_value, values, warnings)
        else:
            _take(path, key, value, values, warnings)
    return values, prices, warnings


def _take(path: Path, key: str, value: Any, values: dict[str, Any], warnings: list[str]) -> None:
    if key in BY_KEY:
        values[key] = value
    else:
        # A near miss is most often a typo or a key put in the wrong table: name the key
        # meant, so the user need not look through gligabao.toml.example for it.
        import difflib

        # A key of the same name in another table first: "models.base_url" means
        # llm.base_url more likely than models.answer, which is spelt as much alike.
        leaf = key.rpartition(".")[2]
        same = [k for k in BY_KEY if k.rpartition(".")[2] == leaf]
        near = difflib.get_close_matches(key, same, n=1, cutoff=0) if same else []
        near = near or difflib.get_close_matches(key, BY_KEY, n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        warnings.append(f"{path}: unknown key {key!r} ignored{hint}")


def _read_prices(path: Path, table: Any) -> dict[str, Price]:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [prices] must be a table of models")
    prices = {}
    for model, entry in table.items():
        where = f"{path}: prices.{model}"
        if not isinstance(entry, dict) or not {"input", "output"} <= entry.keys():
            raise ConfigError(f"{where} must be {{ input = USD, output = USD }} per million tokens")
        numbers = {k: entry[k] for k in ("input", "output", "cached_input") if k in entry}
        for k, v in numbers.items():
            # nan would pass `v < 0` and make every cost nan: no budget would ever stop.
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < math.inf:
                raise ConfigError(f"{where}.{k} = {v!r} must be a number >= 0 (USD per 1M tokens)")
        prices[model] = Price(**{k: float(v) for k, v in numbers.items()})
    return prices


def _coerce(setting: Setting, raw: Any, origin: str) -> Any:
    """Check type, range and choices; strings from the environment are parsed."""
    shown = "****" if setting.secret else repr(raw)
    where = f" (from {origin})"
    value = raw
    if isinstance(raw, str) and setting.kind is not str:
        value = _parse(setting, raw)
    if setting.kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    # A value given on the command line that cannot work is a usage error (exit 2); the
    # same value from a file or the environment is a configuration one (5), naming it.
    refused = UsageError if origin == "flag" else ConfigError
    if (
        value is None
        or isinstance(value, bool) != (setting.kind is bool)
        or not isinstance(value, setting.kind)
    ):
        raise refused(
            f"{setting.key} = {shown}{where} must be {_kind_name(setting)}{_allowed(setting)}"
        )
    # nan passes every range check below, and inf those without a bound.
    if setting.kind is float and not math.isfinite(value):
        raise refused(f"{setting.key} = {shown}{where} must be a finite number{_allowed(setting)}")
    if setting.key in _NOT_BLANK and not value.strip():
        raise refused(
            f"{setting.key} = {shown}{where} must not be empty: name one, or leave it out "
            f"for the default ({setting.default})"
        )
    if setting.low is not None and not setting.low <= value <= setting.high:
        raise refused(f"{setting.key} = {shown}{where} is out of range{_allowed(setting)}")
    if setting.choices and value not in setting.choices:
        raise refused(f"{setting.key} = {shown}{where} is not allowed{_allowed(setting)}")
    return value


def _url_problem(url: str) -> str | None:
    """Why `url` cannot be an endpoint's base URL, or None when it can."""
    from urllib.parse import urlsplit  # only when a base URL is set

    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 -- read for its check: a port that is not a number raises
    except ValueError as exc:
        return f"it cannot be read as a URL ({exc})"
    if parts.scheme.lower() not in ("http", "https"):
        return "it must begin with http:// or https://"
    if not parts.hostname:
        return "it names no host"
    return None


def _check_url(key: str, value: str | None, source: str) -> None:
    """A base URL refused at start, before anything is stored: tried, a URL that is none
    would fail each call after its retries, and leave every input pending."""
    if not value or not value.strip():
        return
    problem = _url_problem(value)
    if problem is not None:
        from gligabao.base.redact import safe_url  # a key written into it stays unsaid

        raise ConfigError(
            f"{key} = {safe_url(value)!r} (from {source}) is not an endpoint URL: {problem}, "
            "as in http://localhost:8080/v1"
        )


def _parse(setting: Setting, raw: str) -> Any:
    text = raw.strip()
    if setting.kind is bool:
        lowered = text.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        return raw
    try:
        return setting.kind(text)
    except ValueError:
        return raw


def _kind_name(setting: Setting) -> str:
    return {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}[
        setting.kind
    ]


def _allowed(setting: Setting) -> str:
    if setting.low is not None:
        low, high = (int(b) if setting.kind is int else b for b in (setting.low, setting.high))
        return f" (allowed {low}..{high})"
    if setting.choices:
        return f" (allowed {', '.join(setting.choices)})"
    return ""
