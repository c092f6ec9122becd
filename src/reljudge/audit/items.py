"""Item agreement: a judge's grades against the reference's on the pairs both labelled, with
query-bootstrap intervals (every statistic is a function of per-query confusion matrices)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reljudge.errors import InputError
from reljudge.grades import SCALE_TEXT, out_of_scale
from reljudge.io.coerce import as_qrels
from reljudge.stats import agreement as ag
from reljudge.stats.bootstrap import percentile_ci, resample_weights
from reljudge.trec_data import Qrels


@dataclass
class Joined:
    """Reference and judge grades on their shared pairs, with the pairs on one side only."""

    #: query of each shared pair
    qids: np.ndarray
    #: int grades, one per shared pair
    reference: np.ndarray
    judge: np.ndarray
    only_reference: int
    only_judge: int


def join(reference: Qrels, judge: Qrels) -> Joined:
    """Pair up the two label sets on (qid, docid); never by line order."""
    reference, judge = as_qrels(reference, "reference"), as_qrels(judge, "judge")
    ref = reference.to_dict()
    jd = judge.to_dict()
    qs, a, b = [], [], []
    only_judge = 0
    for q, docs in jd.items():
        rq = ref.get(q, {})
        for d, g in docs.items():
            if d in rq:
                qs.append(q)
                a.append(rq[d])
                b.append(g)
            else:
                only_judge += 1
    grades = np.array(a + b, dtype=np.int64)
    if len(out_of_scale(grades)):
        raise InputError(f"grades outside {SCALE_TEXT} reached the audit; clip or "
                         f"reject them on input")
    return Joined(np.array(qs, dtype=object), np.array(a, dtype=np.int64),
                  np.array(b, dtype=np.int64), len(reference) - len(qs), only_judge)


@dataclass
class ItemAgreement:
    """Item-level statistics of one judge, with bootstrap intervals when asked for."""

    pairs: int
    only_reference: int
    only_judge: int
    confusion: list[list[int]]
    stats: dict[str, float | None]
    #: statistic -> why it is undefined
    undefined: dict[str, str]
    precision: list[float | None]
    recall: list[float | None]
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)


def clean(x: float) -> float | None:
    return None if x != x else float(x)


def item_agreement(joined: Joined, bootstrap: int = 0, seed: int = 0,
                   level: float = 0.95) -> ItemAgreement:
    """Every item statistic; percentile CIs from resampling queries when bootstrap > 0."""
    c = ag.confusion(joined.reference, joined.judge)
    stats = {k: v[0] for k, v in ag.all_statistics(c[None]).items()}
    undefined = {k: ag.why_undefined(k, c) for k, v in stats.items() if v != v}
    prec, rec = ag.precision_recall(c[None])
    out = ItemAgreement(len(joined.reference), joined.only_reference, joined.only_judge,
                        c.astype(int).tolist(), {k: clean(v) for k, v in stats.items()},
                        undefined, [clean(x) for x in prec[0]], [clean(x) for x in rec[0]])
    if bootstrap and len(joined.reference):
        out.ci = bootstrap_ci(joined, bootstrap, seed, level)
    return out


def per_query_confusions(joined: Joined) -> np.ndarray:
    """(queries, K, K) confusion matrices, one per query."""
    _, qcode = np.unique(joined.qids, return_inverse=True)
    return ag.confusions(joined.reference, joined.judge, qcode, qcode.max() + 1)


def bootstrap_ci(joined: Joined, n: int, seed: int, level: float = 0.95
                 ) -> dict[str, tuple[float, float]]:
    """Percentile intervals over n resamples of the queries (with replacement)."""
    cq = per_query_confusions(joined)
    batch = np.einsum("bq,qij->bij", resample_weights(cq.shape[0], n, seed), cq)
    out = {}
    for name, values in ag.all_statistics(batch).items():
        ci = percentile_ci(values, level)
        if ci is not None:
            out[name] = ci
    return out
