"""The audit: a judge's labels against a reference, item by item and system by system."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from reljudge.audit import systems as sy
from reljudge.errors import InputError
from reljudge.frames import Tabular, dataframe
from reljudge.grades import SCALE_TEXT, aggregate_grades, out_of_scale
from reljudge.io.coerce import as_qrels, as_runs
from reljudge.stats import agreement as ag
from reljudge.types import Qrels, Run

COLUMNS = ["judge", "pairs", "exact", "kappa", "kappa_lin", "kappa_quad", "alpha_ord",
           "spearman", "leniency", "mae", "tau", "tau_ap", "max_rank_change"]


@dataclass
class Joined:
    """Reference and judge grades on their shared pairs, with the pairs on one side only."""

    qids: np.ndarray  # query of each shared pair
    reference: np.ndarray  # int grades
    judge: np.ndarray
    only_reference: int
    only_judge: int


def join(reference: Qrels, judge: Qrels) -> Joined:
    """Pair up the two label sets on (qid, docid); never by line order."""
    reference, judge = as_qrels(reference, "reference"), as_qrels(judge, "judge")
    ref = reference.to_dict()
    jd = judge.to_dict()
    qs, a, b = [], [], []
    only_judge = 0
    for q, docs in jd.items():
        rq = ref.get(q, {})
        for d, g in docs.items():
            if d in rq:
                qs.append(q)
                a.append(rq[d])
                b.append(g)
            else:
                only_judge += 1
    grades = np.array(a + b, dtype=np.int64)
    if len(out_of_scale(grades)):
        raise InputError(f"grades outside {SCALE_TEXT} reached the audit; clip or "
                         f"reject them on input")
    return Joined(np.array(qs, dtype=object), np.array(a, dtype=np.int64),
                  np.array(b, dtype=np.int64), len(reference) - len(qs), only_judge)


@dataclass
class ItemAgreement:
    """Item-level statistics of one judge, with bootstrap intervals when asked for."""

    pairs: int
    only_reference: int
    only_judge: int
    confusion: list[list[int]]
    stats: dict[str, float | None]
    undefined: dict[str, str]  # statistic -> why it is undefined
    precision: list[float | None]
    recall: list[float | None]
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)


def _clean(x: float) -> float | None:
    return None if x != x else float(x)


def item_agreement(joined: Joined, bootstrap: int = 0, seed: int = 0,
                   level: float = 0.95) -> ItemAgreement:
    """Every item statistic; percentile CIs from resampling queries when bootstrap > 0."""
    c = ag.confusion(joined.reference, joined.judge)
    stats = {k: v[0] for k, v in ag.all_statistics(c[None]).items()}
    undefined = {k: ag.why_undefined(k, c) for k, v in stats.items() if v != v}
    prec, rec = ag.precision_recall(c[None])
    out = ItemAgreement(len(joined.reference), joined.only_reference, joined.only_judge,
                        c.astype(int).tolist(), {k: _clean(v) for k, v in stats.items()},
                        undefined, [_clean(x) for x in prec[0]], [_clean(x) for x in rec[0]])
    if bootstrap and len(joined.reference):
        out.ci = bootstrap_ci(joined, bootstrap, seed, level)
    return out


def per_query_confusions(joined: Joined) -> np.ndarray:
    """(queries, K, K) confusion matrices, one per query."""
    _, qcode = np.unique(joined.qids, return_inverse=True)
    return ag.confusions(joined.reference, joined.judge, qcode, qcode.max() + 1)


def bootstrap_ci(joined: Joined, n: int, seed: int, level: float = 0.95
                 ) -> dict[str, tuple[float, float]]:
    """Percentile intervals over n resamples of the queries (with replacement)."""
    cq = per_query_confusions(joined)
    rng = np.random.default_rng(seed)
    nq = cq.shape[0]
    picks = rng.integers(0, nq, size=(n, nq))
    weights = np.zeros((n, nq))
    np.add.at(weights, (np.repeat(np.arange(n), nq), picks.ravel()), 1.0)
    batch = np.einsum("bq,qij->bij", weights, cq)
    lo, hi = (1 - level) / 2 * 100, (1 + level) / 2 * 100
    out = {}
    for name, values in ag.all_statistics(batch).items():
        ok = values[~np.isnan(values)]
        if len(ok):
            out[name] = (float(np.percentile(ok, lo)), float(np.percentile(ok, hi)))
    return out


@dataclass
class SystemAgreement:
    """How the judge's labels rank the runs against how the reference labels do."""

    measure: str
    runs: list[str]
    reference_scores: list[float]
    judge_scores: list[float]
    kendall_tau: float | None
    spearman: float | None
    tau_ap: float | None
    rank_change: dict[str, int]
    max_rank_change: int
    moved_most: list[str]
    per_query_pearson: float | None


