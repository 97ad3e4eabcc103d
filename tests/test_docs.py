"""The documentation says what the program does.

- docs/usage.md documents every `gb` command (a section `## \\`gb NAME\\``) and, in that
  section, every long flag of the command's options, as the typer app builds them.
- The README's shell examples run: every line of a ```sh block (after the set-up block)
  that calls `gb`, except those marked `# needs an LLM endpoint`, exits 0 with no LLM
  endpoint configured, run by bash in a folder holding README.md and docs/ and the
  database the README's first command makes (`gb remember README.md`). `gb` there is
  `python -m gligabao` of this checkout.
- The README's Python example runs on that database and handles "not found".
- README.md stays short, and no requirement ids or issue numbers reach the docs.

No network: the LLM is never configured, so gb stores texts and chunks and says what it
skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
USAGE = DOCS / "usage.md"
NEEDS_LLM = "# needs an LLM endpoint"
SETUP_REMEMBER = ".venv/bin/gb remember README.md"
README_MAX_LINES = 250
TIMEOUT = 60
# The reader's own notes, for the Python example.
NOTES = (
    "Alice Moreau works at Acme Corp since 2015-03-01.\n"
    "Acme Corp is led by Bruno Tanaka since 2015-01-10.\n"
)


# ---- the README's blocks


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """(language, lines) of each fenced block, in order."""
    blocks: list[tuple[str, list[str]]] = []
    language: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        fence = re.match(r"^```(\w*)\s*$", line)
        if fence and language is None:
            language, lines = fence.group(1), []
        elif line.startswith("```") and language is not None:
            blocks.append((language, lines))
            language = None
        elif language is not None:
            lines.append(line)
    return blocks


def _calls_gb(line: str) -> bool:
    return "gb" in line.split()


def _shell_examples() -> list[str]:
    """The README's shell example lines that call gb, after the set-up block."""
    sh = [lines for language, lines in _blocks(README.read_text()) if language == "sh"]
    return [line for lines in sh[1:] for line in lines if _calls_gb(line)]


def _offline_examples() -> list[str]:
    return [line for line in _shell_examples() if NEEDS_LLM not in line]


def _command_of(line: str) -> str:
    """An example's test id: its command, without the comment."""
    return line.split("  #")[0].strip()


def _python_examples() -> list[str]:
    return [
        "\n".join(lines) for language, lines in _blocks(README.read_text()) if language == "python"
    ]


# ---- a folder as a newcomer's checkout, with the database the README's first line makes


def _environment(home: Path) -> dict[str, str]:
    """This process's environment with no LLM endpoint, no gb setting and no user config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GB_"))}
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["DOCS_PYTHON"] = sys.executable
    env.pop("COLUMNS", None)
    return env


def _bash(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = 'gb() { "$DOCS_PYTHON" -m gligabao "$@"; }\n' + line + "\n"
    return subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


class Checkout:
    """A folder with README.md and docs/, and the database `gb remember README.md` made,
    put back as it was before each example."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root.parent / "home"
        self.env = _environment(self.home)
        self.saved = root.parent / "saved"

    def save(self) -> None:
        self.saved.mkdir()
        for path in self.root.glob("gligabao.db*"):
            shutil.copy2(path, self.saved / path.name)

    def restore(self) -> None:
        for path in self.root.glob("gligabao.db*"):
            path.unlink()
        for path in self.saved.iterdir():
            shutil.copy2(path, self.root / path.name)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    if shutil.which("bash") is None:
        pytest.skip("the README's examples are bash")
    root = tmp_path_factory.mktemp("docs") / "gligabao"
    root.mkdir()
    shutil.copy2(README, root / "README.md")
    shutil.copytree(DOCS, root / "docs")
    made = Checkout(root)
    first = _bash("gb remember README.md", root, made.env)
    assert first.returncode == 0, first.stderr
    assert "no LLM endpoint is configured" in first.stderr
    made.save()
    return made


# ---- docs/usage.md: every command, every option


def _commands() -> dict[str, list[str]]:
    """Each gb command and the long flags of its options (--no-x forms too)."""
    import typer

    from gligabao.cli import load

    group = typer.main.get_command(load())
    commands: dict[str, list[str]] = {}
    for name, command in group.commands.items():
        flags = []
        for param in command.params:
            if param.param_type_name == "option":
                flags += [f for f in [*param.opts, *param.secondary_opts] if f.startswith("--")]
        commands[name] = flags
    return commands


