"""Synthetic runs of graded quality from qrels, for examples and tests of system agreement."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from reljudge.pool import top_k
from reljudge.types import Qrels, Run


def synthetic_runs(qrels: Qrels, n: int = 8, *, seed: int = 0, depth: int = 20,
                   filler: int = 10) -> list[Run]:
    """n runs that rank each query's judged documents by grade plus Gaussian noise of growing
    spread (run 1 is the best), mixed with ``filler`` unjudged documents, cut at ``depth``.
    They are not real systems: they only make system-level agreement visible."""
    rng = np.random.default_rng(seed)
    qids = qrels.query_ids()
    fill_q = np.repeat(np.array(qids, dtype=object), filler)
    fill_d = np.array([f"unjudged-{q}-{i}" for q in qids for i in range(filler)], dtype=object)
    runs = []
    for i in range(n):
        spread = 0.5 + 0.45 * i
        scores = np.r_[qrels.grade + rng.normal(0, spread, len(qrels)),
                       rng.normal(0.5, spread, len(fill_d))].round(4)
        full = Run.from_arrays(np.r_[qrels.qid, fill_q], np.r_[qrels.docid, fill_d], scores,
                               name=f"synthetic-{i + 1}", check=False)
        q, d, _ = top_k(full, depth)
        keep = dict.fromkeys(zip(q.tolist(), d.tolist(), strict=False))
        mask = np.fromiter(((a, b) in keep for a, b in zip(full.qid.tolist(),
                                                           full.docid.tolist(), strict=False)), bool, len(full))
        runs.append(Run.from_arrays(full.qid[mask], full.docid[mask], full.score[mask],
                                    name=full.name, check=False))
    return runs


def with_other_topics(human: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """Known grades for probes: the human grades, plus grade 0 for every document judged for
    another query only (in a collection of distinct topics, such as examples/hr-handbook, a
    passage on another topic). Not for real collections, whose topics overlap."""
    known = {q: dict(docs) for q, docs in human.items()}
    judged = {d for docs in human.values() for d in docs}
    for q, docs in known.items():
        for d in sorted(judged - set(human[q])):
            docs[d] = 0
    return known
