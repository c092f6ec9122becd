"""Benchmark: do the pair-sample nDCG@10 intervals (infer/ratio.py) cover on real judges?

    python bench/ppi_ndcg.py                          # 5 judges, 100 draws per budget
    python bench/ppi_ndcg.py --judges 2 --draws 20    # quick look
    python bench/ppi_ndcg.py --measure R@10           # recall@10 by the same construction

Data: the LLMJudge (TREC DL 2023) test set in ../shared/data/llmjudge: 25 queries, 4,423
human-labelled pairs (the pool), 33 LLM judges' labels (out-of-scale grades clipped to 0..3).
Two kinds of systems, each scored against the truth (nDCG@10 under every human label, by
reljudge.metrics.evaluate):
  simulated  32 runs ranking each query's pool by human grade + Gaussian noise (sd 0.25-4)
  real       one run per other LLM judge: its grades rank each query's pool (ties by docid)
For each PPI judge (the first --judges by file name) and budget (5/10/20/40 % of pairs,
stratified by the judge's grade as `reljudge sample` draws), over --draws draws: coverage of
the 95 % interval (pooled over runs and draws, and the worst run), mean width, and the
human-only interval's coverage and width.
"""

from __future__ import annotations

import sys
import time
import zlib
from pathlib import Path

import numpy as np
from scipy import stats

from reljudge.grades import N_GRADES
from reljudge.infer.ratio import (
    PairFrame,
    bias_corrected,
    cell_counts,
    grade_model,
    ndcg_replicates,
    pooled_ratio,
    replicate_weights,
    totals,
)
from reljudge.infer.sample import allocate
from reljudge.metrics import evaluate
from reljudge.trec_data import Qrels, Run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench import ppi  # noqa: E402
from bench.ppi import DATA  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.common import parser  # noqa: E402

K = 10


def load(data: Path):
    """Pairs (sorted), query index, human grades, {judge: grades} for every judge."""
    w = ppi.load(data)
    qidx = np.array([w.queries.index(q) for q, _ in w.pairs])
    return w.pairs, qidx, len(w.queries), w.human, w.judges


def ranks_of(score: np.ndarray, qidx: np.ndarray) -> np.ndarray:
    """Rank (from 1) of each pair within its query by score descending, ties by pair order
    (pairs are sorted by docid within a query), (S, P)."""
    order = np.lexsort((np.broadcast_to(np.arange(score.shape[1]), score.shape), -score,
                        np.broadcast_to(qidx, score.shape)), axis=-1)
    ranks = np.empty_like(order)
    starts = np.searchsorted(qidx, qidx)
    np.put_along_axis(ranks, order, np.arange(score.shape[1])[None, :] - starts[order] + 1,
                      axis=-1)
    return ranks


def truth(pairs, ranks: np.ndarray, human: np.ndarray, measure: str) -> np.ndarray:
    """Each system's measure under all human labels (reljudge.metrics.evaluate), (S,)."""
    q = np.array([p[0] for p in pairs], dtype=object)
    d = np.array([p[1] for p in pairs], dtype=object)
    qrels = Qrels.from_arrays(q, d, human, check=False)
    return np.array([evaluate(qrels, Run.from_arrays(q, d, -r.astype(np.float64), name="s",
                                                     check=False), [measure],
                              all_queries=True).mean()[measure] for r in ranks])


def recall_replicates(frame: PairFrame, top: np.ndarray, replicates: int, seed: int,
                      difference: bool = False):
    """R@k (grade >= 1) by the nDCG construction, the relevant count in place of the ideal
    DCG (``difference``: counts by the difference estimator instead): (PPI, human-only),
    (B, R) each."""
    w = replicate_weights(frame, replicates, seed)
    rel = (np.arange(N_GRADES) >= 1).astype(np.float64)
    model = grade_model(frame, w)
    out = []
    for m in (model, None):
        if m is not None and not difference:
            count = cell_counts(frame, w, m)[..., 1:].sum(-1)
        else:
            count = totals(frame, w, np.ones((1, len(frame.query))), rel[None], m)[:, 0, :, 0]
        count = np.maximum(count, frame.seen()[:, 1:].sum(-1))
        out.append(pooled_ratio(frame, w, top, rel, m, count))
    return out


def variants(reps: np.ndarray, t: np.ndarray, level: float = 0.95) -> dict[str, np.ndarray]:
    """Hits (R,) of other intervals from the same replicates, to tell which part misses:
    the percentile interval moved by twice the bootstrap bias (the estimator's interval
    before), the plain percentile interval, and the plain estimate +- the normal quantile
    times the replicates' sd."""
    a = (1.0 - level) / 2
    lo, hi = np.quantile(reps[1:], [a, 1.0 - a], axis=0)
    sd, z = reps[1:].std(axis=0), stats.norm.ppf(1.0 - a)
    bias = reps[1:].mean(axis=0) - reps[0]
    return {"bc percentile": (lo - 2 * bias <= t) & (t <= hi - 2 * bias),
            "percentile": (lo <= t) & (t <= hi),
            "plain normal": np.abs(reps[0] - t) <= z * sd}


