"""Auditing judges: each judge's labels (and their ensembles, and derived rows) against the
reference labels, item by item and system by system, under one or several measures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from reljudge.audit.favours import reference_favours
from reljudge.audit.items import clean, item_agreement, join
from reljudge.audit.result import AuditResult, JudgeAudit
from reljudge.audit.systems import scores_under, system_agreement
from reljudge.errors import InputError
from reljudge.grades import aggregate_grades
from reljudge.infer.favours import TOP, Favours
from reljudge.io.coerce import as_qrels, as_runs
from reljudge.stats import agreement as ag
from reljudge.trec_data import Qrels, Run


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
            "alpha_nominal": clean(ag.alpha_many(values, "nominal")),
            "alpha_ordinal": clean(ag.alpha_many(values, "ordinal")),
            "alpha_interval": clean(ag.alpha_many(values, "interval")),
            "fleiss_kappa": clean(ag.fleiss_kappa(values))}


def audit(reference: Qrels, judge: Qrels | Mapping[str, Qrels],
          runs: Sequence[Run] | None = None, *, measure: str = "nDCG@10", bootstrap: int = 0,
          seed: int = 0, with_ensembles: bool = True, reference_name: str = "reference",
          clipped: Mapping[str, int] | None = None,
          derived: Mapping[str, Qrels] | None = None, all_queries: bool = False,
          float32_scores: bool = False, favours: bool = False, top: int = TOP
          ) -> AuditResult:
    """Audit one judge (a Qrels) or several ({name: Qrels}) against the reference labels.

    Labels and runs may be in any form ``reljudge.io.coerce`` accepts (dicts with any ids,
    records, DataFrames); empty reference or judge labels are an InputError. ``derived`` rows
    (calibrated judges, panels: see ``audit.fitted_rows``) are audited the same way but left out
    of the ensembles and of the agreement among judges. Runs are scored as
    ``metrics.evaluate`` scores them, with its ``all_queries`` and ``float32_scores``.
    ``favours`` (with runs): each row's ``JudgeAudit.favours``, the runs the judge
    over- or under-rates against the reference (``audit.favours``; Kendall's tau over the
    ``top`` runs and all)."""
    return _audit_each(reference, judge, runs, [measure], bootstrap=bootstrap, seed=seed,
                       with_ensembles=with_ensembles, reference_name=reference_name,
                       clipped=clipped, derived=derived, all_queries=all_queries,
                       float32_scores=float32_scores, favours=favours, top=top)[0]


def audit_measures(reference: Qrels, judge: Qrels | Mapping[str, Qrels],
                   runs: Sequence[Run] | None, measures: Sequence[str], *, bootstrap: int = 0,
                   **kwargs: Any) -> list[AuditResult]:
    """``audit`` under each measure (the bootstrap only for the first: the item statistics do
    not depend on the measure); the first result is the whole audit of the first measure."""
    if not measures:
        from reljudge.errors import ConfigError

        raise ConfigError("give at least one measure")
    return _audit_each(reference, judge, runs, measures, bootstrap=bootstrap, **kwargs)


def _audit_each(reference: Any, judge: Any,
                runs: Sequence[Run] | None, measures: Sequence[str], *, bootstrap: int = 0,
                seed: int = 0, with_ensembles: bool = True, reference_name: str = "reference",
                clipped: Mapping[str, int] | None = None,
                derived: Mapping[str, Qrels] | None = None, all_queries: bool = False,
                float32_scores: bool = False, favours: bool = False,
                top: int = TOP) -> list[AuditResult]:
    """The whole audit under the first measure; under each further one, the same result
    without the bootstrap and with the system agreement scored anew (nothing else depends on
    the measure, so the joins and item statistics are computed once). ``reference`` and
    ``judge``: any form as_qrels reads."""
    from reljudge.metrics.evaluate import parse_measures

    # measures[0] may be text, a Measure or an ir_measures object
    measure = str(parse_measures(measures[0])[0])
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
    ref_scores = scores_under(reference, runs, measure, **how)

    def favoured(q: Qrels, m: str) -> Favours | None:
        if not (favours and runs):
            return None
        return reference_favours(reference, q, runs, m, top=top, seed=seed)

    out = []
    for name, q in rows.items():
        joined = join(reference, q)
        items = item_agreement(joined, bootstrap, seed)
        systems = (system_agreement(reference, q, runs, measure, ref_scores, **how)
                   if runs else None)
        out.append(JudgeAudit(name, items, systems, (clipped or {}).get(name, 0),
                              favoured(q, measure)))
    first = AuditResult(reference_name, out, among_judges(judges), measure if runs else None,
                        bootstrap, seed)
    results = [first]
    for m in measures[1:]:
        m = str(parse_measures(m)[0])
        ref_scores = scores_under(reference, runs, m, **how)
        results.append(replace(first, measure=m if runs else None, bootstrap=0, judges=[
            replace(j, items=replace(j.items, ci={}),
                    systems=(system_agreement(reference, rows[j.name], runs, m, ref_scores,
                                              **how) if runs else None),
                    favours=favoured(rows[j.name], m))
            for j in out]))
    return results


def _labels(obj: Any, what: str) -> Qrels:
    q = as_qrels(obj, what)
    if not len(q):
        raise InputError(f"the {what} labels are empty: there is nothing to audit")
    return q


def _is_judge_mapping(judge: Any) -> bool:
    """{name: labels} rather than one judge's {qid: {docid: grade}}: its values are not
    dicts of grades."""
    if not isinstance(judge, Mapping) or not judge:
        return False
    first = next(iter(judge.values()))
    if not isinstance(first, Mapping):
        # {name: a Qrels, a DataFrame or records}
        return True
    inner = next(iter(first.values()), None)
    return isinstance(inner, Mapping)

