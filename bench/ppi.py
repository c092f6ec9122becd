"""Benchmark: do `reljudge estimate`'s intervals cover, for every run? TREC DL 2023 (LLMJudge).

    python bench/ppi.py                                   # 5 judges, 200 draws, both systems
    python bench/ppi.py --judges 2 --draws 50 --budgets 0.1   # a quick look

Truth: the 25 test queries' human labels (../shared/data/llmjudge/human/test.qrels); the
pool is their 4,423 judged pairs. Predictions: one LLM judge's labels at a time (the first
--judges judges by name; out-of-scale grades clipped to 0..3, as the organisers did).
Systems (--systems):
  simulated  32 runs ranking each query's pool by human grade + Gaussian noise (sd 0.25-4)
  judges     real models: each OTHER judge's grades as retrieval scores (ties broken by a
             second judge's grade, then by docid as trec_eval does), ranking each query's
             pool: real, tied, correlated score distributions (no TREC DL run files are
             reachable from here; docs/ppi-validation.md)
Designs x budgets: srs-pairs and stratified-pairs draw that share of the pool's pairs;
srs-queries that share of the queries (at least 3). Every draw is estimated through the
library's own path (`reljudge.infer.scores`: the cells `reljudge estimate` builds and the
design's per-cell estimate, vectorised over the draws; checked equal to `estimate_runs` on
one draw). Per design x budget x measure, over draws x systems x judges:
  cover        pooled coverage of the nominal 95 % PPI interval (+- its Monte-Carlo error)
  worst run    the lowest per-run coverage (over runs and judges; MC error +-0.015 at 200)
  worst diff   the same for each run-minus-baseline difference (baseline: the first run)
  fresh        the worst run's (and worst difference's) coverage re-measured on --recheck
               fresh draws (another seed, the same systems): the lowest of ~100 coverages
               measured on 200 draws is biased low (all at 0.95 give a minimum near 0.915),
               a fresh measure is not
  human cover  the human-only interval's pooled coverage
  width/human  mean PPI width / mean human-only width
  tau ppi/hum/llm  Kendall's tau of the ranking by the PPI / human-only / LLM-only point
               estimates against the ranking under all human labels
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from reljudge.errors import InputError
from reljudge.infer import active, ranking, ratio, scores, weighted
from reljudge.infer.cells import difference_cell, gain
from reljudge.infer.ranges import difference_range, measure_range
from reljudge.infer.sample import MIN_QUERIES, allocate, draw
from reljudge.io import read_judge
from reljudge.io.trec import read_qrels
from reljudge.labels import Sample, SampleItem
from reljudge.metrics import parse_measure
from reljudge.trec_data import Qrels, Run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.common import heading, parser  # noqa: E402

# ../shared beside the checkout (a worktree under wt/ looks one level further up)
DATA = next((up / "shared" / "data" / "llmjudge" for up in Path(__file__).resolve().parents[1:4]
             if (up / "shared" / "data" / "llmjudge").exists()),
            Path(__file__).resolve().parents[2] / "shared" / "data" / "llmjudge")
DESIGNS = ("srs-pairs", "stratified-pairs", "active", "srs-queries")
LEVEL = 0.95
SIGNAL_JUDGES = 5  # the active design's signal: the judge's disagreement with the other four
BASELINE = "stratified-pairs"  # today's default design: the second width ratio's denominator


@dataclass(frozen=True)
class World:
    """The pool, the human grades and every judge's grades over it."""

    pairs: list[tuple[str, str]]
    queries: list[str]
    human: np.ndarray
    judges: dict[str, np.ndarray]


def load(data: Path) -> World:
    """The pool (sorted by qid, docid), its human grades and each judge's grades."""
    d = read_qrels(data / "human" / "test.qrels").to_dict()
    pairs = sorted((q, doc) for q in d for doc in d[q])
    index = {p: i for i, p in enumerate(pairs)}
    human = np.array([d[q][doc] for q, doc in pairs], dtype=np.int64)
    judges = {}
    for f in sorted((data / "llm" / "labels").glob("*.txt")):
        labels, _ = read_judge(f, clip=True)
        g = np.zeros(len(pairs), dtype=np.int64)  # a pair the judge skipped: grade 0
        for q, doc, grade in labels:
            if (q, doc) in index:
                g[index[(q, doc)]] = grade
        judges[f.stem] = g
    return World(pairs, sorted(d), human, judges)


