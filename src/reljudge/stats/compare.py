"""Compare runs on the same queries: means with intervals, paired tests against a baseline,
multiple-comparison correction, effect sizes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from reljudge.stats.bootstrap import Interval, bootstrap_ci
from reljudge.stats.significance import TESTS, benjamini_hochberg, effect_size, holm, paired_test

CORRECTIONS = ("holm", "bh", "none")


@dataclass
class Cell:
    """One run on one measure."""

    interval: Interval
    diff: float | None = None  # mean minus the baseline's
    p: float | None = None
    p_adjusted: float | None = None
    significant: bool = False
    effect: float | None = None
    note: str = ""


@dataclass
class Comparison:
    """Runs x measures, each cell against the baseline run."""

    measures: list[str]
    runs: list[str]
    baseline: str
    test: str
    correction: str
    alpha: float
    trials: int
    seed: int
    queries: list[str]
    ci_method: str
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    per_query: dict[str, np.ndarray] = field(default_factory=dict)  # run -> (queries, measures)

    def legend(self) -> str:
        """What the marks mean."""
        corr = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}[self.correction]
        trials = f", {self.trials} trials, seed {self.seed}" if self.test in (
            "randomization", "bootstrap") else ""
        return (f"▲/▼: significantly better/worse than {self.baseline} (two-sided {self.test} "
                f"test{trials}; {corr} correction over the {len(self.runs) - 1} comparison(s) "
                f"per measure; alpha {self.alpha}); {len(self.queries)} queries, every qrels "
                f"query counted (a run missing one scores 0 there); "
                f"[low, high]: 95% {self.ci_method} bootstrap interval of the mean")


def compare(qrels, runs: Sequence, measures: Sequence[str], *, baseline: str | None = None,
            test: str = "randomization", trials: int = 10_000, correction: str = "holm",
            alpha: float = 0.05, seed: int = 0, ci_method: str = "percentile",
            bootstrap: int = 1000) -> Comparison:
    """Score the runs and test each against the baseline (default: the first run).

    qrels, runs and measures may be in any form ``metrics.evaluate_many`` accepts."""
    from reljudge.errors import ConfigError, InputError
    from reljudge.io.coerce import as_qrels, as_runs
    from reljudge.metrics.evaluate import evaluate_many, parse_measures

    if test not in TESTS:
        raise ConfigError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")
    if correction not in CORRECTIONS:
        raise ConfigError(f"unknown correction {correction!r}; expected one of "
                          f"{', '.join(CORRECTIONS)}")
    runs, qrels = as_runs(runs), as_qrels(qrels)
    if not runs:
        raise InputError("no runs to compare")
    names = [r.name for r in runs]
    baseline = baseline or names[0]
    if baseline not in names:
        raise ConfigError(f"baseline {baseline!r} is not one of the runs: {', '.join(names)}")
    measures = [str(m) for m in parse_measures(measures)]
    results = evaluate_many(qrels, runs, measures, all_queries=True)
    queries = results[baseline].query_ids
    out = Comparison(measures, names, baseline, test, correction, alpha, trials, seed, queries,
                     ci_method)
    for n in names:
        out.per_query[n] = results[n].scores
    for j, m in enumerate(measures):
        base = results[baseline].scores[:, j]
        pvals, keys = [], []
        for n in names:
            vals = results[n].scores[:, j]
            cell = Cell(bootstrap_ci(vals, n=bootstrap, seed=seed, method=ci_method))
            if n != baseline:
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


def mark(cell: Cell) -> str:
    """▲ or ▼ for a significant difference, else nothing."""
    if not cell.significant or cell.diff is None:
        return ""
    return "▲" if cell.diff > 0 else "▼"


def comparison_rows(c, with_ci: bool = True):
    """Headers and rows of the results table."""
    headers = ["run"]
    for m in c.measures:
        headers += [m] + (["95% CI"] if with_ci else []) + [f"p ({m})"]
    rows = []
    for n in c.runs:
        row = [n + (" (baseline)" if n == c.baseline else "")]
        for m in c.measures:
            cell = c.cells[(n, m)]
            row.append(f"{cell.interval.mean:.4f}{mark(cell)}")
            if with_ci:
                row.append(f"[{cell.interval.low:.4f}, {cell.interval.high:.4f}]")
            row.append("-" if cell.p_adjusted is None else f"{cell.p_adjusted:.4f}")
        rows.append(row)
    return headers, rows


def comparison_dict(c) -> dict:
    """The comparison as plain data."""
    return {"baseline": c.baseline, "test": c.test, "correction": c.correction,
            "alpha": c.alpha, "trials": c.trials, "seed": c.seed, "queries": len(c.queries),
            "ci_method": c.ci_method, "legend": c.legend(),
            "runs": {n: {m: {"mean": cell.interval.mean, "se": cell.interval.se,
                             "ci": [cell.interval.low, cell.interval.high],
                             "diff": cell.diff, "p": cell.p, "p_adjusted": cell.p_adjusted,
                             "significant": cell.significant, "effect_size": cell.effect,
                             "note": cell.note or cell.interval.note}
                         for (r, m), cell in c.cells.items() if r == n} for n in c.runs}}
