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
from reljudge.grades import N_GRADES, SCALE
from reljudge.labels import is_adjudication
from reljudge.stats import agreement as ag
from reljudge.stats.bootstrap import percentile_ci, resample_weights
from reljudge.store.events import Standing

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
    people = [_annotator(name, [s for s in human if s.source == name])
              for name in sorted({s.source for s in human})]
    graders = [s for s in human if not is_adjudication(s.source)]
    # one grade per (annotator, pair): the latest standing one of any sample index
    grade: dict[tuple[str, str], dict[str, int]] = {}
    for s in sorted(graders, key=lambda s: s.event):
        grade.setdefault((s.qid, s.docid), {})[s.source] = s.grade
    names = sorted({s.source for s in graders})
    between = [_between(a, b, grade, bootstrap, seed, level)
               for k, a in enumerate(names) for b in names[k + 1:]]
    return TeamAgreement(people, [x for x in between if x.pairs], _alpha(names, grade,
                                                                         bootstrap, seed, level),
                         bootstrap, level)


def _annotator(name: str, grades: list[Standing]) -> Annotator:
    seconds = [s.seconds for s in grades if s.seconds is not None]
    return Annotator(name, "adjudicator" if is_adjudication(name) else "annotator",
                     len({(s.qid, s.docid) for s in grades}), len({s.qid for s in grades}),
                     float(np.median(seconds)) if seconds else None, float(sum(seconds)),
                     {g: sum(s.grade == g for s in grades) for g in SCALE})


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
