"""People as assessors: each annotator's work and how far the annotators agree.

From the standing human grades of a store (``LabelStore.standing``): per annotator, the pairs
and queries graded, the seconds spent per pair and the grade distribution; per two annotators,
over the pairs both graded, exact agreement and Cohen's kappa (unweighted, linear and
quadratic weights); over all annotators, Krippendorff's alpha (ordinal, interval, nominal)
over every pair at least two of them graded. Intervals resample queries (a query's pairs
move together), ``bootstrap`` times, percentile. Adjudicated grades (``adjudicated:NAME``) are
counted for their adjudicator, and never in the agreement: they settle disagreements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from reljudge.audit.items import clean
from reljudge.grades import GRADE_MIN, N_GRADES, SCALE
from reljudge.labels import is_adjudication
from reljudge.stats import agreement as ag
from reljudge.stats.bootstrap import percentile_ci, resample_weights
from reljudge.store.events import Standing, StandingColumns

KAPPAS = {"kappa": None, "kappa_linear": "linear", "kappa_quadratic": "quadratic"}
ALPHAS = ("ordinal", "interval", "nominal")


@dataclass(frozen=True)
class Annotator:
    """One person's work."""

    name: str
    #: "annotator" or "adjudicator"
    role: str
    pairs: int
    queries: int
    #: median seconds per pair, over the grades with a recorded time
    seconds_median: float | None
    seconds_total: float
    grades: dict[int, int]


@dataclass(frozen=True)
class Between:
    """Two annotators over the pairs both graded."""

    a: str
    b: str
    pairs: int
    queries: int
    exact: float | None
    kappa: float | None
    kappa_linear: float | None
    kappa_quadratic: float | None
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class TeamAgreement:
    """The annotator report: who did what, and agreement two by two and among all."""

    annotators: list[Annotator]
    between: list[Between]
    #: raters, units (pairs graded by two or more), alpha_<level>, ci
    alpha: dict
    bootstrap: int
    level: float

    def to_dict(self) -> dict:
        """Plain JSON-ready data."""
        out = asdict(self)
        for b in out["between"]:
            b["ci"] = {k: list(v) for k, v in b["ci"].items()}
        out["alpha"]["ci"] = {k: list(v) for k, v in self.alpha.get("ci", {}).items()}
        for a in out["annotators"]:
            a["grades"] = {str(g): n for g, n in a["grades"].items()}
        return out


def team_agreement(standing: Sequence[Standing], *, bootstrap: int = 1000, seed: int = 0,
                   level: float = 0.95) -> TeamAgreement:
    """The annotator report of standing human grades (other kinds are ignored)."""
    human = [s for s in standing if s.kind == "human"]
    _, q = np.unique([s.qid for s in human], return_inverse=True)
    _, d = np.unique([s.docid for s in human], return_inverse=True)

    def column(values: list, dtype: type = object) -> np.ndarray:
        out: np.ndarray = np.empty(len(values), dtype=dtype)
        out[:] = values
        return out

    return team_agreement_of(StandingColumns(
        column([s.source for s in human]), column([s.qid for s in human]),
        column([s.docid for s in human]), q.astype(np.int64), d.astype(np.int64),
        np.array([s.grade for s in human], dtype=np.int64),
        np.array([np.nan if s.seconds is None else s.seconds for s in human], dtype=np.float64),
        np.array([s.event for s in human], dtype=np.int64)), bootstrap=bootstrap, seed=seed,
        level=level)


def team_agreement_of(human: StandingColumns, *, bootstrap: int = 1000, seed: int = 0,
                      level: float = 0.95) -> TeamAgreement:
    """``team_agreement`` of the standing human grades column by column
    (``LabelStore.standing_columns``)."""
    source = human.source.tolist()
    names = sorted(set(source))
    people = [_annotator(name, human, human.source == name) for name in names]
    graders = [n for n in names if not is_adjudication(n)]
    # one grade per (annotator, pair): the latest standing one of any repeat index; only two
    # or more annotators can agree
    grade: dict[tuple[str, str], dict[str, int]] = {}
    if len(graders) > 1:
        order = np.argsort(human.event, kind="stable")
        for name, qid, docid, g in zip(human.source[order].tolist(), human.qid[order].tolist(),
                                       human.docid[order].tolist(), human.grade[order].tolist(),
                                       strict=True):
            if not is_adjudication(name):
                grade.setdefault((qid, docid), {})[name] = g
    between = [_between(a, b, grade, bootstrap, seed, level)
               for k, a in enumerate(graders) for b in graders[k + 1:]]
    return TeamAgreement(people, [x for x in between if x.pairs], _alpha(graders, grade,
                                                                         bootstrap, seed, level),
                         bootstrap, level)


