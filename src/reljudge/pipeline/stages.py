"""The pipeline's stages: read the inputs, import the human labels, write the pool, label,
merge, score the runs, audit the judges. A stage after labelling is skipped when its
fingerprint (settings and inputs) is unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from reljudge.choices import Aggregate
from reljudge.io.files import atomic_write
from reljudge.pipeline.config import PipelineConfig
from reljudge.pipeline.manifest import Manifest, fingerprint
from reljudge.pipeline.outcome import (
    StageResult,
    banner,
    labelling_record,
    skipped_record,
)
from reljudge.trec_data import Qrels, Run

if TYPE_CHECKING:
    from reljudge.judge import JudgeConfig, Labeller
    from reljudge.judge.report import BatchResult, LabelReport
    from reljudge.store import LabelStore

Say = Callable[[str], None]


@dataclass(frozen=True)
class InputData:
    """Everything a pipeline reads before it writes: texts, runs, the pool, and the judge."""

    queries: dict[str, str]
    passages: dict[str, dict[str, str]]
    runs: list[Run]
    pooled: list[tuple[str, str]]
    labeller: Labeller | None


def read_inputs(config: PipelineConfig, judge: JudgeConfig | None) -> InputData:
    """Read and check every input (``judge``: a JudgeConfig or None); pooling is pure, so the
    pool comes first, in memory, and passages from ir_datasets are read for its ids only."""
    from reljudge.errors import ConfigError, InputError
    from reljudge.io import read_passages, read_queries
    from reljudge.io.label_files import check_scale, read_labels
    from reljudge.io.trec import read_runs
    from reljudge.judge import Labeller
    from reljudge.pool import build_pool

    inp = config.inputs
    queries = read_queries(config.path(inp.queries))
    runs = read_runs([config.path(r) for r in inp.runs])
    pooled = build_pool(runs, config.pool.depth).pairs
    # the pooled ids' passages (a file is read whole)
    passages = read_passages(config.path(inp.passages), {d for _, d in pooled})
    if inp.human_qrels:
        check_scale(read_labels(config.path(inp.human_qrels)), False)
    if not inp.human_qrels and judge is None and isinstance(config.store_path, Path) \
            and not config.store_path.exists():
        raise ConfigError("nothing would label the pool: give [inputs] human_qrels or a judge "
                          "endpoint (model and OPENAI_API_KEY or base_url)")
    labeller = Labeller(judge) if judge is not None else None
    # the judge needs the text of every pooled pair
    if labeller is not None:
        try:
            labeller.check_inputs(pooled, queries, passages)
        except InputError as e:
            raise InputError(f"{e.detail} in [inputs] queries = {inp.queries}, passages = "
                             f"{inp.passages} (pool depth {config.pool.depth})") from None
    return InputData(queries, passages, runs, pooled, labeller)


def check_judge(config: PipelineConfig, inputs: InputData) -> None:
    """Refuse, before anything is written, a judge whose endpoints cannot be used when the
    label stage would need them (pairs neither in the store nor in the answer cache)."""
    from reljudge.errors import LLMError

    labeller = inputs.labeller
    # the batch path checks as it submits
    if labeller is None or labeller.config.batch:
        return
    try:
        labeller.check_endpoints()
    except LLMError as e:
        if _calls_needed(config, inputs, labeller):
            raise LLMError(f"the judge's endpoint cannot be used: {e}; nothing was "
                           "written") from None


def _calls_needed(config: PipelineConfig, inputs: InputData, labeller: Labeller) -> bool:
    """Whether the label stage would send calls: pooled pairs neither the store (if there is
    one) nor the answer cache (if there is one) has answered. Reads only."""
    from reljudge.store import LabelStore

    stored = not isinstance(config.store_path, Path) or config.store_path.exists()
    if not stored and not labeller.config.resolved_cache_dir().exists():
        return bool(inputs.pooled)
    store = LabelStore(config.store_path, create=False, readonly=True) if stored else None
    try:
        return labeller.quote(inputs.pooled, inputs.queries, inputs.passages,
                              store).to_send > 0
    finally:
        if store is not None:
            store.close()


def import_stage(config: PipelineConfig, inputs: InputData, store: LabelStore,
                 say: Say) -> None:
    """Put the texts and the human labels (once) in the store."""
    from reljudge.store import import_labels

    inp = config.inputs
    store.add_queries(inputs.queries)
    store.add_passages(inputs.passages)
    if inp.human_qrels:
        rep = import_labels(store, config.path(inp.human_qrels), "human", inp.human_source)
        note = "already in the store" if rep.skipped else f"{rep.events} imported"
        say(f"[import] human labels {inp.human_qrels}: {note}")


def pool_stage(config: PipelineConfig, inputs: InputData, store: LabelStore,
               say: Say) -> StageResult:
    """Write pool.tsv (the pooled pairs with their best rank) and count what is labelled."""
    from reljudge.pool import judged_at_k, top_k

    runs, pooled, labeller = inputs.runs, inputs.pooled, inputs.labeller
    out = config.out_dir
    labelled = store.judged_pairs()
    to_label = [p for p in pooled if p not in labelled]
    judged = len(pooled) - len(to_label)
    best: dict[tuple[str, str], int] = {}
    for run in runs:
        q, d, r = top_k(run, config.pool.depth)
        for pair, rank in zip(zip(q.tolist(), d.tolist(), strict=False), r.tolist(), strict=False):
            best[pair] = min(rank, best.get(pair, rank))
    # the pool itself; what was labelled is state, not here
    lines = ["qid\tdocid\tbest_rank"]
    lines += [f"{q}\t{d}\t{best[(q, d)]}" for q, d in pooled]
    atomic_write(out / "pool.tsv", "\n".join(lines) + "\n")
    k = config.pool.depth
    summary = {"pairs": len(pooled), "judged": judged, "to_label": len(to_label),
               f"judged@{k}": {r.name: judged_at_k(r, labelled, k) for r in runs}}
    if labeller is not None:
        est = labeller.quote(pooled, inputs.queries, inputs.passages, store)
        summary["llm_to_send"] = est.to_send
        summary["llm_quoted_cost"] = est.cost
    say(f"[pool] depth {k} over {len(runs)} run(s): {len(pooled)} pairs, {judged} "
        f"already labelled, {len(to_label)} without any label"
        + (f"; the judge would send {summary['llm_to_send']} (est. "
           f"${summary['llm_quoted_cost']:.4f})" if labeller is not None else ""))
    return StageResult("pool", "ran", summary)


def label_stage(config: PipelineConfig, inputs: InputData, store: LabelStore, say: Say,
                progress: bool) -> tuple[StageResult, dict]:
    """Label the pool (online, or through the Batch API); the stage's result and the
    labelling's completeness record. Status "waiting": batches are still running."""
    labeller = inputs.labeller
    if labeller is None:
        why, fix = (("disabled in the config", "enabled = false") if not config.judge.enabled
                    else ("no judge configured", "set a model, and OPENAI_API_KEY or a base_url"))
        say(f"[label] skipped: {why} ({fix})")
        return StageResult("label", "skipped", note=why), skipped_record(why)
    if labeller.config.batch:
        return _batch_label(inputs, labeller, store, say, progress)
    return _online_label(inputs, labeller, store, say, progress)


