"""trec_eval's preference measures (``-R prefs`` or ``-R qrels_prefs`` with ``-m all_prefs``),
computed as trec_eval 10 computes them (``form_prefs_counts.c``, ``m_prefs_*.c``; the
definitions: docs/measures.md).

A query's judged documents are numbered: those the run retrieves first, by rank (ties by
document id ascending, trec_eval's rule here), then the others in byte order of their ids. A judgment group with one sub-group counts each preference once per pair
of lines; one with several, the union of their preferences closed under transitivity (a
cycle is an error). trec_eval's own rules are kept where they
surprise: in ``avgjg_Rnonrel`` the kept non-relevant documents are also compared with each
other, and ``avgjg_Rnonrel_ret`` takes the first ``num_rel`` (not retrieved-relevant)
non-relevant documents of the ranking.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from reljudge.choices import Compat
from reljudge.errors import InputError, MeasureError
from reljudge.io.prefs import Prefs
from reljudge.metrics.ranking import RunLike, float32_rounded, refuse_non_finite
from reljudge.trec_data import Run

if TYPE_CHECKING:
    from reljudge.metrics.evaluate import Evaluation

#: -m all_prefs, in trec_eval's printing order
PREFS_MEASURES = (
    "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp",
    "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret",
    "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp",
    "prefs_avgjg_imp")
#: -m prefs (trec_eval's official preference measures)
PREFS_OFFICIAL = PREFS_MEASURES[:6]
#: counts: trec_eval's summary line sums them
PREFS_SUMMED = PREFS_MEASURES[:3]


@dataclass
class _Group:
    """One judgment group's preferences over a query's numbered judged documents."""

    #: (nj, nj) int: how many of the group's lines prefer i over j
    prefs: np.ndarray
    #: fulfilled/unfulfilled retrieved, implied, neither
    areas: tuple[int, int, int, int, int]
    num_rel: int
    num_rel_ret: int
    num_nonrel: int
    num_nonrel_ret: int
    #: one sub-group: numbers per level, levels descending
    classes: list[np.ndarray] | None
    #: several: each document's level (-1 where not judged here)
    levels: np.ndarray | None

    @property
    def ful_ret(self) -> int:
        return self.areas[0]

    @property
    def poss_ret(self) -> int:
        return self.areas[0] + self.areas[1]

    @property
    def ful_imp(self) -> int:
        return self.areas[2]

    @property
    def poss_imp(self) -> int:
        return self.areas[2] + self.areas[3]

    @property
    def ful(self) -> int:
        return self.ful_ret + self.ful_imp

    @property
    def poss(self) -> int:
        return self.poss_ret + self.poss_imp + self.areas[4]


def _areas(w: np.ndarray, njr: int) -> tuple[int, int, int, int, int]:
    """Preferences i over j of ``w`` by where i and j rank: both retrieved and fulfilled (i
    first), both retrieved and not, only i retrieved, only j, neither."""
    both = w[:njr, :njr]
    return (int(np.triu(both, 1).sum()), int(np.tril(both, -1).sum()),
            int(w[:njr, njr:].sum()), int(w[njr:, :njr].sum()), int(w[njr:, njr:].sum()))


def _numbers(docid: np.ndarray, ranking: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Each line's document number (retrieved judged documents first, in rank order, then the
    others by id), the number of judged documents and of those retrieved."""
    # sorted by code point, i.e. by UTF-8 bytes as trec_eval
    judged = np.unique(docid)
    retrieved = ranking[np.isin(ranking, judged)]
    order = np.concatenate([retrieved, judged[~np.isin(judged, retrieved)]])
    number = np.empty(len(judged), dtype=np.int64)
    number[np.searchsorted(judged, order)] = np.arange(len(order))
    return number[np.searchsorted(judged, docid)], len(judged), len(retrieved)