def qrels(pairs, grades) -> Qrels:
    """Qrels holding ``grades`` for ``pairs``."""
    return Qrels.from_arrays([p[0] for p in pairs], [p[1] for p in pairs],
                             np.asarray(grades, np.int64), check=False)


def runs_of(w: World, kind: str, judge: str, count: int, seed: int) -> list[Run]:
    """The systems: simulated (human grade + noise) or real judges' grades as scores."""
    q = np.array([p[0] for p in w.pairs], dtype=object)
    d = np.array([p[1] for p in w.pairs], dtype=object)
    if kind == "simulated":
        rng = np.random.default_rng(seed)
        noise = np.geomspace(0.25, 4.0, count)[:, None]
        score = w.human[None, :] + noise * rng.standard_normal((count, len(w.pairs)))
        names = [f"sim{s:02d}" for s in range(count)]
    else:
        others = [n for n in w.judges if n != judge][:count]
        second = others[1:] + others[:1]  # ties broken by the next judge's grade, then docid
        score = np.array([w.judges[a] + w.judges[b] / 10.0 for a, b in zip(others, second,
                                                                          strict=True)])
        names = others
    return [Run.from_arrays(q, d, s.astype(np.float64), name=n, check=False)
            for s, n in zip(score, names, strict=True)]


def census(w: World, design: str, judge: np.ndarray) -> Sample:
    """A 'sample' of every pooled pair, ordered by stratum, carrying the design's strata
    (or of every query): the library builds every unit's cell values from it once."""
    if design == "srs-queries":
        items = [SampleItem(q, d, i, 1.0) for i, (q, d) in enumerate(w.pairs)]
        return Sample("census", "query", design, 0, len(items), items,
                      {"queries": len(w.queries), "population_queries": len(w.queries)})
    strata = judge if design == "stratified-pairs" else np.zeros_like(judge)
    levels = np.unique(strata)
    labels = [f"grade={g}" if design == "stratified-pairs" else "all" for g in levels]
    order = np.lexsort((np.arange(len(strata)), strata))
    items = [SampleItem(*w.pairs[i], pos, 1.0, labels[int(np.searchsorted(levels, strata[i]))])
             for pos, i in enumerate(order.tolist())]
    sizes = np.bincount(np.searchsorted(levels, strata), minlength=len(levels))
    return Sample("census", "pair", design, 0, len(items), items,
                  {"population": [list(p) for p in w.pairs],
                   "strata": {lab: {"population": int(n), "sampled": int(n)}
                              for lab, n in zip(labels, sizes.tolist(), strict=True)}})


def active_census(w: World, judge: str, runs, frac: float, m) -> Sample:
    """A 'sample' of every pooled pair carrying its inclusion probability in an active draw
    of that share of the pool (as `reljudge sample --design active` computes them)."""
    size = pair_sizes(w, judge, runs, m)
    pi = active.inclusion_probabilities(np.array([size[p] for p in w.pairs]),
                                        round(frac * len(w.pairs)))
    items = [SampleItem(*p, i, float(q)) for i, (p, q) in enumerate(zip(w.pairs, pi,
                                                                         strict=True))]
    return Sample("census", "pair", "active", 0, len(items), items,
                  {"population": [list(p) for p in w.pairs]})


