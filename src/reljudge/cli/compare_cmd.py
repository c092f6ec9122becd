"""``reljudge compare``: a paper-style results table with significance marks."""

from __future__ import annotations

import sys

EXAMPLES = """\
examples:
  reljudge compare qrels.txt bm25.run dense.run hybrid.run -m nDCG@10 -m RR
  reljudge compare qrels.txt runs/*.run -m nDCG@10 --baseline bm25 --test t --correction bh
  reljudge compare qrels.txt a.run b.run -m AP --format latex > table.tex

tests: randomization (Fisher's, default; ours, vectorised), t (paired t-test,
scipy.stats.ttest_rel), wilcoxon (signed-rank, scipy.stats.wilcoxon), bootstrap (paired
bootstrap of the mean difference; ours). All two-sided. Correction over the comparisons with
the baseline, per measure: holm (default), bh (Benjamini-Hochberg) or none.

queries: the means side by side and the paired tests are over the same queries: those every
run has in the qrels (the queries column says how many; "10 of 12" when a run's other queries
are left out, with a warning line on stderr). --run-queries gives each run's mean over its
own queries that have qrels, as eval does (the paired tests then over the queries the run
shares with the baseline); with --all-queries every qrels query counts, a query a run lacks
scoring 0 (trec_eval -c). Runs with the same tag are named by their file names.

With --store, when the store holds a recorded human sample (`reljudge sample`) whose pairs
are all graded, a second table shows each run's score under human labels estimated from it
(LLM-only, human-only and PPI side by side; see `reljudge estimate`). --format csv and latex
write the comparison table only; --format json has both.
"""


#: the line ``reljudge --help`` lists this command with
HELP = "compare runs: intervals and paired significance tests"


def register(sub) -> None:
    """Add the ``compare`` subcommand."""
    from reljudge.choices import CI_METHODS, CORRECTIONS, MAX_TRIALS, TESTS
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("compare", help=HELP,
                       description="Compare runs on the same queries against a baseline.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    p.add_argument("qrels", help="TREC qrels file (QID ITER DOCID GRADE) or irds:DATASET_ID")
    common.add_runs(p)
    common.add_measures(p, "nDCG@10")
    p.add_argument("--baseline", help="run name (tag) of the baseline (default: the first run)")
    p.add_argument("--test", default="randomization",
                   choices=TESTS,
                   help="paired significance test (default randomization; see below)")
    p.add_argument("--trials", type=_trials, default=10_000,
                   help=f"randomisation/bootstrap trials, 1 to {MAX_TRIALS} (default 10000)")
    p.add_argument("--correction", default="holm", choices=CORRECTIONS,
                   help="multiple-comparison correction over the comparisons with the "
                        "baseline, per measure (default holm)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="significance level of the marks (default 0.05)")
    p.add_argument("--seed", type=common.non_negative_int, default=0,
                   help="seed of the randomisation, bootstrap and estimates (default 0)")
    common.add_all_queries(p)
    p.add_argument("--run-queries", action="store_true",
                   help="each run's mean over its own queries that have qrels (eval's rule), "
                        "not over the queries every run has (the default)")
    common.add_float32_scores(p)
    p.add_argument("--ci", default="percentile", choices=CI_METHODS,
                   help="bootstrap interval method (default percentile)")
    common.add_store(p, "label store: add PPI estimates from its newest fully graded "
                        "human sample (or --sample)")
    p.add_argument("--sample", help="with --store: the recorded sample to estimate from")
    common.add_format(p, ("table", "json", "csv", "markdown", "latex"))
    common.add_digits(p, kept="json keeps full precision; csv holds the cells as "
                                "printed")
    common.add_quiet(p)
    p.set_defaults(func=run)


def _trials(text: str) -> int:
    """An argparse type: a trial count from 1 to MAX_TRIALS."""
    import argparse

    from reljudge.choices import MAX_TRIALS
    from reljudge.cli import common

    value = common.positive_int(text)
    if value > MAX_TRIALS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_TRIALS} (p-values to 1e-6), "
                                         f"found {value}")
    return value


def run(args) -> int:
    """Compare and print."""
    from reljudge.cli.common import working
    from reljudge.errors import ConfigError
    from reljudge.io.trec import read_qrels, read_runs
    from reljudge.stats import compare
    from reljudge.stats.compare import comparison_dict, comparison_rows
    from reljudge.tables import json_dumps, render

    if len(args.runs) < 2:
        raise ConfigError(f"compare needs two runs or more (each is tested against the "
                          f"baseline), given {len(args.runs)}; one run's scores: reljudge eval")
    if args.sample and not args.store:
        raise ConfigError(f"--sample {args.sample} names a sample recorded in a label store: "
                          "give --store too")
    runs = read_runs(args.runs)
    qrels = read_qrels(args.qrels)
    with working("comparing runs", args.quiet):
        c = compare(qrels, runs, args.measures or ["nDCG@10"],
                    baseline=args.baseline, test=args.test, trials=args.trials,
                    correction=args.correction, alpha=args.alpha, seed=args.seed,
                    ci_method=args.ci, all_queries=args.all_queries,
                    float32_scores=args.float32_scores, shared=not args.run_queries)
    for line in c.warnings:
        print(f"reljudge: {line}", file=sys.stderr)
    est = None
    if args.store:
        from reljudge.infer.scores import estimate
        from reljudge.store import LabelStore

        with LabelStore(args.store, create=False, readonly=True) as store:
            est = estimate(store, runs, c.measures, sample=args.sample, seed=args.seed,
                           baseline=c.baseline, require=bool(args.sample), rank=False)
    if args.format == "json":
        out = comparison_dict(c)
        if est is not None:
            out["estimates"] = {"sample": est.sample, "design": est.design,
                                "judge": est.judge, "skipped": est.skipped,
                                "runs": [r.__dict__ for r in est.rows],
                                "differences": [d.__dict__ for d in est.diffs],
                                "warnings": est.warnings()}
        print(json_dumps(out), end="")
        _warn(est)
        return 0
    headers, rows = comparison_rows(c, digits=args.digits)
    text = render(headers, rows, args.format, args.digits)
    if args.format == "latex":
        text = text.replace("▲", r"$^{\blacktriangle}$").replace("▼", r"$^{\blacktriangledown}$")
        text = text.replace(r"\$", "$").replace(r"\{", "{").replace(r"\}", "}")
    print(text, end="")
    if args.format in ("table", "markdown"):
        print(c.legend())
    elif args.format == "latex":
        print("% " + c.legend())
    # one table: the comparison
    if est is not None and args.format in ("csv", "latex"):
        print(f"reljudge: the estimates from sample {est.sample!r} are in --format json "
              f"({args.format} holds the comparison table only)", file=sys.stderr)
    elif est is not None:
        from reljudge.infer.scores import estimate_table

        print(("\n" if args.format == "table" else "")
              + render(*estimate_table(est.rows + est.diffs, with_p=True, digits=args.digits),
                       args.format, args.digits), end="")
        if args.format in ("table", "markdown"):
            print(est.note())
    _warn(est)
    return 0


def _warn(est) -> None:
    import sys

    for line in est.warnings() if est is not None else []:
        print(line, file=sys.stderr)
