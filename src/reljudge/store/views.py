"""Row views of a label store for people and DataFrames: every label event, the merged labels
with provenance, failures, and human/LLM conflicts with their texts and the judge's answers."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

from reljudge.choices import Aggregate
from reljudge.frames import DataFrame, dataframe
from reljudge.labels import LabelEvent

# the store's parts call these views with themselves
if TYPE_CHECKING:
    from reljudge.store.events import EventLog
    from reljudge.store.merge import Conflict


@dataclass(frozen=True)
class ConflictText:
    """A human/LLM conflict with what a reader needs to judge it: both texts, both labels with
    their sources, and each LLM label's raw answer (the judge's reasoning)."""

    qid: str
    docid: str
    #: None when the store holds no text for it
    query: str | None
    passage: str | None
    human: float
    human_sources: tuple[str, ...]
    llm: float
    llm_sources: tuple[str, ...]
    #: {source, sample, grade, raw} of each LLM label that voted
    answers: tuple[dict, ...]

    @property
    def diff(self) -> float:
        """LLM minus human (positive: the judge is more lenient)."""
        return self.llm - self.human

    def reasoning(self) -> str:
        """The raw answers as one text (prefixed by source and sample when several)."""
        if len(self.answers) == 1:
            return self.answers[0]["raw"] or ""
        return "\n\n".join(f"[{a['source']} #{a['repeat']}] {a['raw'] or ''}"
                           for a in self.answers)


def conflicts_with_text(store: EventLog, aggregate: Aggregate = "majority", min_diff: float = 1.0,
                        limit: int = 0, *, standing: np.ndarray | None = None
                        ) -> list[ConflictText]:
    """Pairs whose human and LLM grades differ by at least ``min_diff``, largest first (at most
    ``limit``, 0: all), with query and passage text and the judge's raw answers. ``standing``:
    ``store.standing_ids()`` when the caller has read them already."""
    ids = store.standing_ids() if standing is None else standing
    found = [c for c in store.conflicts(aggregate, standing=ids) if abs(c.diff) >= min_diff]
    return with_text(store, found[:limit] if limit else found, ids)


def with_text(store: EventLog, found: list[Conflict], standing: np.ndarray
              ) -> list[ConflictText]:
    """Conflicts (``store.conflicts``) with their query and passage texts and the judge's
    raw answers; ``standing``: the ``store.standing_ids()`` they were merged from."""
    answers = _llm_answers(store, standing, {(c.qid, c.docid) for c in found})
    queries = store.query_texts({c.qid for c in found})
    passages = store.passage_texts({c.docid for c in found})
    return [ConflictText(c.qid, c.docid, queries.get(c.qid, (None,))[0],
                         passages.get(c.docid), c.human, c.human_sources, c.llm, c.llm_sources,
                         tuple(answers.get((c.qid, c.docid), ()))) for c in found]


def _llm_answers(store: EventLog, standing: np.ndarray, pairs: set[tuple[str, str]]
                 ) -> dict[tuple[str, str], list[dict]]:
    """{pair: {source, sample, grade, raw} of each LLM source's latest grade of it per sample
    (the merge's rule), by source and sample} of ``pairs``, from the store's ids."""
    if not pairs:
        return {}
    sources, queries, passages = store.id_names()
    qids, docids = dict(queries), dict(passages)
    q_of, d_of = {t: i for i, t in queries}, {t: i for i, t in passages}
    width = max(docids) + 1
    wanted = np.array([q_of[q] * width + d_of[d] for q, d in pairs], dtype=np.int64)
    ids = np.asarray(standing, dtype=np.int64).reshape(-1, 6)
    llm = np.array([i for i, (kind, _) in sources.items() if kind == "llm"], dtype=np.int64)
    ids = ids[np.isin(ids[:, 0], llm) & np.isin(ids[:, 1] * width + ids[:, 2], wanted)]
    ids = ids[np.lexsort((ids[:, 4], ids[:, 3], ids[:, 0], ids[:, 2], ids[:, 1]))]
    ends = np.r_[(ids[1:, :4] != ids[:-1, :4]).any(axis=1), True] if len(ids) else []
    latest = sorted((qids[q], docids[d], sources[s][1], repeat, eid, grade)
                    for s, q, d, repeat, eid, grade in ids[ends].tolist())
    raw: dict[int, str | None] = dict(store.db.select_in("SELECT id, raw FROM events", "id",
                                                         [r[4] for r in latest]))
    answers: dict[tuple[str, str], list[dict]] = {}
    for qid, docid, source, repeat, eid, grade in latest:
        answers.setdefault((qid, docid), []).append(
            {"source": source, "repeat": repeat, "grade": grade, "raw": raw.get(eid)})
    return answers


def conflicts_frame(found: list[ConflictText]) -> DataFrame:
    """Conflicts as a pandas DataFrame (sources joined by commas, the answers as one text)."""
    return dataframe(CONFLICT_COLUMNS, [conflict_row(c) for c in found])


CONFLICT_COLUMNS = ["qid", "docid", "query", "passage", "human", "human_sources", "llm",
                    "llm_sources", "llm - human", "reasoning"]


def conflict_row(c: ConflictText) -> list:
    """One conflict as a flat row of CONFLICT_COLUMNS (full texts)."""
    return [c.qid, c.docid, c.query, c.passage, c.human, ",".join(c.human_sources), c.llm,
            ",".join(c.llm_sources), c.diff, c.reasoning()]


def events_frame(store: EventLog) -> DataFrame:
    """Every event of the store (grades, failures, undos), one row each, LabelEvent's fields
    as columns, in the order they were added."""
    cols = [f.name for f in fields(LabelEvent)]
    return dataframe(cols, [[getattr(e, c) for c in cols] for e in store.events()])


PROVENANCE_COLUMNS = ["qid", "docid", "grade", "decided_by", "sources", "votes", "policy",
                      "aggregate", "stale"]
CURRENT_FAILURE_COLUMNS = ["qid", "docid", "source", "repeat", "kind", "detail"]
FAILURE_HISTORY_COLUMNS = ["qid", "docid", "source", "failure", "raw"]
