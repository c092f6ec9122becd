"""Benchmark: do PPI intervals cover on real judges? TREC DL 2023 (LLMJudge), 33 LLM judges.

    python bench/ppi.py                       # full: every judge, 500 draws per budget
    python bench/ppi.py --draws 50 --judges 3 # quick look while developing

Truth: the 25 test queries' human labels (../shared/data/llmjudge/human/test.qrels).
Systems: 32 simulated runs of graded quality that rank each query's judged passages by
human grade + Gaussian noise (sd from 0.25 to 4; rank = score desc). Predictions: each
judge's labels (out-of-scale grades clipped to 0..3, as the challenge organisers did).

Budgets:
  pairs 5/10/20/40 %: a sample of pooled pairs stratified by the judge's grade (proportional
    allocation, at least 2 per stratum), DCG@10 (linear in the gains: pair-level PPI,
    post-stratified by each system's top 10 as `reljudge estimate` does; "ht cover" and
    "width/ht": the plain design-based estimator's coverage, and the width relative to it)
  queries 20/40/60/80 %: a simple random sample of whole queries, nDCG@10 and AP
    (query-level PPI)
At the end: coverage by the number of sampled pairs in the system's top 10, and the smallest
samples at which every judge reached 93 % (the thresholds of the tool's warnings).
For each judge and budget, over --draws random draws: coverage of the 95 % PPI interval
(averaged over systems and draws; target >= 93 %), its mean width divided by the
human-sample-only interval's ("hum cover": that interval's coverage) (target < 1 for every judge with quadratic kappa >= 0.3), and
Kendall's tau of the system ranking by the PPI estimate, by the human-only estimate, and by
the LLM labels alone, against the ranking under all human labels. "llm cover" is how often
the LLM-only 95 % bootstrap interval (1,000 resamples of queries) covers the human score.
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from pathlib import Path

import numpy as np

from reljudge.audit.items import join
from reljudge.infer.ppi import Estimate, Moments, estimate_from_moments, post_stratified
from reljudge.infer.sample import allocate
from reljudge.io import read_judge
from reljudge.io.trec import read_qrels
from reljudge.stats import agreement as ag
from reljudge.stats import bootstrap_ci

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "llmjudge"
K = 10
QUERY_MEASURES = ["nDCG@10", "AP"]  # query-level samples serve any measure


def load(data: Path, judges: int | None):
    """Pairs (sorted by qid, docid), query index, human grades, {judge: grades}, kappas."""
    ref = read_qrels(data / "human" / "test.qrels")
    d = ref.to_dict()
    pairs = sorted((q, doc) for q in d for doc in d[q])
    index = {p: i for i, p in enumerate(pairs)}
    qids = sorted(d)
    qidx = np.array([qids.index(q) for q, _ in pairs])
    human = np.array([d[q][doc] for q, doc in pairs], dtype=np.int64)
    files = sorted((data / "llm" / "labels").glob("*.txt"))[:judges]
    preds, kappas = {}, {}
    for f in files:
        labels, _ = read_judge(f, clip=True)
        g = np.zeros(len(pairs), dtype=np.int64)  # a pair the judge skipped: grade 0
        for q, doc, grade in labels:
            i = index.get((q, doc))
            if i is not None:
                g[i] = grade
        preds[f.stem] = g
        kappas[f.stem] = float(ag.cohen_kappa(ag.confusion(*_joined(ref, labels))[None],
                                              "quadratic")[0])
    return pairs, qidx, len(qids), human, preds, kappas


def _joined(ref, labels):
    j = join(ref, labels)
    return j.reference, j.judge


def systems(human: np.ndarray, qidx: np.ndarray, count: int, seed: int) -> np.ndarray:
    """Rank of each pair in each simulated system's ranking of its query, (S, P), from 1."""
    rng = np.random.default_rng(seed)
    noise = np.geomspace(0.25, 4.0, count)[:, None]
    score = human[None, :] + noise * rng.standard_normal((count, len(human)))
    order = np.lexsort((-score, np.broadcast_to(qidx, score.shape)), axis=-1)
    ranks = np.empty_like(order)
    starts = np.searchsorted(qidx, qidx)  # qidx is sorted: first pair of each query
    pos = np.arange(len(human))[None, :] - starts[order]
    np.put_along_axis(ranks, order, pos + 1, axis=-1)
    return ranks


def dcg_weights(ranks: np.ndarray) -> np.ndarray:
    """DCG@K weight of each pair: 1/log2(rank+1) in the top K, else 0."""
    return np.where(ranks <= K, 1.0 / np.log2(ranks + 1.0), 0.0)


