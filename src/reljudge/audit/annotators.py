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

import functools
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

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
    names = sorted(set(human.source.tolist()))
    mine = {name: human.source == name for name in names}
    people = [_annotator(name, human, mine[name]) for name in names]
    graders = [n for n in names if not is_adjudication(n)]
    # one grade per (annotator, pair): the latest standing one of any repeat index; only two
    # or more annotators can agree
    latest = _latest(human, [mine[n] for n in graders]) if len(graders) > 1 else \
        _Latest.none()
    # the same resamples of so many queries for every two annotators and for alpha
    weights = functools.cache(lambda units: resample_weights(units, bootstrap, seed)) \
        if bootstrap else None
    between = [_between(a, b, latest.of(k), latest.of(k + 1 + j), weights, level)
               for k, a in enumerate(graders) for j, b in enumerate(graders[k + 1:])]
    return TeamAgreement(people, [x for x in between if x.pairs],
                         _alpha(graders, latest, weights, level),
                         bootstrap, level)


class _Latest(NamedTuple):
    """Each annotator's latest grade of each pair they graded, sorted by pair and then
    annotator: the annotator (their place among the graders), the pair (a key that orders
    the pairs as their (qid, docid) do), the query (its qid's rank) and the grade."""

    who: np.ndarray
    pair: np.ndarray
    query: np.ndarray
    grade: np.ndarray

    @classmethod
    def none(cls) -> _Latest:
        """No grade at all."""
        return cls(*(np.zeros(0, dtype=np.int64) for _ in range(4)))

    def of(self, who: int) -> _Latest:
        """The grades of one annotator (sorted by pair)."""
        mine = self.who == who
        return _Latest(self.who[mine], self.pair[mine], self.query[mine], self.grade[mine])


def _latest(human: StandingColumns, graders: list[np.ndarray]) -> _Latest:
    """``_Latest`` of the standing human grades ``human`` by the annotators whose grades
    ``graders`` mark, one mask each (the adjudicators' are left out)."""
    who = np.full(len(human.grade), -1, dtype=np.int64)
    for k, theirs in enumerate(graders):
        who[theirs] = k
    mine = who >= 0
    query = _text_ranks(human.q[mine], human.qid[mine])
    passage = _text_ranks(human.d[mine], human.docid[mine])
    pair = query * (int(passage.max(initial=0)) + 1) + passage
    who, grade, event = who[mine], human.grade[mine], human.event[mine]
    order = np.lexsort((event, who, pair))
    pair, who = pair[order], who[order]
    last = np.r_[(pair[1:] != pair[:-1]) | (who[1:] != who[:-1]), True] if len(pair) else \
        np.zeros(0, dtype=bool)
    return _Latest(who[last], pair[last], query[order][last], grade[order][last])


def _text_ranks(ids: np.ndarray, texts: np.ndarray) -> np.ndarray:
    """The rank of each row's text (a qid or docid, one per id) among the distinct texts, in
    the order Python sorts them: the ids sorted, and the texts of the distinct ones alone."""
    distinct, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[np.argsort(texts[first], kind="stable")] = np.arange(len(distinct))
    return rank[inverse.reshape(-1)]


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


def _between(a: str, b: str, mine: _Latest, theirs: _Latest,
             weights: Callable[[int], np.ndarray] | None, level: float) -> Between:
    """Annotators ``a`` and ``b`` over the pairs both graded (``mine`` and ``theirs``: their
    ``_Latest`` grades); ``weights``: the resample weights of so many queries (None: no
    intervals)."""
    _, at, their = np.intersect1d(mine.pair, theirs.pair, assume_unique=True,
                                  return_indices=True)
    if not len(at):
        return Between(a, b, 0, 0, None, None, None, None)
    _, qcode = np.unique(mine.query[at], return_inverse=True)
    per_query = ag.confusions(mine.grade[at], theirs.grade[their], qcode, qcode.max() + 1)
    stats = _kappas(per_query.sum(axis=0)[None])
    ci = {}
    if weights:
        batch = np.einsum("bq,qij->bij", weights(len(per_query)), per_query)
        ci = {k: c for k, v in _kappas(batch).items()
              if (c := percentile_ci(v, level)) is not None}
    return Between(a, b, len(at), len(per_query),
                   **{k: clean(v[0]) for k, v in stats.items()}, ci=ci)


def _kappas(c: np.ndarray) -> dict[str, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"exact": ag.exact_agreement(c),
                **{name: ag.cohen_kappa(c, kind) for name, kind in KAPPAS.items()}}


def _alpha(names: list[str], latest: _Latest, weights: Callable[[int], np.ndarray] | None,
           level: float) -> dict:
    """Krippendorff's alpha over every pair two or more annotators graded (in (qid, docid)
    order); the coincidence matrix adds up over pairs, so a query bootstrap re-adds per-query
    matrices."""
    # the pairs' runs of grades (``latest`` is sorted by pair): the units have two or more
    starts = np.flatnonzero(np.r_[True, latest.pair[1:] != latest.pair[:-1]]) \
        if len(latest.pair) else np.zeros(0, dtype=np.int64)
    sizes = np.diff(np.r_[starts, len(latest.pair)])
    unit = np.repeat(np.cumsum(sizes >= 2) - 1, sizes)
    shared = np.repeat(sizes >= 2, sizes)
    queries = latest.query[starts[sizes >= 2]]
    out: dict = {"raters": len(names), "units": len(queries),
                 "queries": len(np.unique(queries))}
    if not len(queries):
        return {**out, **{f"alpha_{k}": None for k in ALPHAS}, "ci": {}}
    grade = latest.grade[shared]
    if len(grade) and (grade.min() < 0 or grade.max() >= N_GRADES):
        # a grade off the scale (a store written by hand): indexed as numpy indexes it
        counts = np.zeros((len(queries), N_GRADES))
        np.add.at(counts, (unit[shared], grade), 1)
    else:
        counts = np.bincount(unit[shared] * N_GRADES + grade, minlength=len(queries) * N_GRADES
                             ).reshape(-1, N_GRADES).astype(np.float64)
    m = counts.sum(axis=1)
    per_unit = (np.einsum("ui,uj->uij", counts, counts)
                - np.einsum("ui,ij->uij", counts, np.eye(N_GRADES))) / (m - 1)[:, None, None]
    _, qcode = np.unique(queries, return_inverse=True)
    # each query's units added in order, one cell at a time: np.add.at's sums, bit for bit
    # (a weighted bincount adds its weights in order too), without its 1 s for 500k units
    per_query = np.stack([np.bincount(qcode, per_unit[:, i, j], minlength=qcode.max() + 1)
                          for i in range(N_GRADES) for j in range(N_GRADES)], axis=1
                         ).reshape(-1, N_GRADES, N_GRADES)
    o = per_query.sum(axis=0)[None]
    with np.errstate(invalid="ignore", divide="ignore"):
        out.update({f"alpha_{k}": clean(ag.alpha_from_coincidence(o, k)[0]) for k in ALPHAS})
        ci = {}
        if weights:
            batch = np.einsum("bq,qij->bij", weights(len(per_query)), per_query)
            ci = {f"alpha_{k}": c for k in ALPHAS
                  if (c := percentile_ci(ag.alpha_from_coincidence(batch, k), level))
                  is not None}
    return {**out, "ci": ci}