def run_interval(hits: np.ndarray) -> tuple[float, float, float]:
    """The worst run's coverage over the draws (D, R) with its Wilson 95 % Monte-Carlo
    interval, and how many runs a one-sided binomial test (Holm over the runs, 0.05) finds
    below 0.95."""
    per = hits.sum(axis=0)
    d, worst = hits.shape[0], int(per.min())
    z, c = 1.96, worst / hits.shape[0]
    mid = (c + z * z / (2 * d)) / (1 + z * z / d)
    half = z / (1 + z * z / d) * np.sqrt(c * (1 - c) / d + z * z / (4 * d * d))
    p = np.sort(stats.binom.cdf(per, d, 0.95))
    below = 0
    for i, pi in enumerate(p):
        if pi > 0.05 / (len(p) - i):
            break
        below += 1
    return mid - half, mid + half, float(below)


def cover(reps: np.ndarray, t: np.ndarray, df: float, level: float = 0.95):
    """Hits (R,) and widths of the bias-corrected intervals of replicates (B, R) (row 0: the
    estimate), as `reljudge estimate` prints them; and the corrected estimates."""
    ends = np.array([bias_corrected(reps[:, r], level, False, df)
                     for r in range(reps.shape[1])])
    value, lo, hi = ends[:, 0], ends[:, 1], ends[:, 2]
    return (lo <= t) & (t <= hi), hi - lo, value


def main() -> int:
    """Coverage and width per judge, budget and kind of system."""
    p = parser(__doc__, markdown=False)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--draws", type=int, default=100)
    p.add_argument("--judges", type=int, default=5)
    p.add_argument("--replicates", type=int, default=500)
    p.add_argument("--budgets", default="0.05,0.1,0.2,0.4")
    p.add_argument("--measure", default="nDCG@10", choices=("nDCG@10", "R@10", "R@10-diff"),
                   help="R@10-diff: recall with the relevant counts by the difference estimator")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if not (args.data / "human" / "test.qrels").exists():
        print(f"no LLMJudge data at {args.data}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    pairs, qidx, nq, human, preds = load(args.data)
    rng = np.random.default_rng(args.seed)
    noise = np.geomspace(0.25, 4.0, 32)[:, None]
    kinds = {"simulated": ranks_of(human + noise * rng.standard_normal((32, len(human))), qidx)}
    names = sorted(preds)
    print(f"{len(pairs)} pairs, {nq} queries, {args.measure}, {args.draws} draws, "
          f"{args.replicates} bootstrap replicates")
    print(f"{'judge':28} {'systems':9} {'budget':>6} {'cover':>6} {'worst':>6} {'width':>6} "
          f"{'hum cov':>7} {'hum wid':>7} {'bias':>7}")
    pooled: dict = {}
    for judge in names[:args.judges]:
        g = preds[judge]
        others = [n for n in names if n != judge]
        kinds["real"] = ranks_of(np.stack([preds[n] for n in others]).astype(float), qidx)
        for kind, ranks in kinds.items():
            top = (ranks <= K).astype(np.float64)
            weights = np.where(ranks <= K, 1.0 / np.log2(ranks + 1.0), 0.0)
            t = truth(pairs, ranks, human, args.measure.removesuffix("-diff"))
            for frac in map(float, args.budgets.split(",")):
                sizes = np.bincount(g, minlength=N_GRADES)
                take = allocate(round(frac * len(pairs)), sizes)
                draw_rng = np.random.default_rng([args.seed, zlib.crc32(judge.encode()),
                                                  int(frac * 100)])
                hits, widths, hhits, hwidths, bias = [], [], [], [], []
                other: dict[str, list] = {}
                for d in range(args.draws):
                    chosen = np.concatenate([draw_rng.choice(np.flatnonzero(g == h), n_h,
                                                             replace=False)
                                             for h, n_h in enumerate(take) if n_h])
                    frame = PairFrame(qidx, g, sizes.astype(np.float64), chosen, g[chosen],
                                      human[chosen], nq)
                    if args.measure == "nDCG@10":
                        r = ndcg_replicates(frame, weights, K, "log2", args.replicates,
                                            args.seed + d)
                        est, hum = r.ppi, r.human
                    else:
                        est, hum = recall_replicates(frame, top, args.replicates, args.seed + d,
                                                     args.measure == "R@10-diff")
                    h1, w1, v1 = cover(est, t, len(chosen) - 1)
                    for name, h in variants(est, t).items():
                        other.setdefault(name, []).append(h)
                    h2, w2, _ = cover(hum, t, len(chosen) - 1)
                    hits.append(h1)
                    widths.append(w1)
                    hhits.append(h2)
                    hwidths.append(w2)
                    bias.append(v1 - t)
                hit = np.array(hits)
                pooled.setdefault((kind, frac), []).append((hit.mean(), hit.mean(0).min()))
                lo, hi, below = run_interval(hit)
                print(f"{judge:28} {kind:9} {frac:6.0%} {hit.mean():6.3f} "
                      f"{hit.mean(0).min():6.3f} {np.mean(widths):6.3f} "
                      f"{np.mean(hhits):7.3f} {np.mean(hwidths):7.3f} "
                      f"{np.mean(bias):+7.4f}  worst in [{lo:.3f}, {hi:.3f}], "
                      f"{below:.0f} runs below 0.95 (Holm); "
                      + ", ".join(f"{n} {np.mean(h):.3f}/{np.mean(h, axis=0).min():.3f}"
                                  for n, h in other.items()), flush=True)
    print("\n== over the judges: pooled coverage (lowest judge) and worst run ==")
    for (kind, frac), v in sorted(pooled.items()):
        c = np.array(v)
        print(f"{kind:9} {frac:6.0%} pooled {c[:, 0].mean():.3f} (lowest judge "
              f"{c[:, 0].min():.3f}), worst run {c[:, 1].min():.3f}")
    print(f"\n{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