def system_agreement(reference: Qrels, judge: Qrels, runs: Sequence[Run],
                     measure: str = "nDCG@10", reference_scores: Mapping | None = None, *,
                     all_queries: bool = False, float32_scores: bool = False
                     ) -> SystemAgreement:
    """Score every run under both label sets and compare the rankings (``all_queries`` and
    ``float32_scores`` as in ``metrics.evaluate``)."""
    from reljudge.metrics import evaluate
    from reljudge.metrics.evaluate import parse_measures

    reference, judge = as_qrels(reference, "reference"), as_qrels(judge, "judge")
    runs = as_runs(runs)
    measure = str(parse_measures(measure)[0])
    names = [r.name for r in runs]
    how = {"all_queries": all_queries, "float32_scores": float32_scores}
    if reference_scores is None:
        reference_scores = {r.name: evaluate(reference, r, [measure], **how) for r in runs}
    judged = {r.name: evaluate(judge, r, [measure], **how) for r in runs}
    ref = np.array([reference_scores[n].mean()[reference_scores[n].measures[0]] for n in names])
    est = np.array([judged[n].mean()[judged[n].measures[0]] for n in names])
    changes = sy.rank_changes(ref, est, names)
    biggest = max((abs(v) for v in changes.values()), default=0)
    pq_ref, pq_est = [], []
    for n in names:
        a = reference_scores[n].per_query()
        b = judged[n].per_query()
        for q in sorted(a.keys() & b.keys()):  # sorted: same sum order in every process
            pq_ref.append(next(iter(a[q].values())))
            pq_est.append(next(iter(b[q].values())))
    return SystemAgreement(
        measure, names, ref.tolist(), est.tolist(), _clean(sy.kendall_tau_b(ref, est)),
        _clean(sy.spearman(ref, est)), _clean(sy.tau_ap(ref, est, names)), changes, biggest,
        sorted(n for n, v in changes.items() if abs(v) == biggest and biggest),
        _clean(sy.pearson(np.array(pq_ref), np.array(pq_est))) if len(pq_ref) > 1 else None)


@dataclass
class JudgeAudit:
    """One row of the audit: a judge (or an ensemble) against the reference."""

    name: str
    items: ItemAgreement
    systems: SystemAgreement | None = None
    clipped: int = 0


@dataclass(repr=False)
class AuditResult(Tabular):
    """The whole audit: one row per judge, ensembles, and agreement among the judges. Prints
    as the ``audit`` table and its notes; ``to_dataframe`` gives one row per judge."""

    digits = 3

    reference: str
    judges: list[JudgeAudit]
    among_judges: dict[str, float | None]
    measure: str | None
    bootstrap: int
    seed: int

    def row(self, j: JudgeAudit) -> dict:
        """The table row of one judge."""
        s = j.items.stats
        out = {"judge": j.name, "pairs": j.items.pairs, "exact": s["exact"],
               "kappa": s["kappa"], "kappa_lin": s["kappa_linear"],
               "kappa_quad": s["kappa_quadratic"], "alpha_ord": s["alpha_ordinal"],
               "spearman": s["spearman"], "leniency": s["leniency"], "mae": s["mae"]}
        if j.systems is not None:
            out.update(tau=j.systems.kendall_tau, tau_ap=j.systems.tau_ap,
                       max_rank_change=j.systems.max_rank_change)
        return out

    def table(self) -> tuple[list[str], list[list]]:
        """The ``audit`` table: one row per judge, the columns that have values."""
        rows = [self.row(j) for j in self.judges]
        columns = [c for c in COLUMNS if any(c in r for r in rows)]
        return columns, [[r.get(c) for c in columns] for r in rows]

    def to_dataframe(self):
        """A pandas DataFrame, one row per judge (the table's columns, full precision)."""
        return dataframe(*self.table())

    def notes(self) -> list[str]:
        """Undefined statistics, clipping, one-sided pairs, agreement among the judges."""
        from reljudge.tables import format_value

        out = []
        for j in self.judges:
            out += [f"note: {j.name}: {stat} undefined ({why})"
                    for stat, why in j.items.undefined.items()]
            if j.items.only_reference or j.items.only_judge:
                out.append(f"note: {j.name}: {j.items.only_reference} reference pairs without "
                           f"a judge label, {j.items.only_judge} judge pairs without a "
                           "reference label (not compared)")
        if sum(j.clipped for j in self.judges):
            out.append(f"note: {sum(j.clipped for j in self.judges)} out-of-scale grade(s) "
                       "clipped to 0..3 (" + ", ".join(f"{j.name}: {j.clipped}"
                                                      for j in self.judges if j.clipped) + ")")
        if self.among_judges:
            a = self.among_judges
            out.append(f"among the {a['raters']} judges ({a['units']} pairs): Krippendorff's "
                       f"alpha ordinal {format_value(a['alpha_ordinal'], 3)}, interval "
                       f"{format_value(a['alpha_interval'], 3)}, nominal "
                       f"{format_value(a['alpha_nominal'], 3)}; Fleiss' kappa "
                       f"{format_value(a['fleiss_kappa'], 3)}")
        if self.measure:
            out.append(f"system agreement: runs scored with {self.measure} under each label "
                       "set")
        if self.bootstrap:
            out.append(f"bootstrap: {self.bootstrap} resamples of queries, seed {self.seed} "
                       "(intervals in --json)")
        return out


