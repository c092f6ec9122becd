"""Benchmark: does the ranking `reljudge estimate` reports agree with the human ranking at
least as well as the LLM-only ranking, and is a supported order ever wrong? (issue 35, item 5)

    python -m bench.ppi_rank                        # 5 judges, 200 draws per budget
    python -m bench.ppi_rank --draws 50 --judges 2  # quick look (from the repository root)

Data, systems and draws as bench/ppi.py (LLMJudge test pairs, 32 simulated systems, samples of
5/10/20/40 % of the pooled pairs stratified by the judge's grade, the same random draws).
Measure DCG@10 (pair-level PPI, post-stratified by the top 10 as `reljudge estimate` does: for
a pair of systems, by the union of their top 10, with the design-based estimate where fewer
than 3 sampled pairs fall in it, and FLAT_RULE's variance for flat strata).

Per judge and budget, averaged over draws, Kendall's tau-b against the all-human ranking of:
the PPI point estimates ("ppi"), the human sample alone ("human"), the judge's labels alone
("llm"), and the ranking `estimate` reports ("reported": the LLM-only order changed only where
a paired PPI difference, Holm-corrected over all 496 pairs of systems, supports another order;
infer.ranking). "orders": supported orders per draw; "wrong": their share that the all-human
scores contradict; "fwer": the share of draws with any wrong supported order (the family-wise
error Holm holds at alpha = 0.05; "fwer raw": the same without the correction).
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from pathlib import Path

import numpy as np
from bench.ppi import DATA, _where, dcg_weights, draw_masks, load, moments_of, systems, tau_rows

from reljudge.infer.ppi import Moments, estimate_from_moments, post_stratified
from reljudge.infer.ranking import reported_order, supported_orders
from reljudge.infer.sample import allocate
from reljudge.stats import holm

BUDGETS = (0.05, 0.10, 0.20, 0.40)
ALPHA = 0.05
TOP_GAIN = 3.0  # the largest gain of a grade (raw grades 0-3): a DCG@10 value's spread


def _estimate(mask, g, a, b, top, nq: int, spread: float):
    """Post-stratified PPI estimates of the rows of a, b (..., P) for every draw, with the
    design-based estimate where a row's domain ``top`` holds fewer than 3 sampled pairs."""
    sizes = np.bincount(g, minlength=4).astype(float)
    m = moments_of(mask, g, 4, a, b)
    design = estimate_from_moments(m, sizes, b.sum(1), nq, spread=spread)
    n_top = np.stack([(mask * (g == h)) @ top.T for h in range(4)], axis=-1)
    e, usable = post_stratified(Moments(n_top, m.sa, m.sb, m.saa, m.sbb, m.sab),
                                top @ (g[:, None] == np.arange(4)).astype(float), b.sum(1),
                                nq, spread=spread)
    return _where(usable, e, design)


def rank_summary(mask: np.ndarray, g: np.ndarray, w: np.ndarray, human: np.ndarray,
                 nq: int) -> dict[str, float]:
    """Taus of the PPI / human-only / LLM-only / reported rankings against the all-human one,
    and the supported orders' error, over the draws ``mask`` (draws, P) of one judge ``g``;
    ``w``: the systems' DCG@10 weights (S, P)."""
    truth = (w * human).sum(1) / nq
    llm = (w * g).sum(1) / nq
    top = (w > 0).astype(np.float64)
    runs = _estimate(mask, g, w * human, w * g, top, nq, TOP_GAIN)
    i, j = np.triu_indices(len(w), 1)
    diff = _estimate(mask, g, (w[i] - w[j]) * human, (w[i] - w[j]) * g,
                     np.maximum(top[i], top[j]), nq, 2 * TOP_GAIN)
    p = diff.p_value()
    truth_sign = np.sign(truth[i] - truth[j])
    reported, orders, wrong, fwer, fwer_raw = [], [], [], [], []
    for d in range(len(mask)):
        sign = supported_orders(diff.value[d], holm(p[d]), ALPHA)
        better = np.zeros((len(w), len(w)), dtype=bool)
        better[i[sign > 0], j[sign > 0]] = True
        better[j[sign < 0], i[sign < 0]] = True
        order = reported_order(llm.tolist(), better, runs.value[d].tolist())
        position = np.empty(len(w))
        position[order] = np.arange(len(w))
        reported.append(-position)
        bad = (sign != 0) & (sign != truth_sign)
        orders.append((sign != 0).sum())
        wrong.append(bad.sum())
        fwer.append(bad.any())
        raw = supported_orders(diff.value[d], p[d], ALPHA)
        fwer_raw.append(((raw != 0) & (raw != truth_sign)).any())
    return {"ppi": float(np.nanmean(tau_rows(runs.value, truth))),
            "human": float(np.nanmean(tau_rows(runs.classical, truth))),
            "llm": float(tau_rows(llm[None], truth)[0]),
            "reported": float(np.nanmean(tau_rows(np.array(reported), truth))),
            "orders": float(np.mean(orders)),
            "wrong": float(np.sum(wrong) / max(np.sum(orders), 1)),
            "fwer": float(np.mean(fwer)), "fwer_raw": float(np.mean(fwer_raw))}


def main() -> int:
    """Every budget for the first --judges judges: one row per judge and budget."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--judges", type=int, default=5, help="the first N judges (bench/ppi.py's)")
    p.add_argument("--systems", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budgets", type=float, nargs="+", default=BUDGETS,
                   help="shares of the pooled pairs to sample (default 0.05 0.1 0.2 0.4)")
    args = p.parse_args()
    if not (args.data / "human" / "test.qrels").exists():
        print(f"no LLMJudge data at {args.data} (give --data)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    pairs, qidx, nq, human, preds, kappas = load(args.data, args.judges)
    w = dcg_weights(systems(human, qidx, args.systems, args.seed))
    print(f"{len(pairs)} pairs, {nq} queries, {len(preds)} judges, {args.systems} systems, "
          f"{args.draws} draws per budget, DCG@10, stratified-pairs, alpha {ALPHA}")
    print(f"{'budget':>6} {'judge':32} {'kappa_q':>7} {'ppi':>6} {'human':>6} {'llm':>6} "
          f"{'reported':>8} {'orders':>7} {'wrong':>6} {'fwer':>6} {'fwer raw':>8}")
    for frac in args.budgets:
        rows = []
        for name, g in preds.items():
            rng = np.random.default_rng([args.seed, zlib.crc32(name.encode()), int(frac * 100)])
            take = allocate(round(frac * len(pairs)), np.bincount(g, minlength=4))
            r = rank_summary(draw_masks(g, take, args.draws, rng), g, w, human, nq)
            rows.append(r)
            print(f"{frac:6.0%} {name:32} {kappas[name]:7.3f} {r['ppi']:6.3f} "
                  f"{r['human']:6.3f} {r['llm']:6.3f} {r['reported']:8.3f} {r['orders']:7.1f} "
                  f"{r['wrong']:6.4f} {r['fwer']:6.3f} {r['fwer_raw']:8.3f}")
        mean = {k: np.mean([r[k] for r in rows]) for k in rows[0]}
        print(f"{frac:6.0%} {'mean over judges':32} {'':7} {mean['ppi']:6.3f} "
              f"{mean['human']:6.3f} {mean['llm']:6.3f} {mean['reported']:8.3f} "
              f"{mean['orders']:7.1f} {mean['wrong']:6.4f} {mean['fwer']:6.3f} "
              f"{mean['fwer_raw']:8.3f}")
    print(f"\n{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
