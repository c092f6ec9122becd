"""Which pairs an adjudicator settles (``reljudge assess --adjudicate``), and what they see.

A pair needs settling when two annotators' standing grades of it differ, or (``judge_diff``,
``--conflicts``) when an annotator's grade and an LLM judge's differ by that much or more.
The adjudicator sees every standing grade of the pair (each annotator's, with their note, and
each judge's, with its answer text: its reasoning), and their grade links those events
(``meta["settles"]``). Adjudicated grades themselves are never what needs settling.
"""

from __future__ import annotations

from collections.abc import Sequence

from reljudge.labels import is_adjudication
from reljudge.store import LabelStore
from reljudge.store.events import Standing


def to_settle(store: LabelStore, pairs: Sequence[tuple[str, str]],
              judge_diff: int | None = None) -> dict[tuple[str, str], list[Standing]]:
    """{pair: the grades its adjudication settles} for the pairs of ``pairs`` in conflict,
    in the order of ``pairs``."""
    wanted = {tuple(p) for p in pairs}
    grades: dict[tuple[str, str], list[Standing]] = {}
    for s in [*store.standing("human"), *store.standing("llm")]:
        if (s.qid, s.docid) in wanted and not is_adjudication(s.source):
            grades.setdefault((s.qid, s.docid), []).append(s)
    out = {}
    for pair in dict.fromkeys((q, d) for q, d in pairs):
        held = grades.get(pair, [])
        human = [s.grade for s in held if s.kind == "human"]
        llm = [s.grade for s in held if s.kind == "llm"]
        if len(set(human)) > 1 or (judge_diff is not None and any(
                abs(h - j) >= judge_diff for h in human for j in llm)):
            out[pair] = sorted(held, key=lambda s: (s.kind != "human", s.source, s.repeat))
    return out