def ndcg(weights: np.ndarray, grades: np.ndarray, qidx: np.ndarray, nq: int) -> np.ndarray:
    """Per-query nDCG@K (log2 gains = grades), (S, Q); 0 where the ideal DCG is 0."""
    onehot = (qidx[:, None] == np.arange(nq)[None, :]).astype(np.float64)
    dcg = (weights * grades) @ onehot
    ideal = np.zeros(nq)
    disc = 1.0 / np.log2(np.arange(2, K + 2))
    for q in range(nq):
        top = np.sort(grades[qidx == q])[::-1][:K]
        ideal[q] = top @ disc[:len(top)]
    return np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)


def library_values(pairs, ranks: np.ndarray, grades: np.ndarray, measures: list[str],
                   qids: list[str]) -> np.ndarray:
    """Per-query values from reljudge.metrics.evaluate, (measures, S, Q): the systems as runs
    (score = -rank) against qrels holding the given grades."""
    from reljudge.metrics import evaluate
    from reljudge.types import Qrels, Run

    q = np.array([p[0] for p in pairs], dtype=object)
    d = np.array([p[1] for p in pairs], dtype=object)
    qrels = Qrels.from_arrays(q, d, grades, check=False)
    out = np.empty((len(measures), len(ranks), len(qids)))
    for s, r in enumerate(ranks):
        ev = evaluate(qrels, Run.from_arrays(q, d, -r.astype(np.float64), name=f"s{s}",
                                             check=False), measures, all_queries=True)
        assert ev.query_ids == qids
        out[:, s, :] = ev.scores.T
    return out


