"""``reljudge sample``: draw what humans should label, record it in the store, export it."""

from __future__ import annotations

EXAMPLES = """\
examples:
  reljudge sample --store labels.sqlite --judge gpt-4o-mini --name week1 \\
      --design stratified-pairs --budget 400 --seed 7 --out week1.tsv
  reljudge sample --store labels.sqlite --judge gpt-4o-mini runs/*.run --depth 10 \\
      --name q5 --design srs-queries --query-count 5 --out q5.jsonl
  reljudge sample --store labels.sqlite --judge gpt-4o-mini runs/*.run --name a1 \\
      --design active --target-width 1.5 -m DCG@10 --out a1.tsv

designs:
  srs-queries       whole queries, simple random sample: valid for every measure
  srs-pairs         pooled pairs, simple random sample: DCG@k, P@k, RBP@k, nDCG@k
  stratified-pairs  pairs stratified by the judge's grade (proportional allocation, at least
                    2 per grade): DCG@k, P@k, RBP@k, nDCG@k, usually narrower than srs-pairs
                    (nDCG@k: a ratio estimate, wide below about 20 % of the pairs; AP, RR
                    and recall need srs-queries)
  active            pairs with unequal probabilities, proportional to sqrt(judge uncertainty x
                    the pair's squared rank weights in the runs' --measure): DCG@k, P@k, RBP@k;
                    on LLMJudge about half the width of stratified-pairs at the same budget.
                    The uncertainty is the judge's grade distributions (a calibrated or panel
                    source), else its disagreement with the store's other judges, else a
                    pilot of human grades (stderr says which); none: exit 2. Give every
                    run you will estimate: other runs' intervals carry a warning

The population is the pool of the runs (RUN files, --depth), or, without runs, every pair the
judge source labelled in the store. The draw, each pair's inclusion probability and its
stratum are recorded in the store under --name; `reljudge estimate` uses them. The export
(.tsv or .jsonl by extension) lists the pairs in the order people should grade them, with
query and passage text (from the store, or --queries-file / --passages-file).

A warning (stderr) with a recommended --budget / --query-count is printed when the sample is
smaller than the one at which the benchmark's 95 % intervals covered >= 93 % for every
judge: fewer than 25 expected sampled pairs in a run's top --depth (per run with RUN files;
otherwise for the largest top k the pool allows), or a query sample of fewer than all
queries (not for active samples: `estimate` warns per row). The sample is still drawn and
recorded (the reljudge docs: Scores from a few human labels).

--target-width W (active design, RUN files): the smallest budget whose expected interval of
--measure is at most W wide for every run, at most --budget; printed, then drawn. The
expected width leaves out `estimate`'s allowance for judge misses a sample leaves out (on
LLMJudge, intervals came out up to a sixth wider than planned). When no budget reaches W,
one line with the narrowest width, exit 2.
"""


#: the line ``reljudge --help`` lists this command with
HELP = "draw a random sample of pairs for humans to label"


