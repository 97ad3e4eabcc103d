"""Configuration: where settings come from, and refusals.

Precedence is flag > environment > file > default, and `gb config --json` says
which one each value came from. The file is the first of --config, GB_CONFIG,
./gligabao.toml and the user config folder. A bad value exits 5 with one line
that names the key, the value and what is allowed; an unknown key only warns.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomlkit

from gligabao.config import SETTINGS

EXAMPLE = Path(__file__).resolve().parents[2] / "gligabao.toml.example"
SECRET = "sk-test-Zq9PvX2mLk7Rt4Wy8Bn3Hc6Js1Fd5Gt"


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {stderr!r}"
    return lines[0]


def effective(gb_cli, *args: str) -> dict:
    result = gb_cli("config", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


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
# Every setting's default, as the docs and gligabao.toml.example state them: written out, not
# read from gligabao.config, so that a changed default fails a test.
DEFAULTS = {
    "database": "gligabao.db",
    "schema": "gligabao",
    "dataset": "default",
    "chunk_size": 1024,
    "chunk_overlap_percent": 20,
    "mode": "auto",
    "tokenizer": "estimator",
    "concurrency": 8,
    "busy_timeout": 10.0,
    "contextual": False,
    "stages": "graph,summaries,embed",
    "llm.base_url": None,
    "llm.api_key_env": "OPENAI_API_KEY",
    "llm.api_key": None,
    "llm.timeout": 60.0,
    "llm.max_retries": 4,
    "llm.stream": True,
    "embeddings.model": "text-embedding-3-small",
    "embeddings.dimensions": 1536,
    "embeddings.base_url": None,
    "embeddings.api_key_env": None,
    "embeddings.max_tokens": 0,
    "chat.window": "multi",
    "markdown.min_section_tokens": 0,
    "search.fusion": "convex",
    "search.vector_weight": 0.5,
    "search.rrf_k": 60,
    "search.guard": True,
    "search.tune_after_import": 0,
    "search.depth": 50,
    "search.query_timeout": 2.0,
    "search.exact": False,
    "search.rerank": False,
    "search.rerank_depth": 20,
    "search.rerank_chars": 600,
    "models.default": "gpt-4o-mini",
    **{f"models.{stage}": None for stage in STAGES},
    **{f"reasoning.{stage}": "none" for stage in STAGES},
}


def test_defaults_when_nothing_is_set(gb_cli) -> None:
    shown = effective(gb_cli)
    assert {key: entry["value"] for key, entry in shown.items() if key in DEFAULTS} == DEFAULTS
    assert all(shown[key]["source"] == "default" for key in DEFAULTS)
    # Beside the settings, only prices (built in for the default models at OpenAI's API).
    others = set(shown) - set(DEFAULTS)
    assert all(key.startswith("prices.") for key in others), "a new setting needs its default here"


def test_precedence_flag_over_env_over_file_over_default(gb_cli, monkeypatch) -> None:
    Path("gligabao.toml").write_text(
        'chunk_size = 100\nchunk_overlap_percent = 10\nmode = "text"\ndataset = "filed"\n'
    )
    monkeypatch.setenv("GB_CHUNK_SIZE", "200")
    monkeypatch.setenv("GB_CHUNK_OVERLAP_PERCENT", "30")
    monkeypatch.setenv("GB_DATASET", "from-env")
    shown = effective(gb_cli, "--chunk-size", "300")
    assert shown["chunk_size"] == {"value": 300, "source": "flag"}
    assert shown["chunk_overlap_percent"] == {"value": 30, "source": "env GB_CHUNK_OVERLAP_PERCENT"}
    assert shown["dataset"] == {"value": "from-env", "source": "env GB_DATASET"}
    assert shown["mode"] == {"value": "text", "source": "gligabao.toml"}
    assert shown["concurrency"] == {"value": 8, "source": "default"}


def test_precedence_reaches_the_chunker(gb_cli, monkeypatch) -> None:
    """The same precedence decides the cut: the flag's chunk size is the one used."""
    Path("gligabao.toml").write_text("chunk_size = 2000\n")
    monkeypatch.setenv("GB_CHUNK_SIZE", "1000")
    Path("doc.txt").write_text("Many words in a sentence here. " * 200)
    sizes = {}
    for flag in ([], ["--chunk-size", "64"]):
        result = gb_cli("chunk-preview", "--json", *flag, "doc.txt")
        assert result.exit_code == 0, result.stderr
        sizes[bool(flag)] = json.loads(result.stdout)
    assert sizes[False]["chunk_count"] > 1  # env 1000 beat the file's 2000
    assert max(c["tokens"] for c in sizes[False]["chunks"]) <= 1000
    assert sizes[True]["chunk_count"] > sizes[False]["chunk_count"]
    assert max(c["tokens"] for c in sizes[True]["chunks"]) <= 64


