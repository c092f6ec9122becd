"""Per-query values of parsed measures: each spec's kernel (``MeasureSpec.kernel``), over
blocks of queries."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reljudge.choices import Compat
from reljudge.metrics.kernels import Ranked, judged_only
from reljudge.metrics.measures import SPECS, Measure


def compute(m: Measure, r: Ranked, compat: Compat = "trec_eval-10") -> np.ndarray:
    """Per-query values of one measure (``compat``: whose rules, see ``evaluate``), its
    rankings condensed first under ``judged_only=True``."""
    if m.param("judged_only"):
        r = r.memo(("judged only",), lambda: judged_only(r))
    return SPECS[m.name].kernel(m, r, compat)


#: cells (queries x depth) of the rankings computed at a time: every kernel works row by row,
#: so blocks of rows give the same values while their intermediate matrices stay small
BLOCK_CELLS = 1 << 19


def compute_all(measures: Sequence[Measure], r: Ranked,
                compat: Compat = "trec_eval-10") -> np.ndarray:
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
