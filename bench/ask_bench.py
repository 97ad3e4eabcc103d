"""`gb ask` against a real local model: how often an answer holds a verified citation,
how many citations are dropped, and the time per question.

It takes a handful of questions from shared/retrieval-dev (`queries.jsonl`: the query
text is the question): the first query of each gold file of at most `--max-bytes`, in
the file's order, `--questions` of them (default 6), and remembers only their gold files
plus the `--distractors` smallest corpus files that hold none of their gold (default 3),
with `gb remember FILES --stages embed` (chunks, keyword index and vectors, no graph:
extracting one with a 0.5B model on 2 cores would take far too long, so `gb ask` answers
from chunks). The embeddings come from retrieval-dev's `embed_server.py`
(all-MiniLM-L6-v2, 384 dimensions), the `answer` stage from llama.cpp's server with
Qwen2.5-Coder-0.5B-Instruct (shared/realllm). Unless `--llm-url` / `--embed-url` name
servers already running, the bench starts both on free ports (llama.cpp with one slot,
so the whole 8,192-token context is the answer's) and stops them at the end.

Each question is asked as a user would, `python -m gligabao ask QUESTION --json` in a
fresh process (start-up included in its time), on a fresh database in a temporary folder;
exit 1 (no support in the memory) is a result, not an error. Per question it prints the
time, whether the answer is supported, the citations that held and those dropped (with
why), whether the gold file was among the sources given and whether a citation points
into it (and at the gold span's lines), and the answer call's tokens and server time
from `gb inferences ID`. Then the totals: share of answers with at least one verified
citation, citations dropped, mean and median time per question; and the first
question asked a second time, which must make no new LLM call (the recorded answer is
reused: `reused`, the same inference id, no new `answer` record). With `--show`, each
answer, its quotes, and for each quote dropped where it is after all: in another source
given (the model gave the wrong number), in one once markdown's inline marks are left
out, or in none, with the longest share of it found word for word in one source (a
quote the model nearly copied, a word added or changed, against one in its own words).

The model samples (the server's default temperature), so the figures move from run to
run; on 2 shared cores the times move with the load, printed at the end.

Setup, once (about a minute each, ~500 MB of packages for the model), then run from the
repository root:

    bash ../shared/realllm/setup.sh /tmp/realllm
    (cd ../shared/retrieval-dev && bash setup.sh /tmp/embvenv)
    .venv/bin/python bench/ask_bench.py --show           # 6 questions (~8-30 min on 2 cores)
    .venv/bin/python bench/ask_bench.py --questions 3 -k 4 --show
    .venv/bin/python bench/ask_bench.py --llm-url http://127.0.0.1:18790/v1 \\
        --embed-url http://127.0.0.1:19401/v1 --json > ask.json
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gligabao.base.evidence import locate_quote  # noqa: E402

API_KEY = "sk-local"
# gb's max_output_tokens for the answer stage: an answer that used as many was cut off,
# and asked for once more (a record's tokens are those of all its attempts).
CUT_OFF = 2048
# A dropped quote of which this share is found word for word in one source was nearly
# copied (a word added or changed); below it, the model wrote its own words.
NEAR = 0.8


def _shared() -> Path:
    """../shared beside the checkout (or beside the folder of its worktrees)."""
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared").is_dir():
            return base / "shared"
    return ROOT.parent / "shared"


# ------------------------------------------------------------------ the set


@dataclass(frozen=True)
class Question:
    line: int  # in queries.jsonl, from 1
    text: str
    source: str  # relative to the set's folder
    start: int  # the gold span's UTF-8 bytes
    end: int
    first_line: int  # the gold span's lines, from 1
    last_line: int


def _lines_of(path: Path, start: int, end: int) -> tuple[int, int]:
    data = path.read_bytes()
    first = data.count(b"\n", 0, start) + 1
    return first, first + data.count(b"\n", start, max(start, end - 1))


def choose(dev: Path, n: int, max_bytes: int, distractors: int) -> tuple[list[Question], list[str]]:
    """The first query of each gold file of at most `max_bytes`, `n` of them, and the
    `distractors` smallest corpus files that hold none of their gold."""
    chosen: list[Question] = []
    files: set[str] = set()
    for number, line in enumerate((dev / "queries.jsonl").open(encoding="utf-8"), start=1):
        q = json.loads(line)
        path = dev / q["source"]
        if q["source"] in files or path.stat().st_size > max_bytes:
            continue
        first, last = _lines_of(path, q["start"], q["end"])
        chosen.append(Question(number, q["query"], q["source"], q["start"], q["end"], first, last))
        files.add(q["source"])
        if len(chosen) == n:
            break
    others = sorted(
        (p.stat().st_size, str(p.relative_to(dev)))
        for p in (dev / "corpus").rglob("*")
        if p.is_file() and str(p.relative_to(dev)) not in files
    )
    return chosen, [name for _, name in others[:distractors]]


# ------------------------------------------------------------------ the servers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def start_server(
    name: str, argv: list[str], cwd: Path, port: int, work: Path, wait: float
) -> tuple[subprocess.Popen[bytes], str]:
    """`argv` started with its output in WORK/NAME.log; its /v1 URL once /v1/models answers."""
    logfile = (work / f"{name}.log").open("wb")
    process = subprocess.Popen(argv, cwd=cwd, stdout=logfile, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{name} server exited ({process.returncode}): see {logfile.name}")
        if _answers(f"{url}/models"):
            return process, url
        time.sleep(0.5)
    process.terminate()
    raise SystemExit(f"{name} server did not answer in {wait:.0f} s: see {logfile.name}")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# ------------------------------------------------------------------ gb


def gb_env(config: Path) -> dict[str, str]:
    """The environment of every gb process: this bench's config, nothing of the caller's."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("GB_", "OPENAI_", "EMBEDDINGS_"))
    }
    env.update(GB_CONFIG=str(config), OPENAI_API_KEY=API_KEY, GB_COLOR="0", NO_COLOR="1")
    return env


