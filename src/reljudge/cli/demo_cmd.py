"""``reljudge demo``: the main job on the bundled data."""

from __future__ import annotations

EXAMPLES = """\
examples:
  reljudge demo                                   # offline: scores and the real-judge audit
  OPENAI_API_KEY=sk-... OPENAI_MODEL=gpt-4o-mini reljudge demo   # also labels live
  reljudge demo --base-url http://localhost:11434/v1 --model llama3.1:8b
"""


#: the line ``reljudge --help`` lists this command with
HELP = "run the bundled examples end to end (offline by default)"


def register(sub) -> None:
    """Add the ``demo`` subcommand."""
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("demo", help=HELP,
                       description="Score the hr-handbook runs from human labels (labelling "
                                   "the rest live when an endpoint is configured) and audit "
                                   "six real TREC DL 2023 LLM judges against NIST assessors.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    common.add_out_dir(p, "reljudge-demo", "the folder to write the outputs to (default "
                                           "reljudge-demo)")
    p.add_argument("--examples", help="the examples folder (default: the source checkout's)")
    p.add_argument("--model", help="judge model (or OPENAI_MODEL)")
    p.add_argument("--base-url", help="endpoint (or OPENAI_BASE_URL)")
    p.add_argument("--api-key", help="API key (or OPENAI_API_KEY)")
    common.add_quiet(p)
    p.set_defaults(func=run)


def run(args) -> int:
    """Run the demo."""
    from pathlib import Path

    from reljudge.cli.common import show_progress
    from reljudge.demo import find_examples, run_demo

    overrides = {"model": args.model, "base_url": args.base_url, "api_key": args.api_key}
    run_demo(Path(args.out_dir), find_examples(args.examples), judge_overrides=overrides,
             say=print, progress=show_progress(args.quiet))
    return 0