def _annotator(name: str, human: StandingColumns, mine: np.ndarray) -> Annotator:
    """One person's work: ``mine`` marks their grades among ``human``."""
    seconds = human.seconds[mine]
    seconds = seconds[~np.isnan(seconds)].tolist()
    q, d = human.q[mine], human.d[mine]
    tally = np.bincount(human.grade[mine] - GRADE_MIN, minlength=N_GRADES)
    return Annotator(name, "adjudicator" if is_adjudication(name) else "annotator",
                     _distinct(q * (int(d.max(initial=0)) + 1) + d), _distinct(q),
                     float(np.median(seconds)) if seconds else None, float(sum(seconds)),
                     {g: int(tally[g - GRADE_MIN]) for g in SCALE})


def _distinct(values: np.ndarray) -> int:
    """How many distinct values ``values`` holds (a sort: numpy's hashing ``unique`` took
    0.45 s for 500k distinct integers, the sort 0.015 s)."""
    ranked = np.sort(values)
    return int(np.count_nonzero(ranked[1:] != ranked[:-1])) + 1 if len(ranked) else 0


def _between(a: str, b: str, grade: dict, bootstrap: int, seed: int, level: float) -> Between:
    both = sorted(p for p, g in grade.items() if a in g and b in g)
    if not both:
        return Between(a, b, 0, 0, None, None, None, None)
    _, qcode = np.unique([q for q, _ in both], return_inverse=True)
    per_query = ag.confusions(np.array([grade[p][a] for p in both]),
                              np.array([grade[p][b] for p in both]), qcode, qcode.max() + 1)
    stats = _kappas(per_query.sum(axis=0)[None])
    ci = {}
    if bootstrap:
        batch = np.einsum("bq,qij->bij", resample_weights(len(per_query), bootstrap, seed),
                          per_query)
        ci = {k: c for k, v in _kappas(batch).items()
              if (c := percentile_ci(v, level)) is not None}
    return Between(a, b, len(both), len(per_query),
                   **{k: clean(v[0]) for k, v in stats.items()}, ci=ci)


def _kappas(c: np.ndarray) -> dict[str, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"exact": ag.exact_agreement(c),
                **{name: ag.cohen_kappa(c, kind) for name, kind in KAPPAS.items()}}


def _alpha(names: list[str], grade: dict, bootstrap: int, seed: int, level: float) -> dict:
    """Krippendorff's alpha over every pair two or more annotators graded; the coincidence
    matrix adds up over pairs, so a query bootstrap re-adds per-query matrices."""
    units = sorted(p for p, g in grade.items() if len(g) >= 2)
    out: dict = {"raters": len(names), "units": len(units),
                 "queries": len({q for q, _ in units})}
    if not units:
        return {**out, **{f"alpha_{k}": None for k in ALPHAS}, "ci": {}}
    counts = np.zeros((len(units), N_GRADES))
    for u, p in enumerate(units):
        for g in grade[p].values():
            counts[u, g] += 1
    m = counts.sum(axis=1)
    per_unit = (np.einsum("ui,uj->uij", counts, counts)
                - np.einsum("ui,ij->uij", counts, np.eye(N_GRADES))) / (m - 1)[:, None, None]
    _, qcode = np.unique([q for q, _ in units], return_inverse=True)
    per_query = np.zeros((qcode.max() + 1, N_GRADES, N_GRADES))
    np.add.at(per_query, qcode, per_unit)
    o = per_query.sum(axis=0)[None]
    with np.errstate(invalid="ignore", divide="ignore"):
        out.update({f"alpha_{k}": clean(ag.alpha_from_coincidence(o, k)[0]) for k in ALPHAS})
        ci = {}
        if bootstrap:
            batch = np.einsum("bq,qij->bij", resample_weights(len(per_query), bootstrap, seed),
                              per_query)
            ci = {f"alpha_{k}": c for k in ALPHAS
                  if (c := percentile_ci(ag.alpha_from_coincidence(batch, k), level))
                  is not None}
    return {**out, "ci": ci}
