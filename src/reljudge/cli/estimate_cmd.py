"""``reljudge estimate``: run scores under human labels from a human sample plus the judge."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reljudge.infer.scores import StoreEstimates

EXAMPLES = """\
examples:
  reljudge estimate --store labels.sqlite --sample week1 --judge gpt-4o-mini \\
      runs/bm25.run runs/dense.run -m DCG@10 -m P@10
  reljudge estimate --store labels.sqlite --sample q5 --judge gpt-4o-mini runs/*.run \\
      -m nDCG@10 --json

columns, per run and measure:
  llm     mean under the judge's labels, with a bootstrap CI over queries (biased when the
          judge is lenient or strict: its interval need not cover the human score)
  human   the human sample alone (Horvitz-Thompson, Student-t CI)
  ppi     prediction-powered estimate (PPI++, power-tuned lambda) with its CI: valid however
          bad the judge is, narrower than `human` when the judge is any good
  worth   how many human labels a human-only estimate would need for the PPI interval's width
Every value and interval lies in the measure's range ([0, 1] for P@k, nDCG, ...; [0, the
largest DCG@k] for DCG@k); an interval of no width is a census, printed `exact (census)`.
Differences: each run minus the baseline (first run, or --baseline), same columns, with the
PPI two-sided p-value. Ranking, per measure: the runs in the LLM-only order, changed only
where the sample supports another order; for every pair of runs the paired PPI difference
and its two-sided p-value, Holm-corrected over all pairs of runs of the measure (--json:
"rankings", every pair's p and p_holm); "significantly above/below": the runs whose order
against it the corrected test supports at alpha = 1 - --level. The ranking estimates every
pair of runs, R(R-1)/2 paired estimates for R runs: its cost grows with the square of the
runs (63 runs: 1,953 pairs), the rest of estimate's in proportion to them; --no-ranking
skips it (the rows, differences and favours are the same without it). A warning (stderr; "warning" per row and "warnings" in --json) marks
an interval whose sample is smaller than the one at which the benchmark's 95 % intervals
covered >= 93 % for every judge: fewer than 25 sampled pairs in the run's top k, or a
query sample of fewer than all queries. Read such intervals as approximate. A query sample
of fewer than 30 queries gets, for a measure of known range, at least the Hoeffding-Serfling
interval (Bardenet and Maillard 2015): wide, but valid however skewed the per-query values. Pair-sample estimates are post-stratified by each run's top
k (the reljudge docs: Scores from a few human labels). Query-level samples (srs-queries)
serve every measure; pair-level
samples serve DCG@k, P@k, RBP@k and nDCG@k only. nDCG@k from pairs is a ratio whose
normaliser, each query's ideal DCG over the sampled pool (not over deeper qrels: sample
from a pool as deep as the ideal you mean), is estimated from the sample too; its interval is a
bias-corrected bootstrap over the sampled pairs, and a warning names each query whose ideal
DCG is too uncertain, with about how many more of its pairs to label. Human grades: per sampled pair (every pair must have
one), the standing human grades (an undone grade does not count) merged as `labels merge
--policy adjudicated-first` merges them: an adjudicated grade (assess --adjudicate) where there
is one, else the annotators' majority (a tie to the lower grade); --human-source NAME: that source's
grade only. The runs the judge favours, per measure: each run's judge-only score (llm) minus
its ppi estimate, the bias, with the ppi interval turned around it; a run is flagged "over-rates"
or "under-rates" where that interval excludes 0 (per run, at --level: an unbiased run is flagged
about 5 % of the time at 0.95), "after Holm" where the flag survives Holm's correction over the
runs; each run's rank under either score, and Kendall's tau-b of the two rankings over the top
--top-k runs by the ppi estimate and over all (--json: "favours"). The formulas are in the
reljudge docs: Scores from a few human labels.
"""


#: the line ``reljudge --help`` lists this command with
HELP = "scores under human labels from a human sample (PPI)"


def register(sub) -> None:
    """Add the ``estimate`` subcommand."""
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("estimate", help=HELP,
                       description="Estimate run scores under human labels from the judge's "
                                   "labels plus a recorded human sample (prediction-powered "
                                   "inference).",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    common.add_runs(p)
    common.add_store(p, "the label store holding the judge's labels and the human sample",
                     required=True)
    p.add_argument("--sample", required=True, help="name of a sample recorded by `sample`")
    p.add_argument("--judge", help="LLM source name (default: the one the sample was drawn "
                                   "for)")
    p.add_argument("--human-source", help="only this human source's labels (default: any human)")
    common.add_measures(p, "nDCG@10")
    p.add_argument("--baseline", help="run name for the differences (default: the first)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--seed", type=common.non_negative_int, default=0, help="bootstrap seed")
    p.add_argument("--no-ranking", dest="rank", action="store_false",
                   help="skip the ranking: it estimates every pair of runs, a cost quadratic "
                        "in the runs")
    p.add_argument("--top-k", type=int, default=10, metavar="K",
                   help="Kendall's tau of the judge-only and the estimated ranking over the "
                        "top K runs by the estimate, and over all (default 10)")
    common.add_format(p, ("table", "json", "csv", "markdown", "latex"))
    common.add_digits(p, kept="json keeps full precision; so does csv, but for its "
                                "intervals (4 decimals) and worth (an integer)")
    common.add_quiet(p)
    # a few small products: BLAS threads that spin between them cost CPU, not save time
    p.set_defaults(func=run, blas_idle=True)


def run(args) -> int:
    """Estimate and print."""
    from reljudge.cli.common import emit, working
    from reljudge.errors import ConfigError
    from reljudge.infer.scores import estimate, estimate_table
    from reljudge.io.trec import read_run
    from reljudge.store import LabelStore
    from reljudge.tables import json_dumps, render

    if not 0 < args.level < 1:
        raise ConfigError(f"--level must be between 0 and 1, got {args.level}")
    if args.top_k < 2:
        raise ConfigError(f"--top-k must be 2 or more (a ranking of one run has no tau), "
                          f"got {args.top_k}")
    runs = [read_run(r) for r in args.runs]
    with LabelStore(args.store, create=False, readonly=True) as store, working("estimating", args.quiet):
        est = estimate(store, runs, args.measures or ["nDCG@10"], sample=args.sample,
                       judge=args.judge, human_source=args.human_source, level=args.level,
                       seed=args.seed, baseline=args.baseline, top=args.top_k,
                       rank=args.rank)
    # with require (the default) estimate raises instead of None
    assert est is not None
    if est.skipped:
        from reljudge.errors import InputError

        raise InputError(f"{', '.join(est.skipped)} cannot be estimated from a pair-level "
                         f"sample (only DCG@k, P@k and RBP@k are linear in the gains with a fixed "
                         f"normaliser, and nDCG@k is a ratio of estimates); draw a query-level "
                         f"sample (--design srs-queries) for it")
    if args.format == "json":
        emit(json_dumps({"sample": est.sample, "design": est.design, "judge": est.judge,
                         "level": args.level, "runs": [r.__dict__ for r in est.rows],
                         "differences": [d.__dict__ for d in est.diffs],
                         "rankings": [r.to_json() for r in est.rankings or []],
                         "ranking_note": est.ranking_note(),
                         "favours": [f.to_json() for f in est.favours or []],
                         "warnings": est.warnings()}))
        _warn(est)
        return 0
    # one table: runs, then differences (with their p-values)
    if args.format == "csv":
        emit(render(*estimate_table(est.rows + est.diffs, args.level, with_p=True), "csv"))
        _warn(est)
        return 0
    text = render(*estimate_table(est.rows, args.level, digits=args.digits), args.format,
                  args.digits)
    if est.diffs:
        text += ("\n" if args.format == "table" else "") + render(
            *estimate_table(est.diffs, args.level, with_p=True, digits=args.digits),
            args.format, args.digits)
    for ranking in est.rankings or []:
        text += ("\n" if args.format == "table" else "") + render(
            *ranking.table(args.digits), args.format, args.digits)
    for favours in est.favours or []:
        text += ("\n" if args.format == "table" else "") + render(
            *favours.table(args.digits), args.format, args.digits)
    emit(text)
    if args.format == "table":
        print(est.note())
        print(est.ranking_note())
        for favours in est.favours or []:
            print("\n".join(favours.lines()))
        if est.favours:
            print(est.favours[0].how())
    _warn(est)
    return 0


def _warn(est: StoreEstimates) -> None:
    import sys

    for line in est.warnings():
        print(line, file=sys.stderr)
