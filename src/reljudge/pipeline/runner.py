"""Run a pipeline: pool -> label -> merge -> eval -> audit, writing every artefact.

Artefacts in the output folder:
  config.toml              the config as run, with the reljudge version
  pool.tsv                 pooled pairs: qid, docid, best rank over the runs
  qrels.txt                final TREC qrels (merge policy applied)
  qrels.provenance.jsonl   one record per final label: who decided it and how
  scores.tsv               per-query and mean scores of every run
  audit.json / audit.md    judge vs human agreement (when there are both)
  manifest.json            stage fingerprints and summaries; the inputs (each file's SHA-256
                           and size, or the ir_datasets dataset id of an irds: input)
A stage whose settings and inputs are unchanged is not recomputed; labelling is always
resumed, and pays only for answers it does not have (call cache + store).

Labelling that did not give every pooled pair a grade (stopped by Ctrl-C or the budget, or
failed calls) is incomplete: merge, eval and audit then do not run, and their earlier outputs
are removed, unless ``allow_partial``; then every output says it is partial (JSON
``"complete": false`` with the labelling's counts, a PARTIAL line wherever scores are
printed). The manifest records the labelling's completeness either way.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from reljudge.io.files import atomic_write
from reljudge.pipeline.config import PipelineConfig
from reljudge.pipeline.manifest import Manifest, fingerprint
from reljudge.pipeline.results import (
    COMPLETE,
    LATER_OUTPUTS,
    PipelineResult,
    StageResult,
    incomplete_reason,
    labelling_record,
    partial_line,
)
from reljudge.pipeline.stages import audit_stage, eval_stage, pool_stage

_log = logging.getLogger(__name__)


def _version() -> str:
    from reljudge.version import __version__

    return __version__


def run_pipeline(config: PipelineConfig, *, judge=None,
                 say: Callable[[str], None] | None = None, progress: bool = False,
                 config_text: str | None = None, allow_partial: bool = False) -> PipelineResult:
    """Execute every stage; ``judge`` is a JudgeConfig or None (no LLM labelling). When
    labelling is incomplete, merge, eval and audit run only with ``allow_partial``. ``say``
    hears each stage's lines (the CLI prints them; by default they go to this module's
    logger at INFO)."""
    say = say or _log.info
    from reljudge.errors import ConfigError, InputError
    from reljudge.io import read_passages, read_queries
    from reljudge.io.label_files import check_scale, read_labels
    from reljudge.io.trec import read_runs
    from reljudge.pool import build_pool
    from reljudge.store import LabelStore, import_labels

    out = config.out_dir
    inp = config.inputs
    # every input is read and checked before anything is written; pooling is pure, so the
    # pool comes first, in memory, and passages from ir_datasets are read for its ids only
    queries = read_queries(config.path(inp.queries))
    runs = read_runs([config.path(r) for r in inp.runs])
    pooled = build_pool(runs, config.pool.depth).pairs
    passages = read_passages(config.path(inp.passages), {d for _, d in pooled})  # a file: whole
    if inp.human_qrels:
        check_scale(read_labels(config.path(inp.human_qrels)), False)
    if not inp.human_qrels and judge is None and isinstance(config.store_path, Path) \
            and not config.store_path.exists():
        raise ConfigError("nothing would label the pool: give [inputs] human_qrels or a judge "
                          "endpoint (model and OPENAI_API_KEY or base_url)")
    from reljudge.judge import Labeller

    labeller = Labeller(judge) if judge is not None else None
    if labeller is not None:  # the judge needs the text of every pooled pair
        try:
            labeller.check_inputs(pooled, queries, passages)
        except InputError as e:
            raise InputError(f"{e.detail} in [inputs] queries = {inp.queries}, passages = "
                             f"{inp.passages} (pool depth {config.pool.depth})") from None
    inputs = input_records(config)
    out.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(out)
    manifest.data["inputs"] = inputs
    stages: list[StageResult] = []
    if config_text is not None:  # a store URL's password is never written down
        from reljudge.store.postgres import masked

        atomic_write(out / "config.toml", f"# reljudge {_version()}\n{masked(config_text)}")

    with LabelStore(config.store_path) as store:
        store.add_queries(queries)
        store.add_passages(passages)
        if inp.human_qrels:
            rep = import_labels(store, config.path(inp.human_qrels), "human", inp.human_source)
            note = "already in the store" if rep.skipped else f"{rep.events} imported"
            say(f"[import] human labels {inp.human_qrels}: {note}")

        # 1. pool
        stages.append(pool_stage(config, runs, pooled, store, labeller, queries, passages,
                                  manifest, say))

        # 2. label
        labelling = dict(COMPLETE)
        if labeller is None:
            why = ("disabled in the config" if not config.judge.enabled else
                   "no endpoint configured (set OPENAI_API_KEY or OPENAI_BASE_URL and a model)")
            stages.append(StageResult("label", "skipped", note=why))
            say(f"[label] skipped: {why}")
        elif labeller.config.batch:
            import asyncio

            from reljudge.judge.batch.job import BatchJob

            result = asyncio.run(BatchJob(labeller, store).run(pooled, queries, passages,
                                                               progress=progress,
                                                               handle_sigint=True))
            summary = {"items": result.items, "graded": result.graded,
                       "batches_submitted": result.submitted_batches,
                       "batches_open": len(result.open), "cost": result.cost,
                       "stop_reason": result.stop_reason}
            say(f"[label] {labeller.judge_id} (batch): {result.graded} of {result.items} pairs "
                f"x samples graded, {result.submitted_batches} batch(es) submitted, "
                f"{len(result.open)} running, ${result.cost:.4f}")
            labelling = labelling_record(result.items, result.graded,
                                         result.batch_failures, result.stop_reason,
                                         len(result.open), _kept(result, labeller))
            summary["completeness"] = labelling
            if result.open:  # scoring now would use a part of the labels: stop here
                stages.append(StageResult("label", "waiting", summary))
                say("[label] batches are still running: run the pipeline again to collect "
                    "them; merge, eval and audit wait for them")
                return _incomplete(out, stages, manifest, labelling, say, remove=False)
            stages.append(StageResult("label", "ran", summary))
        else:
            import asyncio

            report = asyncio.run(labeller.label(pooled, queries, passages, store,
                                                progress=progress, handle_sigint=True))
            summary = report.summary()
            labelling = labelling_record(
                report.items, report.labelled + report.already_done - report.already_failed,
                {**report.failure_reasons, **_standing_failures(report)},
                report.stop_reason, stale_kept=_kept(report, labeller))
            summary["completeness"] = labelling
            stages.append(StageResult("label", "ran", summary))
            say(f"[label] {labeller.judge_id}: {report.items} pairs x samples, "
                f"{report.already_done} already labelled, {report.cached} from cache, "
                f"{report.calls} paid calls, {report.failed} failed"
                + (f" ({dict(report.failure_reasons)})" if report.failed else "")
                + f", ${report.cost:.4f}" + (f"; stopped: {report.stop_reason}"
                                             if report.stop_reason else ""))
            for kind, example in report.failure_examples.items():
                say(f"[label]   {report.failure_reasons[kind]} {kind}, e.g. {example}")
        manifest.data["labelling"] = labelling
        if not labelling["complete"]:
            if not allow_partial:
                return _incomplete(out, stages, manifest, labelling, say)
            say(f"[label] {partial_line(labelling)}; --allow-partial: merge, eval and audit "
                "run on them, and every output says PARTIAL")

        # 3. merge
        key = fingerprint("merge", config.merge.model_dump(), store.fingerprint())
        outputs = [out / "qrels.txt", out / "qrels.provenance.jsonl"]
        if manifest.fresh("merge", key, outputs):
            stages.append(StageResult("merge", "up to date", manifest.summary("merge")))
        else:
            from reljudge.io.trec import write_qrels

            merged = store.merge(config.merge.policy, config.merge.aggregate)
            if not merged.labels:
                raise ConfigError(f"{store.path}: no labels under the merge policy "
                                  f"{config.merge.policy}; nothing to score")
            write_qrels(merged.qrels, outputs[0])
            merged.write_provenance(outputs[1])
            by: dict[str, int] = {}
            for lab in merged.labels:
                by[lab.decided_by] = by.get(lab.decided_by, 0) + 1
            summary = {"labels": len(merged.labels), "decided_by": by,
                       "stale": merged.stale_counts()}
            if merged.stale_note():
                say(f"[merge] warning: {merged.stale_note()}")
            manifest.record("merge", key, outputs, summary)
            stages.append(StageResult("merge", "ran", summary))
        s = stages[-1]
        say(f"[merge] {config.merge.policy}/{config.merge.aggregate}: "
            f"{s.summary.get('labels')} final labels {s.summary.get('decided_by')}"
            + (" (up to date)" if s.status == "up to date" else ""))
        # every judge of this job (one per model when the endpoints serve several)
        judge_qrels = {name: store.qrels(name)
                       for name in (labeller.judge_ids if labeller is not None else [])}
        human_qrels = (store.qrels(inp.human_source)
                       if inp.human_qrels else None)

    # 4. eval
    stages.append(eval_stage(config, runs, manifest, say, labelling))
    # 5. audit
    stages.append(audit_stage(config, runs, human_qrels, judge_qrels, manifest, say,
                               labelling))
    manifest.data["reljudge"] = _version()
    manifest.data["complete"] = labelling["complete"]
    manifest.save()
    scores = json.loads((out / "scores.json").read_text())
    audit = json.loads((out / "audit.json").read_text()) if (out / "audit.json").exists() \
        else None
    return PipelineResult(out, stages, scores, audit, labelling)


def _standing_failures(report) -> dict:
    """Failure kinds of the pairs this run found failed in the store and did not ask again
    (they lack a grade as much as this run's failures do)."""
    return {"failed earlier, not asked again": report.already_failed} \
        if report.already_failed else {}


def _incomplete(out: Path, stages: list[StageResult], manifest, labelling: dict, say,
                remove: bool = True) -> PipelineResult:
    """Stop after an incomplete label stage: merge, eval and audit do not run, and the
    outputs they wrote earlier (of other labels) are removed so that none passes for final."""
    gone = [name for name in LATER_OUTPUTS if (out / name).exists()] if remove else []
    for name in gone:
        (out / name).unlink()
    for stage in ("merge", "eval", "audit"):
        manifest.data["stages"].pop(stage, None)
        stages.append(StageResult(stage, "skipped", note="labelling is incomplete"))
    manifest.data["labelling"] = labelling
    manifest.data["complete"] = False
    manifest.data["reljudge"] = _version()
    manifest.save()
    if remove:
        say(f"[merge, eval, audit] not run: {incomplete_reason(labelling)}. Run "
            "the pipeline again to finish labelling, or pass --allow-partial to score the "
            "labels there are (every output then says PARTIAL)"
            + (f"; removed the earlier {', '.join(gone)}" if gone else ""))
    return PipelineResult(out, stages, labelling=labelling)


def input_roles(config: PipelineConfig) -> list[tuple[str, Path | str]]:
    """(role, file or ``irds:`` name) of every input of a pipeline, paths resolved."""
    inp = config.inputs
    return [("queries", config.path(inp.queries)), ("passages", config.path(inp.passages)),
            *[("run", config.path(r)) for r in inp.runs],
            *([("human labels", config.path(inp.human_qrels))] if inp.human_qrels else [])]


def input_records(config: PipelineConfig) -> list[dict]:
    """What the manifest records of each input: a file's SHA-256 and size, or the
    ir_datasets dataset id (and the ir_datasets version) where a file would have them."""
    from reljudge.io.checksums import input_files

    return [f.record() for f in input_files(input_roles(config))]


def _kept(result, labeller) -> int:
    """Stale grades a label stage kept (``stale = "keep"``), or 0."""
    return result.stale if labeller.config.stale == "keep" else 0