def ensembles(judges: Mapping[str, Qrels]) -> dict[str, Qrels]:
    """Majority (ties to the lower grade) and mean-rounded (half up) of all judges, per pair."""
    votes: dict[tuple[str, str], list[int]] = {}
    for q in judges.values():
        for qid, docid, g in q:
            votes.setdefault((qid, docid), []).append(g)
    out = {}
    for rule in ("majority", "mean"):
        pairs = list(votes)
        grades = np.array([int(aggregate_grades(votes[p], rule)) for p in pairs], dtype=np.int64)
        out[f"ensemble-{'majority' if rule == 'majority' else 'mean-rounded'}"] = \
            Qrels.from_arrays([p[0] for p in pairs], [p[1] for p in pairs], grades, check=False)
    return out


def among_judges(judges: Mapping[str, Qrels]) -> dict[str, float | None]:
    """Agreement of the judges with each other over their shared pairs."""
    if len(judges) < 2:
        return {}
    index: dict[tuple[str, str], int] = {}
    for q in judges.values():
        for qid, docid, _ in q:
            index.setdefault((qid, docid), len(index))
    values = np.full((len(judges), len(index)), -1, dtype=np.int64)
    for r, q in enumerate(judges.values()):
        for qid, docid, g in q:
            values[r, index[(qid, docid)]] = g
    return {"raters": len(judges), "units": len(index),
            "alpha_nominal": _clean(ag.alpha_many(values, "nominal")),
            "alpha_ordinal": _clean(ag.alpha_many(values, "ordinal")),
            "alpha_interval": _clean(ag.alpha_many(values, "interval")),
            "fleiss_kappa": _clean(ag.fleiss_kappa(values))}


def audit(reference: Qrels, judge: Qrels | Mapping[str, Qrels],
          runs: Sequence[Run] | None = None, *, measure: str = "nDCG@10", bootstrap: int = 0,
          seed: int = 0, with_ensembles: bool = True, reference_name: str = "reference",
          clipped: Mapping[str, int] | None = None,
          derived: Mapping[str, Qrels] | None = None, all_queries: bool = False,
          float32_scores: bool = False) -> AuditResult:
    """Audit one judge (a Qrels) or several ({name: Qrels}) against the reference labels.

    Labels and runs may be in any form ``reljudge.io.coerce`` accepts (dicts with any ids,
    records, DataFrames); empty reference or judge labels are an InputError. ``derived`` rows
    (calibrated judges, panels: see ``audit.heldout``) are audited the same way but left out
    of the ensembles and of the agreement among judges. Runs are scored as
    ``metrics.evaluate`` scores them, with its ``all_queries`` and ``float32_scores``."""
    return _audit_each(reference, judge, runs, [measure], bootstrap=bootstrap, seed=seed,
                       with_ensembles=with_ensembles, reference_name=reference_name,
                       clipped=clipped, derived=derived, all_queries=all_queries,
                       float32_scores=float32_scores)[0]


def audit_measures(reference: Qrels, judge: Qrels | Mapping[str, Qrels],
                   runs: Sequence[Run] | None, measures: Sequence[str], *, bootstrap: int = 0,
                   **kwargs) -> list[AuditResult]:
    """``audit`` under each measure (the bootstrap only for the first: the item statistics do
    not depend on the measure); the first result is the whole audit of the first measure."""
    if not measures:
        from reljudge.errors import ConfigError

        raise ConfigError("give at least one measure")
    return _audit_each(reference, judge, runs, measures, bootstrap=bootstrap, **kwargs)


