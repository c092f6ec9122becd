"""Hypothesis strategies shared by the store's tests: label event streams with grades,
failures, undos, several sources of each kind and sample indices."""

from __future__ import annotations

from hypothesis import strategies as st

from reljudge.labels import RETRACTED, FailureKind, LabelEvent

QIDS = ["q1", "q2", "Q-3 é"]
DOCIDS = ["d1", "d2", "doc 3", "d4"]
SOURCES = [("human", "alice"), ("human", "bob"), ("human", "adjudicated:dan"),
           ("llm", "gpt/umbrela@1#abcd"), ("llm", "claude"), ("import", "nist")]


# built once: a strategy built inside a draw is built and validated again at every event
_QID, _DOCID, _SOURCE = st.sampled_from(QIDS), st.sampled_from(DOCIDS), st.sampled_from(SOURCES)
_WHAT = st.sampled_from(["grade", "grade", "grade", "failure", "undo"])
_LATENCY = st.one_of(st.none(), st.floats(0, 100))
_META = st.sampled_from([None, {"sample": "s1"}, {"note": "ünsure %s ?"}]).map(
    lambda meta: meta and dict(meta))  # each event its own dict, as when built in the draw
_RAW = st.sampled_from([None, "Grade: 2", "it's 50% ? maybe"])
_TOKENS = st.one_of(st.none(), st.integers(0, 10**6))
_COST = st.one_of(st.none(), st.floats(0, 1))
_FAILURE_KIND = st.sampled_from(list(FailureKind))


@st.composite
def event(draw):
    q, d = draw(_QID), draw(_DOCID)
    kind, name = draw(_SOURCE)
    sample = draw(st.integers(0, 1)) if kind == "llm" else 0
    what = draw(_WHAT)
    if what == "grade":
        return LabelEvent(q, d, draw(st.integers(0, 3)), kind, name, sample,
                          latency=draw(_LATENCY), meta=draw(_META), raw=draw(_RAW),
                          tokens_in=draw(_TOKENS), cost=draw(_COST))
    if what == "failure":
        return LabelEvent(q, d, None, kind, name, sample, failure="no grade in the answer",
                          failure_kind=draw(_FAILURE_KIND), raw="hmm")
    return LabelEvent(q, d, None, kind, name, sample, failure=RETRACTED)
