"""Every measure stays inside its documented range (``MeasureSpec.bounds``, the table of
docs/measures.md) on random qrels, runs and parameters; a parameter that would put a measure
outside it is refused when the measure is parsed."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reljudge.errors import MeasureError
from reljudge.metrics import evaluate
from reljudge.metrics.measures import SPECS, parse_measure

GRADES = st.integers(-2, 4)
SCORES = st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(-10, 10))  # ties and not
LEVELS = st.lists(st.floats(0, 1), min_size=1, max_size=4).map(
    lambda xs: ",".join(f"{x:.3f}" for x in xs))
GAINS = st.dictionaries(st.integers(-1, 5), st.floats(-5, 20), max_size=3).map(
    lambda d: ",".join(f"{g}={v:.3f}" for g, v in d.items()))
#: a strategy for every parameter any measure takes: a new one fails the test until added
PARAMS = {
    "rel": st.integers(-2, 4), "judged_only": st.booleans(),
    "dcg": st.sampled_from(SPECS["nDCG"].choices["dcg"]),
    "ideal": st.sampled_from(SPECS["nDCG"].choices["ideal"]), "gains": GAINS,
    "max_grade": st.integers(-2, 3),  # added to the top grade
    "p": st.floats(0.01, 0.99), "residual": st.booleans(), "graded": st.booleans(),
    "tail": st.booleans(), "beta": st.floats(0, 5), "levels": LEVELS,
    "a": st.floats(-5, 5), "b": st.floats(-5, 5), "c": st.floats(-5, 5), "d": st.floats(-5, 5),
    "num_docs": st.integers(0, 50),
}
CUTOFFS = {
    "optional": st.one_of(st.just(""), st.integers(1, 15).map("@{}".format)),
    "required": st.integers(1, 15).map("@{}".format), "none": st.just(""),
    "recall": st.floats(0, 1).map("@{:.3f}".format),
    "factor": st.floats(0.05, 3).map("@{:.3f}".format),
}


def test_every_parameter_of_every_measure_has_a_strategy_here():
    assert {k for s in SPECS.values() for k in s.params} <= set(PARAMS)


# built once: a strategy built inside a draw is built and validated again at every example
DOCS = [f"d{i}" for i in range(12)]
QIDS = st.lists(st.sampled_from(["q1", "q2", "q3"]), min_size=1, max_size=3, unique=True)
JUDGED = st.dictionaries(st.sampled_from(DOCS), GRADES, min_size=1, max_size=8)
RANKED = st.dictionaries(st.sampled_from(DOCS), SCORES, min_size=1, max_size=10)


@st.composite
def inputs(draw):
    """Qrels and a run over a few queries: grades -2..4, unjudged and unretrieved documents,
    queries the run lacks and queries with no relevant document."""
    qids = draw(QIDS)
    qrels = {q: draw(JUDGED) for q in qids}
    run = {q: draw(RANKED) for q in qids[: draw(st.integers(1, len(qids)))]}
    return qrels, run


NAMES = st.sampled_from(sorted(SPECS))


@functools.cache  # one strategy for each top grade, built once
@st.composite
def measure(draw, top: int):
    """A measure with random parameters and cutoff, as text, and whether a parameter is one
    that must be refused: a negative gain, rel below 1, ERR's max_grade below a judged grade."""
    name = draw(NAMES)
    spec = SPECS[name]
    params = {k: draw(PARAMS[k]) for k in spec.params if draw(st.booleans())}
    if "max_grade" in params:
        params["max_grade"] += max(0, top)
    gains = [float(part.split("=")[1]) for part in params.get("gains", "").split(",") if part]
    refused = (params.get("rel", 1) < 1 or any(g < 0 for g in gains)
               or params.get("max_grade", 4) < top)
    text = name + (f"({','.join(f'{k}={v!r}' for k, v in params.items())})" if params else "")
    return text + draw(CUTOFFS[spec.cutoff]), refused


INPUTS = inputs()


@functools.cache
def more(top: int) -> st.SearchStrategy:
    """Up to five more measures, one strategy for each top grade."""
    return st.lists(measure(top), max_size=5)


SWEEP = given(data=st.data(), all_queries=st.booleans(), judged_only=st.booleans())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@SWEEP
@pytest.mark.slow  # a 400-example sweep: the fast set runs the same on 50 just below
def test_every_measure_stays_inside_its_documented_range(data, all_queries, judged_only):
    stays_inside_its_range(data, all_queries, judged_only)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@SWEEP
def test_every_measure_stays_inside_its_documented_range_on_a_few_examples(data, all_queries,
                                                                          judged_only):
    stays_inside_its_range(data, all_queries, judged_only)


def stays_inside_its_range(data, all_queries: bool, judged_only: bool) -> None:
    """Random qrels, run and measures: each value finite and inside its spec's bounds, or the
    measure refused when a parameter would put it outside."""
    qrels, run = data.draw(INPUTS)
    evaluated = qrels if all_queries else [q for q in run if q in qrels]
    top = max(g for q in evaluated for g in qrels[q].values())  # the ERR refusal reads these
    text, refused = data.draw(measure(top))
    if refused:
        with pytest.raises(MeasureError):
            evaluate(qrels, run, [text], all_queries=all_queries, judged_only=judged_only)
        return
    texts = [text, *(t for t, no in data.draw(more(top))
                     if not no)]
    if len({str(parse_measure(t)) for t in texts}) < len(texts):
        return  # one measure twice
    ev = evaluate(qrels, run, texts, all_queries=all_queries, judged_only=judged_only)
    for text, name in zip(texts, ev.measures, strict=True):
        low, high = SPECS[parse_measure(text).name].bounds
        values = ev.column(name)
        assert np.isfinite(values).all(), text
        assert (values >= low - 1e-9).all() and (values <= high + 1e-9).all(), (text, values)


@pytest.mark.parametrize(("text", "needle"), [
    ("nDCG(gains='1=-2')@10", r"a gain must be a number >= 0 \(nDCG would leave \[0, 1\]\), "
                              r"found '1=-2'"),
    ("nDCG(gains='2=nan')", "a gain must be a number >= 0"),
    ("nDCG(gains='2=inf')", "a gain must be a number >= 0"),
    ("infAP(rel=-1)", r"infAP\(rel=...\) must be 1 or more .* found -1"),
    ("P(rel=0)@5", r"P\(rel=...\) must be 1 or more"),
    ("AP(rel=-2)", "must be 1 or more"),
])
def test_parameters_that_would_leave_the_range_are_refused(text, needle):
    """nDCG(gains='1=-2') gave -0.18 and infAP(rel=-1) 1.13: a negative gain and a relevance
    level below 1 (negative grades mark unjudged documents, counted then as relevant and as
    pooled at once) are refused where the measure is read."""
    with pytest.raises(MeasureError, match=needle):
        evaluate({"q": {"a": 1, "b": -1}}, {"q": {"a": 1.0, "b": 2.0}}, [text])


def test_the_range_of_each_measure_is_written_in_the_docs():
    from pathlib import Path

    text = " ".join((Path(__file__).parents[2] / "docs" / "measures.md").read_text().split())
    unbounded = sorted(n for n, s in SPECS.items() if s.bounds != (0.0, 1.0))
    assert unbounded == ["DCG", "NumNonRelJudgedRet", "NumRel", "NumRelRet", "NumRet",
                         "Utility"]
    assert ("Every measure lies in [0, 1] but DCG and the counts (`NumRel`, `NumRet`, "
            "`NumRelRet`, `NumNonRelJudgedRet`), 0 or more, and `Utility`, any number") in text
    assert math.inf in SPECS["DCG"].bounds