def _audit_each(reference, judge, runs, measures: Sequence[str], *, bootstrap: int = 0,
                seed: int = 0, with_ensembles: bool = True, reference_name: str = "reference",
                clipped: Mapping[str, int] | None = None,
                derived: Mapping[str, Qrels] | None = None, all_queries: bool = False,
                float32_scores: bool = False) -> list[AuditResult]:
    """The whole audit under the first measure; under each further one, the same result
    without the bootstrap and with the system agreement scored anew (nothing else depends on
    the measure, so the joins and item statistics are computed once)."""
    from reljudge.metrics.evaluate import parse_measures

    measure = str(parse_measures(measures[0])[0])  # text, a Measure or an ir_measures object
    reference = _labels(reference, "reference")
    judges = ({n: _labels(q, f"judge {n!r}") for n, q in judge.items()}
              if _is_judge_mapping(judge) else {"judge": _labels(judge, "judge")})
    runs = as_runs(runs) if runs else None
    if bootstrap < 0:
        from reljudge.errors import ConfigError

        raise ConfigError(f"bootstrap resamples must be 0 (none) or more, not {bootstrap}")
    rows = dict(judges)
    if with_ensembles and len(judges) >= 3:
        rows.update(ensembles(judges))
    rows.update(derived or {})
    how = {"all_queries": all_queries, "float32_scores": float32_scores}
    ref_scores = _reference_scores(reference, runs, measure, **how)
    out = []
    for name, q in rows.items():
        joined = join(reference, q)
        items = item_agreement(joined, bootstrap, seed)
        systems = (system_agreement(reference, q, runs, measure, ref_scores, **how)
                   if runs else None)
        out.append(JudgeAudit(name, items, systems, (clipped or {}).get(name, 0)))
    first = AuditResult(reference_name, out, among_judges(judges), measure if runs else None,
                        bootstrap, seed)
    results = [first]
    for m in measures[1:]:
        m = str(parse_measures(m)[0])
        ref_scores = _reference_scores(reference, runs, m, **how)
        results.append(replace(first, measure=m if runs else None, bootstrap=0, judges=[
            replace(j, items=replace(j.items, ci={}),
                    systems=(system_agreement(reference, rows[j.name], runs, m, ref_scores,
                                              **how) if runs else None))
            for j in out]))
    return results


def _reference_scores(reference: Qrels, runs: Sequence[Run] | None, measure: str,
                      **how) -> dict | None:
    """Every run scored under the reference labels (None without runs), once per measure."""
    if not runs:
        return None
    from reljudge.metrics import evaluate

    return {r.name: evaluate(reference, r, [measure], **how) for r in runs}


SYSTEM_COLUMNS = ("tau", "tau_ap", "max_rank_change")


def measures_table(results: Sequence[AuditResult]) -> tuple[list[str], list[list]]:
    """The audit table of ``audit_measures``: with one result its own table; with several, the
    system-agreement columns once per measure, named ``tau (MEASURE)`` and so on."""
    columns, rows = results[0].table()
    if len(results) == 1 or results[0].measure is None:
        return columns, rows
    keep = [i for i, c in enumerate(columns) if c not in SYSTEM_COLUMNS]
    out_cols = [columns[i] for i in keep]
    out_rows = [[row[i] for i in keep] for row in rows]
    for res in results:
        out_cols += [f"{c} ({res.measure})" for c in SYSTEM_COLUMNS]
        for out, j in zip(out_rows, res.judges, strict=True):
            out += [j.systems.kendall_tau, j.systems.tau_ap, j.systems.max_rank_change]
    return out_cols, out_rows


def _labels(obj, what: str) -> Qrels:
    q = as_qrels(obj, what)
    if not len(q):
        raise InputError(f"the {what} labels are empty: there is nothing to audit")
    return q


def _is_judge_mapping(judge) -> bool:
    """{name: labels} rather than one judge's {qid: {docid: grade}}: its values are not
    dicts of grades."""
    if not isinstance(judge, Mapping) or not judge:
        return False
    first = next(iter(judge.values()))
    if not isinstance(first, Mapping):
        return True  # Qrels, DataFrames, records
    inner = next(iter(first.values()), None)
    return isinstance(inner, Mapping)


def read_judge(path: str | Path, clip: bool = False) -> tuple[Qrels, int]:
    """A judge's label file, out-of-scale grades rejected with file:line or clipped."""
    from reljudge.store.importers import check_scale, read_labels

    rows, clipped = check_scale(read_labels(path), clip)
    return (Qrels.from_arrays([r[0] for r in rows], [r[1] for r in rows],
                              np.array([r[2] for r in rows], dtype=np.int64), check=False),
            len(clipped))


def result_to_dict(result) -> dict:
    """The full audit as plain data."""
    from dataclasses import asdict

    return {"reference": result.reference, "measure": result.measure,
            "bootstrap": result.bootstrap, "seed": result.seed,
            "among_judges": result.among_judges,
            "judges": [{"name": j.name, "clipped": j.clipped, "items": asdict(j.items),
                        "systems": asdict(j.systems) if j.systems else None}
                       for j in result.judges]}
