"""Run scores from a recorded human sample: LLM-only, human-only and PPI, side by side.

A query-level sample (srs-queries) serves every measure: per-query values under the judge's
labels for every query and the human labels for the sampled ones. A pair-level sample
(srs-pairs, stratified-pairs) serves DCG@k, P@k and RBP@k, linear in the gains with a fixed
normaliser (each sampled pair weighted by 1 / inclusion probability), and nDCG@k by the
ratio estimator (``infer.ratio``); AP, RR and R are refused with the advice to draw a
query-level sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from reljudge.choices import PPI_PAGE
from reljudge.errors import InputError
from reljudge.frames import DataFrame, Tabular, dataframe
from reljudge.infer import ppi, ratio
from reljudge.infer.cells import (
    PAIR_MEASURES,
    Cells,
    Design,
    RunEstimate,
    check_in_pool,
    difference_domain,
    estimates,
    grades_of,
    human_truth,
    outside_pool,
    pair_cells,
    pair_weights,
    population,
)
from reljudge.infer.favours import TOP
from reljudge.infer.ranges import difference_range, measure_range
from reljudge.infer.sample import small_sample_warning
from reljudge.labels import Sample
from reljudge.metrics import evaluate, evaluate_many, parse_measure
from reljudge.metrics.measures import Measure
from reljudge.pool import PairIndex
from reljudge.tables import Interval
from reljudge.trec_data import Qrels, Run

if TYPE_CHECKING:
    from reljudge.infer.favours import Favours
    from reljudge.infer.ranking import Ranking
    from reljudge.store import LabelStore

EXACT = "exact (census)"
#: values of the pairs-of-runs' cells held at once by ``_PairDesign.differences`` (memory)
# the interval of a row whose sample is a census of its units
DIFFERENCE_CELLS = 1 << 22


def check_complete(sample: Sample, human: Qrels) -> None:
    """Every sampled pair must carry a human label; otherwise say how many are missing."""
    have = grades_of(human)
    missing = [p for p in sample.pairs() if p not in have]
    if missing:
        q, d = missing[0]
        raise InputError(f"sample {sample.name!r} is not fully graded: {len(missing)} of "
                         f"{len(sample.items)} pairs have no human label (first: {q} {d})")


def estimate_runs(sample: Sample, judge: Qrels, human: Qrels, runs: Sequence[Run],
                  measures: Sequence[str], *, level: float = 0.95, bootstrap: int = 1000,
                  seed: int = 0, baseline: str | None = None,
                  rankings: list[Ranking] | None = None, notes: list[str] | None = None,
                  favours: list[Favours] | None = None, top: int = TOP
                  ) -> tuple[list[RunEstimate], list[RunEstimate]]:
    """Per run and measure: LLM-only (bootstrap CI), human-only and PPI estimates; and the
    same for each run minus the baseline run (default the first), with p-values. Given a list
    ``rankings``, each measure's ranking of two or more runs is added to it (infer.ranking);
    given a list ``favours``, each measure's table of the runs the judge favours
    (infer.favours; Kendall's tau over the ``top`` runs and all); given a list ``notes``,
    each measure's warning that holds for all its rows (an uncertain normaliser of nDCG@k
    from a pair sample), once, as "MEASURE: ..."."""
    check_complete(sample, human)
    parsed = [parse_measure(m) for m in measures]
    names = [r.name for r in runs]
    base = baseline or names[0]
    if base not in names:
        raise InputError(f"baseline {base!r} is not one of the runs: {', '.join(names)}")
    queries = sorted({q for q, _, _ in judge})
    sampled_q = sorted({i.qid for i in sample.items})
    unknown = [q for q in sampled_q if q not in set(queries)]
    if unknown:
        raise InputError(f"sampled query {unknown[0]} has no judge labels")
    cells: Cells = {(name, str(m)): {"llm": values} for m in parsed
                    for name, values in _per_query_many(judge, runs, m, queries).items()}
    design: Design
    if sample.unit == "pair":
        check_in_pool(sample, judge, runs, parsed)
    if sample.unit == "query":
        design = _query_design(sample, human, runs, parsed, queries, sampled_q, cells, level)
    elif sample.design == "active":
        from reljudge.infer.weighted import active_design

        design = active_design(sample, judge, human, runs, parsed, queries, cells, level)
    else:
        linear = [m for m in parsed if not ratio.serves(m)]
        design = _pair_design(sample, judge, human, runs, linear, queries, cells, level)
        if len(linear) < len(parsed):
            design = _ByMeasure(design, _ratio_design(sample, judge, human, runs, [
                m for m in parsed if ratio.serves(m)], queries, level, bootstrap, seed))
    rows, diffs, own = _estimate_rows(design, cells, sample, runs, parsed, base, len(queries),
                                      level=level, bootstrap=bootstrap, seed=seed)
    if sample.design == "active":
        from reljudge.infer.weighted import warn_unweighed

        rows, diffs = warn_unweighed(sample, rows, diffs)
    if notes is not None and isinstance(design, _ByMeasure):
        notes += [f"{m}: {said}" for m in parsed if (said := design.ratio.note(m))]
    if rankings is not None:
        from reljudge.infer.ranking import rank_runs

        rankings += [r for m in parsed if (r := rank_runs(design, cells, names, m, rows, level))]
    if favours is not None:
        from reljudge.infer.favours import judge_bias

        favours += [judge_bias(own[str(m)], rows, m, level, top) for m in parsed]
    return rows, diffs


@dataclass(frozen=True)
class _QueryDesign:
    """A query-level sample: per-query values of the sampled queries (``idx``)."""

    idx: np.ndarray
    level: float

    def estimate(self, cell: dict, run: str, m: Measure, other: str | None = None
                 ) -> tuple[ppi.Estimate, int]:
        """The query-level PPI estimate of a cell."""
        return ppi.query_level(cell["human"], cell["llm"], self.idx, self.level,
                               spread=cell.get("spread")), self.idx.shape[-1]


def _query_design(sample: Sample, human: Qrels, runs: Sequence[Run], parsed: Sequence[Measure],
                  queries: list[str], sampled_q: list[str], cells: Cells,
                  level: float) -> _QueryDesign:
    """Add each cell's per-query values under the human labels of the sampled queries."""
    recorded = sample.params.get("population_queries")
    if recorded is not None and recorded != len(queries):
        raise InputError(f"sample {sample.name!r} was drawn from {recorded} queries, but "
                         f"the judge labels {len(queries)}: estimate with the judge "
                         f"source the sample was drawn from")
    idx = np.array([queries.index(q) for q in sampled_q])
    human_sub = human.from_dict({q: v for q, v in human.to_dict().items()
                                 if q in set(sampled_q)})
    for m in parsed:
        low, high = measure_range(m)
        for name, values in _per_query_many(human_sub, runs, m, sampled_q).items():
            cell = cells[(name, str(m))]
            cell["human"] = values
            # a query's value can lie anywhere in the range
            if np.isfinite(high - low):
                cell["spread"] = high - low
    return _QueryDesign(idx, level)


