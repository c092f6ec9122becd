"""A probe run: build the probe set of each prompt template, ask the judge about every probe
and clean pair through the ``Labeller`` (the same config, endpoints, cache, budget, claims
and resume as ``label``), and analyse the answers.

Probe texts and answers go to the store's probe tables (``store.probes``), never to its
labels. Without a store the answers are in the answer cache, so a run again pays nothing
twice either way. Several templates share one --max-cost: each runs with what the earlier
ones left.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reljudge.errors import ConfigError
from reljudge.judge import JudgeConfig
from reljudge.judge.labeller import Labeller
from reljudge.judge.prompts import Template, load_template
from reljudge.judge.report import CostQuote, LabelReport
from reljudge.judge.sink import EventSink
from reljudge.probe.analysis import (
    Grades,
    ProbeReport,
    control_warnings,
    kind_results,
    pair_rows,
    run_gains,
)
from reljudge.probe.build import ProbeSet, build_probes
from reljudge.probe.kinds import DEFAULT_KINDS, check_kinds, top_rubric
from reljudge.probe.stored import latest_grades
from reljudge.store.probes import ProbeSink
from reljudge.trec_data import Run

if TYPE_CHECKING:
    from reljudge.store import LabelStore


@dataclass(frozen=True)
class Plan:
    """What a probe run asks, per template: its labeller and its probe set."""

    labellers: list[Labeller]
    sets: list[ProbeSet]
    queries: Mapping[str, str]

    def quotes(self, sink: EventSink | None = None) -> list[CostQuote]:
        """Each template's dry-run quote (store and cache hits counted)."""
        return [lab.quote(ps.pairs(), self.queries, ps.passages(), sink)
                for lab, ps in zip(self.labellers, self.sets, strict=True)]


def plan_probes(config: JudgeConfig, queries: Mapping[str, str], passages: Mapping[str, Any],
                known: Any, *, prompts: Sequence[str | Template] = (),
                kinds: Sequence[str] = DEFAULT_KINDS, per_kind: int | None = 50,
                seed: int = 0, runs: Sequence[Run] = (), depth: int = 10,
                on_warning: Callable[[str], None] | None = None) -> Plan:
    """Every template's probe set and labeller; refuses bad inputs before anything is sent."""
    names = check_kinds(list(kinds))
    if per_kind is not None and per_kind < 1:
        raise ConfigError(f"--per-kind must be at least 1, not {per_kind}")
    templates = [t if isinstance(t, Template) else load_template(t)
                 for t in (prompts or [config.prompt])]
    labellers, sets = [], []
    for template in templates:
        rubric = top_rubric(template.scale) if "rubric-echo" in names else ""
        probe_set = build_probes(queries, passages, known, kinds=names, rubric=rubric,
                                 per_kind=per_kind, seed=seed, runs=runs, depth=depth)
        labeller = Labeller(config, template, on_warning=on_warning)
        labeller.check_inputs(probe_set.pairs(), queries, probe_set.passages())
        labellers.append(labeller)
        sets.append(probe_set)
    return Plan(labellers, sets, queries)


def check_budget(config: JudgeConfig, quotes: Sequence[CostQuote],
                 spent: float = 0.0) -> None:
    """Refuse, before any call, a --max-cost, or a --max-total-cost beside the ``spent``
    recorded already, that the probe set's quote does not fit in."""
    if not all(e.price_known for e in quotes):
        return
    cost = sum(e.cost for e in quotes)
    calls = sum(e.to_send for e in quotes)
    limits = [(config.max_cost, "--max-cost", 0.0), (config.max_total_cost,
                                                     "--max-total-cost", spent)]
    for limit, flag, used in limits:
        if limit is not None and cost > limit - used:
            beside = f" beside the ${used:.4f} the store has spent" if used else ""
            raise ConfigError(f"the probe set would cost about ${cost:.4f} ({calls} calls to "
                              f"send){beside}, more than {flag} ${limit:g}: raise {flag}, or "
                              "probe fewer pairs (--per-kind) or kinds")