def _batch_label(inputs: InputData, labeller: Labeller, store: LabelStore, say: Say,
                 progress: bool) -> tuple[StageResult, dict]:
    """The label stage through the Batch API: collect, grade, submit."""
    import asyncio

    from reljudge.judge.batch.job import BatchJob

    result = asyncio.run(BatchJob(labeller, store).run(inputs.pooled, inputs.queries,
                                                       inputs.passages, progress=progress,
                                                       handle_sigint=True))
    summary = result.summary()
    say(f"[label] {labeller.judge_id} (batch): {result.graded} of {result.items} pairs "
        f"x repeats graded, {result.submitted_batches} batch(es) submitted, "
        f"{len(result.open)} running, ${result.cost:.4f}")
    labelling = labelling_record(result.items, result.graded, result.batch_failures,
                                 result.stop_reason, len(result.open), _kept(result, labeller))
    summary["completeness"] = labelling
    # scoring before the batches end would use a part of the labels: stop here
    if result.open:
        say("[label] batches are still running: run the pipeline again to collect "
            "them; merge, eval and audit wait for them")
        return StageResult("label", "waiting", summary), labelling
    return StageResult("label", "ran", summary), labelling


def _online_label(inputs: InputData, labeller: Labeller, store: LabelStore, say: Say,
                  progress: bool) -> tuple[StageResult, dict]:
    """The label stage, one call per pair x sample."""
    import asyncio

    report = asyncio.run(labeller.label(inputs.pooled, inputs.queries, inputs.passages, store,
                                        progress=progress, handle_sigint=True))
    summary = report.summary()
    labelling = labelling_record(
        report.items, report.labelled + report.already_done - report.already_failed,
        {**report.failure_reasons, **_standing_failures(report)},
        report.stop_reason, stale_kept=_kept(report, labeller))
    summary["completeness"] = labelling
    say(f"[label] {labeller.judge_id}: {report.items} pairs x repeats, "
        f"{report.already_done} already labelled, {report.cached} from cache, "
        f"{report.calls} paid calls, {report.failed} failed"
        + (f" ({dict(report.failure_reasons)})" if report.failed else "")
        + f", ${report.cost:.4f}" + (f"; stopped: {report.stop_reason}"
                                     if report.stop_reason else ""))
    for kind, example in report.failure_examples.items():
        say(f"[label]   {report.failure_reasons[kind]} {kind}, e.g. {example}")
    return StageResult("label", "ran", summary), labelling