def tau_rows(x: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of x (..., S) against truth (S,)."""
    iu = np.triu_indices(len(truth), 1)
    st = np.sign(truth[:, None] - truth[None, :])[iu]
    sx = np.sign(x[..., :, None] - x[..., None, :])[..., iu[0], iu[1]]
    den = np.sqrt((sx != 0).sum(-1) * (st != 0).sum())
    return np.divide((sx * st).sum(-1), den, out=np.full(den.shape, np.nan), where=den > 0)


def kendall(x: np.ndarray, y: np.ndarray) -> float:
    return float(tau_rows(x[None], y)[0])


def draw_masks(strata: np.ndarray, take: np.ndarray, draws: int, rng) -> np.ndarray:
    """(draws, units) 0/1 masks of stratified simple random samples without replacement."""
    mask = np.zeros((draws, len(strata)))
    for h, n_h in enumerate(take):
        members = np.flatnonzero(strata == h)
        if n_h == 0:
            continue
        keys = rng.random((draws, len(members)))
        chosen = np.argpartition(keys, n_h - 1, axis=1)[:, :n_h]
        mask[np.arange(draws)[:, None], members[chosen]] = 1.0
    return mask


def moments_of(mask: np.ndarray, strata: np.ndarray, nstrata: int, a: np.ndarray,
               b: np.ndarray) -> Moments:
    """Per-stratum sample sums for every draw and system: arrays (draws, systems, strata)."""
    parts = {k: [] for k in ("n", "sa", "sb", "saa", "sbb", "sab")}
    for h in range(nstrata):
        mh = mask * (strata == h)
        parts["n"].append(np.broadcast_to(mh.sum(1)[:, None], (len(mask), len(a))))
        parts["sa"].append(mh @ a.T)
        parts["sb"].append(mh @ b.T)
        parts["saa"].append(mh @ (a * a).T)
        parts["sbb"].append(mh @ (b * b).T)
        parts["sab"].append(mh @ (a * b).T)
    return Moments(**{k: np.stack(v, axis=-1) for k, v in parts.items()})


def _where(usable: np.ndarray, e: Estimate, fallback: Estimate) -> Estimate:
    """e where usable, else the fallback (the design-based estimate)."""
    return Estimate(**{f: getattr(e, f) if f == "level" else
                       np.where(usable, getattr(e, f), getattr(fallback, f))
                       for f in Estimate.__dataclass_fields__})


def summarise(e, truth: np.ndarray) -> dict[str, float]:
    """Coverage, widths and taus of a (draws, systems) estimate."""
    cover = (e.low <= truth) & (truth <= e.high)
    human = (e.classical_low <= truth) & (truth <= e.classical_high)
    return {"cover": float(cover.mean()), "worst": float(cover.mean(0).min()),
            "cover_h": float(human.mean()),
            "width": float((e.high - e.low).mean()),
            "width_h": float((e.classical_high - e.classical_low).mean()),
            "tau": float(np.nanmean(tau_rows(e.value, truth))),
            "tau_h": float(np.nanmean(tau_rows(e.classical, truth))),
            "eff": float(np.mean(e.effective_n / e.n))}


def print_thresholds(informative: dict, results: dict, budgets: list) -> None:
    """The smallest sample at which every judge's intervals covered >= 93 %: for pair samples
    by the number of sampled pairs in the system's top K (coverage of the intervals from at
    least t such pairs, for every judge and every pair budget with >= 100 of them), for query
    samples by the number of queries."""
    print("\n== pair samples: coverage of the DCG@10 intervals from >= t sampled pairs in the "
          "system's top 10 (lowest over judges; per pair budget) ==")
    pair_budgets = [f for u, f, _ in budgets if u == "pairs"]
    print(f"{'t':>4} " + " ".join(f"{f:>10.0%}" for f in pair_budgets) + f" {'lowest':>7}"
          + f" {'share':>6}")
    found = None
    for t in (1, 5, 10, 15, 20, 25, 30, 40, 50, 60, 80):
        cells, shares = [], []
        for i, _ in enumerate(pair_budgets):
            lows = []
            for v in informative.values():
                k, hit = v[i]
                shares.append((k >= t).mean())
                lows.append(hit[k >= t].mean() if (k >= t).sum() >= 100 else np.nan)
            cells.append(min(lows) if not np.isnan(lows).any() else np.nan)
        low = np.nanmin(cells)
        print(f"{t:4d} " + " ".join(f"{c:10.3f}" for c in cells) + f" {low:7.3f}"
              + f" {np.mean(shares):6.3f}")
        if found is None and low >= 0.93:
            found = t
    print(f"smallest t with coverage >= 0.93 for every judge and pair budget: {found}")
    for mname in QUERY_MEASURES:
        ok = [f for u, f, m in budgets if u == "queries" and m == mname
              and min(r["cover"] for r in results[(u, f, m)].values()) >= 0.93]
        print(f"{mname}: smallest query budget with coverage >= 0.93 for every judge: "
              + (f"{min(ok):.0%} of the queries" if ok else "none"))


def main() -> int:
    """Run every budget for every judge and print one table per budget."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--draws", type=int, default=500)
    p.add_argument("--judges", type=int, default=None, help="only the first N judges")
    p.add_argument("--systems", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--collapse", choices=("adjacent", "all"), default="adjacent",
                   help="how post-strata with fewer than 2 sampled pairs are merged")
    p.add_argument("--lam", type=float, default=None,
                   help="a fixed lambda (default: power-tuned) to compare")
    args = p.parse_args()
    if not (args.data / "human" / "test.qrels").exists():
        print(f"no LLMJudge data at {args.data}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    pairs, qidx, nq, human, preds, kappas = load(args.data, args.judges)
    ranks = systems(human, qidx, args.systems, args.seed)
    w = dcg_weights(ranks)
    top = (w > 0).astype(np.float64)  # (S, P): each system's top K
    qids = sorted({q for q, _ in pairs})
    y_lib = library_values(pairs, ranks, human, QUERY_MEASURES, qids)  # (M, S, Q)
    y_q = ndcg(w, human, qidx, nq)  # (S, Q) human nDCG@10, vectorised here
    assert np.allclose(y_q, y_lib[0]), "bench nDCG@10 differs from reljudge.metrics"
    truth_qm = y_lib.mean(2)  # (M, S)
    truth_q = truth_qm[0]
    a_pair = w * human  # DCG@10 contributions under human grades
    truth_p = a_pair.sum(1) / nq
    print(f"{len(pairs)} pairs, {nq} queries, {len(preds)} judges, {args.systems} systems, "
          f"{args.draws} draws per budget; human nDCG@10 of the systems "
          f"{truth_q.min():.3f}..{truth_q.max():.3f}")
    budgets = [("pairs", f, "DCG@10") for f in (0.05, 0.10, 0.20, 0.40)] + [
        ("queries", f, m) for m in QUERY_MEASURES for f in (0.20, 0.40, 0.60, 0.80)]
    results: dict = {b: {} for b in budgets}
    informative: dict = {name: [] for name in preds}
    llm_only = {}
    for name, g in preds.items():
        f_lib = library_values(pairs, ranks, g, QUERY_MEASURES, qids)
        b_pair = w * g
        llm_only[name] = {"DCG@10": {"tau": kendall(b_pair.sum(1), truth_p)}}
        for j, mname in enumerate(QUERY_MEASURES):
            boot = [bootstrap_ci(f_lib[j, s], n=1000, seed=args.seed)
                    for s in range(args.systems)]
            llm_only[name][mname] = {
                "tau": kendall(f_lib[j].mean(1), truth_qm[j]),
                "cover": float(np.mean([i.low <= t <= i.high
                                        for i, t in zip(boot, truth_qm[j], strict=True)]))}
        for unit, frac, mname in budgets:
            rng = np.random.default_rng([args.seed, zlib.crc32(name.encode()), int(frac * 100)])
            if unit == "pairs":
                sizes = np.bincount(g, minlength=4)
                take = allocate(round(frac * len(pairs)), sizes)
                mask = draw_masks(g, take, args.draws, rng)
                m = moments_of(mask, g, 4, a_pair, b_pair)
                design = estimate_from_moments(m, sizes.astype(float), b_pair.sum(1), nq)
                # post-stratified by each system's top K (a and b are 0 outside it)
                n_top = np.stack([(mask * (g == h)) @ top.T for h in range(4)], axis=-1)
                e, usable = post_stratified(Moments(n_top, m.sa, m.sb, m.saa, m.sbb, m.sab),
                                            top @ (g[:, None] == np.arange(4)).astype(float),
                                            b_pair.sum(1), nq, lam=args.lam,
                                            collapse=args.collapse)
                e = _where(usable, e, design)
                results[(unit, frac, mname)][name] = summarise(e, truth_p) | {
                    "cover_ht": float(((design.low <= truth_p) & (truth_p <= design.high)).mean()),
                    "width_ht": float((design.high - design.low).mean())}
                informative[name].append((n_top.sum(-1),  # sampled pairs in the top K
                                          (e.low <= truth_p) & (truth_p <= e.high)))
            else:
                j = QUERY_MEASURES.index(mname)
                take = np.array([round(frac * nq)])
                mask = draw_masks(np.zeros(nq, dtype=np.int64), take, args.draws, rng)
                m = moments_of(mask, np.zeros(nq, dtype=np.int64), 1, y_lib[j], f_lib[j])
                e = estimate_from_moments(m, np.array([float(nq)]), f_lib[j].sum(1), nq,
                                          lam=args.lam)
                results[(unit, frac, mname)][name] = summarise(e, truth_qm[j])
    for unit, frac, mname in budgets:
        measure = f"{mname}, " + ("pairs stratified by judge grade" if unit == "pairs" else
                                  "simple random sample of queries")
        n_units = round(frac * (len(pairs) if unit == "pairs" else nq))
        print(f"\n== budget {frac:.0%} of {unit} ({n_units} {unit}; {measure}) ==")
        print(f"{'judge':32} {'kappa_q':>7} {'cover':>6} {'worst':>6} {'width/human':>11} "
              f"{'labels x':>8} {'hum cover':>9} {'tau ppi':>7} {'tau hum':>7} {'tau llm':>7} {'llm cover':>9}"
              f" {'ht cover':>8} {'width/ht':>8}")
        rows = results[(unit, frac, mname)]
        for name in sorted(rows, key=lambda n: -kappas[n]):
            r, lo = rows[name], llm_only[name][mname]
            tau_llm = lo["tau"]
            print(f"{name:32} {kappas[name]:7.3f} {r['cover']:6.3f} {r['worst']:6.3f} "
                  f"{r['width'] / r['width_h']:11.3f} {r['eff']:8.2f} {r['cover_h']:9.3f} {r['tau']:7.3f} "
                  f"{r['tau_h']:7.3f} {tau_llm:7.3f} "
                  + (f"{lo['cover']:9.3f}" if unit == "queries" else
                     f"{'':9} {r['cover_ht']:8.3f} {r['width'] / r['width_ht']:8.3f}"))
        covered = sum(r["cover"] >= 0.93 for r in rows.values())
        good = [n for n in rows if kappas[n] >= 0.3]
        narrower = sum(rows[n]["width"] < rows[n]["width_h"] for n in good)
        print(f"coverage >= 0.93: {covered}/{len(rows)} judges (lowest "
              f"{min(r['cover'] for r in rows.values()):.3f}); narrower than human-only: "
              f"{narrower}/{len(good)} judges with kappa_q >= 0.3")
    print_thresholds(informative, results, budgets)
    print(f"\n{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
