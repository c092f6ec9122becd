"""DCG and nDCG over expected gains, for labels that are grade distributions.

A pair's expected gain is sum_g P(g) * gain(g), with trec_eval's ``linear`` or ``exp``
gains. DCG@k sums expected gains discounted by log2(rank + 1) over the run's top k (ties
broken as trec_eval's); the ideal DCG@k sorts the query's expected gains. nDCG@k is their
ratio, trec_eval's nDCG@k when every distribution is certain. Documents without a
distribution gain 0; the queries are the run's that have distributions.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from reljudge.errors import InputError
from reljudge.trec_data import Run

GAINS = {"linear": np.arange(4, dtype=np.float64),
         "exp": 2.0 ** np.arange(4, dtype=np.float64) - 1.0}

Distributions = Mapping[tuple[str, str], tuple[float, ...] | np.ndarray]


def _gain_vector(gain: str) -> np.ndarray:
    if gain not in GAINS:
        raise InputError(f"unknown gain {gain!r}; expected one of {', '.join(GAINS)}")
    return GAINS[gain]


def _dcg(qcode: np.ndarray, order_keys: tuple, gains: np.ndarray, nq: int, k: int
         ) -> np.ndarray:
    """Per-query DCG@k of gains ranked by lexsort(order_keys) within each query."""
    order = np.lexsort(order_keys)
    q, g = qcode[order], gains[order]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if len(q) else np.zeros(0, int)
    first = np.repeat(starts, np.diff(np.r_[starts, len(q)]))
    pos = np.arange(len(q)) - first
    keep = pos < k
    return np.bincount(q[keep], weights=g[keep] / np.log2(pos[keep] + 2.0), minlength=nq)


def expected_dcg(run: Run, dists: Distributions, k: int = 10, gain: str = "linear",
                 normalise: bool = False) -> dict[str, float]:
    """{qid: DCG@k (or nDCG@k when normalise)} of the run over expected gains."""
    gv = _gain_vector(gain)
    if k < 1:
        raise InputError(f"cut-off k must be >= 1, got {k}")
    judged_q = {q for q, _ in dists}
    qid = np.asarray(run.qid, dtype=object)
    docid = np.asarray(run.docid, dtype=object)
    keep = np.fromiter((q in judged_q for q in qid.tolist()), bool, len(qid))
    qid, docid, score = qid[keep], docid[keep], np.asarray(run.score, np.float64)[keep]
    queries, qcode = np.unique(qid.astype(str), return_inverse=True)
    nq = len(queries)
    exp_gain = {p: float(np.asarray(v, np.float64) @ gv) for p, v in dists.items()}
    run_gain = np.fromiter((exp_gain.get(p, 0.0) for p in zip(qid.tolist(), docid.tolist(),
                                                               strict=True)),
                           np.float64, len(qid))
    _, doc_rank = np.unique(docid.astype(str), return_inverse=True)
    dcg = _dcg(qcode, (-doc_rank, -score, qcode), run_gain, nq, k)
    if not normalise:
        return dict(zip(queries.tolist(), dcg.tolist(), strict=True))
    index = {q: i for i, q in enumerate(queries.tolist())}
    pairs = [(index[q], g) for (q, _), g in exp_gain.items() if q in index]
    icode = np.array([p[0] for p in pairs], dtype=np.int64)
    igain = np.array([p[1] for p in pairs], dtype=np.float64)
    ideal = _dcg(icode, (-igain, icode), igain, nq, k)
    out = np.zeros(nq)
    np.divide(dcg, ideal, out=out, where=ideal > 0)
    return dict(zip(queries.tolist(), out.tolist(), strict=True))


def expected_ndcg(run: Run, dists: Distributions, k: int = 10, gain: str = "linear"
                  ) -> dict[str, float]:
    """{qid: nDCG@k} of the run over expected gains (0 where the ideal DCG is 0)."""
    return expected_dcg(run, dists, k, gain, normalise=True)
