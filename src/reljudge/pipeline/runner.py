"""Run a pipeline: pool -> label -> merge -> eval -> audit, writing every artefact (the docs'
page "The pipeline and the report" lists them: qrels with provenance, scores, audit, manifest).

A stage whose settings, inputs and recorded outputs are unchanged is not recomputed;
labelling always resumes, paying only for answers it lacks.

The manifest says "in progress" before any output is replaced and "finished" after the last,
so a killed run leaves the previous finished set or a folder every reader sees as unfinished.
Labelling that left pooled pairs without a grade stops merge, eval and audit (their earlier
outputs removed) unless ``allow_partial``, which marks every output partial; labelling
skipped (no judge) is recorded as skipped, never complete.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from reljudge.io.files import atomic_write, make_folder
from reljudge.pipeline.config import PipelineConfig
from reljudge.pipeline.manifest import Manifest, fingerprint
from reljudge.pipeline.outcome import (
    LATER_OUTPUTS,
    PipelineResult,
    StageResult,
    incomplete_reason,
    is_incomplete,
    partial_line,
)
from reljudge.pipeline.stages import (
    audit_stage,
    check_judge,
    eval_stage,
    import_stage,
    label_stage,
    merge_stage,
    pool_stage,
    read_inputs,
)

if TYPE_CHECKING:
    from reljudge.judge import JudgeConfig

_log = logging.getLogger(__name__)


def _version() -> str:
    from reljudge.version import __version__

    return __version__


def run_pipeline(config: PipelineConfig, *, judge: JudgeConfig | None = None,
                 say: Callable[[str], None] | None = None, progress: bool = False,
                 config_text: str | None = None, allow_partial: bool = False,
                 before_writing: Callable[[], None] | None = None) -> PipelineResult:
    """Execute every stage; ``judge`` is a JudgeConfig or None (no LLM labelling). When
    labelling is incomplete, merge, eval and audit run only with ``allow_partial``. ``say``
    hears each stage's lines (the CLI prints them; by default they go to this module's
    logger at INFO). ``before_writing``: called once every input and the judge's endpoint
    are checked, before the first write."""
    from reljudge.store import LabelStore

    say = say or _log.info
    out = config.out_dir
    # every input read and checked before any write
    inputs = read_inputs(config, judge)
    # the endpoint checked too, when the label stage needs it
    check_judge(config, inputs)
    records = input_records(config)
    if before_writing is not None:
        before_writing()
    make_folder(out)
    manifest = Manifest(out)
    manifest.data["inputs"] = records
    # before any output is replaced
    manifest.begin(config_digest(config, records))
    if config_text is not None:
        _write_config(out, config_text)
    stages: list[StageResult] = []
    with LabelStore(config.store_path) as store:
        import_stage(config, inputs, store, say)
        stages.append(pool_stage(config, inputs, store, say))
        label, labelling = label_stage(config, inputs, store, say, progress)
        stages.append(label)
        manifest.data["labelling"] = labelling
        if label.status == "waiting" or is_incomplete(labelling) and not allow_partial:
            return _incomplete(out, stages, manifest, labelling, say,
                               waiting=label.status == "waiting")
        if is_incomplete(labelling):
            say(f"[label] {partial_line(labelling)}; --allow-partial: merge, eval and audit "
                "run on them, and every output says PARTIAL")
        stages.append(merge_stage(config, store, manifest, say))
        # no judge: eval and the outputs say how many pooled pairs have no label
        if "skipped" in labelling:
            labelling.update(_without_label(inputs.pooled, out / "qrels.txt"))
        # every judge of this job (one per model when the endpoints serve several)
        judge_ids = inputs.labeller.judge_ids if inputs.labeller is not None else []
        judge_qrels = {name: store.qrels(name) for name in judge_ids}
        human_qrels = (store.qrels(config.inputs.human_source)
                       if config.inputs.human_qrels else None)
    stages.append(eval_stage(config, inputs.runs, manifest, say, labelling))
    stages.append(audit_stage(config, inputs.runs, human_qrels, judge_qrels, manifest, say,
                              labelling))
    manifest.finish(labelling, _version())
    scores = json.loads((out / "scores.json").read_text())
    audit = json.loads((out / "audit.json").read_text()) if (out / "audit.json").exists() \
        else None
    return PipelineResult(out, stages, scores, audit, labelling)


def _without_label(pooled: list[tuple[str, str]], qrels_file: Path) -> dict[str, int]:
    """How many of the pooled pairs the final qrels lack (scored as not relevant)."""
    from reljudge.io.trec import read_qrels

    qrels = read_qrels(qrels_file)
    labelled = set(zip(qrels.qid.tolist(), qrels.docid.tolist(), strict=True))
    return {"pooled": len(pooled), "without_label": sum(p not in labelled for p in pooled)}


def _write_config(out: Path, config_text: str) -> None:
    """config.toml beside the outputs, with the version; a store URL's password is never
    written down."""
    from reljudge.store.postgres import masked

    atomic_write(out / "config.toml", f"# reljudge {_version()}\n{masked(config_text)}")


def _incomplete(out: Path, stages: list[StageResult], manifest: Manifest, labelling: dict,
                say: Callable[[str], None], waiting: bool = False) -> PipelineResult:
    """Stop after an incomplete label stage (``waiting``: batches still running): merge, eval
    and audit do not run, and the outputs they wrote earlier (of other labels) are removed so
    that none passes for final, nor for partial."""
    gone = [name for name in LATER_OUTPUTS if (out / name).exists()]
    for name in gone:
        (out / name).unlink()
    for stage in ("merge", "eval", "audit"):
        manifest.data["stages"].pop(stage, None)
        stages.append(StageResult(stage, "skipped", note="labelling is incomplete"))
    manifest.finish(labelling, _version())
    removed = f"; removed the earlier {', '.join(gone)}" if gone else ""
    if not waiting:
        say(f"[merge, eval, audit] not run: {incomplete_reason(labelling)}. Run "
            "the pipeline again to finish labelling, or pass --allow-partial to score the "
            "labels there are (every output then says PARTIAL)" + removed)
    elif removed:
        # the label stage said already that they wait for the batches
        say(f"[merge, eval, audit] waiting for the batches{removed}")
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


def config_digest(config: PipelineConfig, records: list[dict] | None = None) -> str:
    """The digest of a pipeline's settings and of its inputs' contents (``records``: their
    manifest records, when already at hand): outputs made under another config or from other
    inputs carry another digest."""
    from reljudge.store.postgres import masked

    settings = masked(json.dumps(config.model_dump(mode="json"), sort_keys=True))
    contents = [{k: v for k, v in r.items() if k != "path"}
                for r in (input_records(config) if records is None else records)]
    return fingerprint(settings, contents)