async def ask(plan: Plan, store: LabelStore | None = None, *, progress: bool = False,
              handle_sigint: bool = False) -> list[LabelReport]:
    """Ask every template's probe pairs (the next template only when the last one finished,
    with what --max-cost has left); the labelling reports."""
    sink = ProbeSink(store) if store is not None else None
    for labeller, probe_set in zip(plan.labellers, plan.sets, strict=True):
        # before any write: a --max-total-cost the store's spend leaves no room for, --stale fail
        labeller.check(probe_set.pairs(), plan.queries, probe_set.passages(), sink)
    reports: list[LabelReport] = []
    spent = 0.0
    for labeller, probe_set in zip(plan.labellers, plan.sets, strict=True):
        if store is not None:
            store.add_probes(probe_set.probes.values())
        limit = labeller.config.max_cost
        if limit is not None:
            labeller.config = labeller.config.model_copy(update={"max_cost":
                                                                 max(0.0, limit - spent)})
        report = await labeller.label(probe_set.pairs(), plan.queries, probe_set.passages(),
                                      sink, progress=progress, handle_sigint=handle_sigint)
        if limit is not None:
            labeller.config = labeller.config.model_copy(update={"max_cost": limit})
        spent += report.cost
        reports.append(report)
        if report.stop_reason:
            break
    return reports


def judge_grades(labeller: Labeller, probe_set: ProbeSet, report: LabelReport | None,
                 store: LabelStore | None = None) -> Grades:
    """(qid, synthetic docid) -> the judge's grade (repeats aggregated; None: no grade), from
    the store's probe answers when given, else from the job's events."""
    if store is not None:
        rows = [(g.qid, g.docid, g.repeat, g.grade) for judge in labeller.judge_ids
                for g in store.probe_grades(judge)]
    else:
        rows = [(e.qid, e.docid, e.repeat, e.grade) for e in (report.events if report else [])]
    return latest_grades(rows, set(probe_set.pairs()), labeller.config.aggregate)


def analyse(plan: Plan, reports: Sequence[LabelReport], store: LabelStore | None = None,
            runs: Sequence[Run] = (),
            measures: Sequence[str] = ("nDCG@10",)) -> ProbeReport:
    """The probe report of the templates asked so far."""
    out = ProbeReport(skipped_queries=plan.sets[0].skipped if plan.sets else [])
    for i, (labeller, probe_set) in enumerate(zip(plan.labellers, plan.sets, strict=True)):
        report = reports[i] if i < len(reports) else None
        grades = judge_grades(labeller, probe_set, report, store)
        judge = labeller.judge_id
        out.judges.append(judge)
        out.kinds += kind_results(judge, probe_set, grades)
        out.pairs += pair_rows(judge, probe_set, grades)
        for measure in measures if runs else ():
            out.gains += run_gains(judge, probe_set, grades, runs, measure)
        if report is not None:
            out.labelling.append({k: v for k, v in report.summary().items()
                                  if k not in ("events",)})
            out.warnings += [w for w in report.warnings if w not in out.warnings]
    out.warnings += control_warnings(out.kinds)
    out.stop_reason = next((r.stop_reason for r in reports if r.stop_reason), None)
    out.complete = len(reports) == len(plan.sets) and all(r.complete for r in reports)
    return out


def probe(config: JudgeConfig, queries: Mapping[str, str], passages: Mapping[str, Any],
          known: Any, *, prompts: Sequence[str | Template] = (),
          kinds: Sequence[str] = DEFAULT_KINDS, per_kind: int | None = 50, seed: int = 0,
          runs: Sequence[Run] = (), depth: int = 10, measures: Sequence[str] = ("nDCG@10",),
          store: LabelStore | None = None, progress: bool = False) -> ProbeReport:
    """Probe a judge: can it be gamed? (see ``reljudge.probe``). ``known``: the known grades
    (a Qrels or {qid: {docid: grade}}); ``store``: a LabelStore that keeps the probes and the
    answers apart from its labels."""
    from reljudge.judge.sync import run_sync

    plan = plan_probes(config, queries, passages, known, prompts=prompts, kinds=kinds,
                       per_kind=per_kind, seed=seed, runs=runs, depth=depth)
    sink = ProbeSink(store) if store is not None else None
    check_budget(config, plan.quotes(sink), store.total_spend() if store is not None else 0.0)
    reports = run_sync(ask(plan, store, progress=progress))
    return analyse(plan, reports, store, runs, measures)


def run_probe_job(plan: Plan, store: LabelStore | None = None, *, progress: bool = False,
                  handle_sigint: bool = False) -> list[LabelReport]:
    """``ask`` on a loop of its own (the command line's: Ctrl-C stops new calls, keeps the
    answers)."""
    return asyncio.run(ask(plan, store, progress=progress, handle_sigint=handle_sigint))
