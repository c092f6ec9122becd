"""The audit's result: one row per judge (item and system agreement), agreement among the
judges, the audit table and its notes, and the audit as JSON (one builder for the CLI, the
pipeline and the demo)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from reljudge.audit.items import ItemAgreement
from reljudge.audit.systems import SystemAgreement
from reljudge.frames import DataFrame, Tabular, dataframe
from reljudge.infer.favours import Favours

if TYPE_CHECKING:
    from reljudge.audit.fitted_rows import HeldoutSpec

COLUMNS = ["judge", "pairs", "exact", "kappa", "kappa_lin", "kappa_quad", "alpha_ord",
           "spearman", "leniency", "mae", "tau", "tau_ap", "max_rank_change"]


@dataclass
class JudgeAudit:
    """One row of the audit: a judge (or an ensemble) against the reference."""

    name: str
    items: ItemAgreement
    systems: SystemAgreement | None = None
    clipped: int = 0
    #: the runs it over- or under-rates (audit.favours)
    favours: Favours | None = None


@dataclass(repr=False)
class AuditResult(Tabular):
    """The whole audit: one row per judge, ensembles, and agreement among the judges. Prints
    as the ``audit`` table and its notes; ``to_dataframe`` gives one row per judge."""

    digits = 3

    reference: str
    judges: list[JudgeAudit]
    among_judges: dict[str, float | None]
    measure: str | None
    bootstrap: int
    seed: int

    def row(self, j: JudgeAudit) -> dict:
        """The table row of one judge."""
        s = j.items.stats
        out = {"judge": j.name, "pairs": j.items.pairs, "exact": s["exact"],
               "kappa": s["kappa"], "kappa_lin": s["kappa_linear"],
               "kappa_quad": s["kappa_quadratic"], "alpha_ord": s["alpha_ordinal"],
               "spearman": s["spearman"], "leniency": s["leniency"], "mae": s["mae"]}
        if j.systems is not None:
            out.update(tau=j.systems.kendall_tau, tau_ap=j.systems.tau_ap,
                       max_rank_change=j.systems.max_rank_change)
        return out

    def table(self) -> tuple[list[str], list[list]]:
        """The ``audit`` table: one row per judge, the columns that have values."""
        rows = [self.row(j) for j in self.judges]
        columns = [c for c in COLUMNS if any(c in r for r in rows)]
        return columns, [[r.get(c) for c in columns] for r in rows]

    def to_dataframe(self) -> DataFrame:
        """A pandas DataFrame, one row per judge (the table's columns, full precision)."""
        return dataframe(*self.table())

    def notes(self) -> list[str]:
        """Undefined statistics, clipping, one-sided pairs, agreement among the judges."""
        from reljudge.tables import format_value

        out = []
        for j in self.judges:
            out += [f"note: {j.name}: {stat} undefined ({why})"
                    for stat, why in j.items.undefined.items()]
            if j.items.only_reference or j.items.only_judge:
                out.append(f"note: {j.name}: {j.items.only_reference} reference pairs without "
                           f"a judge label, {j.items.only_judge} judge pairs without a "
                           "reference label (not compared)")
        if sum(j.clipped for j in self.judges):
            out.append(f"note: {sum(j.clipped for j in self.judges)} out-of-scale grade(s) "
                       "clipped to 0..3 (" + ", ".join(f"{j.name}: {j.clipped}"
                                                      for j in self.judges if j.clipped) + ")")
        if self.among_judges:
            a = self.among_judges
            out.append(f"among the {a['raters']} judges ({a['units']} pairs): Krippendorff's "
                       f"alpha ordinal {format_value(a['alpha_ordinal'], 3)}, interval "
                       f"{format_value(a['alpha_interval'], 3)}, nominal "
                       f"{format_value(a['alpha_nominal'], 3)}; Fleiss' kappa "
                       f"{format_value(a['fleiss_kappa'], 3)}")
        if self.measure:
            out.append(f"system agreement: runs scored with {self.measure} under each label "
                       "set")
        if self.bootstrap:
            out.append(f"bootstrap: {self.bootstrap} resamples of queries, seed {self.seed} "
                       "(intervals in --json)")
        return out


SYSTEM_COLUMNS = ("tau", "tau_ap", "max_rank_change")


def measures_table(results: Sequence[AuditResult]) -> tuple[list[str], list[list]]:
    """The audit table of ``audit_measures``: with one result its own table; with several, the
    system-agreement columns once per measure, named ``tau (MEASURE)`` and so on."""
    columns, rows = results[0].table()
    if len(results) == 1 or results[0].measure is None:
        return columns, rows
    keep = [i for i, c in enumerate(columns) if c not in SYSTEM_COLUMNS]
    out_cols = [columns[i] for i in keep]
    out_rows = [[row[i] for i in keep] for row in rows]
    for res in results:
        out_cols += [f"{c} ({res.measure})" for c in SYSTEM_COLUMNS]
        for out, j in zip(out_rows, res.judges, strict=True):
            # set for every judge when the result has a measure (runs given)
            s = j.systems
            out += [s.kendall_tau, s.tau_ap, s.max_rank_change] if s else [None] * 3
    return out_cols, out_rows


def result_to_dict(result: AuditResult) -> dict:
    """One audit result as plain data."""
    return {"reference": result.reference, "measure": result.measure,
            "bootstrap": result.bootstrap, "seed": result.seed,
            "among_judges": result.among_judges,
            "judges": [{"name": j.name, "clipped": j.clipped, "items": asdict(j.items),
                        "systems": asdict(j.systems) if j.systems else None}
                       for j in result.judges]}


def audit_json(results: AuditResult | Sequence[AuditResult], heldout: HeldoutSpec | None = None,
               heldout_rows: Sequence[str] = ()) -> dict:
    """The audit as JSON (``reljudge audit --json``, the pipeline's audit.json, the demo):
    the first result whole; with several measures (``audit_measures``) each judge's system
    agreement under each; with derived rows validated on held-out queries (``heldout``, an
    ``audit.fitted_rows.HeldoutSpec``, and the rows' names), how they were validated."""
    if isinstance(results, AuditResult):
        results = [results]
    data = result_to_dict(results[0])
    if any(j.favours for r in results for j in r.judges):
        data["favours_by_measure"] = {r.measure: {j.name: j.favours.to_json() if j.favours
                                                  else None for j in r.judges}
                                      for r in results}
    if len(results) > 1:
        data["systems_by_measure"] = {r.measure: {j.name: asdict(j.systems) if j.systems else None
                                                  for j in r.judges} for r in results}
    if heldout is not None:
        data["heldout"] = {**asdict(heldout), "by": "query", "rows": list(heldout_rows)}
    return data