def draws_of(sample: Sample, frac: float, queries: int, draws: int, rng) -> np.ndarray:
    """(draws, n) indices into the census's units (items, or queries) of random samples:
    stratified simple random samples without replacement, in stratum order; for the active
    design, the library's own systematic draws with the census's probabilities."""
    if sample.design == "active":
        pi = np.array([it.prob for it in sample.items])
        return np.array([active.systematic(pi, rng) for _ in range(draws)])
    if sample.unit == "query":
        n = max(round(frac * queries), MIN_QUERIES)
        return np.sort(np.argsort(rng.random((draws, queries)), axis=1)[:, :n], axis=1)
    sizes = np.array([v["population"] for v in sample.params["strata"].values()])
    take = allocate(round(frac * sizes.sum()), sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    parts = [s + np.argsort(rng.random((draws, n)), axis=1)[:, :t]
             for s, n, t in zip(starts, sizes, take, strict=True) if t]
    return np.sort(np.concatenate(parts, axis=1), axis=1)


def library_cells(w, sample, judge_q, human_q, runs, measure):
    """The cells and the design `estimate_runs` builds for the census sample."""
    cells = {(r.name, str(measure)): {"llm": scores._per_query(judge_q, r, measure, w.queries)}
             for r in runs}
    if sample.unit == "query":
        design = scores._query_design(sample, human_q, runs, [measure], w.queries, w.queries,
                                      cells, LEVEL)
    elif sample.design == "active":
        design = weighted.active_design(sample, judge_q, human_q, runs, [measure], w.queries,
                                        cells, LEVEL)
    else:
        design = scores._pair_design(sample, judge_q, human_q, runs, [measure], w.queries,
                                     cells, LEVEL)
    return cells, design


def drawn(design, idx: np.ndarray):
    """The design's per-cell estimate on the draws ``idx``, and the cell of a census cell
    there."""
    def cell_of(c):
        if isinstance(design, weighted.ActiveDesign):  # every pooled pair's, drawn per draw
            return c
        if "human" in c:
            return {**c, "human": c["human"][idx]}
        return {**c, **{k: c[k][idx] for k in ("a", "b", "w") if k in c}}

    if isinstance(design, scores._QueryDesign):
        return replace(design, idx=idx), cell_of
    if isinstance(design, weighted.ActiveDesign):
        return replace(design, draws=idx), cell_of
    return replace(design, item_strata=design.item_strata[idx[0]],
                   in_top={k: (v[0][idx], v[1]) for k, v in design.in_top.items()}), cell_of


def draw_rankings(cells, design, runs, measure, idx: np.ndarray, truth: np.ndarray) -> dict:
    """The ranking `reljudge estimate` reports on each draw of ``idx``: every pair of runs'
    paired difference through the design's per-cell estimate (vectorised over the draws),
    then, per draw, the library's own ``infer.ranking.rank_pairs`` (Holm, the LLM order
    changed only where supported), as ``rank_runs`` calls it."""
    d, cell_of = drawn(design, idx)
    key, names = str(measure), [r.name for r in runs]
    mine = [cell_of(cells[(n, key)]) for n in names]
    rows = [d.estimate(c, n, measure)[0] for c, n in zip(mine, names, strict=True)]
    bounds, dbounds = measure_range(measure), difference_range(measure)
    pairs = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
    diffs = [d.estimate(difference_cell(mine[i], mine[j]), names[i], measure, names[j])[0]
             for i, j in pairs]
    value = np.clip(np.stack([e.value for e in rows], -1), *bounds)
    low, high = clipped(np.stack([e.low for e in rows], -1),
                        np.stack([e.high for e in rows], -1), bounds)
    dvalue = np.clip(np.stack([e.value for e in diffs], -1), *dbounds)
    dlow = np.clip(np.stack([e.low for e in diffs], -1), *dbounds)
    dhigh = np.clip(np.stack([e.high for e in diffs], -1), *dbounds)
    dp = np.stack([np.broadcast_to(e.p_value(), e.value.shape) for e in diffs], -1)
    llm = [float(cells[(n, key)]["llm"].mean()) for n in names]
    val = dict(zip(names, truth.tolist(), strict=True))
    reported, orders, wrong, got = [], [], [], None
    for t in range(len(idx)):
        got = ranking.rank_pairs(names, key, llm, list(zip(value[t].tolist(), low[t].tolist(),
                                                           high[t].tolist(), strict=True)),
                                 pairs, list(zip(dvalue[t].tolist(), dlow[t].tolist(),
                                                 dhigh[t].tolist(), dp[t].tolist(),
                                                 strict=True)), round(1.0 - LEVEL, 12))
        at = {r.run: -r.rank for r in got.runs}
        reported.append([at[n] for n in names])
        said = [o.supported.split(" > ") for o in got.pairs if o.supported]
        orders.append(len(said))
        wrong.append(contradicted(said, val))
    return {"tau_rep": float(np.nanmean(tau_rows(np.array(reported, float), truth))),
            "orders": float(np.mean(orders)),
            "wrong": float(np.sum(wrong) / max(np.sum(orders), 1)),
            "fwer": float(np.mean(np.array(wrong) > 0)), "ranking": got}


def contradicted(said: list[list[str]], truth: dict[str, float]) -> int:
    """How many supported orders "a > b" the true values contradict (a's at most b's, to
    rounding: two runs of equal P@10 summed in another order can differ in the last bit)."""
    return sum(truth[a] <= truth[b] + 1e-9 * max(1.0, abs(truth[b])) for a, b in said)


def draw_estimates(cells, design, runs, measure, idx: np.ndarray):
    """PPI estimates of every run and run-minus-first-run difference on the draws ``idx``,
    through the design's per-cell estimate: (estimates of runs, of differences, counts)."""
    d, cell_of = drawn(design, idx)
    key = str(measure)
    base = runs[0].name
    out, diffs = [], []
    for r in runs:
        cell = cell_of(cells[(r.name, key)])
        out.append(d.estimate(cell, r.name, measure)[0])
        if r.name != base:
            dcell = difference_cell(cell, cell_of(cells[(base, key)]))
            diffs.append(d.estimate(dcell, r.name, measure, base)[0])
    return out, diffs


def clipped(low, high, bounds):
    """Interval ends as `reljudge estimate` prints them (clipped; wholly outside: the range)."""
    lo, hi = np.clip(low, *bounds), np.clip(high, *bounds)
    outside = (high > low) & (lo == hi)
    return np.where(outside, bounds[0], lo), np.where(outside, bounds[1], hi)


def covers(low, high, truth) -> np.ndarray:
    """Whether [low, high] holds the truth, to rounding: an exact (census) row's value and the
    truth are the same number summed in another order (0.74 against 0.7400000000000001)."""
    tol = 1e-9 * np.maximum(1.0, np.abs(truth))
    return (low <= truth + tol) & (truth - tol <= high)


def tau_rows(x: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of x (..., S) against truth (S,)."""
    iu = np.triu_indices(len(truth), 1)
    st = np.sign(truth[:, None] - truth[None, :])[iu]
    sx = np.sign(x[..., :, None] - x[..., None, :])[..., iu[0], iu[1]]
    den = np.sqrt((sx != 0).sum(-1) * (st != 0).sum())
    return np.divide((sx * st).sum(-1), den, out=np.full(den.shape, np.nan), where=den > 0)


def ratio_estimates(w, sample, judge_q, human_q, runs, m, idx: np.ndarray, boot: int):
    """nDCG@k from pair samples: each draw ``idx`` through the library's ratio estimator
    (`infer.ratio.RatioDesign`, draw d bootstrapped with seed d as `estimate_runs(seed=d)`),
    the pool's frame and rank weights built once; stacked over the draws as
    `draw_estimates` gives them."""
    frame, pop = scores.ratio_frame(sample, judge_q, human_q, w.queries)
    weights = scores.ratio_weights(runs, pop, [m])
    names = [r.name for r in runs]
    out: list[list] = [[] for _ in range(2 * len(names) - 1)]
    for d, i in enumerate(idx):
        f = replace(frame, sampled=frame.sampled[i], stratum=frame.stratum[i],
                    human=frame.human[i])
        lib = ratio.RatioDesign.build(f, names, weights, w.queries, LEVEL, boot, d)
        pairs = [(r, None) for r in names] + [(r, names[0]) for r in names[1:]]
        for got, (r, base) in zip(out, pairs, strict=True):
            got.append(lib.estimate({}, r, m, base)[0])
    stacked = [type(es[0])(**{f.name: es[0].level if f.name == "level" else
                              np.array([getattr(e, f.name) for e in es])
                              for f in fields(es[0])}) for es in out]
    return stacked[:len(names)], stacked[len(names):]


def measure_one(w, judge, runs, design, frac, measure, draws, seed, check=False, ranked=0,
                boot=200):
    """Coverage, widths and taus of one judge x design x budget x measure; the reported
    ranking's on the first ``ranked`` draws (nDCG@k from pairs: ``ranked`` library draws)."""
    m = parse_measure(measure)
    sample = (active_census(w, judge, runs, frac, m) if design == "active"
              else census(w, design, w.judges[judge]))
    judge_q, human_q = qrels(w.pairs, w.judges[judge]), qrels(w.pairs, w.human)
    rng = np.random.default_rng([seed, zlib.crc32(f"{judge}{design}".encode()),
                                 int(frac * 1000)])
    n_units = len(w.queries) if sample.unit == "query" else len(w.pairs)
    idx = draws_of(sample, frac, n_units, draws, rng)
    if sample.unit == "pair" and ratio.serves(m):
        cells = {(r.name, str(m)): {"llm": scores._per_query(judge_q, r, m, w.queries)}
                 for r in runs}
        est, dest = ratio_estimates(w, sample, judge_q, human_q, runs, m, idx, boot)
        lib = None
    else:
        cells, lib = library_cells(w, sample, judge_q, human_q, runs, m)
        est, dest = draw_estimates(cells, lib, runs, m, idx)
        boot = 10
    truth = np.array([scores._per_query(human_q, r, m, w.queries).mean() for r in runs])
    llm = np.array([cells[(r.name, str(m))]["llm"].mean() for r in runs])
    if check:
        check_against_estimate_runs(sample, idx[0], judge_q, human_q, runs, m, est,
                                    draw_rankings(cells, lib, runs, m, idx[:1], truth)
                                    if ranked and lib else None, boot)
    if lib is None:  # the ratio estimator's rankings: through estimate_runs
        out = {k: v for k, v in library_draws(w, judge, runs, design, frac, measure, 0, ranked,
                                              seed, boot).items() if k != "units"}
    else:
        out = draw_rankings(cells, lib, runs, m, idx[:ranked], truth) if ranked else {}
    out.pop("ranking", None)
    for kind, es, tr, bounds in (("run", est, truth, measure_range(m)),
                                 ("diff", dest, truth[1:] - truth[0], difference_range(m))):
        lo, hi = clipped(np.stack([e.low for e in es], -1), np.stack([e.high for e in es], -1),
                         bounds)
        hlo, hhi = clipped(np.stack([e.classical_low for e in es], -1),
                           np.stack([e.classical_high for e in es], -1), bounds)
        hit = covers(lo, hi, tr)  # (draws, systems)
        out[kind] = hit
        if kind == "run":
            out["human"] = covers(hlo, hhi, tr)
            out["width"] = float((hi - lo).mean())
            out["width_h"] = float((hhi - hlo).mean())
            value = np.stack([e.value for e in es], -1)
            classical = np.stack([e.classical for e in es], -1)
            out["tau"] = float(np.nanmean(tau_rows(value, truth)))
            out["tau_h"] = float(np.nanmean(tau_rows(classical, truth)))
            out["tau_llm"] = float(tau_rows(llm, truth))
    out["units"] = idx.shape[1]
    return out


def check_against_estimate_runs(sample, idx, judge_q, human_q, runs, m, est,
                                ranked: dict | None = None, boot: int = 10) -> None:
    """The vectorised path equals `estimate_runs` on one real draw (ppi estimate and interval
    per run: below 30 queries the range bound's hull can hide a shifted PPI interval; with
    ``ranked``, ``draw_rankings`` of that draw: the reported order and supported orders)."""
    if sample.unit == "query":
        qids = sorted({it.qid for it in sample.items})
        chosen = {qids[i] for i in idx.tolist()}
        items = [it for it in sample.items if it.qid in chosen]
        params = dict(sample.params, queries=len(chosen))
    else:
        items = [sample.items[i] for i in idx.tolist()]
        params = sample.params
    one = Sample("check", sample.unit, sample.design, 0, len(items), items, params)
    said: list = []
    rows, _ = scores.estimate_runs(one, judge_q, human_q, runs, [str(m)], bootstrap=boot,
                                   rankings=said)
    if ranked is not None:
        mine, theirs = ranked["ranking"], said[0]
        assert [r.run for r in mine.runs] == [r.run for r in theirs.runs] and \
            [o.supported for o in mine.pairs] == [o.supported for o in theirs.pairs], \
            "bench's ranking differs from estimate_runs'"
    bounds = measure_range(m)
    for row, e in zip(rows, est, strict=True):
        lo, hi = clipped(np.float64(e.low[0]), np.float64(e.high[0]), bounds)
        value = np.clip(e.value[0], *bounds)
        assert np.isclose(row.ppi, value) and np.isclose(row.ppi_low, lo) and \
            np.isclose(row.ppi_high, hi), f"bench differs from estimate_runs on {row.run}: " \
            f"{row.ppi} {row.ppi_low, row.ppi_high} vs {value} {lo, hi}"


def vectorised(design: str, m) -> bool:
    """Whether the vectorised path (cells; nDCG@k's ratio estimator on a frame built once;
    the active design's draws mask) serves the design and measure (else: `estimate_runs`
    one draw at a time, which refuses nDCG@k from an active sample: its row says so)."""
    return not (design == "active" and ratio.serves(m))


def pair_sizes(w: World, judge: str, runs, m) -> dict:
    """The active design's size of each pair, as `reljudge sample --design active` computes
    it from a store holding the first SIGNAL_JUDGES judges: the judge's disagreement with
    the others, times the runs' rank weights (infer.active)."""
    others = [n for n in list(w.judges)[:SIGNAL_JUDGES] if n != judge]
    signal = active.signal_from_judges(
        np.array([gain(w.judges[o], m) for o in others]),
        gain(w.judges[judge], m), others)
    size = active.sizes(signal, active.run_weights(runs, w.pairs, m))
    return dict(zip(w.pairs, size.tolist(), strict=True))


def library_draws(w, judge, runs, design, frac, measure, draws, ranked, seed, boot):
    """Coverage, widths and taus of ``draws`` samples drawn by `reljudge sample`'s own
    sampler and estimated by `estimate_runs` (the first ``ranked`` of them with the ranking
    `estimate` reports: its tau and its supported orders' errors)."""
    m = parse_measure(measure)
    judge_q, human_q = qrels(w.pairs, w.judges[judge]), qrels(w.pairs, w.human)
    truth = np.array([scores._per_query(human_q, r, m, w.queries).mean() for r in runs])
    names = [r.name for r in runs]
    grades = dict(zip(w.pairs, w.judges[judge].tolist(), strict=True))
    sizes = pair_sizes(w, judge, runs, m) if design == "active" else None
    budget = round(frac * len(w.pairs))
    nq = max(round(frac * len(w.queries)), MIN_QUERIES)
    key = zlib.crc32(f"{judge}{design}{frac}".encode())
    rows_all, diffs_all, reported, orders, wrong, fwer = [], [], [], [], [], []
    units = 0
    for d in range(max(draws, ranked)):
        sample = draw(w.pairs, design, budget, seed * 100003 + key + d, grades=grades,
                      queries=nq, pair_sizes=sizes)
        units = len(sample.items) if sample.unit == "pair" else nq
        rank: list | None = [] if d < ranked else None
        rows, diffs = scores.estimate_runs(  # the bootstrap: nDCG's ratio, LLM-only rows
            sample, judge_q, human_q, runs, [measure], bootstrap=boot if ratio.serves(m)
            else 20, seed=d, rankings=rank)
        if d < draws:
            rows_all.append(rows)
            diffs_all.append(diffs)
        if rank:
            at = {r.run: -r.rank for r in rank[0].runs}
            reported.append([at[n] for n in names])
            val = dict(zip(names, truth.tolist(), strict=True))
            said = [o.supported.split(" > ") for o in rank[0].pairs if o.supported]
            bad = contradicted(said, val)
            orders.append(len(said))
            wrong.append(bad)
            fwer.append(bad > 0)

    def grid(rs, attr):
        return np.array([[getattr(r, attr) for r in row] for row in rs])

    out: dict = {"units": units}
    if draws:
        lo, hi = grid(rows_all, "ppi_low"), grid(rows_all, "ppi_high")
        hlo, hhi = grid(rows_all, "human_low"), grid(rows_all, "human_high")
        dlo, dhi = grid(diffs_all, "ppi_low"), grid(diffs_all, "ppi_high")
        dtruth = truth[1:] - truth[0]
        out.update(run=covers(lo, hi, truth), human=covers(hlo, hhi, truth),
                   diff=covers(dlo, dhi, dtruth),
                   width=float((hi - lo).mean()), width_h=float((hhi - hlo).mean()),
                   tau=float(np.nanmean(tau_rows(grid(rows_all, "ppi"), truth))),
                   tau_h=float(np.nanmean(tau_rows(grid(rows_all, "human"), truth))),
                   tau_llm=float(tau_rows(grid(rows_all[:1], "llm")[0], truth)))
    if reported:
        out.update(tau_rep=float(np.nanmean(tau_rows(np.array(reported, float), truth))),
                   orders=float(np.mean(orders)),
                   wrong=float(np.sum(wrong) / max(np.sum(orders), 1)),
                   fwer=float(np.mean(fwer)))
    return out


def worst(results: list[dict], kind: str) -> tuple[int, int]:
    """(judge, system) of the lowest coverage of ``kind`` ("run" or "diff") over judges."""
    cover = [r[kind].mean(0) for r in results]
    j = int(np.argmin([c.min() for c in cover]))
    return j, int(np.argmin(cover[j]))


def recheck(results: list[dict], measure_again) -> dict:
    """The worst run's and worst difference's coverage re-measured on fresh draws:
    ``measure_again(judge)`` gives that judge's results on them."""
    out = {}
    again: dict[int, dict] = {}
    for kind in ("run", "diff"):
        j, s = worst(results, kind)
        if j not in again:
            again[j] = measure_again(j)
        hit = again[j][kind][:, s]
        out[f"fresh_{kind}"] = (float(hit.mean()), hit.size)
    return out


def _fresh(value: tuple[float, int] | None) -> str:
    if value is None:
        return "–"
    p, n = value
    return f"{p:.3f} ± {(p * (1 - p) / n) ** 0.5:.3f} ({n})"


def summary(results: list[dict], today: list[float] | None,
            fresh: dict | None = None) -> dict:
    """Pooled over judges: coverage and its MC error, worst run / difference, widths, taus;
    ``today``: each judge's stratified-pairs width at the same budget and measure;
    ``fresh``: ``recheck``'s re-measured worst run and difference."""
    run = np.concatenate([r["run"] for r in results], axis=1)
    diff = np.concatenate([r["diff"] for r in results], axis=1)
    human = np.concatenate([r["human"] for r in results], axis=1)
    cover = float(run.mean())
    fresh = fresh or {}
    out = {"cover": cover, "mc": (cover * (1 - cover) / run.size) ** 0.5,
           "worst": float(run.mean(0).min()), "worst_diff": float(diff.mean(0).min()),
           "fresh_run": fresh.get("fresh_run"), "fresh_diff": fresh.get("fresh_diff"),
           "diff": float(diff.mean()), "human": float(human.mean()),
           "width": float(np.mean([r["width"] / r["width_h"] for r in results])),
           "today": float(np.mean([r["width"] / t for r, t in zip(results, today,
                                                                   strict=True)]))
           if today else float("nan"),
           "units": results[0]["units"], "draws": run.shape[0]}
    for k in ("tau", "tau_h", "tau_llm", "tau_rep", "orders", "wrong", "fwer"):
        got = [r[k] for r in results if k in r]
        out[k] = float(np.mean(got)) if got else float("nan")
    return out


HEADER = ("| systems | design | budget (units) | measure | draws | cover (± MC) | worst run | "
          "fresh (draws) | diff cover | worst diff | fresh (draws) | human cover | "
          "width / human | width / strat | tau ppi / human / llm / reported | "
          "supported orders (wrong, fwer) |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def row(systems: str, design: str, frac: float, measure: str, s: dict, ranked: int) -> str:
    """One markdown table row."""
    return (f"| {systems} | {design} | {frac:.0%} ({s['units']}) | {measure} | {s['draws']} | "
            f"{s['cover']:.3f} ± {s['mc']:.3f} | {s['worst']:.3f} | {_fresh(s['fresh_run'])} | "
            f"{s['diff']:.3f} | {s['worst_diff']:.3f} | {_fresh(s['fresh_diff'])} | "
            f"{s['human']:.3f} | {s['width']:.2f} | "
            f"{s['today']:.2f} | {s['tau']:.2f} / {s['tau_h']:.2f} / {s['tau_llm']:.2f} / "
            f"{s['tau_rep']:.2f} | {s['orders']:.0f} ({s['wrong']:.3f}, {s['fwer']:.2f}; "
            f"{ranked} draws) |")


def one_cell(w, judge, kind, design, frac, measure, args, check: bool) -> dict:
    """One judge's results for a design x budget x measure: the vectorised path where it
    serves (its ranking columns from --rank-draws library draws), else library draws."""
    runs = runs_of(w, kind, judge, args.count, args.seed)  # the systems: --seed's
    seed = getattr(args, "draw_seed", args.seed)  # the samples: a re-measure's are fresh
    if vectorised(design, parse_measure(measure)):
        return measure_one(w, judge, runs, design, frac, measure, args.draws, seed, check,
                           min(args.rank_draws, args.draws), args.bootstrap)
    return library_draws(w, judge, runs, design, frac, measure, args.slow_draws,
                         args.rank_draws, seed, args.bootstrap)


def main(argv: list[str] | None = None) -> int:
    """Every design x budget x measure for each system kind; one markdown table."""
    p = parser(__doc__)
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=DESIGNS)
    p.add_argument("--budgets", nargs="+", type=float, default=[0.05, 0.1, 0.2, 0.4])
    p.add_argument("--measures", nargs="+", default=["DCG@10", "nDCG@10", "P@10"])
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--slow-draws", type=int, default=20,
                   help="draws where each is estimated by estimate_runs, for a design and "
                        "measure the vectorised path does not serve (today only the active "
                        "design's nDCG@k, which the library refuses)")
    p.add_argument("--recheck", type=int, default=1000,
                   help="fresh draws (another seed) re-measuring the worst run and difference "
                        "(vectorised path; one-at-a-time designs: --slow-draws); 0: none")
    p.add_argument("--rank-draws", type=int, default=5,
                   help="draws whose reported ranking (infer.ranking, Holm) is measured")
    p.add_argument("--bootstrap", type=int, default=200,
                   help="bootstrap replicates of nDCG@k's ratio estimator per draw (the "
                        "LLM-only rows of estimate_runs: 20, unused)")
    p.add_argument("--judges", type=int, default=5, help="the first N judges by name")
    p.add_argument("--systems", nargs="+", default=["simulated", "judges"],
                   choices=("simulated", "judges"))
    p.add_argument("--count", type=int, default=32, help="systems per kind")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not (args.data / "human" / "test.qrels").exists():
        print(f"skipped: no LLMJudge data at {args.data}", file=sys.stderr)
        return 0
    t0 = time.perf_counter()
    w = load(args.data)
    judges = list(w.judges)[:args.judges]
    print(f"{len(w.pairs)} pairs, {len(w.queries)} queries, judges {', '.join(judges)}; "
          f"{args.count} systems per kind, {args.draws} draws (the worst run and difference "
          f"re-measured on {args.recheck} fresh ones; rankings from {args.rank_draws}); "
          f"95 % intervals")
    if args.markdown:
        print(heading(), end="\n\n")
    print(HEADER)
    checked: set[str] = set()
    again = argparse.Namespace(**{**vars(args), "draw_seed": args.seed + 1_000_003,
                                  "draws": args.recheck, "rank_draws": 0})  # same systems
    designs = sorted(args.designs, key=lambda d: d != BASELINE)  # today's first: the ratio
    for kind in args.systems:
        for frac in args.budgets:
            for measure in args.measures:
                today = None
                for design in designs:
                    try:
                        results = [one_cell(w, judge, kind, design, frac, measure, args,
                                            design not in checked) for judge in judges]
                    except InputError as e:
                        print(f"| {kind} | {design} | {frac:.0%} | {measure} | not estimable: "
                              f"{str(e)[:70]} ||||||||||||", flush=True)
                        continue
                    checked.add(design)
                    if design == BASELINE:
                        today = [r["width"] for r in results]
                    cell = (kind, design, frac, measure)
                    fresh = recheck(results, lambda j, cell=cell: one_cell(
                        w, judges[j], *cell, again, False)) if args.recheck else None
                    print(row(kind, design, frac, measure, summary(results, today, fresh),
                              args.rank_draws), flush=True)
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
