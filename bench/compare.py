"""Benchmark: `compare` on 10,000 queries x 5 runs with 10,000 randomisation trials.

    python bench/compare.py
The per-query scores are synthetic (fixed seed); the timing covers the tests, the bootstrap
intervals (1,000 resamples per run) and the Holm correction, not the evaluation of runs.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from reljudge.stats import bootstrap_ci, holm, randomization

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.common import parser  # noqa: E402


def make_runs(nq: int, nruns: int):
    """Qrels (20 judged docs per query) and runs (100 docs per query) as column arrays."""
    from reljudge.trec_data import Qrels, Run

    rng = np.random.default_rng(1)
    qids = np.repeat(np.array([f"q{i}" for i in range(nq)], dtype=object), 100)
    docs = np.array([f"d{i}" for i in range(100)] * nq, dtype=object)
    judged = np.tile(np.arange(100) < 20, nq)
    qrels = Qrels.from_arrays(qids[judged], docs[judged], rng.integers(0, 4, judged.sum()),
                              check=False)
    runs = [Run.from_arrays(qids, docs, rng.random(len(docs)), name=f"run{i}", check=False)
            for i in range(nruns)]
    return qrels, runs


def main() -> None:
    """Time the statistics of one comparison table."""
    p = parser(__doc__, markdown=False)
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--trials", type=int, default=10_000)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    base = rng.random(args.queries)
    runs = [np.clip(base + rng.normal(0.002 * i, 0.1, args.queries), 0, 1)
            for i in range(args.runs)]
    t = time.perf_counter()
    cis = [bootstrap_ci(r, n=1000, seed=0) for r in runs]
    t_ci = time.perf_counter() - t
    t = time.perf_counter()
    pvals = [randomization(runs[0], r, args.trials, seed=0).p for r in runs[1:]]
    adjusted = holm(pvals)
    t_test = time.perf_counter() - t
    total = t_ci + t_test
    print(f"{args.queries:,} queries x {args.runs} runs, {args.trials:,} randomisation trials "
          f"per comparison, 1,000 bootstrap resamples per run")
    print(f"bootstrap intervals: {t_ci:.2f} s; randomisation tests + Holm: {t_test:.2f} s; "
          f"total {total:.2f} s (target < 10 s)")
    qrels, run_objs = make_runs(args.queries, args.runs)
    from reljudge.stats import compare

    t = time.perf_counter()
    table = compare(qrels, run_objs, ["nDCG@10"], trials=args.trials)
    t_full = time.perf_counter() - t
    print(f"full compare() with evaluation ({args.runs} runs x 100 docs per query, nDCG@10): "
          f"{t_full:.2f} s; {sum(c.significant for c in table.cells.values())} significant")
    for i, (ci, pa) in enumerate(zip(cis, [None, *adjusted.tolist()], strict=False)):
        print(f"  run {i}: mean {ci.mean:.4f} [{ci.low:.4f}, {ci.high:.4f}]"
              + (f"  p_holm {pa:.4f}" if pa is not None else "  (baseline)"))


if __name__ == "__main__":
    main()