def test_env_strings_are_parsed_to_their_types(gb_cli, monkeypatch) -> None:
    monkeypatch.setenv("GB_CONTEXTUAL", "yes")
    monkeypatch.setenv("GB_LLM_TIMEOUT", "12.5")
    monkeypatch.setenv("GB_DB", "other.db")
    shown = effective(gb_cli)
    assert shown["contextual"] == {"value": True, "source": "env GB_CONTEXTUAL"}
    assert shown["llm.timeout"] == {"value": 12.5, "source": "env GB_LLM_TIMEOUT"}
    assert shown["database"] == {"value": "other.db", "source": "env GB_DB"}


def write_config(path: Path, dataset: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'dataset = "{dataset}"\n')
    return path


@pytest.mark.parametrize("present", [4, 3, 2, 1])
def test_config_file_search_order(gb_cli, monkeypatch, tmp_path, present: int) -> None:
    """--config, then GB_CONFIG, then ./gligabao.toml, then the user config folder."""
    user = write_config(tmp_path / ".config" / "gligabao" / "gligabao.toml", "user")
    local = write_config(Path("gligabao.toml"), "local")
    env_file = write_config(Path("env.toml"), "env")
    flag_file = write_config(Path("flag.toml"), "flag")
    args: list[str] = []
    if present >= 4:
        args = ["--config", str(flag_file)]
    if present >= 3:
        monkeypatch.setenv("GB_CONFIG", str(env_file))
    if present < 2:
        local.unlink()
    expected = {4: "flag", 3: "env", 2: "local", 1: "user"}[present]
    where = {4: flag_file, 3: env_file, 2: local, 1: user}[present]
    shown = effective(gb_cli, *args)
    assert shown["dataset"] == {"value": expected, "source": str(where)}


@pytest.mark.parametrize("xdg", [None, "", "relative/dir", "/somewhere/config"])
def test_the_user_config_folder_is_platformdirs_one(monkeypatch, tmp_path, xdg) -> None:
    """gb names it without importing platformdirs (on Linux): the same folder."""
    import platformdirs

    from gligabao.config import user_config_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    if xdg is None:
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
    assert user_config_dir() == Path(platformdirs.user_config_dir("gligabao"))


def test_no_config_file_anywhere(gb_cli) -> None:
    assert effective(gb_cli)["dataset"]["source"] == "default"


# (how the value is given, the key, the value, what the one line must say)
OUT_OF_RANGE = [
    ("chunk_size", "31", "32..8000"),
    ("chunk_size", "8001", "32..8000"),
    ("chunk_overlap_percent", "51", "0..50"),
    ("chunk_overlap_percent", "-1", "0..50"),
]
FLAG = {"chunk_size": "--chunk-size", "chunk_overlap_percent": "--overlap"}


