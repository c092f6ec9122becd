"""Annotator agreement (audit.annotators) against scikit-learn and krippendorff, from a real
store of human grades: pairwise kappas, alpha over three annotators with missing grades,
query-bootstrap intervals, and adjudicated grades kept out."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reljudge.audit.annotators import team_agreement
from reljudge.labels import RETRACTED, LabelEvent
from reljudge.store import LabelStore
from tests.helpers import Lazy
from tests.strategies import event

metrics = Lazy("sklearn.metrics")

NAMES = ("alice", "bob", "carol")


def team_store(path, seed=0, nq=12, nd=15):
    """Three annotators: alice grades everything, bob and carol most pairs; bob agrees with
    alice more often than carol does. Returns the store and {name: {pair: grade}}."""
    rng = np.random.default_rng(seed)
    truth = {(f"q{q}", f"d{q}-{d}"): int(rng.integers(0, 4)) for q in range(nq)
             for d in range(nd)}
    given = {n: {} for n in NAMES}
    for pair, g in truth.items():
        given["alice"][pair] = g
        if rng.random() < 0.8:
            given["bob"][pair] = g if rng.random() < 0.7 else int(rng.integers(0, 4))
        if rng.random() < 0.7:
            given["carol"][pair] = int(min(3, g + rng.integers(0, 2)))
    with LabelStore(path) as store:
        for name in NAMES:
            store.add_events([LabelEvent(q, d, g, "human", name, latency=1.0 + i % 5)
                              for i, ((q, d), g) in enumerate(given[name].items())])
    return path, given


def test_pairwise_kappas_equal_scikit_learn(tmp_path):
    path, given = team_store(tmp_path / "s.sqlite")
    with LabelStore(path) as store:
        report = team_agreement(store.standing("human"), bootstrap=0)
    assert [(b.a, b.b) for b in report.between] == [("alice", "bob"), ("alice", "carol"),
                                                    ("bob", "carol")]
    for b in report.between:
        both = sorted(set(given[b.a]) & set(given[b.b]))
        x = [given[b.a][p] for p in both]
        y = [given[b.b][p] for p in both]
        assert b.pairs == len(both)
        assert b.exact == pytest.approx(np.mean(np.equal(x, y)), abs=1e-12)
        assert b.kappa == pytest.approx(metrics.cohen_kappa_score(x, y), abs=1e-12)
        assert b.kappa_linear == pytest.approx(
            metrics.cohen_kappa_score(x, y, weights="linear"), abs=1e-12)
        assert b.kappa_quadratic == pytest.approx(
            metrics.cohen_kappa_score(x, y, weights="quadratic"), abs=1e-12)
    assert report.between[0].kappa > report.between[1].kappa  # bob agrees more with alice


def test_alpha_over_three_annotators_with_missing_grades_equals_krippendorff(tmp_path):
    path, given = team_store(tmp_path / "s.sqlite", seed=3)
    with LabelStore(path) as store:
        report = team_agreement(store.standing("human"), bootstrap=0)
    pairs = sorted(set().union(*given.values()))
    data = np.array([[given[n].get(p, np.nan) for p in pairs] for n in NAMES], dtype=float)
    assert report.alpha["raters"] == 3
    assert report.alpha["units"] == int((np.sum(~np.isnan(data), axis=0) >= 2).sum())
    for level in ("ordinal", "interval", "nominal"):
        want = krippendorff.alpha(reliability_data=data, level_of_measurement=level,
                                  value_domain=[0, 1, 2, 3])
        assert report.alpha[f"alpha_{level}"] == pytest.approx(want, abs=1e-12), level


def test_query_bootstrap_intervals_hold_the_estimate_and_resample_queries(tmp_path):
    path, _ = team_store(tmp_path / "s.sqlite", seed=1)
    with LabelStore(path) as store:
        standing = store.standing("human")
    report = team_agreement(standing, bootstrap=500, seed=7)
    again = team_agreement(standing, bootstrap=500, seed=7)
    assert report == again  # seeded
    for b in report.between:
        for name in ("exact", "kappa", "kappa_linear", "kappa_quadratic"):
            lo, hi = b.ci[name]
            assert lo < getattr(b, name) < hi
    lo, hi = report.alpha["ci"]["alpha_ordinal"]
    assert lo < report.alpha["alpha_ordinal"] < hi
    # resampling queries by hand for one resample reproduces the batch statistic's spread:
    # with one query only, every resample is that query and the interval is a point
    one = [s for s in standing if s.qid == "q0"]
    single = team_agreement(one, bootstrap=50, seed=7)
    lo, hi = single.between[0].ci["kappa"]
    assert lo == hi == pytest.approx(single.between[0].kappa)


def test_per_annotator_counts_speed_and_grades_and_adjudication_kept_out(tmp_path):
    path, given = team_store(tmp_path / "s.sqlite")
    with LabelStore(path) as store:
        before = team_agreement(store.standing("human"), bootstrap=0)
        q, d = next(iter(given["bob"]))
        store.add_events([LabelEvent(q, d, 3, "human", "adjudicated:dan", latency=9.0),
                          LabelEvent(q, d, 0, "llm", "judge")])
        after = team_agreement(store.standing("human"), bootstrap=0)
    people = {a.name: a for a in after.annotators}
    assert people["adjudicated:dan"].role == "adjudicator"
    assert people["adjudicated:dan"].pairs == 1 and people["adjudicated:dan"].seconds_total == 9
    assert after.between == before.between and after.alpha == before.alpha
    alice = people["alice"]
    assert alice.role == "annotator" and alice.pairs == len(given["alice"]) == 180
    assert alice.queries == 12
    assert alice.grades == {g: sum(v == g for v in given["alice"].values()) for g in range(4)}
    assert alice.seconds_median == float(np.median([1.0 + i % 5 for i in range(180)]))


def test_labels_stats_and_audit_give_the_annotator_report_in_one_shape(tmp_path, capsys):
    """`labels stats --format json` and `audit --annotators --format json` give one report,
    built by one function, with the same defaults."""
    import json

    from reljudge.cli import main
    from reljudge.labels import LabelEvent
    from reljudge.store import LabelStore

    store = tmp_path / "labels.sqlite"
    with LabelStore(store) as s:
        s.add_events([LabelEvent(f"q{i % 4}", f"d{i}", g, "human", name, latency=1.0 + i)
                      for i in range(24)
                      for name, g in (("alice", i % 4), ("bob", (i * 3) % 4),
                                      ("carol", (i + i // 5) % 4))])
    for extra in ([], ["--bootstrap", "40", "--seed", "3"], ["--bootstrap", "0"]):
        assert main(["labels", "stats", "--store", str(store), "--format", "json",
                     *extra]) == 0
        stats = json.loads(capsys.readouterr().out)["annotators"]
        assert main(["audit", "--store", str(store), "--annotators", "--format", "json",
                     *extra]) == 0
        audit = json.loads(capsys.readouterr().out)
        assert stats == audit, extra
        assert stats["bootstrap"] == (int(extra[1]) if extra else 1000)
        assert set(stats) == {"annotators", "between", "alpha", "bootstrap", "level"}


@pytest.mark.slow  # 40 stores, about 2 s; the fixed event streams below are the fast test
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(event(), min_size=1, max_size=12), min_size=1, max_size=5))
def test_the_report_from_the_stores_ids_equals_the_report_from_standing_rows(tmp_path_factory,
                                                                             batches):
    """Two paths, one answer: the annotator report of ``labels stats`` (the standing human
    grades column by column, from the store's ids) is ``team_agreement`` of
    ``store.standing("human")`` row by row, undos, samples and adjudications included."""
    _report_from_ids_is_the_report_from_rows(tmp_path_factory, batches)


def _fixed_events(seed: int, count: int) -> list[LabelEvent]:
    """``count`` events drawn as ``tests.strategies.event`` draws them: grades, failures
    and undos of every source over few pairs, so that people grade pairs in common."""
    from reljudge.labels import FailureKind
    from tests.strategies import DOCIDS, QIDS, SOURCES

    kinds = list(FailureKind)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        q, d = QIDS[rng.integers(len(QIDS))], DOCIDS[rng.integers(len(DOCIDS))]
        kind, name = SOURCES[rng.integers(len(SOURCES))]
        sample = int(rng.integers(2)) if kind == "llm" else 0
        what = rng.integers(5)
        if what < 3:
            out.append(LabelEvent(q, d, int(rng.integers(4)), kind, name, sample,
                                  latency=None if what else float(rng.uniform(0, 100))))
        elif what == 3:
            out.append(LabelEvent(q, d, None, kind, name, sample,
                                  failure="no grade in the answer",
                                  failure_kind=kinds[rng.integers(len(kinds))], raw="hmm"))
        else:
            out.append(LabelEvent(q, d, None, kind, name, sample, failure=RETRACTED))
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_the_report_from_the_stores_ids_of_fixed_events_equals_the_one_from_rows(
        tmp_path_factory, seed):
    """The sweep above on two streams of 60 events in three batches."""
    events = _fixed_events(seed, 60)
    _report_from_ids_is_the_report_from_rows(tmp_path_factory,
                                             [events[:25], events[25:50], events[50:]])


def _report_from_ids_is_the_report_from_rows(tmp_path_factory, batches) -> None:
    from reljudge.audit.annotators import team_agreement_of

    with LabelStore(tmp_path_factory.mktemp("t") / "s.sqlite") as store:
        for batch in batches:
            store.add_events(batch)
        rows = store.standing("human")
        columns = store.standing_columns("human")
        assert len(columns.event) == len(rows)
        assert team_agreement_of(columns, bootstrap=20, seed=3) == \
            team_agreement(rows, bootstrap=20, seed=3)


def _agreement_pair_by_pair(rows, bootstrap: int, seed: int, level: float) -> tuple[list, dict]:
    """The agreement of ``team_agreement`` as it was computed: a dict of each pair's latest
    grade per annotator, the pairs both graded and the units found pair by pair (the reference
    for the column path; 7 s of `labels stats` with two people grading 500k pairs)."""
    from reljudge.audit.annotators import ALPHAS, Between, _kappas
    from reljudge.audit.items import clean
    from reljudge.grades import N_GRADES
    from reljudge.labels import is_adjudication
    from reljudge.stats import agreement as ag
    from reljudge.stats.bootstrap import percentile_ci

    def weights(units: int) -> np.ndarray:  # the resample weights, counted one at a time
        picks = np.random.default_rng(seed).integers(0, units, size=(bootstrap, units))
        out = np.zeros((bootstrap, units))
        np.add.at(out, (np.repeat(np.arange(bootstrap), units), picks.ravel()), 1.0)
        return out

    graders = sorted({r.source for r in rows if not is_adjudication(r.source)})
    grade: dict = {}
    if len(graders) > 1:
        for r in sorted(rows, key=lambda r: r.event):
            if not is_adjudication(r.source):
                grade.setdefault((r.qid, r.docid), {})[r.source] = r.grade
    between = []
    for k, a in enumerate(graders):
        for b in graders[k + 1:]:
            both = sorted(p for p, g in grade.items() if a in g and b in g)
            if not both:
                continue
            _, qcode = np.unique([q for q, _ in both], return_inverse=True)
            per_query = ag.confusions(np.array([grade[p][a] for p in both]),
                                      np.array([grade[p][b] for p in both]), qcode,
                                      qcode.max() + 1)
            stats = _kappas(per_query.sum(axis=0)[None])
            ci = {}
            if bootstrap:
                batch = np.einsum("bq,qij->bij", weights(len(per_query)), per_query)
                ci = {k: c for k, v in _kappas(batch).items()
                      if (c := percentile_ci(v, level)) is not None}
            between.append(Between(a, b, len(both), len(per_query),
                                   **{k: clean(v[0]) for k, v in stats.items()}, ci=ci))
    units = sorted(p for p, g in grade.items() if len(g) >= 2)
    alpha: dict = {"raters": len(graders), "units": len(units),
                   "queries": len({q for q, _ in units})}
    if not units:
        return between, {**alpha, **{f"alpha_{k}": None for k in ALPHAS}, "ci": {}}
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
        alpha.update({f"alpha_{k}": clean(ag.alpha_from_coincidence(o, k)[0]) for k in ALPHAS})
        ci = {}
        if bootstrap:
            batch = np.einsum("bq,qij->bij", weights(len(per_query)), per_query)
            ci = {f"alpha_{k}": c for k in ALPHAS
                  if (c := percentile_ci(ag.alpha_from_coincidence(batch, k), level))
                  is not None}
    return between, {**alpha, "ci": ci}


@st.composite
def _team_event(draw) -> LabelEvent:
    """A person's grade or undo: four annotators and an adjudicator over few pairs, so that
    two, three and four grade the same pair, some twice (a second repeat index)."""
    q, d = draw(st.sampled_from(["q1", "Q-2 é", "q10"])), draw(st.sampled_from(["d1", "d 2", "D3"]))
    name = draw(st.sampled_from(["alice", "bob", "carol", "éve", "adjudicated:dan"]))
    repeat = draw(st.integers(0, 1))
    if draw(st.integers(0, 5)) == 0:
        return LabelEvent(q, d, None, "human", name, repeat, failure=RETRACTED)
    return LabelEvent(q, d, draw(st.integers(0, 3)), "human", name, repeat,
                      latency=draw(st.one_of(st.none(), st.floats(0, 100))))


@pytest.mark.slow  # 60 stores, about 2.5 s; the fixed event streams below are the fast test
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(_team_event(), min_size=1, max_size=40),
       bootstrap=st.sampled_from([0, 30]))
def test_the_agreement_by_columns_equals_the_one_pair_by_pair(tmp_path_factory, events,
                                                              bootstrap):
    """Two paths, one answer: the agreement of two annotators and alpha over all, found with
    sorted columns (each annotator's latest grades joined by pair), are those of each pair's
    grades gathered in a dict, to the last bit, intervals included; and the annotators'
    grades taken from the store's votes are those sorted from its standing grades."""
    _agreement_by_columns_is_the_one_pair_by_pair(tmp_path_factory, events, bootstrap)


def _fixed_team_events(seed: int, count: int) -> list[LabelEvent]:
    """``count`` events drawn as ``_team_event`` draws them."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        q = ["q1", "Q-2 é", "q10"][rng.integers(3)]
        d = ["d1", "d 2", "D3"][rng.integers(3)]
        name = ["alice", "bob", "carol", "éve", "adjudicated:dan"][rng.integers(5)]
        repeat = int(rng.integers(2))
        if rng.integers(6) == 0:
            out.append(LabelEvent(q, d, None, "human", name, repeat, failure=RETRACTED))
        else:
            out.append(LabelEvent(q, d, int(rng.integers(4)), "human", name, repeat,
                                  latency=None if rng.integers(2) else
                                  float(rng.uniform(0, 100))))
    return out


@pytest.mark.parametrize(("seed", "bootstrap"), [(0, 0), (1, 30), (2, 30)])
def test_the_agreement_by_columns_of_fixed_events_equals_the_one_pair_by_pair(
        tmp_path_factory, seed, bootstrap):
    """The sweep above on three streams of 40 events, with and without intervals."""
    _agreement_by_columns_is_the_one_pair_by_pair(tmp_path_factory,
                                                  _fixed_team_events(seed, 40), bootstrap)


def _agreement_by_columns_is_the_one_pair_by_pair(tmp_path_factory, events, bootstrap) -> None:
    from reljudge.audit.annotators import team_agreement_of

    with LabelStore(tmp_path_factory.mktemp("a") / "s.sqlite") as store:
        store.add_events(events)
        rows = store.standing("human")
        columns = store.standing_columns("human")
        from_votes = store.standing_columns("human", votes=store.votes())
    for field in ("source", "qid", "docid", "q", "d", "grade", "event"):
        assert getattr(from_votes, field).tolist() == getattr(columns, field).tolist(), field
    np.testing.assert_array_equal(from_votes.seconds, columns.seconds)
    report = team_agreement_of(from_votes, bootstrap=bootstrap, seed=5)
    between, alpha = _agreement_pair_by_pair(rows, bootstrap, 5, 0.95)
    assert report.between == between
    assert report.alpha == alpha