def _classes_group(r: np.ndarray, lv: np.ndarray, docs: np.ndarray, nj: int, njr: int,
                   where: str) -> _Group:
    """A group with one sub-group: every line over each line with a lower level."""
    order = np.lexsort((r, -lv))
    r, lv, docs = r[order], lv[order], docs[order]
    above = lv[:, None] > lv[None, :]
    same = above & (r[:, None] == r[None, :])
    if same.any():
        raise InputError(f"{where}: document {str(docs[np.argmax(same.any(1))])!r} has two "
                         "levels in one judgment sub-group")
    w = np.zeros((nj, nj), dtype=np.int64)
    if len(np.unique(r)) == len(r):
        w[np.ix_(r, r)] = above
    else:
        # a line repeated: trec_eval counts its preferences again
        np.add.at(w, (np.broadcast_to(r[:, None], above.shape),
                      np.broadcast_to(r[None, :], above.shape)), above.astype(np.int64))
    rel, ret = lv > 0, r < njr
    levels = np.unique(lv)[::-1]
    return _Group(w, _areas(w, njr), int(rel.sum()), int((rel & ret).sum()),
                  int((~rel).sum()), int((~rel & ret).sum()),
                  [r[lv == level] for level in levels], None)


def _array_group(r: np.ndarray, lv: np.ndarray, jsg: np.ndarray, docs: np.ndarray, nj: int,
                 njr: int, where: str) -> _Group:
    """A group with several sub-groups: their preferences, closed under transitivity."""
    pos, zero = np.zeros(nj, bool), np.zeros(nj, bool)
    pos[r[lv > 0]], zero[r[lv == 0]] = True, True
    if (pos & zero).any():
        both = np.argmax(pos & zero)
        raise InputError(f"{where}: document {str(docs[np.argmax(r == both)])!r} has level 0 "
                         "and a level above 0 in one judgment group")
    # trec_eval keeps each document's last level
    order = np.lexsort((r, -lv, jsg))
    last_r, last_lv = r[order][::-1], lv[order][::-1]
    levels = np.full(nj, -1.0)
    uniq, first = np.unique(last_r, return_index=True)
    levels[uniq] = last_lv[first]
    local = np.searchsorted(uniq, r)
    i, j = np.nonzero((jsg[:, None] == jsg[None, :]) & (lv[:, None] > lv[None, :]))
    closed = np.eye(len(uniq), dtype=bool)
    closed[local[i], local[j]] = True
    # transitive closure by squaring
    while True:
        step = (closed.astype(np.float32) @ closed.astype(np.float32)) > 0
        if (step == closed).all():
            break
        closed = step
    np.fill_diagonal(closed, False)
    if (closed & closed.T).any():
        raise InputError(f"{where}: the preferences of one judgment group contradict each "
                         "other (a document ends up preferred to itself)")
    w = np.zeros((nj, nj), dtype=np.int64)
    w[np.ix_(uniq, uniq)] = closed
    rel, nonrel = levels > 0, levels == 0
    return _Group(w, _areas(w, njr), int(rel.sum()), int(rel[:njr].sum()),
                  int(nonrel.sum()), int(nonrel[:njr].sum()), None, levels)


@dataclass
class _Query:
    groups: list[_Group]
    #: (nj, nj): groups preferring i over j
    counts: np.ndarray
    njr: int


def _query(prefs: Prefs, rows: np.ndarray, ranking: np.ndarray, qid: str) -> _Query:
    r, nj, njr = _numbers(prefs.docid[rows], ranking)
    jg, jsg, lv, docs = prefs.jg[rows], prefs.jsg[rows], prefs.level[rows], prefs.docid[rows]
    groups = []
    counts = np.zeros((nj, nj), dtype=np.int64)
    for g in sorted(set(jg.tolist()), key=str.encode):
        mine = jg == g
        where = f"query {qid!r}, judgment group {g!r}"
        if len(set(jsg[mine].tolist())) == 1:
            group = _classes_group(r[mine], lv[mine], docs[mine], nj, njr, where)
        else:
            group = _array_group(r[mine], lv[mine], jsg[mine], docs[mine], nj, njr, where)
        counts += group.prefs
        groups.append(group)
    return _Query(groups, counts, njr)


def _ratio(ful: int, poss: int) -> float:
    """ful / poss as C divides (0/0 is NaN: trec_eval then reports the query as 0)."""
    if poss == 0:
        return float("nan") if ful == 0 else float("inf")
    return ful / poss


def _per_group(q: _Query, ratio: Callable[[Any], float]) -> float:
    """trec_eval's average over judgment groups: 0 unless the sum is above 0."""
    total = 0.0
    for g in q.groups:
        total += ratio(g)
    return total / len(q.groups) if total > 0 else 0.0