@pytest.mark.parametrize(("key", "value", "allowed"), OUT_OF_RANGE)
@pytest.mark.parametrize("origin", ["file", "env", "flag"])
@pytest.mark.parametrize("command", ["config", "chunk-preview"])
def test_out_of_range_is_refused_naming_key_value_range(
    gb_cli, monkeypatch, command: str, origin: str, key: str, value: str, allowed: str
) -> None:
    """From a file or the environment a configuration error (5); as a flag, a usage error
    (2): the same line either way, naming where the value came from."""
    Path("doc.txt").write_text("Some text.\n")
    args = [command]
    if origin == "file":
        Path("gligabao.toml").write_text(f"{key} = {value}\n")
    elif origin == "env":
        monkeypatch.setenv(f"GB_{key.upper()}", value)
    else:
        args += [FLAG[key], value]
    if command == "chunk-preview":
        args.append("doc.txt")
    result = gb_cli(*args)
    assert result.exit_code == (2 if origin == "flag" else 5)
    assert result.stdout == ""
    line = one_line(result.stderr)
    assert line.startswith(f"gb: {key} = ")
    assert value in line
    assert f"(allowed {allowed})" in line
    assert {"file": "gligabao.toml", "env": f"GB_{key.upper()}", "flag": "flag"}[origin] in line


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ('chunk_size = "big"', "chunk_size = 'big' (from gligabao.toml) must be a whole number"),
        ("chunk_size = true", "chunk_size = True (from gligabao.toml) must be a whole number"),
        ("chunk_size = 512.5", "chunk_size = 512.5 (from gligabao.toml) must be a whole number"),
        ("contextual = 1", "contextual = 1 (from gligabao.toml) must be true or false"),
        ("dataset = 7", "dataset = 7 (from gligabao.toml) must be a string"),
        ('[llm]\ntimeout = "soon"', "llm.timeout = 'soon' (from gligabao.toml) must be a number"),
        ('[reasoning]\nresolve = "max"', "reasoning.resolve = 'max' (from gligabao.toml) is not"),
        ("llm = 3", "gligabao.toml: [llm] must be a table"),
        ("[prices]\nx = { input = -1, output = 1 }", "prices.x.input = -1 must be a number >= 0"),
        ("[prices]\nx = { input = 1 }", "prices.x must be { input = USD, output = USD }"),
    ],
)
def test_wrong_type_in_file_exits_5(gb_cli, toml: str, says: str) -> None:
    Path("gligabao.toml").write_text(toml + "\n")
    result = gb_cli("config")
    assert result.exit_code == 5
    assert says in one_line(result.stderr)


def test_wrong_type_in_env_exits_5(gb_cli, monkeypatch) -> None:
    monkeypatch.setenv("GB_CHUNK_SIZE", "a lot")
    result = gb_cli("config")
    assert result.exit_code == 5
    assert one_line(result.stderr) == (
        "gb: chunk_size = 'a lot' (from env GB_CHUNK_SIZE) must be a whole number "
        "(allowed 32..8000)"
    )


def test_invalid_toml_exits_5_with_the_line(gb_cli) -> None:
    Path("gligabao.toml").write_text("chunk_size = 512\ndataset = = 'x'\n")
    result = gb_cli("config")
    assert result.exit_code == 5
    line = one_line(result.stderr)
    assert line.startswith("gb: gligabao.toml is not valid TOML")
    assert "line 2" in line


def test_missing_config_file_exits_5(gb_cli, monkeypatch) -> None:
    result = gb_cli("config", "--config", "nowhere.toml")
    assert result.exit_code == 5
    assert one_line(result.stderr) == "gb: config file nowhere.toml does not exist"
    monkeypatch.setenv("GB_CONFIG", "gone.toml")
    result = gb_cli("chunk-preview", "-", input="text")
    assert result.exit_code == 5
    assert one_line(result.stderr) == "gb: GB_CONFIG points to gone.toml, which does not exist"


def test_the_mode_comes_from_the_flag_or_the_environment(gb_cli, monkeypatch) -> None:
    Path("doc.md").write_text("# Title\n\n" + "Some words here. " * 60 + "\n\n## Next\n\nMore.\n")
    by_flag = json.loads(gb_cli("chunk-preview", "--json", "--chunk-size", "64", "doc.md").stdout)
    assert by_flag["chunks"][0]["section"] == "Title"  # auto: markdown for .md
    as_text = gb_cli("chunk-preview", "--json", "--chunk-size", "64", "--mode", "text", "doc.md")
    assert json.loads(as_text.stdout)["chunks"][0]["section"] is None
    monkeypatch.setenv("GB_MODE", "text")
    from_env = gb_cli("chunk-preview", "--json", "--chunk-size", "64", "doc.md")
    assert json.loads(from_env.stdout) == json.loads(as_text.stdout)