def gb(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float | None = None
) -> tuple[int, str, str, float]:
    """`python -m gligabao ARGS`: exit status (-9 when killed at `timeout`), stdout,
    stderr, wall seconds."""
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gligabao", *args],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else ""
        return -9, "", f"{err}killed after {timeout:g} s", time.perf_counter() - started
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - started


def answer_records(env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    rc, out, err, _ = gb(["inferences", "--stage", "answer", "-n", "1000", "--json"], env, cwd)
    if rc != 0:
        raise SystemExit(f"gb inferences failed ({rc}): {err.strip()}")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def record(inference_id: int | None, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    if inference_id is None:
        return {}
    rc, out, _, _ = gb(["inferences", str(inference_id), "--json"], env, cwd)
    if rc != 0 or not out.strip():
        return {}
    return json.loads(out.splitlines()[0])


# ------------------------------------------------------------------ asking


@dataclass
class Asked:
    question: Question
    rc: int
    seconds: float
    supported: bool = False
    citations: int = 0
    dropped: list[dict[str, Any]] = field(default_factory=list)
    gold_given: bool = False  # a source given was a chunk of the gold file
    span_given: bool = False  # ... covering lines of the gold span
    gold_cited: bool = False  # a verified citation points into the gold file
    span_cited: bool = False  # ... at lines of the gold span
    inference_id: int | None = None
    reused: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    server_ms: int | None = None
    answer: str = ""
    quotes: list[str] = field(default_factory=list)
    error: str = ""
    warnings: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        return {
            "line": self.question.line,
            "question": self.question.text,
            "gold": self.question.source,
            "rc": self.rc,
            "seconds": round(self.seconds, 2),
            "supported": self.supported,
            "citations": self.citations,
            "dropped": self.dropped,
            "gold_given": self.gold_given,
            "span_given": self.span_given,
            "gold_cited": self.gold_cited,
            "span_cited": self.span_cited,
            "inference_id": self.inference_id,
            "reused": self.reused,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "server_ms": self.server_ms,
            "answer": self.answer,
            "error": self.error,
            "warnings": self.warnings,
        }


def _overlaps(a: int | None, b: int | None, first: int, last: int) -> bool:
    if a is None:
        return False
    return a <= last and (b if b is not None else a) >= first


def _unmarked(text: str) -> str:
    """`text` without markdown's inline marks (code, emphasis, links' brackets)."""
    return text.translate({ord(c): None for c in "`*_[]"})


def _holding(quote: str, sources: list[dict[str, Any]], form: Any = str) -> list[int]:
    """The numbers of the sources whose text (as `form` makes it) holds `quote`, found
    as gb finds a citation's quote (exactly, else ignoring case and spacing)."""
    return [
        s["n"] for s in sources if locate_quote(quote, form(s["text"])).start_offset is not None
    ]


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _nearest(quote: str, sources: list[dict[str, Any]]) -> tuple[float, int | None]:
    """The longest run of `quote` (case and spacing aside) found word for word in one
    source, as a share of the quote, and that source's number: how near a dropped quote
    came to being copied."""
    q = _folded(quote)
    best: tuple[float, int | None] = (0.0, None)
    for s in sources:
        text = _folded(s["text"])
        match = difflib.SequenceMatcher(None, q, text, autojunk=False).find_longest_match(
            0, len(q), 0, len(text)
        )
        if q and match.size / len(q) > best[0]:
            best = (match.size / len(q), s["n"])
    return best


def ask(q: Question, dev: Path, k: int, env: dict[str, str], limit: float) -> Asked:
    rc, out, err, seconds = gb(["ask", q.text, "--json", "-k", str(k)], env, dev, limit)
    result = Asked(q, rc, seconds)
    result.warnings = [line for line in err.splitlines() if line.strip()]
    if rc not in (0, 1) or not out.strip():
        result.error = (err.strip().splitlines() or [f"exit {rc}, no output"])[-1]
        return result
    data = json.loads(out)
    gold = str((dev / q.source).resolve())
    result.supported = bool(data["supported"])
    result.citations = len(data["citations"])
    result.dropped = data["dropped_citations"]
    for d in result.dropped:  # where the quote is, if in a source given at all
        d["found_in"] = _holding(d["quote"], data["sources"])
        d["found_in_unmarked"] = _holding(_unmarked(d["quote"]), data["sources"], _unmarked)
        d["nearest_share"], d["nearest_source"] = _nearest(d["quote"], data["sources"])
    result.inference_id = data["inference_id"]
    result.reused = bool(data["reused"])
    result.answer = data["answer"]
    result.quotes = [c["quote"] for c in data["citations"]]
    for s in data["sources"]:
        if s["source"] == gold:
            result.gold_given = True
            if _overlaps(s["line_start"], s["line_end"], q.first_line, q.last_line):
                result.span_given = True
    for c in data["citations"]:
        if c["source"] == gold:
            result.gold_cited = True
            if _overlaps(c["line_start"], c["line_end"], q.first_line, q.last_line):
                result.span_cited = True
    rec = record(result.inference_id, env, dev)
    result.input_tokens = rec.get("input_tokens")
    result.output_tokens = rec.get("output_tokens")
    result.server_ms = rec.get("duration_ms")
    return result


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def row(a: Asked) -> str:
    if a.error:
        return f"{a.question.line:>4}  {a.seconds:7.1f}  ERROR (exit {a.rc}): {a.error}"
    why = ", ".join(sorted({d["why"].split(" [")[0] for d in a.dropped}))
    tokens = (
        f"{a.input_tokens:>5}/{a.output_tokens:<4}"
        if a.input_tokens is not None
        else f"{'-':>5}/{'-':<4}"
    )
    return (
        f"{a.question.line:>4}  {a.seconds:7.1f}  {a.rc:>2}  {_yes(a.supported):>9}  "
        f"{a.citations:>5}  {len(a.dropped):>7}  "
        f"{_yes(a.gold_given) + '/' + _yes(a.span_given):>10}  "
        f"{_yes(a.gold_cited) + '/' + _yes(a.span_cited):>10}  {tokens}"
        + ("  cut off, asked again" if (a.output_tokens or 0) >= CUT_OFF else "")
        + (f"  dropped: {why}" if why else "")
    )


HEADER = (
    "line   time s  rc  supported  cited  dropped  gold given  gold cited  tokens in/out\n"
    "                                               file/span   file/span"
)


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = _shared()
    parser.add_argument("--questions", type=int, default=6, help="questions (default 6)")
    parser.add_argument(
        "--distractors", type=int, default=3, help="files holding no gold (default 3)"
    )
    parser.add_argument(
        "--max-bytes", type=int, default=10_000, help="largest gold file (default 10,000)"
    )
    parser.add_argument(
        "-k", type=int, default=6, help="gb ask -k: chunks given to the model (default 6)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="llm.timeout in seconds (default 60, gb's: llama.cpp's server sends a ':' "
        "comment every 30 s while it reads a prompt, so the ~70 s before a first token "
        "do not time out)",
    )
    parser.add_argument("--retries", type=int, default=4, help="llm.max_retries (default 4, gb's)")
    parser.add_argument(
        "--question-timeout",
        type=float,
        default=900.0,
        help="seconds before a gb ask is killed and counted as failed (default 900)",
    )
    parser.add_argument("--set", type=Path, default=shared / "retrieval-dev", help="retrieval-dev")
    parser.add_argument(
        "--realllm", type=Path, default=Path("/tmp/realllm"), help="setup.sh's folder"
    )
    parser.add_argument(
        "--embvenv", type=Path, default=Path("/tmp/embvenv"), help="embed_server.py's venv"
    )
    parser.add_argument("--llm-url", help="a chat server already running (default: start one)")
    parser.add_argument("--embed-url", help="an embeddings server already running")
    parser.add_argument("--keep", type=Path, help="keep the database and logs in this folder")
    parser.add_argument("--show", action="store_true", help="print each answer and its quotes")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)

    dev = args.set.resolve()
    if not (dev / "queries.jsonl").is_file():
        raise SystemExit(f"no retrieval-dev set at {dev}: give --set")
    questions, distractors = choose(dev, args.questions, args.max_bytes, args.distractors)
    files = sorted({q.source for q in questions}) + distractors

    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        work = args.keep.resolve()
        holder = None
        for old in work.glob("ask.db*"):  # a fresh database, always
            old.unlink()
    else:
        holder = tempfile.TemporaryDirectory(prefix="ask-bench-")
        work = Path(holder.name)
    started: list[subprocess.Popen[bytes]] = []
    load_before = os.getloadavg()
    out = sys.stderr if args.json else sys.stdout

    def say(message: str = "") -> None:
        print(message, file=out, flush=True)

    try:
        embed_url = args.embed_url
        if not embed_url:
            python = args.embvenv / "bin" / "python"
            if not python.exists():
                raise SystemExit(f"no {python}: run (cd {dev} && bash setup.sh {args.embvenv})")
            port = _free_port()
            process, embed_url = start_server(
                "embed", [str(python), "embed_server.py", str(port)], dev, port, work, 120
            )
            started.append(process)
        llm_url = args.llm_url
        if not llm_url:
            model = args.realllm / "qwen.gguf"
            python = args.realllm / "venv" / "bin" / "python"
            if not model.exists() or not python.exists():
                raise SystemExit(
                    f"no {model}: run bash {dev.parent / 'realllm' / 'setup.sh'} {args.realllm}"
                )
            port = _free_port()
            server = dev.parent / "realllm" / "server.py"
            argv_ = [str(python), str(server), str(model), str(port), "--parallel", "1"]
            process, llm_url = start_server("llm", argv_, work, port, work, 300)
            started.append(process)
        config = work / "gligabao.toml"
        config.write_text(
            f'database = "{work / "ask.db"}"\n'
            "[llm]\n"
            f'base_url = "{llm_url}"\n'
            f"timeout = {args.timeout}\n"
            f"max_retries = {args.retries}\n"
            "[embeddings]\n"
            'model = "all-minilm-l6-v2"\n'
            "dimensions = 384\n"
            f'base_url = "{embed_url}"\n'
            "max_tokens = 256\n"  # embed_server.py truncates silently at 256 tokens
            "[models]\n"
            'default = "qwen2.5-coder-0.5b-instruct"\n',
            encoding="utf-8",
        )
        env = gb_env(config)

        say(f"chat: {llm_url}   embeddings: {embed_url}   database: {work / 'ask.db'}")
        say(f"llm.timeout {args.timeout:g} s, llm.max_retries {args.retries}, gb ask -k {args.k}")
        rc, _, rem_err, rem_s = gb(["remember", *files, "--stages", "embed"], env, dev)
        if rc != 0:
            raise SystemExit(f"gb remember failed ({rc}):\n{rem_err}")
        summary = (rem_err.strip().splitlines() or [""])[-1]
        say(
            f"remembered {len(files)} files in {rem_s:.1f} s ({len(distractors)} distractors: "
            f"{', '.join(Path(d).name for d in distractors)})"
        )
        if summary:
            say(f"  {summary}")
        say()
        for q in questions:
            say(f"{q.line:>4}  {q.source}:{q.first_line}-{q.last_line}  {q.text}")
        say()
        say(HEADER)

        results: list[Asked] = []
        for q in questions:
            a = ask(q, dev, args.k, env, args.question_timeout)
            results.append(a)
            say(row(a))
            if args.show:
                say(f"      answer: {a.answer}")
                for quote in a.quotes:
                    say(f"      quote:  {quote!r}")
                for d in a.dropped:
                    found = ", ".join(f"[{n}]" for n in d["found_in"]) or "no source given"
                    if not d["found_in"] and d["found_in_unmarked"]:
                        marks = ", ".join(f"[{n}]" for n in d["found_in_unmarked"])
                        found += f"; {marks} without markdown marks"
                    if not d["found_in"] and d["nearest_source"] is not None:
                        found += (
                            f"; {d['nearest_share']:.0%} of it word for word in "
                            f"[{d['nearest_source']}]"
                        )
                    where = f"{d['why']} (it is in {found})"
                    say(f"      dropped [{d['source']}] {where}: {d['quote']!r}")
                for w in a.warnings:
                    say(f"      stderr: {w}")

        # The first question again: its recorded answer, no new call.
        before = len(answer_records(env, dev))
        again = ask(questions[0], dev, args.k, env, args.question_timeout)
        new_calls = len(answer_records(env, dev)) - before
        same = again.inference_id == results[0].inference_id

        answered = [a for a in results if not a.error]
        times = [a.seconds for a in results]
        supported = sum(a.supported for a in results)
        dropped = [d for a in results for d in a.dropped]
        reasons: dict[str, int] = {}
        for d in dropped:
            key = d["why"].split(" [")[0]
            reasons[key] = reasons.get(key, 0) + 1
        misnumbered = sum(bool(d["found_in"]) for d in dropped)
        unmarked = sum(bool(d["found_in_unmarked"]) and not d["found_in"] for d in dropped)
        load_after = os.getloadavg()
        n = len(results)
        say()
        say(f"questions                         {n} ({n - len(answered)} failed)")
        say(f"answers with >= 1 verified cite   {supported}/{n} ({supported / n:.0%})")
        say(f"verified citations                {sum(a.citations for a in results)}")
        say(
            f"dropped citations                 {len(dropped)}"
            + (f" ({', '.join(f'{v} {k}' for k, v in sorted(reasons.items()))})" if reasons else "")
        )
        if dropped:
            say(f"  quote in another source given   {misnumbered} (the wrong number)")
            say(f"  in one without markdown marks   {unmarked} (` * _ [ ] left out)")
            say(f"  in no source                    {len(dropped) - misnumbered - unmarked}")
            near = sum(d["nearest_share"] >= NEAR and not d["found_in"] for d in dropped)
            say(f"  of those, >= {NEAR:.0%} word for word   {near} (the rest changed by the model)")
        say(
            f"gold file among the sources       {sum(a.gold_given for a in results)}/{n} "
            f"(gold span: {sum(a.span_given for a in results)}/{n})"
        )
        say(
            f"a citation into the gold file     {sum(a.gold_cited for a in results)}/{n} "
            f"(at the gold span: {sum(a.span_cited for a in results)}/{n})"
        )
        say(
            f"time per question                 mean {statistics.mean(times):.1f} s, "
            f"median {statistics.median(times):.1f} s, max {max(times):.1f} s"
        )
        served = [a.server_ms / 1000 for a in answered if a.server_ms is not None]
        if served:
            say(
                f"  answer call (gb inferences)     {statistics.mean(served):.1f} s mean (its last "
                f"attempt), tokens in {statistics.mean(a.input_tokens or 0 for a in answered):.0f}"
                f" / out {statistics.mean(a.output_tokens or 0 for a in answered):.0f} mean"
            )
        cut = sum((a.output_tokens or 0) >= CUT_OFF for a in answered)
        say(f"answers cut off, asked again      {cut}/{n} (at {CUT_OFF} output tokens)")
        say(
            f"{f'asked again (line {questions[0].line})':<34}{again.seconds:.2f} s, "
            f"reused {_yes(again.reused)}, same inference {_yes(same)}, "
            f"new answer calls {new_calls}, same answer {_yes(again.answer == results[0].answer)}"
        )
        say(
            f"load average: before {load_before[0]:.2f} {load_before[1]:.2f}, after "
            f"{load_after[0]:.2f} {load_after[1]:.2f} (1, 5 min) on {os.cpu_count()} cores"
        )
        if args.json:
            print(
                json.dumps(
                    {
                        "k": args.k,
                        "llm_timeout": args.timeout,
                        "max_retries": args.retries,
                        "files": files,
                        "remember_seconds": round(rem_s, 2),
                        "questions": [a.figures() for a in results],
                        "supported": supported,
                        "supported_share": supported / n,
                        "dropped": len(dropped),
                        "dropped_by_reason": reasons,
                        "dropped_misnumbered": misnumbered,
                        "dropped_unmarked": unmarked,
                        "dropped_near": sum(
                            d["nearest_share"] >= NEAR and not d["found_in"] for d in dropped
                        ),
                        "mean_seconds": statistics.mean(times),
                        "median_seconds": statistics.median(times),
                        "again": {
                            **again.figures(),
                            "new_answer_calls": new_calls,
                            "same_inference": same,
                        },
                        "load_before": load_before,
                        "load_after": load_after,
                        "cores": os.cpu_count(),
                    },
                    indent=2,
                )
            )
        return 0
    finally:
        for process in reversed(started):
            stop(process)
        if holder is not None:
            holder.cleanup()


if __name__ == "__main__":
    sys.exit(main())
