"""The pipeline's stages after labelling: write the pool, score the runs, audit the judges.
Each stage is skipped when its fingerprint (settings and inputs) is unchanged."""

from __future__ import annotations

import json

from reljudge.io.files import atomic_write
from reljudge.pipeline.manifest import fingerprint
from reljudge.pipeline.results import StageResult, partial_line


def pool_stage(config, runs, pooled, store, labeller, queries, passages, manifest,
                say) -> StageResult:
    """Write pool.tsv (the ``pooled`` pairs with their best rank) and count what is labelled."""
    from reljudge.pool import judged_at_k, top_k

    out = config.out_dir
    labelled = store.labelled_pairs()
    to_label = [p for p in pooled if p not in labelled]
    judged = len(pooled) - len(to_label)
    best = {}
    for run in runs:
        q, d, r = top_k(run, config.pool.depth)
        for pair, rank in zip(zip(q.tolist(), d.tolist(), strict=False), r.tolist(), strict=False):
            best[pair] = min(rank, best.get(pair, rank))
    lines = ["qid\tdocid\tbest_rank"]  # the pool itself; what was labelled is state, not here
    lines += [f"{q}\t{d}\t{best[(q, d)]}" for q, d in pooled]
    atomic_write(out / "pool.tsv", "\n".join(lines) + "\n")
    k = config.pool.depth
    summary = {"pairs": len(pooled), "labelled": judged, "to_label": len(to_label),
               f"judged@{k}": {r.name: judged_at_k(r, labelled, k) for r in runs}}
    if labeller is not None:
        est = labeller.estimate(pooled, queries, passages, store)
        summary["llm_to_send"] = est.to_send
        summary["llm_estimated_cost"] = est.cost
    say(f"[pool] depth {k} over {len(runs)} run(s): {len(pooled)} pairs, {judged} "
        f"already labelled, {len(to_label)} without any label"
        + (f"; the judge would send {summary['llm_to_send']} (est. "
           f"${summary['llm_estimated_cost']:.4f})" if labeller is not None else ""))
    return StageResult("pool", "ran", summary)


def eval_stage(config, runs, manifest, say, labelling: dict) -> StageResult:
    from reljudge.io.trec import read_qrels
    from reljudge.metrics import evaluate_many
    from reljudge.metrics.evaluation_json import evaluation_json
    from reljudge.metrics.queries import coverage_warnings, rule_text
    from reljudge.tables import render

    out = config.out_dir
    qrels_file = out / "qrels.txt"
    key = fingerprint("eval", config.eval.model_dump(), qrels_file,
                      [config.path(r) for r in config.inputs.runs],
                      *([labelling] if not labelling["complete"] else []))
    outputs = [out / "scores.tsv", out / "scores.json"]
    fresh = manifest.fresh("eval", key, outputs)
    if not fresh:
        qrels = read_qrels(qrels_file)
        found = coverage_warnings(qrels, runs, config.eval.all_queries)
        results = evaluate_many(qrels, runs, config.eval.measures,
                                all_queries=config.eval.all_queries)
        measures = next(iter(results.values())).measures if results else []
        lines = [] if labelling["complete"] else [f"# {partial_line(labelling)}"]
        lines.append("run\tquery\t" + "\t".join(measures))
        for name, ev in results.items():
            lines += [f"{name}\t{q}\t" + "\t".join(f"{v:.6f}" for v in row)
                      for q, row in zip(ev.query_ids, ev.scores.tolist(), strict=False)]
            lines.append(f"{name}\tall\t" + "\t".join(f"{v:.6f}" for v in ev.mean().values()))
        atomic_write(outputs[0], "\n".join(lines) + "\n")
        data = evaluation_json(results, measures, all_queries=config.eval.all_queries,
                               warnings=found, labelling=labelling)
        atomic_write(outputs[1], json.dumps(data, indent=2, sort_keys=True) + "\n")
        manifest.record("eval", key, outputs, {"runs": len(results)})
    data = json.loads(outputs[1].read_text())
    rows = [[n, r["queries"], *(r["mean"][m] for m in data["measures"])]
            for n, r in data["runs"].items()]
    say(f"[eval] {'up to date' if fresh else 'scored'} with the final qrels:")
    if not data.get("complete", True):
        say(f"[eval] {partial_line(data['labelling'])}")
    say(render(["run", "queries", *data["measures"]], rows).rstrip())
    say(f"[eval] queries: {data.get('rule_text', rule_text(config.eval.all_queries))}")
    for line in data.get("warnings", []):
        say(f"[eval] {line}")
    return StageResult("eval", "up to date" if fresh else "ran", {"runs": len(rows)})


def audit_stage(config, runs, human, judges, manifest, say, labelling: dict) -> StageResult:
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
        banner = "" if labelling["complete"] else f"**{partial_line(labelling)}**\n\n"
        atomic_write(outputs[1], "# Judge audit\n\n" + banner + markdown_table(
            cols, [[row[c] for c in cols] for row in rows], 3))
        manifest.record("audit", key, outputs, {"pairs": rows[0]["pairs"]})
    data = json.loads(outputs[0].read_text())
    if not data.get("complete", True):
        say(f"[audit] {partial_line(data['labelling'])}")
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


def _f(x) -> str:
    return "-" if x is None else f"{x:.3f}"