def _kept_nonrel(levels: np.ndarray, upto: int, num_rel: int) -> np.ndarray:
    """Documents kept by avgjg_Rnonrel: all but the non-relevant ones after the
    (num_rel)-th non-relevant among the first ``upto`` numbers."""
    nonrel = np.flatnonzero(levels[:upto] == 0)
    first_dropped = nonrel[num_rel] if len(nonrel) > num_rel else upto
    return ~((np.arange(len(levels)) >= first_dropped) & (levels == 0))


def _pairs(a: np.ndarray, b: np.ndarray, njr: int | None, among: np.ndarray | None = None
           ) -> tuple[int, int]:
    """(fulfilled, all) of preferences a over b: fulfilled when a ranks first (and, given
    ``njr``, a is retrieved); ``among`` limits to pairs of classes a before b."""
    ok = a[:, None] < b[None, :]
    if njr is not None:
        ok &= (a < njr)[:, None]
    if among is not None:
        ok &= among
        return int(ok.sum()), int(among.sum())
    return int(ok.sum()), ok.size


def _rnonrel(g: _Group, njr: int, retrieved: bool) -> float:
    """avgjg_Rnonrel's ratio for one group (``retrieved``: the _ret variant)."""
    rel, nonrel = (g.num_rel_ret, g.num_nonrel_ret) if retrieved else (g.num_rel, g.num_nonrel)
    # as many non-relevant as relevant: add the missing ones as fulfilled
    if rel >= nonrel:
        ful = (g.ful_ret if retrieved else g.ful) + g.num_rel_ret * (rel - nonrel)
        poss = (g.poss_ret if retrieved else g.poss) + g.num_rel * (rel - nonrel)
        return _ratio(ful, poss)
    if g.classes is not None:
        classes = [c[c < njr] for c in g.classes] if retrieved else g.classes
        inner = np.concatenate(classes[:-1]) if len(classes) > 1 else np.zeros(0, np.int64)
        which = np.repeat(np.arange(len(classes) - 1), [len(c) for c in classes[:-1]])
        kept = g.classes[-1][:rel]
        kept = kept[kept < njr] if retrieved else kept
        limit = None if retrieved else njr
        ful1, all1 = _pairs(inner, inner, limit, which[:, None] < which[None, :])
        ful2, all2 = _pairs(np.concatenate(classes), kept, limit)
        return _ratio(ful1 + ful2, all1 + all2)
    assert g.levels is not None
    upto = njr if retrieved else len(g.levels)
    keep = _kept_nonrel(g.levels, upto, g.num_rel)
    a = _areas(g.prefs * (keep[:, None] & keep[None, :]), njr)
    if retrieved:
        return _ratio(a[0], a[0] + a[1])
    return _ratio(a[0] + a[2], sum(a))


def _pair_values(q: _Query) -> tuple[float, float, float]:
    """prefs_pair, prefs_pair_ret, prefs_pair_imp: each document pair preferred at all scores
    the share of its preferences that are fulfilled, averaged over pairs."""
    c = q.counts
    both = c + c.T
    i, j = np.nonzero(np.triu(both, 1))
    share = c[i, j] / both[i, j]
    ret_i, ret_j = i < q.njr, j < q.njr
    out = []
    for counted, scored in ((None, ret_i), (ret_j, ret_j), (ret_i, ret_i)):
        n = len(i) if counted is None else int(counted.sum())
        out.append(float(share[scored].sum()) / n if n else 0.0)
    return out[0], out[1], out[2]


