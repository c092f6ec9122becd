"""Synthetic runs of graded quality from qrels, for examples and tests of system agreement;
twin queries, whose judge-only scores are unbiased by construction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from reljudge.pool import top_k
from reljudge.trec_data import Qrels, Run


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


@dataclass(frozen=True)
class TwinWorld:
    """Human and judge labels under which every run of ``runs`` has a judge-only score equal
    to its human score, exactly, and ``circular``, a run the judge over-rates."""

    human: Qrels
    judge: Qrels
    runs: list[Run]
    circular: Run


def twin_world(groups: int = 40, docs: int = 30, runs: int = 8, *, noise: float = 0.6,
               seed: int = 0) -> TwinWorld:
    """Queries in twins (``g0a``, ``g0b``, ...) over the same documents: each twin's human
    grades are one latent relevance plus its own noise (sd ``noise``), and the judge grades
    each query as the human graded its twin. Every run ranks the twins' documents alike
    (latent relevance plus noise of growing spread), so a run's value on one twin under the
    judge is its value on the other under people: over all queries its judge-only score
    equals its human score exactly, for every measure, however wrong the judge is on each
    query. ``circular`` ranks each query's documents by the judge's grade (ties by docid):
    ideal under the judge, not under people."""
    rng = np.random.default_rng(seed)
    latent = rng.gamma(1.2, 0.8, (groups, docs))
    # grades of shape (group, twin, doc)
    twins = np.clip(np.floor(latent[:, None, :] + noise * rng.standard_normal(
        (groups, 2, docs))), 0, 3).astype(np.int64)
    qid = np.array([[[f"g{g}{t}"] * docs for t in "ab"] for g in range(groups)], dtype=object)
    docid = np.array([[[f"g{g}d{d:02d}" for d in range(docs)]] * 2 for g in range(groups)],
                     dtype=object)
    flat = (qid.ravel(), docid.ravel())
    human = Qrels.from_arrays(*flat, twins.ravel(), check=False)
    judge = Qrels.from_arrays(*flat, twins[:, ::-1, :].ravel(), check=False)
    spread = np.geomspace(0.3, 3.0, runs)
    out = []
    for i, sd in enumerate(spread):
        score = latent + sd * rng.standard_normal(latent.shape)
        both = np.broadcast_to(score[:, None, :], twins.shape)
        out.append(Run.from_arrays(*flat, both.ravel().round(6), name=f"run{i + 1}",
                                   check=False))
    # ties: the lower docid
    by_judge = twins[:, ::-1, :] - np.arange(docs) / (2.0 * docs)
    circular = Run.from_arrays(*flat, by_judge.ravel(), name="circular", check=False)
    return TwinWorld(human, judge, out, circular)


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
