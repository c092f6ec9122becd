"""Which kernel computes a measure: the dispatch from a parsed ``Measure`` to the functions
of ``kernels`` (counting measures) and ``gain_kernels`` (gain-based ones)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reljudge.metrics.gain_kernels import (
    binary_g,
    dcg_at,
    err,
    gain_g,
    ndcg,
    ndcg_rel,
    r_ndcg,
    rbp,
)
from reljudge.metrics.kernels import (
    ELEVEN_LEVELS,
    Ranked,
    average_precision,
    bpref,
    inf_ap,
    interpolated_precision,
    iprec_average,
    judged_only,
    judged_share,
    num_nonrel_judged_ret,
    num_rel,
    num_rel_ret,
    precision,
    r_precision,
    recall,
    reciprocal_rank,
    relative_precision,
    rprec_mult,
    set_f,
    set_measures,
    set_relative,
    success,
    unjudged_share,
    utility,
)
from reljudge.metrics.measures import Measure, recall_levels

_AT_K = {"P": precision, "R": recall, "RR": reciprocal_rank, "AP": average_precision,
         "Success": success, "NumRelRet": num_rel_ret}
_WHOLE = {"Rprec": r_precision, "Bpref": bpref, "infAP": inf_ap, "BinG": binary_g,
          "NumNonRelJudgedRet": num_nonrel_judged_ret, "RnDCG": r_ndcg}


def compute(m: Measure, r: Ranked, compat: str = "trec_eval-10") -> np.ndarray:
    """Per-query values of one measure (``compat``: whose rules, see ``evaluate``)."""
    k = m.rank_cutoff()
    if m.param("judged_only"):
        r = r.memo(("judged only",), lambda: judged_only(r))
    if m.name in ("nDCG", "DCG"):
        if m.name == "DCG":
            return dcg_at(r, False, k, m.param("dcg"))
        return ndcg(r, k, m.param("dcg"), m.param("ideal"), m.param("gains"))
    if m.name in _AT_K:  # (ranking, cutoff, rel)
        return _AT_K[m.name](r, k, m.param("rel"))
    if m.name == "ERR":
        return err(r, k, m.param("max_grade"))
    if m.name == "Judged":
        return judged_share(r, k)
    if m.name == "NumRel":
        return num_rel(r, m.param("rel")).astype(np.float64)
    if m.name == "NumRet":
        return r.length.astype(np.float64)
    if m.name in _WHOLE:  # (ranking, rel), over the whole ranking
        return _WHOLE[m.name](r, m.param("rel"))
    if m.name == "IPrec":
        rel = m.param("rel")
        level = m.level()
        return r.memo(("iprec", level, rel, compat),
                      lambda: interpolated_precision(r, level, rel, compat))
    if m.name in ("SetP", "SetR"):
        return set_measures(r, m.param("rel"))[m.name == "SetR"]
    if m.name == "SetF":
        return set_f(r, m.param("rel"), m.param("beta"))
    if m.name == "RprecMult":
        return rprec_mult(r, m.level(), m.param("rel"))
    if m.name == "RelP":
        return relative_precision(r, m.required_rank_cutoff(), m.param("rel"))
    if m.name == "Unjudged":
        return unjudged_share(r, m.required_rank_cutoff())
    if m.name in ("SetRelP", "SetAP"):
        return set_relative(r, m.param("rel"))[m.name == "SetAP"]
    if m.name == "Utility":
        return utility(r, m.param("rel"), tuple(m.param(x) for x in "abcd"),
                       m.param("num_docs"))
    if m.name == "IPrecAvg":
        levels = recall_levels(m.param("levels")) if m.param("levels") else ELEVEN_LEVELS
        return iprec_average(r, levels, m.param("rel"), compat)
    if m.name == "RBP":
        return rbp(r, k, m.param("p"), m.param("rel"), m.param("residual"), m.param("graded"),
                   m.param("tail"))
    if m.name == "G":
        return gain_g(r)
    if m.name == "nDCGRel":
        return ndcg_rel(r)
    raise AssertionError(f"no kernel for {m.name}")  # parse_measure admits only known names


#: cells (queries x depth) of the rankings computed at a time: every kernel works row by row,
#: so blocks of rows give the same values while their intermediate matrices stay small
BLOCK_CELLS = 1 << 19


def compute_all(measures: Sequence[Measure], r: Ranked,
                compat: str = "trec_eval-10") -> np.ndarray:
    """(queries, measures): ``compute`` of each measure, a block of queries at a time (the
    intermediates several measures share are kept within a block, never across)."""
    n, width = r.grades.shape
    step = max(1, BLOCK_CELLS // max(width, r.ideal.shape[1], 1))
    if n <= step:
        blocks = [r]
    else:
        blocks = [Ranked(r.grades[a:a + step], r.length[a:a + step], r.ideal[a:a + step])
                  for a in range(0, n, step)]
    out = np.empty((n, len(measures)))
    at = 0
    for block in blocks:
        rows = block.grades.shape[0]
        for j, m in enumerate(measures):
            out[at:at + rows, j] = compute(m, block, compat)
        at += rows
    return out
