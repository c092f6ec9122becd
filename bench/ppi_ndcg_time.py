"""Benchmark: what an nDCG@k estimate from a pair sample costs beside DCG@k's.

    python bench/ppi_ndcg_time.py                     # 200 queries x 100 pairs, 2 runs
    python bench/ppi_ndcg_time.py --queries 50 --rounds 5

A simulated pool (true grades 0-3, a judge one grade higher half the time, two runs of
growing noise), a stratified pair sample of --sample pairs, and `estimate_runs` with
--bootstrap replicates for each measure in turn: CPU seconds of each round, the least of the
alternating rounds (the machine may be shared) and nDCG's time over DCG's. The ratio
estimator's bootstrap takes every replicate at once in whole-array products; loops per run,
grade or query made it 5-8x DCG's on this machine's kind.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from reljudge.infer.sample import draw
from reljudge.infer.scores import estimate_runs
from reljudge.trec_data import Qrels, Run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.common import parser, table  # noqa: E402

MEASURES = ("DCG@10", "nDCG@10")


def world(queries: int, docs: int, seed: int) -> tuple[Qrels, Qrels, list[Run]]:
    """Human and judge qrels over queries x docs pairs, and two runs of growing noise."""
    rng = np.random.default_rng(seed)
    pairs = [(f"q{q}", f"d{d}") for q in range(queries) for d in range(docs)]
    truth = rng.integers(0, 4, len(pairs))
    judge = np.minimum(3, truth + rng.binomial(1, 0.5, len(pairs)))
    qids, docids = [q for q, _ in pairs], [d for _, d in pairs]
    runs = [Run.from_arrays(qids, docids, truth + noise * rng.normal(size=len(pairs)),
                            name=f"r{i}") for i, noise in enumerate((0.5, 2.0))]
    return (Qrels.from_arrays(qids, docids, truth), Qrels.from_arrays(qids, docids, judge),
            runs)


def main() -> None:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--sample", type=int, default=2000)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    human, judge, runs = world(args.queries, args.docs, args.seed)
    grades = {(q, d): g for q, d, g in judge}
    sample = draw(sorted(grades), "stratified-pairs", args.sample, 0, grades=grades)
    took: dict[str, list[float]] = {m: [] for m in MEASURES}
    for _ in range(args.rounds):
        for m in MEASURES:
            start = time.process_time()
            estimate_runs(sample, judge, human, runs, [m], bootstrap=args.bootstrap)
            took[m].append(time.process_time() - start)
    least = {m: min(took[m]) for m in MEASURES}
    rows = [[m, f"{least[m]:.3f}", f"{least[m] / least['DCG@10']:.1f}x",
             " ".join(f"{t:.3f}" for t in took[m])] for m in MEASURES]
    print(table(["measure", "CPU s (least)", "vs DCG@10", "rounds"], rows, args.markdown,
                caption=f"{args.queries} queries x {args.docs} pairs, {args.sample} sampled, "
                        f"{len(runs)} runs, {args.bootstrap} bootstrap replicates"))


if __name__ == "__main__":
    main()
