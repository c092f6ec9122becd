"""A store's probes read back: for each judge that answered probes, its numbers per kind (and,
for runs whose top documents it graded clean, what each could gain), from the probe texts and
answers recorded (``store.probes``) alone: what ``report`` and ``audit`` show."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from reljudge.choices import Aggregate
from reljudge.grades import aggregate_grades
from reljudge.probe.analysis import (
    Grades,
    KindResult,
    ProbeReport,
    control_warnings,
    kind_results,
    run_gains,
)
from reljudge.probe.build import EXPLOIT, ProbeSet
from reljudge.probe.kinds import CLEAN, KINDS
from reljudge.trec_data import Run

if TYPE_CHECKING:
    from reljudge.store import LabelStore


def latest_grades(rows: Iterable[tuple[str, str, int, int | None]], asked: set[tuple[str, str]],
                  aggregate: Aggregate = "majority") -> Grades:
    """(qid, docid) -> grade from answer rows (qid, docid, repeat, grade) in the order added:
    each repeat's latest grade stands (a failure only until a grade comes), the repeats
    aggregated; None for a pair without a grade."""
    graded: dict[tuple[str, str], dict[int, int | None]] = {p: {} for p in asked}
    for qid, docid, repeat, grade in rows:
        repeats = graded.get((qid, docid))
        if repeats is not None and (grade is not None or repeats.get(repeat) is None):
            repeats[repeat] = grade
    out: dict[tuple[str, str], int | None] = {}
    for pair, repeats in graded.items():
        values = [g for g in repeats.values() if g is not None]
        out[pair] = int(aggregate_grades(values, aggregate)) if values else None
    return out


def stored_sets(store: LabelStore) -> dict[str, tuple[ProbeSet, Grades]]:
    """Per judge that answered probes: the probe set it was asked (every recorded probe it
    answered; the bases of each kind: the pairs it answered that kind on) and its grades."""
    texts = store.probe_texts()
    out: dict[str, tuple[ProbeSet, Grades]] = {}
    for judge, _, _ in store.probe_judges():
        rows = [(g.qid, g.docid, g.repeat, g.grade) for g in store.probe_grades(judge)]
        answered = {(q, d) for q, d, _, _ in rows}
        mine = {t.docid: t for t in texts if (t.qid, t.docid) in answered}
        bases: dict[str, list[tuple[str, str]]] = {}
        for t in mine.values():
            if t.kind != CLEAN and t.kind in KINDS:
                bases.setdefault(t.kind, []).append((t.qid, t.original))
        ordered = {k: bases[k] for k in KINDS if k in bases}
        exploit = [(t.qid, t.original) for t in mine.values() if t.kind == CLEAN]
        probe_set = ProbeSet(mine, ordered, [], {}, exploit)
        out[judge] = (probe_set, latest_grades(rows, answered))
    return out


def stored_report(store: LabelStore, runs: Sequence[Run] = (), measures: Sequence[str] = ("nDCG@10",),
                  depth: int = 10) -> ProbeReport:
    """The probe numbers of every judge in the store; the runs' gains where each run's top
    ``depth`` documents of the probed queries were all graded clean by that judge."""
    report = ProbeReport()
    for judge, (probe_set, grades) in stored_sets(store).items():
        report.judges.append(judge)
        report.kinds += kind_results(judge, probe_set, grades)
        probe_set = ProbeSet(probe_set.probes, probe_set.bases, [], {}, probe_set.exploit,
                             depth)
        covered = [r for r in runs if _covered(r, probe_set, grades, depth)]
        for measure in measures if covered else ():
            report.gains += run_gains(judge, probe_set, grades, covered, measure)
    report.warnings = control_warnings(report.kinds)
    return report


def _covered(run: Run, probe_set: ProbeSet, grades: Mapping, depth: int) -> bool:
    """Whether every top document of the run for a probed query has a clean grade, and every
    one of them with an exploit probe has its grade too."""
    from reljudge.pool import top_k

    probed = {q for q, _ in probe_set.exploit}
    q, d, _ = top_k(run, depth)
    top = [(a, b) for a, b in zip(q.tolist(), d.tolist(), strict=True) if a in probed]
    clean = [probe_set.docid(CLEAN, a, b) for a, b in top]
    return bool(top) and all(c is not None and grades.get((a, c)) is not None
                             for (a, _), c in zip(top, clean, strict=True)) and \
        any(probe_set.docid(EXPLOIT, a, b) is not None for a, b in top)


def summary_lines(results: Sequence[KindResult]) -> list[str]:
    """One line per judge: its probes, the kind it flips most (with the interval), and the
    control's rate."""
    lines = []
    for judge in dict.fromkeys(r.template for r in results):
        mine = [r for r in results if r.template == judge and r.flip1_rate is not None]
        attacks = [r for r in mine if not r.control and KINDS[r.kind].base == "nonrelevant"]
        control = next((r for r in mine if r.control), None)
        parts = [f"{judge}: {sum(r.n for r in results if r.template == judge)} probe pairs"]
        if attacks:
            worst = max(attacks, key=lambda r: (r.flip1_rate or 0.0, r.n))
            parts.append(f"{worst.kind} flips {worst.flips1}/{worst.clean_zero} "
                         f"({worst.flip1_rate:.0%}, 95% CI {worst.flip1_ci[0]:.0%}-"
                         f"{worst.flip1_ci[1]:.0%}) to >= 1")
        if control is not None:
            parts.append(f"control {control.kind} {control.flips1}/{control.clean_zero} "
                         f"({control.flip1_rate:.0%})")
        lines.append("; ".join(parts))
    return lines
