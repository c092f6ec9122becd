"""``reljudge run``: the whole flow from one config file."""

from __future__ import annotations

EXAMPLES = """\
examples:
  reljudge run examples/hr-handbook/pipeline.toml
  OPENAI_API_KEY=sk-... reljudge run pipeline.toml --model gpt-4o-mini
  reljudge run pipeline.toml --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-7B-Instruct

stages: pool (top k of every run) -> label (the LLM grades every pooled pair it has not graded
yet, human-labelled ones included so that the audit can compare) -> merge (human-first by
default) -> eval -> audit. Re-running is free: answers come from the call cache and the store,
and stages whose inputs did not change are not recomputed. Without an endpoint the label stage
is skipped and the rest runs on the labels the store has: every output then says SKIPPED and
how many pooled pairs have no label (scored as not relevant), never "complete".

a run killed at any instant: manifest.json says "in progress" with the new config's digest
before any output is replaced, "finished" after the last; `reljudge report --pipeline` refuses
an unfinished folder or outputs of another config (exit 3), and a rerun redoes what is stale.

config file (TOML; paths relative to the file; checked whole, with strict types, before any
stage runs: depth = "10" is an error):
  [inputs]  queries, passages, runs = [...], human_qrels (optional), human_source
  [pool]    depth = 10
  [judge]   model, base_url, prompt = "umbrela", repeats, concurrency, max_cost, enabled,
            batch = true (the Batch API at half price: the run submits, exits 5 while
            batches run, and the next run collects them and goes on to merge, eval, audit),
            [[judge.endpoints]] tables (url, and optional model, concurrency, rpm, tpm,
            api_key_env) to spread the labelling over several servers
  [merge]   policy = "human-first", aggregate = "majority"
  [eval]    measures = ["nDCG@10", "P@5", "RR", "Judged@10"], all_queries = false
  [audit]   measure = "nDCG@10", bootstrap = 1000, seed = 0
  [output]  dir = "out", store (default out/labels.sqlite), cache_dir

incomplete labelling (Ctrl-C, the budget, failed calls, batches still running): merge, eval
and audit do not run, and the outputs they wrote before are removed, so that nothing in the
output folder passes for final; the manifest records how many pairs were asked, graded and
lack a grade, and why. Run again to finish, or pass --allow-partial to score the labels there
are: scores.json and audit.json then say "complete": false with those counts, scores.tsv and
audit.md start with a PARTIAL line, and `reljudge report --pipeline` needs --allow-partial too.

exit codes (as `reljudge label`): 0 everything ran and every pooled pair the judge was asked
about has a grade; 2 bad input or config, or an endpoint that cannot be used; 3 labelling
stopped early (budget or Ctrl-C: run again to continue); 4 labelling finished but some pairs
have no grade (the summary lists the failures by kind; a re-run asks again for failed calls);
5 with batch = true while Batch API jobs are still running (run again to collect them).
--allow-partial changes no exit code: 3, 4 and 5 still say the labelling is incomplete.
"""


#: the line ``reljudge --help`` lists this command with
HELP = "run pool -> label -> merge -> eval -> audit from a config"


def register(sub) -> None:
    """Add the ``run`` subcommand."""
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("run", help=HELP,
                       description="Run the whole pipeline from a TOML config file; every "
                                   "artefact goes to the output folder.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    p.add_argument("config", help="pipeline TOML file")
    p.add_argument("--model", help="override the judge model")
    p.add_argument("--base-url", help="override the endpoint URL")
    p.add_argument("--api-key", help="API key (or OPENAI_API_KEY)")
    p.add_argument("--allow-partial", action="store_true",
                   help="when labelling is incomplete, still merge, score and audit the labels "
                        "there are (every output then says PARTIAL; the exit code still says "
                        "incomplete)")
    common.add_quiet(p)
    p.set_defaults(func=run)


def run(args) -> int:
    """Load the config and run it."""
    from pathlib import Path

    from reljudge.cli.common import show_progress
    from reljudge.pipeline import load_config
    from reljudge.pipeline.config import judge_config
    from reljudge.pipeline.runner import run_pipeline

    config = load_config(args.config)
    judge = judge_config(config, model=args.model, base_url=args.base_url, api_key=args.api_key)
    result = run_pipeline(config, judge=judge, say=print, progress=show_progress(args.quiet),
                          config_text=Path(args.config).read_text(encoding="utf-8"),
                          allow_partial=args.allow_partial)
    print(f"outputs in {result.out_dir}: " + ", ".join(
        sorted(p.name for p in result.out_dir.iterdir() if not p.name.startswith("."))))
    label = result.stage("label")
    if label.status == "waiting":
        # batch = true: batches still running; run again to collect them
        return 5
    return exit_code(label.summary)


def exit_code(label: dict) -> int:
    """As ``reljudge label``: 3 when labelling stopped early, 4 when it finished with pairs
    that have no grade, else 0."""
    if label.get("stop_reason"):
        return 3
    # the batch path counts graded pairs itself
    if "graded" in label:
        graded = label["graded"]
    else:
        graded = (label.get("labelled", 0) + label.get("already_done", 0)
                  - label.get("already_failed", 0))
    return 4 if "items" in label and graded != label["items"] else 0
