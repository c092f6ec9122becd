"""What a report of a pipeline's output folder rests on: its final qrels, its runs and inputs,
its settings, and the judges it audited against the human labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from reljudge.errors import ReljudgeError
from reljudge.pipeline.config import PipelineConfig, load_config
from reljudge.pipeline.manifest import FINISHED, Manifest
from reljudge.pipeline.outcome import incomplete_reason, is_incomplete, partial_line, skipped_line
from reljudge.pipeline.runner import config_digest, input_roles
from reljudge.report.model import ReportInputs
from reljudge.trec_data import Qrels

if TYPE_CHECKING:
    from reljudge.store import LabelStore


class IncompletePipeline(ReljudgeError):
    """The pipeline's outputs are not a finished run of its config as the file reads, or its
    labelling is incomplete and a partial report was not asked for."""


def finished_labelling(config: PipelineConfig) -> dict:
    """The labelling record of the pipeline's last run, when that run finished under this
    config and these inputs; else IncompletePipeline (a run killed, stopped by an error or
    still running; outputs of another config or other inputs; or none)."""
    manifest = Manifest(config.out_dir)
    again = "run the pipeline again"
    if manifest.config_digest is None:
        raise IncompletePipeline(f"{manifest.path}: no record of a finished run (missing, or "
                                 f"written by an older reljudge); {again}")
    if manifest.config_digest != config_digest(config):
        raise IncompletePipeline(f"{config.out_dir}: the outputs are of another config or "
                                 f"other inputs than the pipeline's now; {again}")
    if manifest.data.get("status") != FINISHED:
        raise IncompletePipeline(f"{config.out_dir}: the last run did not finish (killed, "
                                 "stopped by an error, or still running), so its outputs may "
                                 f"mix two runs; {again}")
    return manifest.data["labelling"]


def pipeline_partial(config: PipelineConfig, allow_partial: bool) -> tuple[str | None,
                                                                           str | None]:
    """The PARTIAL line of a pipeline whose labelling is incomplete and the SKIPPED line of
    one whose labelling was skipped (None, None when complete); refused (IncompletePipeline)
    when its outputs are not a finished run of this config, or are partial without
    ``allow_partial``."""
    labelling = finished_labelling(config)
    if "skipped" in labelling:
        return None, skipped_line(labelling)
    if not is_incomplete(labelling):
        return None, None
    if not allow_partial:
        raise IncompletePipeline(f"{config.out_dir}: {incomplete_reason(labelling)}; run "
                                 "the pipeline again to finish it, or pass --allow-partial "
                                 "for a report marked PARTIAL")
    return partial_line(labelling), None


def read_pipeline_outputs(path: str | Path, *, allow_partial: bool = False) -> ReportInputs:
    """The outputs of the pipeline configured in the file ``path``: final qrels, runs, inputs,
    settings, and the human labels with the judges its audit compared (the last LLM judge
    when it ran no audit)."""
    from reljudge.io.trec import read_qrels, read_runs
    from reljudge.judge.cost import explicit_price
    from reljudge.store import LabelStore

    config = load_config(path)
    partial, skipped = pipeline_partial(config, allow_partial)
    qrels = read_qrels(config.out_dir / "qrels.txt")
    runs = read_runs([config.path(r) for r in config.inputs.runs])
    facts = {"pool depth": f"top {config.pool.depth} of every run",
             "merge policy": f"{config.merge.policy}, {config.merge.aggregate} over "
                             "several labels of a pair",
             "pipeline": str(path)}
    # the caller closes the store
    store = LabelStore(config.store_path, create=False, readonly=True)
    try:
        reference, judges = _audited(config, store)
    except BaseException:
        # an unreadable audit.json, say: the caller never sees the store, so close it here
        store.close()
        raise
    return ReportInputs(
        qrels, runs, [*input_roles(config), ("final qrels", config.out_dir / "qrels.txt")],
        facts, reference, judges, store, measures=config.eval.measures,
        all_queries=config.eval.all_queries, audit_measure=config.audit.measure,
        audit_bootstrap=config.audit.bootstrap,
        price=explicit_price(config.judge.price_in, config.judge.price_out), partial=partial,
        notice=skipped)


def _audited(config: PipelineConfig, store: LabelStore) -> tuple[Qrels | None, dict[str, Qrels]]:
    """The human labels and the LLM judges the pipeline's audit compared (or the last LLM
    judge of the store); (None, {}) without human labels or judges."""
    llm = [s.name for s in store.sources() if s.kind == "llm"]
    # the judges the pipeline audited
    audited = config.out_dir / "audit.json"
    if audited.exists():
        named = [j["name"] for j in json.loads(audited.read_text())["judges"]]
        llm = [name for name in named if name in llm] or llm[-1:]
    else:
        llm = llm[-1:]
    if not (config.inputs.human_qrels and llm):
        return None, {}
    return store.qrels(config.inputs.human_source), {name: store.qrels(name) for name in llm}
