"""Compare runs on the same queries: means with intervals, paired tests against a baseline,
multiple-comparison correction, effect sizes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from reljudge.choices import CORRECTIONS, MAX_TRIALS, TESTS, CiMethod, Correction, Test
from reljudge.frames import DataFrame, Tabular, dataframe
from reljudge.stats.bootstrap import Interval, bootstrap_ci
from reljudge.stats.significance import (
    benjamini_hochberg,
    effect_size,
    holm,
    paired_test,
)
from reljudge.trec_data import Qrels, Run

#: how a correction is named in prose ("Holm correction", "no correction")
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}


@dataclass
class Cell:
    """One run on one measure."""

    interval: Interval
    #: mean minus the baseline's
    diff: float | None = None
    p: float | None = None
    p_adjusted: float | None = None
    significant: bool = False
    effect: float | None = None
    note: str = ""


FRAME_COLUMNS = ["run", "measure", "baseline", "mean", "se", "ci_low", "ci_high", "diff", "p",
                 "p_adjusted", "significant", "effect_size", "note"]


@dataclass(repr=False)
class Comparison(Tabular):
    """Runs x measures, each cell against the baseline run. Prints as the ``compare`` table
    and its legend; ``to_dataframe`` gives one row per run and measure."""

    measures: list[str]
    runs: list[str]
    baseline: str
    test: Test
    correction: Correction
    alpha: float
    trials: int
    seed: int
    #: the baseline's averaged queries
    queries: list[str]
    ci_method: CiMethod
    all_queries: bool = False
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    #: run -> per-query values, shape (its queries, measures)
    per_query: dict[str, np.ndarray] = field(default_factory=dict)
    #: run -> averaged queries
    run_queries: dict[str, list[str]] = field(default_factory=dict)
    #: the queries runs lack or left out of the means (coverage warnings)
    warnings: list[str] = field(default_factory=list)
    #: every mean over the queries all runs have (else each run's own)
    shared: bool = True
    #: run -> its queries with qrels
    own_queries: dict[str, int] = field(default_factory=dict)

    def left_out(self) -> dict[str, int]:
        """Per run, how many of its queries with qrels its mean leaves out (the shared set
        being smaller); empty when none does."""
        return {n: k - len(self.run_queries[n]) for n, k in self.own_queries.items()
                if k > len(self.run_queries[n])}

    def paired(self, run: str, measure: str) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(queries, baseline values, run values) over the queries both are averaged over."""
        j = self.measures.index(measure)
        base = dict(zip(self.run_queries[self.baseline],
                        self.per_query[self.baseline][:, j].tolist(), strict=True))
        mine = dict(zip(self.run_queries[run], self.per_query[run][:, j].tolist(), strict=True))
        common = [q for q in self.run_queries[self.baseline] if q in mine]
        return (common, np.array([base[q] for q in common], dtype=np.float64),
                np.array([mine[q] for q in common], dtype=np.float64))

    def table(self) -> tuple[list[str], list[list]]:
        """The ``compare`` table: each run's means with marks, intervals and p-values."""
        return comparison_rows(self)

    def notes(self) -> list[str]:
        """The legend under the table."""
        return [self.legend()]

    def to_dataframe(self) -> DataFrame:
        """A pandas DataFrame, one row per run and measure (the ``compare --format json``
        values: mean, se, ci_low/ci_high, diff, p, p_adjusted, significant, effect_size)."""
        rows = []
        for n in self.runs:
            for m in self.measures:
                c = self.cells[(n, m)]
                rows.append([n, m, n == self.baseline, c.interval.mean, c.interval.se,
                             c.interval.low, c.interval.high, c.diff, c.p, c.p_adjusted,
                             c.significant, c.effect, c.note or c.interval.note])
        return dataframe(FRAME_COLUMNS, rows)

    def rule_note(self) -> str:
        """Which queries the means and the paired tests are over."""
        from reljudge.metrics.queries import rule_text

        if self.left_out():
            return (f"means and paired tests over the {len(self.queries)} queries every run "
                    "has in the qrels ('N of M': a run's other queries left out; "
                    "--run-queries: each run's mean over its own)")
        paired = ("paired tests over every qrels query" if self.all_queries else
                  "paired tests over the queries a run shares with the baseline")
        return f"{rule_text(self.all_queries)}; {paired}"

    def legend(self) -> str:
        """What the marks mean."""
        corr = CORRECTION_NAMES[self.correction]
        trials = f", {self.trials} trials, seed {self.seed}" if self.test in (
            "randomization", "bootstrap") else ""
        return (f"▲/▼: significantly better/worse than {self.baseline} (two-sided {self.test} "
                f"test{trials}; {corr} correction over the {len(self.runs) - 1} comparison(s) "
                f"per measure; alpha {self.alpha}); {len(self.queries)} queries for the "
                f"baseline, {self.rule_note()}; "
                f"[low, high]: 95% {self.ci_method} bootstrap interval of the mean")


