"""What a pipeline run leaves on record: each stage's result, and the completeness of its
labelling (pairs asked, graded, without a grade and why), which every later output carries."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

#: what a stage did; "waiting": batches still running
StageStatus = Literal["ran", "up to date", "skipped", "waiting"]


def skipped_record(why: str) -> dict[str, Any]:
    """The labelling record of a pipeline without a judge: nothing was asked, and labelling
    is not complete but skipped (``why``); the runner adds how many pooled pairs have no
    label (``pooled``, ``without_label``) once the labels are merged."""
    return {"complete": False, "skipped": why, "asked": 0, "graded": 0, "without_grade": 0,
            "failures": {}, "stopped": None}


@dataclass
class StageResult:
    """One stage: whether it ran, and what it says."""

    name: str
    status: StageStatus
    summary: dict = field(default_factory=dict)
    note: str = ""


@dataclass
class PipelineResult:
    """Every stage's result and the output folder."""

    out_dir: Path
    stages: list[StageResult]
    scores: dict | None = None
    audit: dict | None = None
    labelling: dict = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every pair the judge was asked about has a grade (and nothing is waiting); False
        when labelling was skipped (no judge)."""
        return bool(self.labelling.get("complete"))

    def stage(self, name: str) -> StageResult:
        """The result of one stage."""
        return next(s for s in self.stages if s.name == name)


#: what merge, eval and audit write (removed when labelling is incomplete and they do not run)
LATER_OUTPUTS = ("qrels.txt", "qrels.provenance.jsonl", "scores.tsv", "scores.json",
                 "audit.json", "audit.md")


def labelling_record(asked: int, graded: int, failures: dict, stopped: str | None,
                     waiting: int = 0, stale_kept: int = 0) -> dict:
    """What a label stage left: pairs x repeats asked about, graded, without a grade and why
    (failure kinds, the stop reason, batches still running), and the grades kept although
    their texts changed since (``stale = "keep"``)."""
    complete = graded == asked and not stopped and not waiting
    return {"complete": complete, "asked": asked, "graded": graded,
            "without_grade": asked - graded, "failures": dict(failures), "stopped": stopped,
            **({"batches_running": waiting} if waiting else {}),
            **({"stale_kept": stale_kept} if stale_kept else {})}


def is_incomplete(labelling: dict) -> bool:
    """Labelling was asked for and did not give every pair a grade (skipped labelling asked
    for none)."""
    return not labelling["complete"] and "skipped" not in labelling


def skipped_line(labelling: dict) -> str:
    """What scores from skipped labelling rest on, in one line."""
    line = f"SKIPPED: labelling was skipped ({labelling['skipped']})"
    if "pooled" in labelling:
        line += (f"; {labelling['without_label']} of {labelling['pooled']} pooled pairs have "
                 "no label; scored as not relevant")
    return line


def banner(labelling: dict) -> str | None:
    """The line every output of incomplete or skipped labelling starts with (None when
    labelling is complete)."""
    if labelling["complete"]:
        return None
    return skipped_line(labelling) if "skipped" in labelling else partial_line(labelling)


def incomplete_reason(labelling: dict) -> str:
    """Why labelling is incomplete, in one clause."""
    why = [f"{n} {kind}" for kind, n in labelling["failures"].items()]
    if labelling.get("stopped"):
        why.append(f"stopped: {labelling['stopped']}")
    if labelling.get("batches_running"):
        why.append(f"{labelling['batches_running']} batch(es) still running")
    return (f"labelling is incomplete, {labelling['graded']} of {labelling['asked']} pairs x "
            f"repeats graded ({', '.join(why) or 'no reason recorded'})")


def partial_line(labelling: dict) -> str:
    """The banner every partial output carries."""
    return f"PARTIAL: {incomplete_reason(labelling)}; these scores rest on the labels there are"
