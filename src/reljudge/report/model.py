"""The report's content, computed: the comparison of the runs, the audit of the judges, the
differences' intervals, the estimates under human labels, the conflicts, the configuration and
the store's tables. ``compute`` does every piece of work (statistics, store reads);
``report.html.render`` only renders what it returns."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from reljudge.choices import Test
from reljudge.report.facts import input_files, judges_and_costs
from reljudge.report.summary import Summary, comparison_summary, judge_summary, primary_measure
from reljudge.trec_data import Qrels, Run

if TYPE_CHECKING:
    from reljudge.audit.result import AuditResult
    from reljudge.infer.scores import StoreEstimates
    from reljudge.io.checksums import InputFile
    from reljudge.judge.cost import Price
    from reljudge.probe.analysis import ProbeReport
    from reljudge.report.facts import Cost, JudgeFacts
    from reljudge.stats.compare import Comparison
    from reljudge.store import LabelStore, SourceStats
    from reljudge.store.views import ConflictText


@dataclass(frozen=True)
class ReportSettings:
    """How to build a report (what ``reljudge report``'s flags set).

    Queries are averaged as in ``stats.compare`` (``all_queries``); agreement intervals
    resample queries ``audit_bootstrap`` times (0: none); at most ``conflicts`` human/LLM
    conflicts are shown; numbers to ``digits`` decimals; ``float32_scores`` ranks on scores
    rounded to float32 (trec_eval 9) in every evaluation. ``inputs`` are (role, path) pairs
    listed with their checksums, ``facts`` ({name: value}: pool depth, merge policy, ...) are
    shown as the configuration, ``price`` (a ``judge.cost.Price``) values cached answers.
    ``partial`` (a PARTIAL line: the labels are incomplete) is a banner at the top, and no best
    run is named; ``notice`` (a SKIPPED line: what the labels lack) is a banner only."""

    measures: Sequence[str] = ("nDCG@10",)
    baseline: str | None = None
    test: Test = "randomization"
    trials: int = 10_000
    seed: int = 0
    audit_measure: str | None = None
    audit_bootstrap: int = 1000
    conflicts: int = 50
    digits: int = 4
    float32_scores: bool = False
    all_queries: bool = False
    title: str = "reljudge report"
    inputs: Sequence[tuple[str, str | Path]] = ()
    facts: Mapping[str, str] = field(default_factory=dict)
    price: Price | None = None
    partial: str | None = None
    notice: str | None = None


@dataclass
class ReportInputs:
    """What a report rests on: qrels, runs, the audit's reference and judges, the store
    (for coverage and cost; the caller closes it) and the settings they came with (a
    pipeline's, or none for files given by hand)."""

    qrels: Qrels
    runs: list[Run]
    inputs: list[tuple[str, str | Path]]
    facts: dict[str, str]
    reference: Qrels | None = None
    judges: dict[str, Qrels] = field(default_factory=dict)
    store: LabelStore | None = None
    measures: list[str] = field(default_factory=list)
    all_queries: bool = False
    audit_measure: str | None = None
    audit_bootstrap: int = 1000
    price: Price | None = None
    partial: str | None = None
    notice: str | None = None


@dataclass(frozen=True)
class Forest:
    """Each run's mean per-query difference from the baseline, with its bootstrap interval."""

    runs: list[str]
    diffs: list[float]
    lows: list[float]
    highs: list[float]
    significant: list[bool]


@dataclass(frozen=True)
class StoreTables:
    """The label store's own tables: its sources, failed judgments, final labels per query."""

    sources: list[SourceStats]
    failures: int
    coverage: list[tuple[str, int]]


@dataclass
class ReportModel:
    """Everything the report shows, computed."""

    settings: ReportSettings
    version: str
    made_at: str
    comparison: Comparison
    #: the measure the summary and plots are about
    measure: str
    summaries: list[Summary]
    #: None: one run, nothing to compare
    forest: Forest | None
    audit: AuditResult | None = None
    estimates: StoreEstimates | None = None
    #: largest first: those shown (settings.conflicts, 0: all) of ``conflict_count``
    conflicts: list[ConflictText] = field(default_factory=list)
    conflict_count: int = 0
    judges: list[JudgeFacts] = field(default_factory=list)
    costs: list[Cost] = field(default_factory=list)
    files: list[InputFile] = field(default_factory=list)
    #: None: no store
    store: StoreTables | None = None
    #: None: no probes in the store
    probes: ProbeReport | None = None


def compute(qrels: Qrels, runs: Sequence[Run], settings: ReportSettings, *,
            reference: Qrels | None = None, judges: Mapping[str, Qrels] | None = None,
            store: LabelStore | None = None) -> ReportModel:
    """Compare the runs, audit ``judges`` ({name: qrels}) against ``reference``, and read
    what the report shows from ``store`` (optional)."""
    from reljudge.stats import compare
    from reljudge.version import __version__

    s = settings
    comp = compare(qrels, runs, list(s.measures), baseline=s.baseline, test=s.test,
                   trials=s.trials, seed=s.seed, all_queries=s.all_queries,
                   float32_scores=s.float32_scores)
    # the names compare made distinct
    runs = [r.with_name(n) for r, n in zip(runs, comp.runs, strict=True)]
    m0 = primary_measure(comp)
    result = None
    if reference is not None and judges:
        from reljudge.audit import audit

        result = audit(reference, dict(judges), runs, measure=s.audit_measure or m0,
                       bootstrap=s.audit_bootstrap, seed=s.seed, with_ensembles=False,
                       all_queries=s.all_queries, float32_scores=s.float32_scores)
    summaries = [comparison_summary(comp, s.digits, s.partial)] + (
        [judge_summary(result, s.digits)] if result else [])
    model = ReportModel(s, __version__, time.strftime("%Y-%m-%d %H:%M"), comp, m0, summaries,
                        _forest(comp, m0), result, files=input_files(s.inputs))
    if store is not None:
        from reljudge.infer.scores import estimate
        from reljudge.store import coverage
        from reljudge.store.views import with_text

        scored = [_float32(r) for r in runs] if s.float32_scores else runs
        model.estimates = estimate(store, scored, comp.measures, baseline=comp.baseline,
                                   require=False, rank=False)
        # read once: the conflicts, counts and merge
        standing = store.standing_ids()
        # sorted once: the conflicts and the merge
        votes = store.votes(standing)
        found = [c for c in store.conflicts(votes=votes) if abs(c.diff) >= 1]
        model.conflict_count = len(found)
        # the texts and answers of the conflicts shown only
        model.conflicts = with_text(store, found[:s.conflicts] if s.conflicts else found,
                                    standing)
        model.judges, model.costs = judges_and_costs(store, s.price)
        model.store = StoreTables(store.sources(standing), len(store.failures()),
                                  [(q, n) for q, n, _ in
                                   coverage(store.merge(votes=votes))])
        if store.probe_judges():
            from reljudge.probe.stored import stored_report

            model.probes = stored_report(store, scored, [m0])
    return model


def _forest(comp: Comparison, m0: str) -> Forest | None:
    """Each run's difference from the baseline under the primary measure, with a 95 %
    bootstrap interval of its mean (1000 resamples of the queries)."""
    from reljudge.stats.bootstrap import bootstrap_ci

    others = [n for n in comp.runs if n != comp.baseline]
    if not others:
        return None
    diffs, lows, highs = [], [], []
    for n in others:
        _, base, vals = comp.paired(n, m0)
        iv = bootstrap_ci(vals - base, n=1000, seed=comp.seed)
        diffs.append(iv.mean)
        lows.append(iv.low)
        highs.append(iv.high)
    return Forest(others, diffs, lows, highs, [comp.cells[(n, m0)].significant for n in others])


def _float32(run: Run) -> Run:
    """The run with its scores rounded to float32: ranked on, the same as float32_scores=True
    (the estimates rank runs without that switch)."""
    import numpy as np

    from reljudge.trec_data import Run

    return Run.from_arrays(run.qid, run.docid, run.score.astype(np.float32).astype(np.float64),
                           name=run.name, check=False)
