"""Benchmark: does `estimate` flag the runs a judge favours, and only those?

    python bench/favours.py                                # twins, then all 33 LLMJudge judges
    python bench/favours.py --judges 6 --draws 5 --trials 50   # a quicker look

Known truth (``reljudge.testing.synthetic.twin_world``): twin queries over the same documents,
the judge grading each query as people graded its twin, so that every run ranking twins alike
is unbiased exactly, for every measure, and the circular run (each query's documents by the
judge's grade) is over-rated. --trials query samples (30 of 80 queries, srs-queries) and
pair samples (10 % of the pool, stratified-pairs), nDCG@10: the rate at which the unbiased
runs are flagged (nominal 0.05) and the circular run's power.

Real judges (LLMJudge, TREC DL 2023 test: 25 queries, 4,423 pairs, 33 judges). No TREC DL
2023 run files are reachable from here, so the systems are, as in bench/ppi.py, every other
judge's grades as retrieval scores (ties by a second judge's grade, then by docid) and
--simulated runs ranking each query's pool by human grade plus Gaussian noise; and the
circular run: the judge's own grades as scores. Truth: each run's bias with every human label
(a census). Per judge, --draws samples of --budget of the pool stratified by the judge's
grade (``infer.sample.draw``, as `reljudge sample --design stratified-pairs` draws them), each
estimated by ``estimate_runs`` (nDCG@10 by the ratio estimator). Reported: the circular run's
flag rate and its rank under the judge and under people; the flag rate of the other runs, and
of those whose true bias is within --near of 0; of the flags, the share whose direction the
truth confirms; the bias intervals' coverage of the true bias; the runs the truth says a judge
over-rates by more than --material, and how often a draw flagged them.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from reljudge.audit.favours import reference_favours
from reljudge.infer.favours import OVER
from reljudge.infer.sample import draw
from reljudge.infer.scores import estimate_runs
from reljudge.testing.synthetic import twin_world
from reljudge.trec_data import Qrels, Run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.common import heading, parser  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ppi import DATA, load, qrels  # noqa: E402  (bench/ppi.py: the LLMJudge world)

MEASURE = "nDCG@10"


def twins(trials: int, seed: int) -> None:
    """The flag rate of unbiased runs and the circular run's power, on both designs."""
    for design, world in (("srs-queries", twin_world(seed=seed)),
                          ("stratified-pairs", twin_world(groups=30, docs=20, seed=seed))):
        pairs = [(q, d) for q, d, _ in world.judge]
        grades = {(q, d): g for q, d, g in world.judge}
        flags = Counter()
        holm = 0
        for t in range(trials):
            s = (draw(pairs, design, 0, seed + t, queries=30) if design == "srs-queries" else
                 draw(pairs, design, len(pairs) // 10, seed + t, grades=grades))
            found: list = []
            estimate_runs(s, world.judge, world.human, [*world.runs, world.circular],
                          [MEASURE], bootstrap=200, seed=t, favours=found)
            for r in found[0].runs:
                kind = "circular" if r.run == "circular" else "unbiased"
                flags[kind, r.flag] += 1
                holm += r.holm and kind == "unbiased"
        n = trials * len(world.runs)
        unbiased = n - flags["unbiased", None]
        truth = reference_favours(world.human, world.judge, [world.circular], MEASURE).runs[0].bias
        print(f"| twins | {design} | {trials} | {len(world.runs)} | {unbiased / n:.3f} "
              f"({unbiased} of {n}) | {holm / n:.3f} | "
              f"{flags['circular', OVER]}/{trials} (true bias {truth:+.3f}) |", flush=True)


def systems(w, judge: str, count: int, seed: int) -> list[Run]:
    """The other judges' grades as scores, simulated runs, and the judge's own (circular)."""
    q = np.array([p[0] for p in w.pairs], dtype=object)
    d = np.array([p[1] for p in w.pairs], dtype=object)
    names = list(w.judges)
    others = [n for n in names if n != judge]
    out = []
    for a in [*others, judge]:
        b = names[(names.index(a) + 1) % len(names)]  # ties by the next judge's grade
        out.append(Run.from_arrays(q, d, w.judges[a] + w.judges[b] / 10.0,
                                   name="circular" if a == judge else a, check=False))
    rng = np.random.default_rng(seed)
    for i, sd in enumerate(np.geomspace(0.25, 4.0, count)):
        out.append(Run.from_arrays(q, d, w.human + sd * rng.standard_normal(len(w.pairs)),
                                   name=f"sim{i:02d}", check=False))
    return out


def real(w, judges: list[str], args) -> None:
    """Per judge: the truth's flags, and how the sample's flags compare with them."""
    human = qrels(w.pairs, w.human)
    total = Counter()
    for judge in judges:
        runs = systems(w, judge, args.simulated, args.seed)
        jq = qrels(w.pairs, w.judges[judge])
        census = {r.run: r for r in reference_favours(human, jq, runs, MEASURE).runs}
        truth = {n: r.bias for n, r in census.items()}
        near = {n for n, b in truth.items() if abs(b) <= args.near}
        material = sorted((n for n, b in truth.items() if b > args.material),
                          key=lambda n: -truth[n])
        c = Counter()
        hits = Counter()
        for t in range(args.draws):
            s = draw(w.pairs, "stratified-pairs", round(args.budget * len(w.pairs)),
                     args.seed + t, grades=dict(zip(w.pairs, w.judges[judge].tolist(),
                                                    strict=True)))
            found: list = []
            estimate_runs(s, jq, Qrels.from_arrays(*zip(*s.pairs(), strict=True), np.array(
                [w.human[w.pairs.index(p)] for p in s.pairs()]), check=False), runs,
                [MEASURE], bootstrap=args.bootstrap, seed=t, favours=found)
            for r in found[0].runs:
                circ = r.run == "circular"
                c["circular" if circ else "other"] += 1
                c["circular flagged" if circ else "other flagged"] += r.flag == OVER if circ \
                    else r.flag is not None
                c["covered"] += r.bias_low <= truth[r.run] <= r.bias_high
                c["runs"] += 1
                if r.flag:
                    c["flags"] += 1
                    c["right"] += (truth[r.run] > 0) == (r.flag == OVER)
                if r.run in near:
                    c["near"] += 1
                    c["near flagged"] += r.flag is not None
                if r.run in material:
                    hits[r.run] += r.flag == OVER
        total.update(c)
        said = ", ".join(f"{n} +{truth[n]:.3f} ({hits[n]}/{args.draws})"
                         for n in material[:4]) or "-"
        circ = census["circular"]
        print(f"| {judge} | {truth['circular']:+.3f} | {circ.rank_judge} / {circ.rank_human} | "
              f"{c['circular flagged']}/{c['circular']} "
              f"| {c['other flagged'] / c['other']:.3f} | "
              f"{c['near flagged'] / max(c['near'], 1):.3f} ({len(near)}) | "
              f"{c['right'] / max(c['flags'], 1):.3f} ({c['flags']}) | "
              f"{c['covered'] / c['runs']:.3f} | {len(material)} | {said} |", flush=True)
    print(f"| all {len(judges)} | | | {total['circular flagged']}/{total['circular']} | "
          f"{total['other flagged'] / max(total['other'], 1):.3f} | "
          f"{total['near flagged'] / max(total['near'], 1):.3f} ({total['near']}) | "
          f"{total['right'] / max(total['flags'], 1):.3f} ({total['flags']}) | "
          f"{total['covered'] / max(total['runs'], 1):.3f} | | |")


def main(argv: list[str] | None = None) -> int:
    """The twins' table, then one row per real judge."""
    p = parser(__doc__)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--trials", type=int, default=200, help="samples of the twin world")
    p.add_argument("--judges", type=int, default=33, help="the first N judges by name")
    p.add_argument("--draws", type=int, default=10, help="samples per real judge")
    p.add_argument("--budget", type=float, default=0.2, help="share of the pool sampled")
    p.add_argument("--simulated", type=int, default=8, help="simulated runs beside the judges")
    p.add_argument("--material", type=float, default=0.02,
                   help="a true bias above this is one worth flagging")
    p.add_argument("--near", type=float, default=0.005,
                   help="a true bias within this of 0 is (nearly) none: such runs' flag rate")
    p.add_argument("--bootstrap", type=int, default=200,
                   help="replicates of nDCG@10's ratio estimator per draw")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    if args.markdown:
        print(heading(), end="\n\n")
    if args.trials:
        print("| world | design | trials | unbiased runs | flagged | after Holm | circular "
              "flagged |\n|---|---|---|---|---|---|---|")
        twins(args.trials, args.seed)
    if not (args.data / "human" / "test.qrels").exists():
        print(f"skipped the real judges: no LLMJudge data at {args.data}", file=sys.stderr)
        return 0
    w = load(args.data)
    judges = list(w.judges)[:args.judges]
    print(f"\n{len(w.pairs)} pairs, {len(w.queries)} queries; per judge {len(w.judges) - 1} "
          f"judges' runs, {args.simulated} simulated, the circular one; {args.draws} "
          f"stratified-pairs draws of {args.budget:.0%}; {MEASURE}; 95 % intervals\n")
    print("| judge | circular's true bias | circular's rank, judge / people | circular "
          f"flagged | others flagged | within {args.near} of unbiased: flagged (runs) | flags "
          "right (flags) | bias covered | truly over-rated > "
          f"{args.material} | the largest (flagged in draws) |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    real(w, judges, args)
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