def test_unknown_mode_is_refused(gb_cli) -> None:
    Path("doc.txt").write_text("Text.\n")
    result = gb_cli("chunk-preview", "--mode", "nonsense", "doc.txt")
    assert result.exit_code == 2  # a flag's value: a usage error
    assert one_line(result.stderr) == (
        "gb: mode = 'nonsense' (from flag) is not allowed "
        "(allowed auto, text, markdown, code, chat)"
    )


@pytest.mark.parametrize("spec", ["bogus", "tiktoken:", "sentencepiece:x"])
def test_unknown_tokenizer_is_refused(gb_cli, spec: str) -> None:
    Path("doc.txt").write_text("Text.\n")
    result = gb_cli("chunk-preview", "--tokenizer", spec, "doc.txt")
    assert result.exit_code == 2  # a flag's value: a usage error
    line = one_line(result.stderr)
    assert f"tokenizer {spec!r} is not known" in line
    assert "tiktoken:cl100k_base" in line


def test_unknown_keys_only_warn(gb_cli) -> None:
    Path("gligabao.toml").write_text(
        'chunk_sise = 512\ncolour = "blue"\n[llm]\nbase_ulr = "http://x"\n[weird]\na = 1\n'
    )
    result = gb_cli("config", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["chunk_size"]["source"] == "default"
    warnings = result.stderr.splitlines()
    assert warnings == [
        "gb: warning: gligabao.toml: unknown key 'chunk_sise' ignored; did you mean 'chunk_size'?",
        "gb: warning: gligabao.toml: unknown key 'colour' ignored",
        "gb: warning: gligabao.toml: unknown key 'llm.base_ulr' ignored; "
        "did you mean 'llm.base_url'?",
        "gb: warning: gligabao.toml: unknown key 'weird' ignored",
    ]
    # chunk-preview warns the same way and still works.
    Path("doc.txt").write_text("Text.\n")
    result = gb_cli("chunk-preview", "doc.txt")
    assert result.exit_code == 0
    assert "unknown key 'chunk_sise'" in result.stderr


def test_an_unknown_key_names_the_nearest_known_one(gb_cli) -> None:
    # A key in the wrong table is a near miss too: [models] default written as defualt,
    # a section's key at the top.
    Path("gligabao.toml").write_text('[models]\ndefualt = "m"\nbase_url = "http://x"\n')
    result = gb_cli("config", "--json")
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        "gb: warning: gligabao.toml: unknown key 'models.defualt' ignored; "
        "did you mean 'models.default'?",
        "gb: warning: gligabao.toml: unknown key 'models.base_url' ignored; "
        "did you mean 'llm.base_url'?",
    ]


@pytest.mark.parametrize("origin", ["file", "env"])
def test_api_key_is_masked(gb_cli, monkeypatch, origin: str) -> None:
    if origin == "file":
        Path("gligabao.toml").write_text(f'[llm]\napi_key = "{SECRET}"\n')
    else:
        monkeypatch.setenv("GB_LLM_API_KEY", SECRET)
    table = gb_cli("config")
    as_json = gb_cli("config", "--json")
    assert table.exit_code == as_json.exit_code == 0
    for output in (table.stdout, table.stderr, as_json.stdout, as_json.stderr):
        assert SECRET not in output
        assert SECRET[:12] not in output
    shown = json.loads(as_json.stdout)["llm.api_key"]["value"]
    assert shown.startswith("****")
    assert "llm.api_key" in table.stdout and "****" in table.stdout


def test_wrongly_typed_api_key_is_not_echoed(gb_cli) -> None:
    Path("gligabao.toml").write_text("[llm]\napi_key = 4815162342424242\n")
    result = gb_cli("config")
    assert result.exit_code == 5
    line = one_line(result.stderr)
    assert "4815162342424242" not in line
    assert "llm.api_key = ****" in line