def compare(qrels: Qrels | Mapping[str, Mapping[str, int]],
            runs: Sequence[Run | Mapping] | Mapping[str, Run | Mapping], measures: Sequence[str],
            *, baseline: str | None = None,
            test: Test = "randomization", trials: int = 10_000, correction: Correction = "holm",
            alpha: float = 0.05, seed: int = 0, ci_method: CiMethod = "percentile",
            bootstrap: int = 1000, all_queries: bool = False,
            float32_scores: bool = False, shared: bool = True) -> Comparison:
    """Score the runs and test each against the baseline (default: the first run).

    qrels, runs and measures may be in any form ``metrics.evaluate_many`` accepts. Means and
    paired tests are over the queries every run has in the qrels (``shared``), so that the
    means side by side are over the same queries; with ``shared=False`` each run's mean is
    over its own queries that have qrels (trec_eval's rule for one run) and each paired test
    over the queries the run and the baseline share; with ``all_queries`` over every qrels
    query (``metrics.queries``). Runs sharing a name are numbered (``trec_data.distinct_runs``).
    ``float32_scores`` ranks on scores rounded to float32, as trec_eval 9 does.
    """
    from reljudge.errors import ConfigError, InputError
    from reljudge.io.coerce import as_qrels, as_runs
    from reljudge.metrics.evaluate import evaluate_many, parse_measures
    from reljudge.metrics.queries import coverage_warnings

    if test not in TESTS:
        raise ConfigError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")
    if correction not in CORRECTIONS:
        raise ConfigError(f"unknown correction {correction!r}; expected one of "
                          f"{', '.join(CORRECTIONS)}")
    runs, qrels = as_runs(runs), as_qrels(qrels)
    if not runs:
        raise InputError("no runs to compare")
    if trials < 1 or bootstrap < 1:
        raise ConfigError(f"trials and bootstrap resamples must be at least 1, not "
                          f"{min(trials, bootstrap)}")
    if max(trials, bootstrap) > MAX_TRIALS:
        raise ConfigError(f"trials and bootstrap resamples must be at most {MAX_TRIALS} "
                          f"(p-values to 1e-6), not {max(trials, bootstrap)}")
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be between 0 and 1, not {alpha}")
    # numpy's generators take no negative seed
    if seed < 0:
        raise ConfigError(f"seed must be 0 or more, not {seed}")
    names = [r.name for r in runs]
    baseline = baseline or names[0]
    if baseline not in names:
        raise ConfigError(f"baseline {baseline!r} is not one of the runs: {', '.join(names)}")
    measures = [str(m) for m in parse_measures(measures)]
    found = coverage_warnings(qrels, runs, all_queries)
    results = evaluate_many(qrels, runs, measures, all_queries=all_queries,
                            float32_scores=float32_scores)
    own = {n: len(ev.query_ids) for n, ev in results.items()}
    if shared:
        results = _over_shared_queries(results)
    queries = results[baseline].query_ids
    out = Comparison(measures, names, baseline, test, correction, alpha, trials, seed, queries,
                     ci_method, all_queries, warnings=found, shared=shared, own_queries=own)
    for n in names:
        out.per_query[n] = results[n].scores
        out.run_queries[n] = results[n].query_ids
    if out.left_out():
        out.warnings.append(
            f"warning: means and paired tests are over the {len(queries)} queries every run "
            "has in the qrels; left out: " + ", ".join(
                f"{k} of {n}'s {own[n]}" for n, k in out.left_out().items())
            + " (--run-queries: each run's mean over its own)")
    for j, m in enumerate(measures):
        pvals, keys = [], []
        for n in names:
            vals = results[n].scores[:, j]
            cell = Cell(bootstrap_ci(vals, n=bootstrap, seed=seed, method=ci_method))
            if n != baseline:
                common, base, vals = out.paired(n, m)
                if not common:
                    raise InputError(f"runs {baseline} and {n} share no query with qrels; "
                                     "nothing to pair (use --all-queries)")
                r = paired_test(test, base, vals, trials, seed)
                cell.diff, cell.p, cell.note = r.diff, r.p, r.note
                cell.effect = effect_size(base, vals)
                pvals.append(r.p)
                keys.append(n)
            out.cells[(n, m)] = cell
        if pvals:
            adjusted = {"holm": holm, "bh": benjamini_hochberg,
                        "none": lambda p: np.asarray(p)}[correction](pvals)
            for n, pa in zip(keys, adjusted.tolist(), strict=False):
                cell = out.cells[(n, m)]
                cell.p_adjusted = pa
                cell.significant = pa < alpha and cell.diff != 0
    return out