def _values(q: _Query) -> dict[str, float]:
    g = q.groups
    ful_ret, ful = sum(x.ful_ret for x in g), sum(x.ful for x in g)
    poss_ret, poss = sum(x.poss_ret for x in g), sum(x.poss for x in g)
    poss_imp = sum(x.poss_imp for x in g)
    pair, pair_ret, pair_imp = _pair_values(q)
    return {
        "prefs_num_prefs_poss": float(poss), "prefs_num_prefs_ful": float(ful),
        "prefs_num_prefs_ful_ret": float(ful_ret),
        "prefs_simp": ful / poss if poss else 0.0, "prefs_pair": pair,
        "prefs_avgjg": _per_group(q, lambda x: x.ful / x.poss if x.poss else 0.0),
        "prefs_avgjg_Rnonrel": _per_group(q, lambda x: _rnonrel(x, q.njr, False)),
        "prefs_simp_ret": ful_ret / poss_ret if poss_ret else 0.0, "prefs_pair_ret": pair_ret,
        "prefs_avgjg_ret": _per_group(q, lambda x: x.ful_ret / x.poss_ret if x.poss_ret
                                      else 0.0),
        "prefs_avgjg_Rnonrel_ret": _per_group(q, lambda x: _rnonrel(x, q.njr, True)),
        "prefs_simp_imp": ful / (poss_ret + poss_imp) if poss_ret + poss_imp else 0.0,
        "prefs_pair_imp": pair_imp,
        "prefs_avgjg_imp": _per_group(q, lambda x: x.ful / (x.poss_ret + x.poss_imp)
                                      if x.poss_ret + x.poss_imp else 0.0),
    }


def prefs_measures(texts: Sequence[str]) -> list[str]:
    """trec_eval's names of preference measures (``all_prefs``, ``prefs`` or single names)
    as the measures, in its printing order; a MeasureError names an unknown one."""
    out: set[str] = set()
    for text in texts:
        text = text.strip()
        if text in ("all_prefs", "prefs"):
            out.update(PREFS_MEASURES if text == "all_prefs" else PREFS_OFFICIAL)
        elif text in PREFS_MEASURES:
            out.add(text)
        elif text not in ("runid", "num_q"):
            raise MeasureError(f"{text!r} is not a preference measure; with preference "
                               f"judgments: all_prefs, prefs or {', '.join(PREFS_MEASURES)}")
    return [m for m in PREFS_MEASURES if m in out]


def evaluate_prefs(prefs: Prefs, run: RunLike, measures: Sequence[str] | str = "all_prefs", *,
                   all_queries: bool = False, compat: Compat = "trec_eval-10",
                   float32_scores: bool | None = None, max_docs: int | None = None
                   ) -> Evaluation:
    """Per-query values of trec_eval's preference measures for one run (trec_eval
    ``-R prefs`` or ``-R qrels_prefs``; read the judgments with ``reljudge.io.prefs``).

    The queries are the run's that have judgments, in byte order of their ids; with
    ``all_queries`` every judged query, one the run lacks evaluated with an empty ranking as
    trec_eval -c does. ``max_docs``: each ranking's first documents only (trec_eval -M);
    ``compat``/``float32_scores``: score rounding as in ``evaluate``. A sub-group giving one
    document two levels, or groups whose preferences form a cycle, are InputErrors."""
    from reljudge.io import coerce
    from reljudge.metrics.evaluate import Evaluation

    names = prefs_measures([measures] if isinstance(measures, str) else list(measures))
    run = coerce.as_run(run)
    qids, rankings = _run_rankings(run, compat, float32_scores, max_docs)
    wanted = [q for q in prefs.query_ids() if all_queries or q in rankings]
    if not wanted:
        raise InputError(f"run {run.name!r} has no query with judgments")
    empty = np.zeros(0, dtype=str)
    scores = np.zeros((len(wanted), len(names)))
    for k, q in enumerate(wanted):
        values = _values(_query(prefs, prefs.rows(q), rankings.get(q, empty), q))
        scores[k] = [values[n] for n in names]
    return Evaluation(run.name, names, wanted, scores, compat)


def _run_rankings(run: Run, compat: Compat, float32_scores: bool | None, max_docs: int | None
                  ) -> tuple[list[str], dict[str, np.ndarray]]:
    """Each query's document ids in rank order as trec_eval ranks them for preferences: score
    descending, ties by id ascending (its other measures break ties descending); the first
    ``max_docs``."""
    if float32_scores is None:
        float32_scores = compat == "trec_eval-9"
    qids, bounds, docid, score = run.groups()
    docid = np.asarray(docid, dtype=str)
    score = np.asarray(score, dtype=np.float64)
    refuse_non_finite(score, lambda i: qids[np.searchsorted(bounds, i, "right") - 1])
    if float32_scores:
        score = float32_rounded(score)
    out = {}
    for k, q in enumerate(qids):
        d, s = docid[bounds[k]:bounds[k + 1]], score[bounds[k]:bounds[k + 1]]
        out[q] = d[np.lexsort((d, -s))][:max_docs]
    return qids, out
