"""How many pseudo-queries a dataset needs to learn its fusion weight (`gb eval --tune
--synthetic`), and what the weight learnt from them gives on gold queries it never saw.

On a dataset already remembered (with vectors), the script makes `max(--sizes)`
pseudo-queries as `gb eval --tune --synthetic --sample N` does (the recorded answers of
an earlier run are reused: say how many calls were paid), ranks every pseudo-query and
every gold query once at each weight of the tuning's grid, then for each size N draws
`--draws` bootstrap samples of N pseudo-queries, learns the weight on each as the tuning
does (`choose_weight`), and reports:

- the learnt weight's spread (mean, standard deviation, range) against N;
- the gold failure@1/5/20 at the learnt weights (mean over the draws), beside BM25 alone
  (weight 0) and weight 1 (both methods' candidates ranked by their vectors), and the
  share of draws whose weight is never worse than the better of the two at any k, and
  of those also strictly better at 20.

Run from the repository root, e.g. on ../shared/retrieval-dev (see bench/README.md)::

    OPENAI_BASE_URL=http://127.0.0.1:18790/v1 OPENAI_API_KEY=sk-local \\
    python bench/tuning_bench.py --db /tmp/qual/gb.db --dataset dev --config gb.toml \\
        --gold ../shared/retrieval-dev/queries.jsonl --sizes 25,50,100,200
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from gligabao.config import load_config  # noqa: E402
from gligabao.search.evaluate import KS, read_queries  # noqa: E402
from gligabao.search.pseudo import write_queries  # noqa: E402
from gligabao.search.tune import choose_weight, failures_of, ranks_by_weight  # noqa: E402
from gligabao.service.evaluation import _embed_all  # noqa: E402
from gligabao.store import open_db  # noqa: E402
from gligabao.store.datasets import require_dataset  # noqa: E402


def _ranked(config, conn, dataset, queries):
    vectors = _embed_all(config, [q.query for q in queries])
    return ranks_by_weight(
        conn,
        dataset,
        queries,
        vectors,
        depth=int(config["search.depth"]),
        guard=bool(config["search.guard"]),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--config", help="gb.toml (embeddings of the dataset's model)")
    parser.add_argument("--gold", required=True, help="gold queries.jsonl (sources relative)")
    parser.add_argument("--sizes", default="25,50,100", help="pseudo-queries per draw")
    parser.add_argument("--draws", type=int, default=200, help="bootstrap draws per size")
    parser.add_argument("--no-llm", action="store_true", help="headings and summaries")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    config = load_config(args.config, {"database": args.db})
    conn = open_db(args.db)
    dataset = require_dataset(conn, args.dataset)
    made = write_queries(config, conn, dataset, max(sizes), use_llm=not args.no_llm)
    print(
        f"{dataset.name} ({dataset.embedding_model}): {len(made.queries)} pseudo-queries "
        f"({made.origin}, by {made.model or '-'}) from {made.sampled} chunks; "
        f"{made.calls} calls paid, {made.reused} answers reused"
    )
    pseudo = _ranked(config, conn, dataset, made.queries)
    here = os.getcwd()
    os.chdir(os.path.dirname(os.path.abspath(args.gold)))  # gold sources are relative to it
    try:
        gold_queries = read_queries(os.path.abspath(args.gold))
    finally:
        os.chdir(here)
    gold = failures_of(_ranked(config, conn, dataset, gold_queries))
    n_gold = len(gold_queries)
    bm25, vector = gold[0.0], gold[1.0]
    best = {k: min(bm25[k], vector[k]) for k in KS}

    def pct(n: float) -> str:
        return f"{100 * n / n_gold:.1f}"

    print(f"gold ({n_gold} queries) fail@1/5/20, %:")
    print(f"  bm25 alone     {' / '.join(pct(bm25[k]) for k in KS)}")
    # Weight 1 ranks both methods' candidates by their vectors: no worse than the vector
    # method alone (gb eval's vector row), so "never worse" below is checked against it.
    print(f"  weight 1       {' / '.join(pct(vector[k]) for k in KS)}")
    full = choose_weight(pseudo, current=0.5)
    print(
        f"  at the weight learnt from all {len(pseudo)}: {full}: "
        f"{' / '.join(pct(gold[full][k]) for k in KS)}"
    )
    rng = random.Random(7)
    print(
        f"\n{'N':>5} {'weight mean':>11} {'sd':>6} {'range':>11}   gold fail@1/5/20 %"
        "    never worse  and better@20"
    )
    for n in sizes:
        weights, fails, safe, holds = [], {k: [] for k in KS}, 0, 0
        for _ in range(args.draws):
            draw = [rng.choice(pseudo) for _ in range(n)]
            w = choose_weight(draw, current=0.5)
            weights.append(w)
            for k in KS:
                fails[k].append(gold[w][k])
            never_worse = all(gold[w][k] <= best[k] for k in KS)
            safe += never_worse
            holds += never_worse and gold[w][20] < best[20]
        print(
            f"{n:>5} {statistics.mean(weights):>11.3f} {statistics.pstdev(weights):>6.3f} "
            f"{min(weights):>5.2f}-{max(weights):<5.2f}   "
            + " / ".join(pct(statistics.mean(fails[k])) for k in KS)
            + f"   {100 * safe / args.draws:10.1f}%  {100 * holds / args.draws:12.1f}%"
        )


if __name__ == "__main__":
    main()