@dataclass(frozen=True)
class _PairDesign:
    """A pair-level sample: each cell holds the sampled pairs' human (``a``) and judge
    (``b``) values, the judge's population total and the values' spread."""

    # (items, pool) in top k
    in_top: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]
    item_strata: np.ndarray
    sizes: np.ndarray
    pop_strata: np.ndarray | None
    queries: int
    level: float

    def estimate(self, cell: dict, run: str, m: Measure, other: str | None = None
                 ) -> tuple[ppi.Estimate, int]:
        """The design-based estimate, post-stratified over the pairs in the top k when the
        strata allow it. Vectorised: the cell's values and the items in the top k may carry
        leading axes (draws of the same stratum composition, as bench/ppi.py uses)."""
        items, popd = self.in_top[(run, str(m))]
        informative = items.sum(axis=-1)
        # a difference is 0 where both runs weigh a pair alike
        if other:
            theirs = self.in_top[(other, str(m))]
            # in either run's top k
            informative = (items | theirs[0]).sum(axis=-1)
            items, popd = difference_domain(cell, (items, popd), theirs)
        k = informative if np.ndim(informative) else int(informative)
        return self._in_domain(cell, items, self._domain_sizes(popd), m, bool(other)), k

    def batch(self, cells: Cells, names: Sequence[str], m: Measure,
              pairs: Sequence[tuple[int, int | None]]) -> tuple[ppi.Estimate, list[int]]:
        """``estimate`` of each (i, j) of ``pairs`` at once: run names[i] minus names[j]
        (j None: the run alone), the same numbers; and each one's sampled pairs in the top
        k (either run's)."""
        tops = [self.in_top[(n, str(m))] for n in names]
        if all(j is None for _, j in pairs):
            counts = [int(tops[i][0].sum()) for i, _ in pairs]
            return self._runs(cells, names, m, [i for i, _ in pairs], tops), counts
        if any(j is None for _, j in pairs):
            raise ValueError("batch: pairs of runs and runs alone go in separate calls")
        stacked = {f: np.stack([cells[(n, str(m))][f] for n in names])
                   for f in ("a", "b", "b_total", "spread", "w")}
        # a pooled pair is in the difference's domain where the two runs weigh it
        # differently: compared as the weights' small integer codes, not float differences
        weights = np.stack([cells[(n, str(m))]["w_pop"] for n in names])
        codes = np.unique(weights, return_inverse=True)[1].reshape(weights.shape)
        codes = codes.astype(np.min_scalar_type(int(codes.max(initial=0))))
        first = np.array([i for i, _ in pairs], dtype=np.int64)
        second = np.array([j for _, j in pairs], dtype=np.int64)
        items = np.stack([top[0] for top in tops])
        counts = np.count_nonzero(items[first] | items[second], axis=-1).tolist()
        chunk = max(1, DIFFERENCE_CELLS // max(1, weights.shape[-1]))
        # the codes of each design stratum's pooled pairs, compared stratum by stratum: the
        # counts of _domain_sizes without the whole comparison's copy
        by_stratum = (None if self.pop_strata is None else
                      [codes[:, self.pop_strata == h] for h in range(len(self.sizes))])
        parts = []
        for at in range(0, len(pairs), chunk):
            i, j = first[at:at + chunk], second[at:at + chunk]
            dcell = {f: v[i] - v[j] for f, v in stacked.items()}
            dcell["spread"] = stacked["spread"][i] + stacked["spread"][j]
            dsize = None if by_stratum is None else np.stack(
                [np.count_nonzero(c[i] != c[j], axis=-1) for c in by_stratum],
                axis=-1).astype(np.float64)
            parts.append(self._in_domain(dcell, dcell["w"] != 0, dsize, m, True))
        return ppi.concatenate(parts), counts

    def _domain_sizes(self, popd: np.ndarray) -> np.ndarray | None:
        """The pooled pairs of a domain (``popd``, (..., P)) per design stratum, (..., H);
        None where there are no post-strata."""
        if self.pop_strata is None:
            return None
        return ppi.stratum_counts(popd, self.pop_strata, len(self.sizes))

    def _runs(self, cells: Cells, names: Sequence[str], m: Measure, which: Sequence[int],
              tops: Sequence[tuple[np.ndarray, np.ndarray]]) -> ppi.Estimate:
        """Each run ``names[i]``'s own estimate, i in ``which``, vectorised over the runs (P@k
        run by run: its proportion interval takes one domain size)."""
        if m.name == "P":
            return ppi.concatenate([self.estimate(cells[(names[i], str(m))], names[i], m)[0]
                                    for i in which])
        cell = {f: np.stack([cells[(names[i], str(m))][f] for i in which])
                for f in ("a", "b", "b_total", "spread")}
        items = np.stack([tops[i][0] for i in which])
        dsize = self._domain_sizes(np.stack([tops[i][1] for i in which]))
        return self._in_domain(cell, items, dsize, m, False)

    def _in_domain(self, cell: dict, items: np.ndarray, dsize: np.ndarray | None,
                   m: Measure, difference: bool) -> ppi.Estimate:
        """The estimate of a cell over its domain: ``items``, the sampled pairs in the run's
        top k (or either run's), and ``dsize``, the domain's pooled pairs per stratum
        (``_domain_sizes``)."""
        if self.pop_strata is None or dsize is None:
            return self._design_based(cell)
        # a and b are 0 outside the top k: the domain's sums are the sample's, its counts
        # are the sampled pairs in the top k
        whole = ppi.moments(cell["a"], cell["b"], self.item_strata, len(self.sizes))
        dom = replace(whole, n=ppi.stratum_counts(items, self.item_strata, len(self.sizes)))
        # a P@k difference's pairs are worth -1/k, 0 or 1/k: a post-stratum of a few sampled
        # pairs is often all of one value, whose zero variance would decide the sign
        e, usable = ppi.post_stratified(dom, dsize, np.asarray(cell["b_total"]),
                                        float(self.queries), self.level, spread=cell["spread"],
                                        units=ppi.Units(cell["a"], cell["b"],
                                                        np.where(items, self.item_strata, -1)),
                                        each_flat=m.name == "P" and difference)
        # 'worth' in pool pairs: an SRS of m pool pairs puts m * N_domain / N in the domain
        in_domain = dsize.sum(axis=-1)
        worth = e.effective_n * float(self.sizes.sum()) / np.maximum(in_domain, 1.0)
        e = replace(e, effective_n=worth, n=np.full(np.shape(e.value),
                                                    float(len(self.item_strata))))
        # every value in the top k is 0 or 1/k
        if m.name == "P" and not difference:
            units = float(in_domain)
            e = ppi.proportion_interval(e, cell["spread"] * units / self.queries,
                                        dom.n.sum(axis=-1), units)
        if np.all(usable):
            return e
        return ppi.where(usable, e, self._design_based(cell))

    def _design_based(self, cell: dict) -> ppi.Estimate:
        """The stratified estimate over the whole pool (no post-strata)."""
        return ppi.estimate(cell["a"], cell["b"], cell["b_total"], self.item_strata,
                            self.sizes, float(self.queries), self.level,
                            spread=cell["spread"])


def _pair_design(sample: Sample, judge: Qrels, human: Qrels, runs: Sequence[Run],
                 parsed: Sequence[Measure], queries: list[str], cells: Cells,
                 level: float) -> _PairDesign:
    """Fill each cell (``cells.pair_cells``) and the design: strata and post-strata."""
    v = pair_cells(sample, judge, human, runs, parsed, cells)
    item_strata = np.array([v.labels.index(i.stratum or "all") for i in sample.items])
    return _PairDesign(v.in_top, item_strata, v.sizes,
                       _population_strata(sample, v.labels, v.pop_grades, v.sizes),
                       len(queries), level)


@dataclass(frozen=True)
class _ByMeasure:
    """A pair sample's estimates: nDCG@k by the ratio estimator, the rest linear."""

    linear: Design
    ratio: ratio.RatioDesign

    def estimate(self, cell: dict, run: str, m: Measure, other: str | None = None
                 ) -> tuple[ppi.Estimate, int]:
        """The ratio estimator's estimate for nDCG@k, else the linear one's."""
        which = self.ratio if ratio.serves(m) else self.linear
        return which.estimate(cell, run, m, other)

    def batch(self, cells: Cells, names: Sequence[str], m: Measure,
              pairs: Sequence[tuple[int, int | None]]) -> tuple[ppi.Estimate, list[int]]:
        """The estimates of ``pairs`` by the design that serves ``m``
        (``infer.cells.estimates``)."""
        return estimates(self.ratio if ratio.serves(m) else self.linear, cells, names, m, pairs)


def _ratio_design(sample: Sample, judge: Qrels, human: Qrels, runs: Sequence[Run],
                  parsed: Sequence[Measure], queries: list[str], level: float,
                  bootstrap: int, seed: int) -> ratio.RatioDesign:
    """The pool and sample as arrays, and every run's nDCG@k replicates."""
    frame, pop = ratio_frame(sample, judge, human, queries)
    return ratio.RatioDesign.build(frame, [r.name for r in runs], ratio_weights(runs, pop, parsed),
                                   queries, level, bootstrap, seed)


def ratio_frame(sample: Sample, judge: Qrels, human: Qrels, queries: list[str]
                ) -> tuple[ratio.PairFrame, list[tuple[str, str]]]:
    """A pair sample and its pool as the ratio estimator's arrays, and the pool's pairs."""
    pop, labels, sizes = population(sample, judge)
    jg, hg = grades_of(judge), grades_of(human)
    index = {p: i for i, p in enumerate(pop)}
    qindex = {q: i for i, q in enumerate(queries)}
    pairs = sample.pairs()
    frame = ratio.PairFrame(
        np.array([qindex[q] for q, _ in pop], dtype=np.int64),
        np.array([jg[p] for p in pop], dtype=np.int64), sizes,
        np.array([index[p] for p in pairs], dtype=np.int64),
        np.array([labels.index(i.stratum or "all") for i in sample.items], dtype=np.int64),
        np.array([hg[p] for p in pairs], dtype=np.int64), len(queries))
    return frame, pop


def ratio_weights(runs: Sequence[Run], pop: Sequence[tuple[str, str]],
                  parsed: Sequence[Measure]) -> dict[Measure, np.ndarray]:
    """Per nDCG@k measure, each run's DCG@k rank weight of each pooled pair, (R, P)."""
    index = PairIndex(pop)
    return {m: np.stack([pair_weights(run, index, parse_measure(f"DCG@{int(m.cutoff or 0)}"))
                         for run in runs]) for m in parsed}


def _estimate_rows(design: Design, cells: Cells, sample: Sample, runs: Sequence[Run],
                   parsed: Sequence[Measure], base: str, queries: int, *, level: float,
                   bootstrap: int, seed: int
                   ) -> tuple[list[RunEstimate], list[RunEstimate], dict[str, ppi.Estimate]]:
    """Each run's row and each run-minus-baseline row, LLM-only intervals bootstrapped; and
    per measure the runs' estimates behind their rows, vectorised over the runs."""
    from reljudge.stats.bootstrap import percentile_cis

    rows, diffs, by_measure = [], [], {}
    names = [r.name for r in runs]
    b = names.index(base)
    others = [i for i in range(len(names)) if i != b]
    at = {i: k for k, i in enumerate(others)}
    for m in parsed:
        by_ratio = isinstance(design, _ByMeasure) and ratio.serves(m)
        own, own_k = estimates(design, cells, names, m, [(i, None) for i in range(len(names))])
        by_measure[str(m)] = own
        de, de_k = (estimates(design, cells, names, m, [(i, b) for i in others]) if others
                    else (None, []))
        own_each, de_each = ppi.unstack(own), ppi.unstack(de) if de is not None else []
        # the LLM-only intervals of every run and every run minus the baseline at once
        llm = np.stack([cells[(n, str(m))]["llm"] for n in names])
        boots = percentile_cis(llm, level, bootstrap, seed)
        dboots = dict(zip(others, percentile_cis(llm[others] - llm[b], level, bootstrap, seed)
                          if others else [], strict=True))
        for i, run in enumerate(runs):
            boot = boots[i]
            e, k = own_each[i], own_k[i]
            rows.append(_row(run.name, str(m), boot.mean, boot.low, boot.high, e, None, k,
                             _warning(e, _small(sample.unit, k, m.cutoff, queries,
                                                by_ratio=by_ratio)),
                             measure_range(m)))
            if de is None or i == b:
                continue
            dboot = dboots[i]
            d, k = de_each[at[i]], de_k[at[i]]
            diffs.append(_row(f"{run.name} - {base}", str(m), dboot.mean, dboot.low,
                              dboot.high, d, float(d.p_value()), k,
                              _warning(d, _small(sample.unit, k, m.cutoff, queries, True,
                                                 by_ratio)),
                              difference_range(m)))
    return rows, diffs, by_measure


def _per_query(qrels: Qrels, run: Run, measure: Measure, queries: Sequence[str]
               ) -> np.ndarray:
    """The run's value of ``measure`` on each of ``queries`` (0 where it has none)."""
    ev = evaluate(qrels, run, [measure], all_queries=True)
    return _on_queries(ev.query_ids, ev.scores[:, 0], queries)


def _per_query_many(qrels: Qrels, runs: Sequence[Run], measure: Measure,
                    queries: Sequence[str]) -> dict[str, np.ndarray]:
    """``_per_query`` of each run, by run name (of runs sharing a name, the last one's):
    the runs evaluated together, each one's values bit for bit its own evaluation's
    (``metrics.evaluate_many``)."""
    out = {}
    evaluated = evaluate_many(qrels, runs, [measure], all_queries=True).values()
    for run, ev in zip(runs, evaluated, strict=True):
        out[run.name] = _on_queries(ev.query_ids, ev.scores[:, 0], queries)
    return out


def _on_queries(query_ids: Sequence[str], values: np.ndarray, queries: Sequence[str]
                ) -> np.ndarray:
    """The values of ``query_ids`` on ``queries``, 0 where a query has none."""
    vals = dict(zip(query_ids, values.tolist(), strict=True))
    return np.array([vals.get(q, 0.0) for q in queries])


def _population_strata(sample: Sample, labels: list[str], pop_grades: np.ndarray,
                       sizes: np.ndarray) -> np.ndarray | None:
    """Each pooled pair's design stratum (from the judge's grade for stratified-pairs), or
    None when the judge's grades do not give the recorded stratum sizes (then only the
    design-based estimate is possible)."""
    if sample.design == "srs-pairs":
        return np.zeros(len(pop_grades), dtype=np.int64)
    index = {lab: h for h, lab in enumerate(labels)}
    strata = np.array([index.get(f"grade={g}", -1) for g in pop_grades.tolist()])
    if (strata < 0).any() or not np.array_equal(np.bincount(strata, minlength=len(labels)),
                                                sizes.astype(np.int64)):
        return None
    return strata


def _small(unit: str, informative: int, cutoff: float | None, queries: int,
           pair_of_runs: bool = False, by_ratio: bool = False) -> str | None:
    """The small-sample warning, or for a pair sample holding no pair in the top k, that
    (worded for the ratio estimator of nDCG@k when ``by_ratio``)."""
    if unit == "pair" and informative == 0:
        whose = "either run's" if pair_of_runs else "the run's"
        top = f"top {cutoff}" if cutoff else "top k"
        made = ("its DCG is the judge's grades of those pairs recalibrated by the sample's "
                "p(human grade | judge grade), over each query's estimated ideal DCG"
                if by_ratio else "it is the design-based estimate over the whole pool")
        return (f"from no sampled pair in {whose} {top}: no human label of {whose} own pairs "
                f"enters it ({made}); sample pairs from the run's top k")
    return small_sample_warning(unit, informative, cutoff, queries, pair_of_runs)


def _warning(e: ppi.Estimate, small: str | None) -> str | None:
    """The estimate's warnings as one line: too small a sample, strata that varied not at
    all."""
    flat = int(np.sum(e.flat))
    bound = float(np.max(e.range_bound))
    # a range bound replaced the t interval, whose "likely too narrow" does not hold: say so
    if bound > 0:
        small = (f"from {int(np.max(e.n))} sampled queries, widened to +-{bound:.4g} around "
                 f"the human-only mean, the Hoeffding-Serfling bound from the measure's range "
                 f"(Bardenet and Maillard 2015): valid however skewed the per-query values, "
                 f"wide because the sample is small")
    said = [small] if small else []
    if flat:
        said.append(f"{flat} sampled stratum/strata short of a census had all sampled values "
                    f"equal: their variance is conservative ({ppi.FLAT_RULE})")
    return "; ".join(said) or None


def _row(name: str, measure: str, llm: float, lo: float, hi: float, e: ppi.Estimate,
         p: float | None = None, informative: int = 0, warning: str | None = None,
         bounds: tuple[float, float] = (-np.inf, np.inf)) -> RunEstimate:
    """One row, every value and interval end clipped to the measure's range ``bounds`` (a
    clipped interval covers the truth whenever the unclipped one did); an interval wholly
    outside the range (it missed) becomes the whole range, and the warning says so."""
    low_end, high_end = float(bounds[0]), float(bounds[1])

    def c(v: float | np.ndarray) -> float:
        return clip(float(v), low_end, high_end)

    said = [warning] if warning else []
    ends: list[float] = []
    for which, low, high in (("human", float(e.classical_low), float(e.classical_high)),
                             ("ppi", float(e.low), float(e.high))):
        if high > low and c(high) == c(low):
            said.append(f"the {which} interval [{low:.4f}, {high:.4f}] lay wholly outside "
                        f"the measure's range: shown as the whole range")
            low, high = bounds
        ends += [c(low), c(high)]
    return RunEstimate(name, measure, c(llm), c(lo), c(hi), c(e.classical), ends[0], ends[1],
                       c(e.value), ends[2], ends[3], float(e.lam), int(e.n),
                       float(e.effective_n), p, informative, "; ".join(said) or None,
                       bool(np.all(e.exact)))


def clip(x: float, low: float, high: float) -> float:
    """``float(np.clip(x, low, high))`` of one number (bounds not nan), without numpy's
    call: nan stays nan, and x equal to a bound is kept (its sign of zero too)."""
    if x != x:
        return x
    x = x if x >= low else low
    return x if x <= high else high


def estimate_table(items: Sequence[RunEstimate], level: float = 0.95, with_p: bool = False,
                   digits: int = 4) -> tuple[list[str], list[list]]:
    """Headers and rows of the side-by-side table (LLM-only, human-only, PPI)."""
    pct = f"{level:.0%}"
    headers = ["run", "measure", "llm", f"llm {pct} CI", "human", f"human {pct} CI", "ppi",
               f"ppi {pct} CI", "human labels", "worth"] + (["p (ppi)"] if with_p else [])
    rows = []
    for r in items:
        exact = Interval(EXACT) if r.exact else None
        row = [r.run, r.measure, r.llm, Interval.of(r.llm_low, r.llm_high, digits),
               r.human, exact or Interval.of(r.human_low, r.human_high, digits), r.ppi,
               exact or Interval.of(r.ppi_low, r.ppi_high, digits), r.human_labels,
               int(round(r.effective_labels))]
        rows.append(row + ([r.p] if with_p else []))
    return headers, rows


@dataclass(frozen=True, repr=False)
class StoreEstimates(Tabular):
    """Estimates from a store's recorded sample, and the measures it could not serve. Prints
    as the estimate table (runs, then differences with their p-values) and its note."""

    sample: str
    design: str
    judge: str
    rows: list[RunEstimate]
    diffs: list[RunEstimate]
    # measures a pair-level sample cannot estimate
    skipped: list[str]
    # per measure (infer.ranking); None: not asked for
    rankings: list[Ranking] | None = None
    # "MEASURE: ..." for all its rows
    measure_notes: list[str] = field(default_factory=list)
    # runs not estimated: why, one each
    outside: list[str] = field(default_factory=list)
    # per measure (infer.favours): the judge's bias
    favours: list[Favours] | None = None

    def ranking_note(self) -> str:
        """How the rankings were made, or why there are none."""
        from reljudge.infer.ranking import NO_RANKING, ranking_note

        if self.rankings is None:
            return "no ranking: not asked for"
        return ranking_note(self.rankings) if self.rankings else NO_RANKING

    def warnings(self) -> list[str]:
        """One line per measure whose every row is uncertain (an uncertain normaliser), then
        one per estimate whose sample is below the benchmark's reliable size."""
        return [f"warning: not estimated: {why}" for why in self.outside] + [
            f"warning: {n}; read its intervals as approximate or label more ({PPI_PAGE})"
            for n in self.measure_notes] + [
            f"warning: {r.run} {r.measure}: the interval is {r.warning}; read it as "
            f"approximate or label more ({PPI_PAGE})" for r in self.rows + self.diffs
            if r.warning]

    def table(self) -> tuple[list[str], list[list]]:
        """The side-by-side table ``compare --store`` prints (LLM-only, human-only, PPI)."""
        return estimate_table(self.rows + self.diffs, with_p=True)

    def notes(self) -> list[str]:
        """Where the numbers come from, and the small-sample warnings."""
        return [self.note(), *self.warnings()]

    def to_dataframe(self) -> DataFrame:
        """A pandas DataFrame, one row per run (and difference) and measure, every field of
        ``RunEstimate`` as a column (full precision, interval ends as separate columns)."""
        from dataclasses import astuple, fields

        return dataframe([f.name for f in fields(RunEstimate)],
                         [astuple(r) for r in self.rows + self.diffs])

    def note(self) -> str:
        """One line saying where the numbers come from."""
        skipped = (f"; not estimable from this pair-level sample: {', '.join(self.skipped)}"
                   if self.skipped else "")
        return (f"sample {self.sample!r} ({self.design}), judge {self.judge!r}; 'worth': human "
                f"labels a human-only estimate would need for the ppi interval; a difference "
                f"row is estimated directly over either run's top k, not as the difference of "
                f"the two runs' rows ({PPI_PAGE}){skipped}")


def estimate(store: LabelStore, runs: Sequence[Run], measures: Sequence[str] | str, *,
             sample: str | None = None, judge: str | None = None, human_source: str | None = None,
             level: float = 0.95, seed: int = 0, baseline: str | None = None,
             require: bool = True, rank: bool = True, top: int = TOP
             ) -> StoreEstimates | None:
    """Estimates from a recorded sample (default: the newest fully graded one); None when
    ``require`` is false and the store has no fully graded sample. ``judge`` and ``human_source``
    name sources as users type them; an unknown one is an error. ``measures``: one as text
    (``"DCG@10"``) or several. ``rank``: also rank the runs per measure (every pair of runs is
    estimated). Without ``require`` (a report), a run the sample does not speak for is left
    out and ``StoreEstimates.outside`` says why. ``StoreEstimates.favours``: per measure, each
    run's judge-only score minus its estimate, flagged where the interval excludes 0, and
    Kendall's tau of the two rankings over the ``top`` runs and all.
    """
    from reljudge.store.names import resolve_source

    if isinstance(measures, str):
        measures = [measures]
    known = store.source_list()
    if judge is not None:
        judge = resolve_source(known, judge, where=str(store.path), option="--judge").name
    if human_source is not None:
        human_source = resolve_source(known, human_source, kind="human", where=str(store.path),
                                      option="--human-source").name
    names = [sample] if sample else list(reversed(store.sample_names()))
    for name in names:
        s = store.sample(name)
        judge_name = judge or s.params.get("judge")
        if not judge_name:
            raise InputError(f"sample {name!r} does not record its judge; give the judge "
                             f"source name")
        wanted = set(s.pairs())
        graded = human_truth(store, wanted, human_source)
        if len(graded) < len(wanted) and not require and not sample:
            # not graded yet: try an older sample
            continue
        jg = store.source_grades(judge_name)
        usable = list(measures)
        skipped: list[str] = []
        if s.unit == "pair":
            usable = [m for m in measures if (parse_measure(m).name in PAIR_MEASURES
                      and parse_measure(m).cutoff is not None)
                      or (ratio.serves(parse_measure(m)) and s.design != "active")]
            skipped = [str(parse_measure(m)) for m in measures if m not in usable]
            if not usable:
                if require:
                    raise InputError(f"none of {', '.join(skipped)} can be estimated from "
                                     f"the {s.design} sample {name!r} (only DCG@k, P@k, RBP@k"
                                     f"{'' if s.design == 'active' else ', nDCG@k'}); "
                                     f"draw a query-level sample "
                                     f"(--design srs-queries)")
                return None
        rankings: list[Ranking] | None = [] if rank else None
        notes: list[str] = []
        favours: list[Favours] = []
        judge_q = _qrels(jg)
        outside = {} if require else outside_pool(s, judge_q, runs,
                                                  [parse_measure(m) for m in usable])
        # a report: what the sample serves
        kept = [r for r in runs if r.name not in outside]
        rows, diffs = estimate_runs(s, judge_q, _qrels(graded), kept, usable, level=level,
                                    seed=seed, baseline=baseline, rankings=rankings,
                                    notes=notes, favours=favours, top=top
                                    ) if kept else ([], [])
        return StoreEstimates(name, s.design, judge_name, rows, diffs, skipped, rankings,
                              notes, list(outside.values()), favours)
    if require:
        raise InputError("the store has no recorded sample; draw one with `reljudge sample`")
    return None


def _qrels(grades: Mapping[tuple[str, str], int]) -> Qrels:
    return Qrels.from_arrays([p[0] for p in grades], [p[1] for p in grades],
                             np.array(list(grades.values()), dtype=np.int64))
