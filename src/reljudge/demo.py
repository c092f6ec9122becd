"""``reljudge demo``: the whole product on the bundled examples, offline unless an endpoint is set.

1. hr-handbook: import the human labels into a fresh store, pool two retrievers, label the
   pool live when an OpenAI-compatible endpoint is configured, merge, score both runs (and
   audit the judge against the humans when it labelled).
2. llmjudge-dl23: audit six real LLM judges of TREC DL 2023 against the NIST assessors, item
   by item and on the ranking of eight synthetic runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from reljudge.errors import ConfigError
from reljudge.grades import SCALE_TEXT

MARKER = ".reljudge-demo"


#: where an installed reljudge holds the examples' data (the build copies it from the source
#: checkout's examples/, its one copy: see setup.py)
PACKAGED = Path(__file__).resolve().parent / "examples"


def find_examples(explicit: str | Path | None = None) -> Path:
    """The examples folder: the given one, else the installed package's, else the source
    checkout's."""
    candidates = [Path(explicit)] if explicit else [
        PACKAGED, Path(__file__).resolve().parents[2] / "examples", Path.cwd() / "examples"]
    for c in candidates:
        if (c / "hr-handbook" / "pipeline.toml").exists():
            return c
    if explicit:
        raise ConfigError(f"{explicit} holds no hr-handbook/pipeline.toml: give the folder "
                          "that holds the examples hr-handbook and llmjudge-dl23")
    raise ConfigError(f"this reljudge lacks its bundled examples ({PACKAGED}): reinstall it "
                      "from a wheel or sdist, or pass --examples PATH")


def check_folder(out: Path) -> None:
    """Refuse an output folder the demo did not make (or one it cannot write)."""
    from reljudge.io.files import check_writable

    check_writable(out, folder=True)
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise ConfigError(f"{out} exists and was not made by `reljudge demo`; "
                          "choose another --out")


def fresh_folder(out: Path) -> None:
    """Empty the demo's output folder, refusing to touch a folder the demo did not make (or
    one it cannot write)."""
    import shutil

    check_folder(out)
    if out.exists() and any(out.iterdir()):
        # the folder itself stays: its parent may be read-only
        for item in out.iterdir():
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            else:
                item.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("made by reljudge demo; deleted and rewritten by the next demo\n")


def run_demo(out: Path, examples: Path, *, judge_overrides: dict | None = None,
             say: Callable[[str], None] | None = None, progress: bool = False) -> dict:
    """Run both parts; returns where the outputs are and whether the LLM labelled. ``say``
    hears what the demo tells (the CLI prints it; by default this module's logger at INFO)."""
    if say is None:
        import logging

        say = logging.getLogger(__name__).info
    from reljudge.audit import audit, audit_json
    from reljudge.audit.result import COLUMNS
    from reljudge.io.files import atomic_write
    from reljudge.io.label_files import read_judges
    from reljudge.io.trec import read_qrels, read_run
    from reljudge.pipeline import load_config
    from reljudge.pipeline.config import judge_config
    from reljudge.pipeline.runner import run_pipeline
    from reljudge.tables import markdown_table, render

    # every refusal before the folder is emptied or written
    check_folder(out)
    hr = examples / "hr-handbook"
    config = load_config(hr / "pipeline.toml")
    config = config.model_copy(update={"output": config.output.model_copy(
        update={"dir": (out / "hr-handbook").resolve()})})
    judge = judge_config(config, **(judge_overrides or {}))
    say("== 1. hr-handbook: two retrievers over a 46-chunk HR handbook, 48 human labels ==")
    result = run_pipeline(config, judge=judge, say=say, progress=progress,
                          before_writing=lambda: fresh_folder(out))

    say("\n== 2. llmjudge-dl23: six real LLM judges vs NIST assessors, TREC DL 2023 ==")
    dl = examples / "llmjudge-dl23"
    reference = read_qrels(dl / "human.qrels")
    judges, clipped = read_judges(sorted((dl / "judges").glob("*.txt")), clip=True)
    runs = [read_run(r) for r in sorted((dl / "runs").glob("*.run"))]
    res = audit(reference, judges, runs, measure="nDCG@10", bootstrap=200, seed=0,
                reference_name="NIST")
    rows = [res.row(j) for j in res.judges]
    cols = [c for c in COLUMNS if c in rows[0]]
    say(render(cols, [[r.get(c) for c in cols] for r in rows], digits=3).rstrip())
    a = res.among_judges
    say(f"{sum(clipped.values())} out-of-scale grades clipped to {SCALE_TEXT} "
        f"({', '.join(f'{k}: {v}' for k, v in clipped.items() if v)}); the runs are synthetic "
        f"(grade + noise), see {dl / 'README.md'}; among the judges: "
        f"Krippendorff's alpha (ordinal) {a['alpha_ordinal']:.3f}")
    dl_out = out / "llmjudge-dl23"
    dl_out.mkdir(parents=True, exist_ok=True)
    atomic_write(dl_out / "audit.json", json.dumps(audit_json(res), indent=2, default=str))
    atomic_write(dl_out / "audit.md", "# LLM judges vs NIST, TREC DL 2023\n\n" +
                  markdown_table(cols, [[r.get(c) for c in cols] for r in rows], 3))

    labelled = result.stage("label").status == "ran"
    say(f"\noutputs: {out.resolve()}/hr-handbook (qrels, provenance, scores, store) and "
        f"{out.resolve()}/llmjudge-dl23 (audit.json, audit.md)")
    if not labelled:
        pool = result.stage("pool").summary
        say(f"no LLM endpoint configured, so the {pool['to_label']} unlabelled pool pairs of "
            "hr-handbook were not graded: set OPENAI_API_KEY (or OPENAI_BASE_URL for a local "
            "server) and OPENAI_MODEL, then run `reljudge demo` again.")
    return {"out": str(out.resolve()), "labelled": labelled}