def _standing_failures(report: LabelReport) -> dict[str, int]:
    """Failure kinds of the pairs this job found failed in the store and did not ask again
    (they lack a grade as much as this job's failures do)."""
    return {"failed earlier, not asked again": report.already_failed} \
        if report.already_failed else {}


def _kept(result: LabelReport | BatchResult, labeller: Labeller) -> int:
    """Stale grades a label stage kept (``stale = "keep"``), or 0."""
    return result.stale if labeller.config.stale == "keep" else 0


def merge_stage(config: PipelineConfig, store: LabelStore, manifest: Manifest,
                say: Say) -> StageResult:
    """The store's labels under the merge policy: qrels.txt and qrels.provenance.jsonl."""
    from reljudge.errors import ConfigError
    from reljudge.io.trec import write_qrels

    out = config.out_dir
    key = fingerprint("merge", config.merge.model_dump(), store.fingerprint())
    outputs = [out / "qrels.txt", out / "qrels.provenance.jsonl"]
    if manifest.fresh("merge", key, outputs):
        stage = StageResult("merge", "up to date", manifest.summary("merge"))
    else:
        # the aggregate was checked when the config was loaded
        merged = store.merge(store.resolve_policy(config.merge.policy, "[merge] policy"),
                             cast(Aggregate, config.merge.aggregate))
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
        stage = StageResult("merge", "ran", summary)
    say(f"[merge] {config.merge.policy}/{config.merge.aggregate}: "
        f"{stage.summary.get('labels')} final labels {stage.summary.get('decided_by')}"
        + (" (up to date)" if stage.status == "up to date" else ""))
    return stage


def eval_stage(config: PipelineConfig, runs: list[Run], manifest: Manifest, say: Say,
               labelling: dict) -> StageResult:
    """Score every run with the final qrels (scores.tsv, scores.json); scores.json carries
    the digest of the config and inputs it was scored under, and its labelling record."""
    from reljudge.io.trec import read_qrels
    from reljudge.metrics import evaluate_many
    from reljudge.metrics.evaluation_json import evaluation_json
    from reljudge.metrics.queries import coverage_warnings, rule_text
    from reljudge.tables import render

    out = config.out_dir
    qrels_file = out / "qrels.txt"
    key = fingerprint("eval", config.eval.model_dump(), qrels_file,
                      [config.path(r) for r in config.inputs.runs], manifest.config_digest,
                      *([labelling] if not labelling["complete"] else []))
    outputs = [out / "scores.tsv", out / "scores.json"]
    fresh = manifest.fresh("eval", key, outputs)
    if not fresh:
        qrels = read_qrels(qrels_file)
        found = coverage_warnings(qrels, runs, config.eval.all_queries)
        results = evaluate_many(qrels, runs, config.eval.measures,
                                all_queries=config.eval.all_queries)
        measures = next(iter(results.values())).measures if results else []
        said = banner(labelling)
        lines = [f"# {said}"] if said else []
        lines.append("run\tquery\t" + "\t".join(measures))
        for name, ev in results.items():
            lines += [f"{name}\t{q}\t" + "\t".join(f"{v:.6f}" for v in row)
                      for q, row in zip(ev.query_ids, ev.scores.tolist(), strict=False)]
            lines.append(f"{name}\tall\t" + "\t".join(f"{v:.6f}" for v in ev.mean().values()))
        atomic_write(outputs[0], "\n".join(lines) + "\n")
        data = evaluation_json(results, measures, all_queries=config.eval.all_queries,
                               warnings=found, labelling=labelling)
        data["config_digest"] = manifest.config_digest
        atomic_write(outputs[1], json.dumps(data, indent=2, sort_keys=True) + "\n")
        manifest.record("eval", key, outputs, {"runs": len(results)})
    data = json.loads(outputs[1].read_text())
    rows = [[n, r["queries"], *(r["mean"][m] for m in data["measures"])]
            for n, r in data["runs"].items()]
    say(f"[eval] {'up to date' if fresh else 'scored'} with the final qrels:")
    if not data.get("complete", True):
        say(f"[eval] {banner(data['labelling'])}")
    say(render(["run", "queries", *data["measures"]], rows).rstrip())
    say(f"[eval] queries: {data.get('rule_text', rule_text(config.eval.all_queries))}")
    for line in data.get("warnings", []):
        say(f"[eval] {line}")
    return StageResult("eval", "up to date" if fresh else "ran", {"runs": len(rows)})