def test_prices_are_shown(gb_cli) -> None:
    Path("gligabao.toml").write_text(
        "[prices]\n"
        '"gpt-4o-mini" = { input = 0.15, output = 0.6 }\n'
        '"local/qwen" = { input = 0, output = 0, cached_input = 0 }\n'
    )
    shown = effective(gb_cli)
    assert shown["prices.gpt-4o-mini"] == {
        "value": {"input": 0.15, "output": 0.6, "cached_input": None},
        "source": "gligabao.toml",
    }
    assert shown["prices.local/qwen"]["value"] == {"input": 0, "output": 0, "cached_input": 0}
    table = gb_cli("config")
    assert "prices.gpt-4o-mini" in table.stdout
    assert "input $0.15, output $0.6" in table.stdout


def test_example_loads_cleanly_with_every_default() -> None:
    """`gb config --config gligabao.toml.example`: no warning, every value the default."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "gligabao", "config", "--json", "--config", str(EXAMPLE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    shown = json.loads(done.stdout)
    assert {key: shown[key]["value"] for key in DEFAULTS} == DEFAULTS


def test_example_documents_every_key() -> None:
    """Each key is set to its default, or (no default) shown commented out in its section."""
    text = EXAMPLE.read_text()
    document = tomlkit.parse(text).unwrap()
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines():
        if line.startswith("["):
            current = line.strip("[]")
            sections[current] = []
        sections[current].append(line)
    assert {"llm", "embeddings", "models", "reasoning", "prices"} <= sections.keys()
    for setting in SETTINGS:
        section, _, key = setting.key.rpartition(".")
        lines = sections[section]
        table = document.get(section, {}) if section else document
        if setting.default is None:
            assert any(line.startswith(f"# {key} = ") for line in lines), setting.key
        else:
            assert table.get(key) == setting.default, setting.key
        # A comment line right above each key says what it is.
        at = next(i for i, line in enumerate(lines) if line.lstrip("# ").startswith(f"{key} ="))
        assert lines[at - 1].startswith("#") or section == "reasoning", setting.key
    assert any(line.startswith('# "') and "input =" in line for line in sections["prices"])


@pytest.mark.parametrize(
    ("where", "value", "problem"),
    [
        ("file", "not a url at all", "it must begin with http:// or https://"),
        ("GB_LLM_BASE_URL", "localhost:8080/v1", "it must begin with http:// or https://"),
        ("OPENAI_BASE_URL", "http:///v1", "it names no host"),
        ("GB_EMBEDDINGS_BASE_URL", "http://host:port/v1", "it cannot be read as a URL"),
    ],
)
def test_a_base_url_that_is_no_url_stops_gb_before_anything_is_stored(
    gb_cli, monkeypatch, where: str, value: str, problem: str
) -> None:
    key = "embeddings.base_url" if "EMBEDDINGS" in where else "llm.base_url"
    if where == "file":
        Path("gligabao.toml").write_text(f'[llm]\nbase_url = "{value}"\n')
        source = "gligabao.toml"
    else:
        monkeypatch.setenv(where, value)
        source = f"env {where}"
    Path("notes.txt").write_text("Alice met Bruno in Oslo.\n")

    result = gb_cli("remember", "notes.txt")
    assert result.exit_code == 5, result.stderr
    line = one_line(result.stderr)
    assert line.startswith(f"gb: {key} = {value!r} (from {source}) is not an endpoint URL: ")
    assert problem in line
    assert not Path("gligabao.db").exists()  # refused before anything is stored


def test_a_key_in_a_base_url_that_is_no_url_is_not_shown(gb_cli, monkeypatch) -> None:
    monkeypatch.setenv("GB_LLM_BASE_URL", "ftp://user:s3cret-key@example.org/v1")
    result = gb_cli("list")
    assert result.exit_code == 5
    assert "s3cret-key" not in result.stderr and "ftp://****@example.org/v1" in result.stderr