def register(sub) -> None:
    """Add the ``sample`` subcommand."""
    from reljudge.choices import DESIGNS
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("sample", help=HELP,
                       description="Draw what humans should label, with known inclusion "
                                   "probabilities, and record it in the label store.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    common.add_store(p, "label store (the sample is recorded here)", required=True)
    p.add_argument("--judge", required=True,
                   help="LLM source name in the store whose labels the estimate will use")
    p.add_argument("--name", required=True, type=common.name,
                   help="name of the sample (unique in the store)")
    p.add_argument("--design", choices=DESIGNS,
                   help="what to draw (default stratified-pairs, with --target-width active; "
                        "see below)")
    p.add_argument("--budget", type=int, help="pairs to label (pair designs; for "
                   "srs-queries: queries = budget / mean pooled pairs per query)")
    p.add_argument("--query-count", type=int, metavar="N",
                   help="srs-queries: number of queries to draw")
    p.add_argument("--target-width", type=float, metavar="W",
                   help="active: plan the budget whose expected --measure interval is at most "
                        "W wide for every run (--budget: the most to spend)")
    # active: the one measure steering the draw and plan
    common.add_measures(p, "DCG@10")
    p.add_argument("--seed", type=common.non_negative_int, default=0,
                   help="seed of the draw (default 0)")
    common.add_runs(p, required=False,
                    help="TREC runs whose pool is the population (default: every pair the "
                         "judge labelled)")
    p.add_argument("--depth", type=int, default=10, help="pool depth with RUN files (default 10)")
    p.add_argument("--out", type=common.output_file, help="export for annotators: .tsv or .jsonl")
    p.add_argument("--queries-file", help="query texts (TSV/JSONL) when the store lacks them")
    p.add_argument("--passages-file", help="passage texts (JSONL/TSV) when the store lacks them")
    p.set_defaults(func=run)


def run(args) -> int:
    """Draw, record, export."""
    import sys

    from reljudge.cli.common import check_outputs
    from reljudge.errors import ConfigError
    from reljudge.infer.sample import draw, export
    from reljudge.store import LabelStore

    args.design = args.design or ("active" if args.target_width is not None
                                  else "stratified-pairs")
    _check_active(args)
    if args.design == "srs-queries" and args.budget is None and args.query_count is None:
        raise ConfigError("srs-queries needs --query-count or --budget")
    if args.design != "srs-queries" and args.budget is None and args.target_width is None:
        raise ConfigError(f"{args.design} needs --budget (pairs to label)")
    if args.out and not args.out.endswith((".tsv", ".jsonl")):
        raise ConfigError(f"--out {args.out}: expected a .tsv or .jsonl file name")
    check_outputs(args.out)
    with LabelStore(args.store, create=False) as store:
        from reljudge.store import resolve_source

        args.judge = resolve_source(store.source_list(), args.judge, where=args.store,
                                    option="--judge").name
        grades = store.source_grades(args.judge)
        runs = []
        if args.runs:
            from reljudge.io.trec import read_run
            from reljudge.pool import build_pool

            runs = [read_run(r) for r in args.runs]
            pairs = build_pool(runs, args.depth).pairs
            pool = {"runs": args.runs, "depth": args.depth}
        else:
            pairs = sorted(grades)
            pool = {"judge_labelled": True}
        missing = [pr for pr in pairs if pr not in grades]
        if missing:
            raise ConfigError(f"{len(missing)} pooled pairs have no label from judge "
                              f"{args.judge!r} (first: {missing[0][0]} {missing[0][1]}); "
                              f"label the pool first")
        params = {"judge": args.judge, "pool": pool}
        # the estimate needs the population
        if args.runs and args.design != "srs-queries":
            params["population"] = [list(p) for p in pairs]
        sizes: dict | None = None
        # the active design's lines, printed once drawn
        said: list = []
        if args.design == "active":
            sizes, said = _active_sizes(args, store, pairs, grades, runs, params)
        sample = draw(pairs, args.design, args.budget or 0, args.seed, name=args.name,
                      grades=grades, queries=args.query_count, params=params,
                      pair_sizes=sizes)
        text = None
        if args.out:
            queries, passages = store.texts(sample.pairs())
            if args.queries_file:
                from reljudge.io import read_queries

                queries.update(read_queries(args.queries_file))
            if args.passages_file:
                from reljudge.io import read_passages

                # of an irds: dataset, these ids only
                needed = {d for _, d in sample.pairs()}
                passages.update({d: p.get("text", "") for d, p in
                                 read_passages(args.passages_file, needed).items()})
            text, lacking = export(sample, queries, passages, args.out)
        store.add_sample(sample)
    # the sample's file, written with --out
    if text is not None:
        from reljudge.io.files import atomic_write

        atomic_write(args.out, text)
    for line, stream in said:
        print(line, file=stream)
    print(f"sample {sample.name!r}: {sample.design}, {len(sample.items)} pairs"
          + (f" of {sample.params['queries']} queries" if sample.unit == "query" else "")
          + f", seed {sample.seed}, recorded in {args.store}")
    if args.out:
        print(f"export for annotators written to {args.out}")
        if lacking:
            print(f"note: {lacking} exported pairs have no query or passage text "
                  f"(give --queries-file / --passages-file)", file=sys.stderr)
    # the benchmark's reliable sizes are stratified-pairs'; estimate warns per row for active
    warning = None if sample.design == "active" else _size_warning(sample, pairs, grades,
                                                                    runs, args.depth)
    if warning:
        print(warning, file=sys.stderr)
    return 0


def _check_active(args) -> None:
    """--target-width and --measure serve the active design only; W is positive."""
    from reljudge.errors import ConfigError

    if args.design != "active":
        for flag, value in (("--target-width", args.target_width), ("-m", args.measures)):
            if value is not None:
                raise ConfigError(f"{flag} steers the active design; give --design active "
                                  f"(not {args.design})")
    if args.target_width is not None:
        if not args.target_width > 0:
            raise ConfigError(f"--target-width must be a positive width, got "
                              f"{args.target_width}")
        if not args.runs:
            raise ConfigError("--target-width plans the widths of the runs' intervals: give "
                              "the RUN files")
    if len(args.measures or []) > 1:
        raise ConfigError(f"the active design is steered by one measure; give one -m (got "
                          f"{', '.join(args.measures)})")


def _active_sizes(args, store, pairs, grades, runs, params) -> tuple[dict, list]:
    """The active design's size of each pooled pair (and, with --target-width, the planned
    budget into args.budget), and the lines to print once drawn: the planned budget
    (stdout) and which uncertainty signal it used (stderr)."""
    import sys

    from reljudge.choices import PPI_PAGE
    from reljudge.errors import ConfigError, InputError
    from reljudge.infer import active
    from reljudge.infer.scores import PAIR_MEASURES
    from reljudge.metrics import parse_measure

    measure = parse_measure((args.measures or ["DCG@10"])[0])
    if measure.name not in PAIR_MEASURES or measure.cutoff is None:
        raise ConfigError(f"-m {measure}: the active design weighs each pair by its rank "
                          f"weight in a measure linear in the gains: give DCG@k, P@k or RBP@k")
    signal = active.store_signal(store, args.judge, pairs, measure)
    said: list = []
    weights = active.run_weights(runs, pairs, measure)
    if args.target_width is not None:
        most = args.budget or len(pairs)
        queries = len({q for q, _ in grades})
        budget, width = active.plan(signal, weights, queries, args.target_width, most)
        if budget is None:
            raise InputError(f"--target-width {args.target_width:g}: no budget up to {most} "
                             f"pairs reaches it; the narrowest expected {measure} interval "
                             f"this pool allows at {most} pairs is {width:.4g} wide (from "
                             f"{signal.source}); give --target-width {width:.4g} or more"
                             + ("" if args.budget is None else " or a larger --budget"))
        said.append((f"planned budget: {budget} pairs, expected {measure} interval at most "
                     f"{width:.4g} wide for every run (target {args.target_width:g}), before "
                     f"the allowance for judge misses a sample leaves out (on LLMJudge it "
                     f"made intervals up to a sixth wider, {PPI_PAGE})", sys.stdout))
        args.budget = budget
        if signal.residual is None:
            said.append((f"warning: the planned widths take {signal.source} for the judge's "
                         f"error against people; alike judges make them optimistic (on "
                         f"LLMJudge, 142 pairs planned for width 1 gave 5.4, {PPI_PAGE}); "
                         f"grade a pilot of at least {active.PILOT_MIN} pooled pairs for "
                         f"widths on the human scale", sys.stderr))
    said.append((f"active design: uncertainty from {signal.source}; weights from "
                 + (f"{len(runs)} run(s)' {measure} rank discounts" if runs else
                    "no runs (every pair weighs the same: give RUN files to weigh by rank)"),
                 sys.stderr))
    params.update(signal=signal.source, measure=str(measure), target_width=args.target_width,
                  runs=[r.name for r in runs])
    return dict(zip(pairs, active.sizes(signal, weights).tolist(), strict=True)), said


def _size_warning(sample, pairs, grades, runs, depth: int) -> str | None:
    """Warn when the sample is smaller than the one at which the benchmark's intervals
    covered >= 93 %, with the budget that would reach it."""
    import math

    from reljudge.choices import PPI_PAGE
    from reljudge.infer.sample import QUERY_COVERAGE, RELIABLE_TOP_PAIRS, recommended_budget

    if sample.unit == "query":
        have, total = sample.params["queries"], sample.params["population_queries"]
        if have >= total:
            return None
        sizes = ", ".join(f"{c:.0%} at {q}" for q, c in QUERY_COVERAGE)
        return (f"warning: a sample of {have} of {total} queries: in the benchmark no query "
                f"sample up to {QUERY_COVERAGE[-1][0]} of 25 queries gave 95 % intervals "
                f"covering >= 93 % for every judge (lowest coverage {sizes} queries; "
                f"{PPI_PAGE}), so the estimates will carry a warning. Recommended: --query-count "
                f"{min(max(have, QUERY_COVERAGE[-1][0]), total)} or more, or a pair sample "
                f"for DCG@k, P@k, RBP@k and nDCG@k")
    if runs:
        from reljudge.pool import top_k

        pooled = set(pairs)
        label = ((lambda p: "all") if sample.design == "srs-pairs"
                 else (lambda p: f"grade={grades[p]}"))
        tops = []
        for run in runs:
            q, d, _ = top_k(run, depth)
            tops.append([label(p) for p in zip(q.tolist(), d.tolist(), strict=True)
                         if p in pooled])
        rec = recommended_budget(sample, tops, len(pairs))
        if rec is None:
            return None
        expected, budget = rec
        return (f"warning: this sample puts about {expected:.1f} pairs in the top {depth} of "
                f"the worst-served run, fewer than the {RELIABLE_TOP_PAIRS} at which the "
                f"benchmark's 95 % intervals covered >= 93 % ({PPI_PAGE}); its estimates "
                f"will carry a warning. Recommended: --budget {budget}")
    queries = len({q for q, _ in pairs})
    # a run's top `depth` holds at most this many
    per_run = min(queries * depth, len(pairs))
    expected = len(sample.items) * per_run / len(pairs)
    if expected >= RELIABLE_TOP_PAIRS:
        return None
    budget = min(math.ceil(len(sample.items) * RELIABLE_TOP_PAIRS / expected), len(pairs))
    return (f"warning: a run's top {depth} holds at most {per_run} of the {len(pairs)} pairs, "
            f"so this sample puts at most about {expected:.1f} in it, fewer than the "
            f"{RELIABLE_TOP_PAIRS} at which the benchmark's 95 % intervals covered >= 93 % "
            f"({PPI_PAGE}); give RUN files for a per-run check. Recommended: --budget of at "
            f"least {budget}")
