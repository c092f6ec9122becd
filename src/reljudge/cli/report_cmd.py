"""``reljudge report``: one self-contained HTML file."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reljudge.report.model import ReportInputs, ReportSettings

EXAMPLES = """\
examples:
  reljudge report qrels.txt runs/*.run -m nDCG@10 --out report.html
  reljudge report final.qrels bm25.run dense.run --reference human.qrels --judge llm.qrels \\
      --store labels.sqlite --out report.html
  reljudge report human.qrels runs/*.run --reference human.qrels --judge gpt4o.txt \\
      --judge llama70b.txt --clip --out report.html      # each judge named by its file
  reljudge report --pipeline examples/hr-handbook/pipeline.toml --out report.html
  reljudge report qrels.txt runs/*.run --float32-scores --digits 3 --out report.html

Queries are averaged as in eval and compare (each run's queries that have qrels, or every
qrels query with --all-queries); runs with the same tag are named by their file names.
--float32-scores ranks every run on float32-rounded scores (trec_eval 9) in the scores, the
tests, the audit's run ranking and the estimates; --digits sets the decimals of the scores,
intervals, p-values and agreement statistics in the summary and the tables (the difference
plot and the audit's figure captions keep 3).
The report opens with a summary in words (best run, significant differences, how far the
judge agrees with the reference labels, warnings where too few pairs or runs back a number),
then plots, tables, conflicts with their texts (--store) and the configuration: judge,
prompt and hash, pool depth, merge policy, inputs with SHA-256 checksums, and cost as spent
now / from the cache / total. It needs no network to open (inline styles, plots as inline
SVG drawn by reljudge itself: no extra to install).
"""


#: the line ``reljudge --help`` lists this command with
HELP = "write one self-contained HTML report"


def register(sub) -> None:
    """Add the ``report`` subcommand."""
    from reljudge.choices import TESTS
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("report", help=HELP,
                       description="A summary in words (best run, significant differences, "
                                   "how far the labels can be trusted), then plots, scores, "
                                   "the judge audit, conflicts, configuration and cost, in "
                                   "one file.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    p.add_argument("qrels", nargs="?", help="the TREC qrels (or irds:DATASET_ID) the runs are "
                                                "scored with")
    common.add_runs(p, required=False)
    p.add_argument("--pipeline", help="take everything from a pipeline config and its outputs")
    p.add_argument("--allow-partial", action="store_true",
                   help="with --pipeline: report a pipeline whose labelling is incomplete "
                        "(a PARTIAL banner, no best run named); without it such a pipeline "
                        "exits 3, as does one whose last run did not finish or whose outputs "
                        "are of another config or other inputs")
    common.add_measures(p, "nDCG@10, or the pipeline's [eval] measures")
    p.add_argument("--baseline", help="run name (tag) of the baseline (default: the first run)")
    p.add_argument("--test", default="randomization",
                   choices=TESTS,
                   help="paired significance test (default randomization; as in compare)")
    p.add_argument("--reference", help="reference (human) qrels for the audit")
    p.add_argument("--judge", action="append", default=[],
                   help="judge qrels for the audit (repeatable; each named by its file stem)")
    p.add_argument("--clip", action="store_true",
                   help="clip grades outside 0..3 in the --reference and --judge files "
                        "(default: reject the file with file:line)")
    common.add_all_queries(p)
    common.add_float32_scores(p)
    common.add_digits(p, kept="the difference plot and the audit's figure captions keep 3")
    common.add_store(p, "label store for coverage and cost")
    from reljudge.judge.config import JudgeConfig

    for flag in ("price_in", "price_out"):
        p.add_argument(f"--{flag.replace('_', '-')}", type=float, metavar="USD",
                       help=f"{JudgeConfig.model_fields[flag].description}, to value the "
                            "answers that came from the cache (default: the model's list "
                            "price; with --pipeline: its [judge] prices)")
    p.add_argument("--title", default="reljudge report",
                   help="title of the page (default: reljudge report)")
    p.add_argument("--out", default="report.html", type=common.suffix_of("HTML", ".html", ".htm"),
                   help="the HTML file to write (default report.html)")
    common.add_quiet(p)
    p.set_defaults(func=run)


def run(args) -> int:
    """Gather inputs and write the report; exit 3 for a pipeline whose labelling is
    incomplete, unless --allow-partial."""
    from reljudge.pipeline.report_inputs import IncompletePipeline

    try:
        return _run(args)
    except IncompletePipeline as e:
        print(f"reljudge: error: {e}", file=sys.stderr)
        return 3


def _run(args) -> int:
    """Gather inputs and write the report."""
    from reljudge.cli.common import check_outputs, note_unjudged, working
    from reljudge.errors import ConfigError
    from reljudge.io.files import atomic_write
    from reljudge.metrics import evaluate_many
    from reljudge.metrics.queries import JUDGED_MEASURE, coverage_warnings
    from reljudge.report.html import build_report

    check_outputs(args.out)
    if min((x for x in (args.price_in, args.price_out) if x is not None), default=0) < 0:
        raise ConfigError("--price-in and --price-out are US dollars per million tokens: "
                          "0 or more")
    if bool(args.reference) != bool(args.judge):
        raise ConfigError("the audit needs both --reference and at least one --judge")
    if args.pipeline:
        from reljudge.pipeline.report_inputs import read_pipeline_outputs

        src = read_pipeline_outputs(args.pipeline, allow_partial=args.allow_partial)
    else:
        src = _from_files(args)
    all_queries = args.all_queries or src.all_queries
    for line in coverage_warnings(src.qrels, src.runs, all_queries):
        print(f"reljudge: {line}", file=sys.stderr)
    note_unjudged(evaluate_many(src.qrels, src.runs, [JUDGED_MEASURE], all_queries=all_queries))
    try:
        with working("writing the report", args.quiet):
            page = build_report(src.qrels, src.runs, _settings(args, src),
                                reference=src.reference, judges=src.judges, store=src.store)
    finally:
        if src.store is not None:
            src.store.close()
    atomic_write(args.out, page)
    print(f"wrote {args.out} ({len(page) / 1024:.0f} KB)")
    return 0


def _from_files(args) -> ReportInputs:
    """The report's inputs from QRELS, RUN files, --reference, --judge and --store."""
    from reljudge.errors import ConfigError
    from reljudge.io.trec import read_qrels, read_runs
    from reljudge.report.model import ReportInputs
    from reljudge.store import LabelStore

    if not args.qrels or not args.runs:
        raise ConfigError("give QRELS and RUN files, or --pipeline CONFIG")
    src = ReportInputs(
        read_qrels(args.qrels), read_runs(args.runs),
        [("qrels", args.qrels), *[("run", r) for r in args.runs],
         *([("reference", args.reference)] if args.reference else []),
         *[("judge", j) for j in args.judge]],
        {"pool depth": "not recorded (the qrels were given as a file)",
         "merge policy": "not recorded (the qrels were given as a file)"})
    if args.reference:
        from reljudge.io.label_files import read_judge, read_judges

        reference, _ = read_judge(args.reference, clip=args.clip)
        judges, _ = read_judges(args.judge, clip=args.clip)
        src.reference, src.judges = reference, judges
    if args.store:
        src.store = LabelStore(args.store, create=False, readonly=True)
    return src


def _settings(args, src: ReportInputs) -> ReportSettings:
    """The report's settings: the flags, else what the inputs came with."""
    from reljudge.judge.cost import explicit_price
    from reljudge.report.model import ReportSettings

    return ReportSettings(args.measures or src.measures or ["nDCG@10"], baseline=args.baseline,
                          test=args.test, title=args.title,
                          all_queries=args.all_queries or src.all_queries, inputs=src.inputs,
                          facts=src.facts,
                          price=explicit_price(args.price_in, args.price_out) or src.price,
                          audit_measure=src.audit_measure,
                          audit_bootstrap=src.audit_bootstrap, digits=args.digits,
                          float32_scores=args.float32_scores, partial=src.partial,
                          notice=src.notice)
