"""Benchmark: the active pair design against stratified-pairs at the same budget (issue 35,
item 4), on the LLMJudge data and the simulated systems of bench/ppi.py.

    python bench/ppi_active.py                  # 5 judges, 200 draws per budget
    python bench/ppi_active.py --draws 50       # quick look

For each judge and budget (5/10/20/40 % of the pooled pairs), over --draws draws: DCG@10 of
the 32 simulated systems, the 95 % PPI interval's coverage (pooled and worst system) and mean
width under stratified-pairs (post-stratified by the system's top 10, as `reljudge estimate`
does) and under the active design (Horvitz-Thompson PPI, infer.weighted), and the ratio of
the widths. The active design's uncertainty signal is what a store holding the five judges'
labels gives `reljudge sample --design active`: each judge's disagreement with the other
four; its weights are the systems' DCG@10 discounts. ``compare`` returns the rows for a
caller (bench/ppi.py) to fold in.
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from pathlib import Path

import numpy as np
from bench.ppi import (
    DATA,
    Moments,
    _where,
    allocate,
    dcg_weights,
    draw_masks,
    load,
    moments_of,
    post_stratified,
    systems,
)

from reljudge.infer import active, weighted
from reljudge.infer.ppi import estimate_from_moments

BUDGETS = (0.05, 0.10, 0.20, 0.40)
GRADES = 4


def _coverage(low: np.ndarray, high: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    top = float(dcg_weights(np.arange(1, 11)).sum()) * (GRADES - 1)  # DCG@10's range
    low, high = np.clip(low, 0.0, top), np.clip(high, 0.0, top)
    hit = (low <= truth) & (truth <= high)
    return {"cover": float(hit.mean()), "worst": float(hit.mean(0).min()),
            "width": float((high - low).mean())}


def stratified(g: np.ndarray, a: np.ndarray, b: np.ndarray, top: np.ndarray, nq: int,
               budget: int, draws: int, rng) -> dict[str, np.ndarray]:
    """stratified-pairs intervals as bench/ppi.py computes them, (draws, systems)."""
    sizes = np.bincount(g, minlength=GRADES)
    take = allocate(budget, sizes)
    mask = draw_masks(g, take, draws, rng)
    m = moments_of(mask, g, GRADES, a, b)
    design = estimate_from_moments(m, sizes.astype(float), b.sum(1), nq)
    n_top = np.stack([(mask * (g == h)) @ top.T for h in range(GRADES)], axis=-1)
    e, usable = post_stratified(Moments(n_top, m.sa, m.sb, m.saa, m.sbb, m.sab),
                                top @ (g[:, None] == np.arange(GRADES)).astype(float),
                                b.sum(1), nq)
    e = _where(usable, e, design)
    return {"low": e.low, "high": e.high}


def active_intervals(u: np.ndarray, w: np.ndarray, a: np.ndarray, b: np.ndarray, nq: int,
           budget: int, draws: int, rng, mix: float = active.MIX, weigh: bool = True,
           design_w: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Active-design intervals (infer.weighted), (draws, systems); ``weigh=False``: the
    probabilities from the uncertainty alone; ``design_w``: the weights the draw saw
    (default ``w``: the systems estimated)."""
    seen = w if design_w is None else design_w
    size = active.sizes(active.Signal("bench", u), seen if weigh else seen[:0])
    pi = active.inclusion_probabilities(size, budget, mix)
    mask = np.zeros((draws, len(pi)))
    for d in range(draws):
        mask[d, active.systematic(pi, rng)] = 1.0
    top = (w > 0).astype(np.float64)
    s = weighted.sums(mask, a, b, pi, top)
    spread = float(w.max()) * (GRADES - 1)
    e = weighted.estimate_from_sums(s, b.sum(1), float(nq), len(pi), top.sum(1), budget,
                                    spread=spread)
    return {"low": e.low, "high": e.high}


