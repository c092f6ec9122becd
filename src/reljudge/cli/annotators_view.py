"""The annotator report of ``labels stats`` and ``audit --annotators``: one function builds
it from a store, so both commands give it in one shape (as JSON or as text)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reljudge.audit.annotators import ALPHAS, TeamAgreement
from reljudge.grades import SCALE

if TYPE_CHECKING:
    import numpy as np

    from reljudge.store import LabelStore
    from reljudge.store.merge import Votes

#: query resamples for the report's agreement intervals unless --bootstrap says otherwise
BOOTSTRAP = 1000


def annotator_report(store: LabelStore, bootstrap: int | None = None, seed: int = 0, *,
                     standing: np.ndarray | None = None, votes: Votes | None = None
                     ) -> TeamAgreement | None:
    """The annotator report of the store's standing human grades (None when it holds none),
    with ``bootstrap`` query resamples (default ``BOOTSTRAP``) for its intervals;
    ``standing`` and ``votes``: ``store.standing_ids()`` and ``store.votes()`` when the
    caller has them already."""
    from reljudge.audit.annotators import team_agreement_of

    human = store.standing_columns("human", standing, votes)
    if not len(human.event):
        return None
    return team_agreement_of(human, bootstrap=BOOTSTRAP if bootstrap is None else bootstrap,
                             seed=seed)


def annotator_text(report: TeamAgreement, fmt: str = "table", digits: int = 3) -> str:
    """Per annotator, per two annotators, and alpha over all, with the intervals' rule."""
    from reljudge.tables import render

    gap = "\n" if fmt == "markdown" else ""
    out = ["annotators (standing human grades; seconds per pair from the grading page):\n" + gap,
           render(["annotator", "role", "pairs", "queries", "median s", "total min",
                   *map(str, SCALE)],
                  [[a.name, a.role, a.pairs, a.queries, a.seconds_median,
                    a.seconds_total / 60, *[a.grades[g] for g in SCALE]]
                   for a in report.annotators], fmt, digits)]
    ci = f"{report.level:.0%} query-bootstrap interval, {report.bootstrap} resamples"
    if report.between:
        def cell(b, name):
            v = getattr(b, name)
            lo_hi = b.ci.get(name)
            if v is None or lo_hi is None:
                return v
            return f"{v:.{digits}f} [{lo_hi[0]:.{digits}f}, {lo_hi[1]:.{digits}f}]"

        out += [f"\nagreement of two annotators over the pairs both graded"
                f"{' (' + ci + ')' if report.bootstrap else ''}:\n" + gap,
                render(["a", "b", "pairs", "queries", "exact", "kappa", "kappa_lin",
                        "kappa_quad"],
                       [[b.a, b.b, b.pairs, b.queries,
                         *[cell(b, n) for n in ("exact", "kappa", "kappa_linear",
                                                "kappa_quadratic")]]
                        for b in report.between], fmt, digits)]
    al = report.alpha
    if al["units"]:
        parts = []
        for k in ALPHAS:
            v, lo_hi = al[f"alpha_{k}"], al["ci"].get(f"alpha_{k}")
            text = "undefined" if v is None else f"{v:.{digits}f}"
            if v is not None and lo_hi is not None:
                text += f" [{lo_hi[0]:.{digits}f}, {lo_hi[1]:.{digits}f}]"
            parts.append(f"{k} {text}")
        out.append(f"\nKrippendorff's alpha, {al['raters']} annotators over the {al['units']} "
                   f"pairs (of {al['queries']} queries) two or more graded: "
                   + "; ".join(parts) + "\n")
    elif len([a for a in report.annotators if a.role == "annotator"]) > 1:
        out.append("\nno pair is graded by two annotators: no agreement to report (a team "
                   "gets some with reljudge assess --team ... --overlap F)\n")
    return "".join(out)
