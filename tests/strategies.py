"""Hypothesis strategies shared by the store's tests: label event streams with grades,
failures, undos, several sources of each kind and sample indices."""

from __future__ import annotations

from hypothesis import strategies as st

from reljudge.labels import RETRACTED, FailureKind, LabelEvent

QIDS = ["q1", "q2", "Q-3 é"]
DOCIDS = ["d1", "d2", "doc 3", "d4"]
SOURCES = [("human", "alice"), ("human", "bob"), ("human", "adjudicated:dan"),
           ("llm", "gpt/umbrela@1#abcd"), ("llm", "claude"), ("import", "nist")]


@st.composite
def event(draw):
    q, d = draw(st.sampled_from(QIDS)), draw(st.sampled_from(DOCIDS))
    kind, name = draw(st.sampled_from(SOURCES))
    sample = draw(st.integers(0, 1)) if kind == "llm" else 0
    what = draw(st.sampled_from(["grade", "grade", "grade", "failure", "undo"]))
    if what == "grade":
        return LabelEvent(q, d, draw(st.integers(0, 3)), kind, name, sample,
                          latency=draw(st.one_of(st.none(), st.floats(0, 100))),
                          meta=draw(st.sampled_from([None, {"sample": "s1"},
                                                     {"note": "ünsure %s ?"}])),
                          raw=draw(st.sampled_from([None, "Grade: 2", "it's 50% ? maybe"])),
                          tokens_in=draw(st.one_of(st.none(), st.integers(0, 10**6))),
                          cost=draw(st.one_of(st.none(), st.floats(0, 1))))
    if what == "failure":
        return LabelEvent(q, d, None, kind, name, sample, failure="no grade in the answer",
                          failure_kind=draw(st.sampled_from(list(FailureKind))), raw="hmm")
    return LabelEvent(q, d, None, kind, name, sample, failure=RETRACTED)