def compare(data: Path = DATA, judges: int = 5, draws: int = 200, count: int = 32,
            seed: int = 0, budgets=BUDGETS, mix: float = active.MIX, signal: str = "judges",
            weigh: bool = True, held_out: bool = False) -> list[dict]:
    """One row per judge and budget: coverage and width of stratified-pairs and active.
    ``signal``: "judges" (disagreement with the other judges), "flat" (none: the weights
    alone), "grade" (the human residual per judge grade: a perfect pilot). ``held_out``: the
    draw weighs by the even systems, the rows are the odd ones' (runs the sample never saw)."""
    pairs, qidx, nq, human, preds, _ = load(data, judges)
    ranks = systems(human, qidx, count, seed)
    w = dcg_weights(ranks)
    design_w = w[::2] if held_out else w
    w = w[1::2] if held_out else w
    top = (w > 0).astype(np.float64)
    a = w * human
    truth = a.sum(1) / nq
    names = list(preds)
    rows = []
    for name in names:
        g = preds[name]
        others = np.array([preds[o] for o in names if o != name], dtype=np.float64)
        u = active.signal_from_judges(others, g.astype(np.float64),
                                        [o for o in names if o != name]).u
        if signal == "flat":
            u = np.ones(len(g))
        elif signal == "grade":
            u = active.signal_from_pilot(human.astype(np.float64), g.astype(np.float64)).u
        b = w * g
        for frac in budgets:
            budget = round(frac * len(pairs))
            key = [seed, zlib.crc32(name.encode()), int(frac * 100)]
            s = stratified(g, a, b, top, nq, budget, draws, np.random.default_rng(key))
            t = active_intervals(u, w, a, b, nq, budget, draws,
                                 np.random.default_rng(key + [1]), mix, weigh, design_w)
            sc, ac = _coverage(s["low"], s["high"], truth), _coverage(t["low"], t["high"],
                                                                       truth)
            rows.append({"judge": name, "budget": frac, "pairs": budget,
                         **{f"strat_{k}": v for k, v in sc.items()},
                         **{f"active_{k}": v for k, v in ac.items()},
                         "ratio": ac["width"] / sc["width"]})
    return rows


def main() -> int:
    """Print the comparison table."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--judges", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mix", type=float, default=active.MIX)
    p.add_argument("--signal", choices=("judges", "flat", "grade"), default="judges",
                   help="the uncertainty: the other judges' disagreement (default), none, or "
                        "the human residual per judge grade (a perfect pilot)")
    p.add_argument("--no-weights", action="store_true",
                   help="probabilities from the uncertainty alone, not the rank weights")
    p.add_argument("--held-out", action="store_true",
                   help="the draw weighs by half the systems; rows for the other half")
    args = p.parse_args()
    if not (args.data / "human" / "test.qrels").exists():
        print(f"no LLMJudge data at {args.data}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    rows = compare(args.data, args.judges, args.draws, seed=args.seed, mix=args.mix,
                   signal=args.signal, weigh=not args.no_weights, held_out=args.held_out)
    print(f"{'judge':28} {'budget':>6} {'strat cover':>11} {'worst':>6} {'width':>7} "
          f"{'active cover':>12} {'worst':>6} {'width':>7} {'ratio':>6}")
    for r in rows:
        print(f"{r['judge']:28} {r['budget']:6.0%} {r['strat_cover']:11.3f} "
              f"{r['strat_worst']:6.3f} {r['strat_width']:7.3f} {r['active_cover']:12.3f} "
              f"{r['active_worst']:6.3f} {r['active_width']:7.3f} {r['ratio']:6.3f}")
    for frac in BUDGETS:
        at = [r for r in rows if r["budget"] == frac]
        print(f"{frac:.0%}: mean width ratio {np.mean([r['ratio'] for r in at]):.3f}; "
              f"active coverage pooled {np.mean([r['active_cover'] for r in at]):.3f}, "
              f"worst system {min(r['active_worst'] for r in at):.3f}; stratified pooled "
              f"{np.mean([r['strat_cover'] for r in at]):.3f}, worst "
              f"{min(r['strat_worst'] for r in at):.3f}")
    print(f"{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