def audit_stage(config: PipelineConfig, runs: list[Run], human: Qrels | None,
                judges: dict[str, Qrels], manifest: Manifest, say: Say,
                labelling: dict) -> StageResult:
    """Each judge of the job against the human labels (audit.json, audit.md)."""
    out = config.out_dir
    judges = {name: q for name, q in judges.items() if len(q)}
    if human is None or not judges:
        why = "needs human labels and LLM labels of the same pairs"
        for stale in ("audit.json", "audit.md"):
            (out / stale).unlink(missing_ok=True)
        say(f"[audit] skipped: {why}")
        return StageResult("audit", "skipped", note=why)
    from reljudge.audit import audit, audit_json
    from reljudge.audit.result import COLUMNS
    from reljudge.io.trec import format_qrels
    from reljudge.tables import markdown_table

    outputs = [out / "audit.json", out / "audit.md"]
    # one judge: the key it always had (an existing audit stays up to date)
    labels = [format_qrels(q) for q in judges.values()] if len(judges) > 1 else \
        format_qrels(next(iter(judges.values())))
    key = fingerprint("audit", config.audit.model_dump(), format_qrels(human), labels,
                      [config.path(r) for r in config.inputs.runs],
                      *([labelling] if not labelling["complete"] else []))
    fresh = manifest.fresh("audit", key, outputs)
    if not fresh:
        result = audit(human, judges, runs, measure=config.audit.measure,
                       bootstrap=config.audit.bootstrap, seed=config.audit.seed,
                       reference_name=config.inputs.human_source)
        data = audit_json(result)
        data.update(complete=labelling["complete"], labelling=labelling)
        atomic_write(outputs[0], json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        rows = [result.row(j) for j in result.judges]
        cols = [c for c in COLUMNS if c in rows[0]]
        said = banner(labelling)
        atomic_write(outputs[1], "# Judge audit\n\n" + (f"**{said}**\n\n" if said else "")
                     + markdown_table(cols, [[row[c] for c in cols] for row in rows], 3))
        manifest.record("audit", key, outputs, {"pairs": rows[0]["pairs"]})
    data = json.loads(outputs[0].read_text())
    if not data.get("complete", True):
        say(f"[audit] {banner(data['labelling'])}")
    for j in data["judges"]:
        stats = j["items"]["stats"]
        say(f"[audit] {'up to date' if fresh else 'ran'}: "
            + (f"{j['name']}: " if len(data["judges"]) > 1 else "")
            + f"{j['items']['pairs']} pairs judged by both; exact {_f(stats['exact'])}, kappa "
            f"{_f(stats['kappa'])}, quadratic kappa {_f(stats['kappa_quadratic'])}"
            + (f", Kendall tau of run ranking {_f(j['systems']['kendall_tau'])}"
               if j["systems"] else ""))
    return StageResult("audit", "up to date" if fresh else "ran",
                       {"pairs": data["judges"][0]["items"]["pairs"]})


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"