def _usage_sections() -> dict[str, str]:
    """docs/usage.md's section of each command: from `## \\`gb NAME\\`` to the next `## `."""
    sections: dict[str, str] = {}
    name: str | None = None
    for line in USAGE.read_text().splitlines():
        heading = re.match(r"^## `gb ([\w-]+)`\s*$", line)
        if heading:
            name = heading.group(1)
            sections[name] = ""
        elif line.startswith("## "):
            name = None
        elif name is not None:
            sections[name] += line + "\n"
    return sections


def test_usage_documents_every_command_and_option() -> None:
    commands = _commands()
    sections = _usage_sections()
    assert len(commands) >= 18
    missing = [name for name in commands if name not in sections]
    assert not missing, f"docs/usage.md has no section `## \\`gb NAME\\`` for: {missing}"
    unknown = [name for name in sections if name not in commands]
    assert not unknown, f"docs/usage.md documents commands gb does not have: {unknown}"
    undocumented = [
        f"gb {name} {flag}"
        for name, flags in commands.items()
        for flag in flags
        if not re.search(r"`" + re.escape(flag) + r"[\s`]", sections[name])
    ]
    assert not undocumented, f"docs/usage.md does not document: {undocumented}"
    assert "--version" in USAGE.read_text()


# ---- the README's examples run


def test_the_readme_starts_with_the_two_setup_lines() -> None:
    language, lines = _blocks(README.read_text())[0]
    assert language == "sh"
    assert lines[0].endswith(SETUP_REMEMBER)
    assert lines[1].endswith(".venv/bin/python -m pytest -q")
    ci = ROOT / ".ci" / "run"
    if ci.exists():
        assert lines[1] in ci.read_text()


def test_the_readme_marks_what_needs_an_endpoint() -> None:
    examples = _shell_examples()
    assert len(_offline_examples()) >= 10
    assert any(NEEDS_LLM in line for line in examples)


@pytest.mark.parametrize("line", _offline_examples(), ids=_command_of)
def test_a_readme_example_runs_offline(checkout: Checkout, line: str) -> None:
    checkout.restore()
    done = _bash(line, checkout.root, checkout.env)
    assert done.returncode == 0, f"{line}\nexit {done.returncode}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("code", _python_examples())
def test_the_readme_python_example_runs(checkout: Checkout, code: str) -> None:
    """On the README's database, offline, with a notes.md of the reader's own: the notes
    are stored and found, and the entity that is not there (no graph offline) is said."""
    checkout.restore()
    (checkout.root / "notes.md").write_text(NOTES)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=checkout.root,
        env=checkout.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    notes = str((checkout.root / "notes.md").resolve())
    assert any(re.match(re.escape(notes) + r":\d+-\d+ ", line) for line in lines), lines
    said = [line for line in lines if "Acme Corp" in line and not line.startswith(notes)]
    assert said, lines  # no entity named so: the GbError's line, printed


# ---- the docs themselves


def test_the_readme_is_short() -> None:
    assert len(README.read_text().splitlines()) <= README_MAX_LINES


def test_no_requirement_ids_or_issue_numbers() -> None:
    # C0 and C1 are the control-character sets, not ids: C2 and up, R, S, Q, X are.
    ids = re.compile(r"\bSPEC\b|\b[Ii]ssues? \d|\b(?:[RSQX]\d+|C[2-9]\d*)\b")
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in [README, *sorted(DOCS.glob("*.md"))]
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if ids.search(line)
    ]
    assert not found, "\n".join(found)


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a file's headings: lower case, punctuation dropped,
    spaces as hyphens."""
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", path.read_text(), flags=re.MULTILINE)
    }


def test_the_docs_links_lead_somewhere() -> None:
    broken = []
    for path in [README, *sorted(DOCS.glob("*.md"))]:
        text = re.sub(r"`[^`\n]*`", "", path.read_text())  # `![alt](src)` is no link
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", text):
            if "://" in target:
                continue
            linked = (path.parent / target) if target else path
            if not linked.exists():
                broken.append(f"{path.relative_to(ROOT)} -> {target}")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{path.relative_to(ROOT)} -> {target}#{anchor}")
    assert not broken, broken
