"""Pooling: the (query, document) pairs in the top k of any run, minus those already labelled."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from reljudge.errors import ConfigError
from reljudge.trec_data import Run


def top_k(run: Run, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The run's top ``depth`` documents per query in trec_eval order (score desc, docid desc).

    Returns (qid, docid, rank) arrays, rank counting from 1, grouped by query. One stable
    ``np.lexsort`` by (query, score desc); docids are compared only within the ties that
    start in a query's top ``depth`` (str order is UTF-8 byte order).
    """
    if depth < 1:
        raise ConfigError(f"pool depth must be at least 1, not {depth}")
    qids, bounds, docids, scores = run.groups()
    n = len(scores)
    if n == 0:
        return np.zeros(0, dtype=object), np.zeros(0, dtype=object), np.zeros(0, np.int64)
    query = np.repeat(np.arange(len(qids)), np.diff(bounds))
    # stable: a tie keeps file order until its docids order it below
    order = np.lexsort((-scores, query))
    # 0-based rank in its query (query is sorted)
    at = np.arange(n) - bounds[query]
    s = scores[order]
    tied = np.r_[False, (s[1:] == s[:-1]) & (query[1:] == query[:-1])]
    # each tie's first place
    first = np.maximum.accumulate(np.where(tied, 0, np.arange(n)))
    # the rows in a tie of two or more that reaches the top depth
    ordered = np.r_[tied[1:], False] | tied
    ordered &= at[first] < depth
    where = np.flatnonzero(ordered)
    if len(where):
        docs = np.asarray(docids[order[where]], dtype=object)
        code = np.unique(docs, return_inverse=True)[1].ravel()
        order[where] = order[where][np.lexsort((-code, first[where]))]
    keep = at < depth
    return (np.array(qids, dtype=object)[query[keep]],
            np.asarray(docids[order[keep]], dtype=object), at[keep] + 1)


class PairIndex:
    """A fixed list of (qid, docid) pairs, indexed once so that many runs' top k are found
    in it without a pass over the list per run."""

    def __init__(self, pairs: Sequence[tuple[str, str]]) -> None:
        self._row: dict[tuple[str, str], int] = {}
        # a pair listed twice: both places take the first one's value
        self.first = np.fromiter((self._row.setdefault(p, i) for i, p in enumerate(pairs)),
                                 np.int64, len(pairs))

    def __len__(self) -> int:
        return len(self.first)

    def rows(self, qid: np.ndarray, docid: np.ndarray) -> np.ndarray:
        """The row of each given pair in the list, -1 for a pair not in it."""
        return np.fromiter(map(self._row.get, zip(qid.tolist(), docid.tolist(), strict=True),
                               repeat(-1)), np.int64, len(qid))

    def ranks(self, qid: np.ndarray, docid: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """Each listed pair's rank among the given (a run's ``top_k``), 0 where absent."""
        rows = self.rows(qid, docid)
        found = rows >= 0
        out = np.zeros(len(self), dtype=np.float64)
        out[rows[found]] = rank[found]
        return out[self.first]


@dataclass(frozen=True)
class QueryPool:
    """Pool counts of one query."""

    qid: str
    pooled: int
    judged: int

    @property
    def to_label(self) -> int:
        """Pairs still to be labelled."""
        return self.pooled - self.judged

    @property
    def judged_share(self) -> float:
        """Share of pooled pairs already labelled (1.0 for an empty pool)."""
        return self.judged / self.pooled if self.pooled else 1.0


@dataclass(frozen=True)
class Pool:
    """The pooled pairs, split into already labelled and still to label."""

    depth: int
    runs: tuple[str, ...]
    #: every pooled pair, by query then best rank, then docid
    pairs: list[tuple[str, str]]
    #: pooled pairs not yet labelled, same order
    to_label: list[tuple[str, str]]
    per_query: list[QueryPool] = field(default_factory=list)

    @property
    def judged(self) -> int:
        """Pooled pairs already labelled."""
        return len(self.pairs) - len(self.to_label)


def build_pool(runs: Sequence[Run], depth: int,
               labelled: Iterable[tuple[str, str]] = ()) -> Pool:
    """Pool the top ``depth`` of every run; pairs in ``labelled`` are counted but not to label."""
    best: dict[tuple[str, str], int] = {}
    for run in runs:
        q, d, r = top_k(run, depth)
        for pair, rank in zip(zip(q.tolist(), d.tolist(), strict=False), r.tolist(), strict=False):
            if rank < best.get(pair, depth + 1):
                best[pair] = rank
    pairs = sorted(best, key=lambda p: (p[0], best[p], p[1]))
    done = set(labelled)
    to_label = [p for p in pairs if p not in done]
    per_query: dict[str, list[int]] = {}
    for qid, docid in pairs:
        counts = per_query.setdefault(qid, [0, 0])
        counts[0] += 1
        counts[1] += (qid, docid) in done
    stats = [QueryPool(q, c[0], c[1]) for q, c in per_query.items()]
    return Pool(depth, tuple(r.name for r in runs), pairs, to_label, stats)


def judged_at_k(run: Run, labelled: Iterable[tuple[str, str]], k: int) -> float:
    """Mean over the run's queries of the labelled share of its top min(k, retrieved)
    documents: ``Judged@k`` as the metrics (and ir_measures) define it."""
    done = set(labelled)
    q, d, _ = top_k(run, k)
    if len(q) == 0:
        return 0.0
    counts: dict[str, list[int]] = {}
    for qid, docid in zip(q.tolist(), d.tolist(), strict=False):
        c = counts.setdefault(qid, [0, 0])
        c[0] += (qid, docid) in done
        c[1] += 1
    return float(np.mean([hit / n for hit, n in counts.values()]))


def rbp_residual(run: Run, labelled: Iterable[tuple[str, str]], p: float = 0.8) -> float:
    """Mean over the run's queries of RBP's residual (Moffat & Zobel 2008): (1-p) times the
    sum of p^(rank-1) over the ranked documents not in ``labelled``, i.e. how much the run's
    RBP could still rise; ``RBP(residual=True)`` of the metrics, with every labelled pair
    counted as judged."""
    done = set(labelled)
    depth = max(1, len(run))
    q, d, r = top_k(run, depth)
    if len(q) == 0:
        return 0.0
    open_ = np.fromiter((pair not in done for pair in zip(q.tolist(), d.tolist(), strict=True)),
                        bool, len(q))
    weight = (1.0 - p) * p ** (r - 1.0)
    codes = np.unique(q, return_inverse=True)[1].ravel()
    per_query = np.bincount(codes, weights=np.where(open_, weight, 0.0))
    return float(per_query.mean())