def _over_shared_queries(results: dict) -> dict:
    """Each run's evaluation over the queries every run has (in query order); none shared is
    an InputError."""
    from reljudge.errors import InputError

    first, *rest = results.values()
    others = [set(ev.query_ids) for ev in rest]
    common = [q for q in first.query_ids if all(q in o for o in others)]
    if not common:
        raise InputError("the runs share no query that has qrels: no mean can be compared "
                         "over the same queries (--run-queries: each run's mean over its own)")
    return {n: ev.only(common) for n, ev in results.items()}


def mark(cell: Cell) -> str:
    """▲ or ▼ for a significant difference, else nothing."""
    if not cell.significant or cell.diff is None:
        return ""
    return "▲" if cell.diff > 0 else "▼"


def comparison_rows(c: Comparison, with_ci: bool = True, digits: int = 4
                    ) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the results table (means, intervals and p-values to ``digits``)."""
    headers = ["run", "queries"]
    for m in c.measures:
        headers += [m] + (["95% CI"] if with_ci else []) + [f"p ({m})"]
    rows = []
    for n in c.runs:
        row = [n + (" (baseline)" if n == c.baseline else ""), _queries_cell(c, n)]
        for m in c.measures:
            cell = c.cells[(n, m)]
            row.append(f"{cell.interval.mean:.{digits}f}{mark(cell)}")
            if with_ci:
                row.append(f"[{cell.interval.low:.{digits}f}, {cell.interval.high:.{digits}f}]")
            row.append("-" if cell.p_adjusted is None else f"{cell.p_adjusted:.{digits}f}")
        rows.append(row)
    return headers, rows


def _queries_cell(c: Comparison, run: str) -> str:
    """How many queries a run's mean is over: "10", or "10 of 12" when the shared set leaves
    some of its own out."""
    k, own = len(c.run_queries[run]), c.own_queries.get(run, len(c.run_queries[run]))
    return f"{k} of {own}" if own > k else str(k)


def comparison_dict(c: Comparison) -> dict:
    """The comparison as plain data."""
    from reljudge.metrics.queries import rule_name

    return {"baseline": c.baseline, "test": c.test, "correction": c.correction,
            "alpha": c.alpha, "trials": c.trials, "seed": c.seed, "queries": len(c.queries),
            "rule": rule_name(c.all_queries), "rule_text": c.rule_note(),
            "run_queries": {n: len(q) for n, q in c.run_queries.items()},
            "shared": c.shared, "own_queries": dict(c.own_queries),
            "warnings": c.warnings,
            "ci_method": c.ci_method, "legend": c.legend(),
            "runs": {n: {m: {"mean": cell.interval.mean, "se": cell.interval.se,
                             "ci": [cell.interval.low, cell.interval.high],
                             "diff": cell.diff, "p": cell.p, "p_adjusted": cell.p_adjusted,
                             "significant": cell.significant, "effect_size": cell.effect,
                             "note": cell.note or cell.interval.note}
                         for (r, m), cell in c.cells.items() if r == n} for n in c.runs}}
