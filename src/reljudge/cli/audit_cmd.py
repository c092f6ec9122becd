"""``reljudge audit``: how far can the judge be trusted?"""

from __future__ import annotations

import argparse

EXAMPLES = """\
examples:
  reljudge audit --reference human.qrels --judge gpt4o.qrels
  reljudge audit --reference human.qrels --judges-dir judges/ --clip runs/*.run
  reljudge audit --reference human.qrels --judges-dir judges/ runs/*.run -m nDCG@10 -m AP
  reljudge audit --reference human.qrels --judge llm.qrels --bootstrap 1000 --json
  reljudge audit --store labels.sqlite --human-source nist   # every judge source of the store
  reljudge audit --store labels.sqlite --annotators --bootstrap 1000   # people vs people

columns: exact agreement; Cohen's kappa unweighted, linear (kappa_lin) and quadratic
(kappa_quad); Krippendorff's alpha, ordinal; Spearman; leniency = mean(judge - reference),
positive when the judge is more generous; mae = mean |judge - reference|. With RUN files: each
run is scored with -m (default nDCG@10) under both label sets; tau = Kendall's tau-b and tau_ap
(Yilmaz et al. 2008) between the two system rankings; max_rank_change = the largest move of one
run. tau_ap's ties: runs with equal scores are ranked by run name (ascending) in each ranking,
then tau_ap is the judge's ranking scored against the reference's as if untied (no tie
correction, unlike tau-b; tau_ap is not symmetric). With several -m, these three columns come once per measure, named "tau (MEASURE)" etc.
--json adds binary kappas at >=1/>=2/>=3, alpha nominal/interval, Pearson, per-grade
precision/recall, confusion matrices, bootstrap intervals, and agreement among the judges.
A statistic that cannot be computed (a constant rater) is shown as '-' and explained.
--favours (with RUN files): per judge, the runs it favours: each run's judge-only score minus
its score under the reference (exact where the reference labels every query the judge labels;
where it labels some, those queries are taken as a random sample of the judge's and the score
is estimate's query-level PPI estimate, with its 95 % interval), flagged "over-rates" or
"under-rates" where that interval excludes 0, each run's rank under either, and Kendall's tau-b
of the two rankings over the top --top-k runs and over all (--json: "favours_by_measure").
  reljudge audit --reference human.qrels --judges-dir judges/ runs/*.run --favours

--calibrate adds a calibrated:JUDGE row per judge, --panel a Dawid-Skene panel:all row
(--panel-best N: a panel of the N judges with the best training quadratic kappa). Their labels
are predicted by k-fold cross-fitting BY QUERY (--folds): each fold's model is fitted only on
human labels of the other folds' queries (--pair-count N of them, if given), so these rows show
held-out statistics, on the same pairs as the raw rows. --decision thresholds fits, inside
each fold too, three cuts on the expected grade that maximise quadratic kappa on the training
sample; with --panel-method mean the panel is the chosen judges' mean grade so cut.
  reljudge audit --reference human.qrels --judges-dir judges/ --calibrate --panel --pair-count 1000
  reljudge audit --reference human.qrels --judges-dir judges/ --panel-best 5 \
      --panel-method mean --decision thresholds --pair-count 1000
"""

#: the line ``reljudge --help`` lists this command with
HELP = "agreement of LLM judges with reference (human) labels"


def register(sub) -> None:
    """Add the ``audit`` subcommand."""
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("audit", help=HELP,
                       description="Audit one or many judges against reference labels: item "
                                   "agreement, and (with runs) system-ranking agreement.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    p.add_argument("--reference", help="reference (human) qrels file or irds:DATASET_ID")
    p.add_argument("--judge", action="append", default=[], help="judge qrels (repeatable)")
    p.add_argument("--judges-dir", help="a folder of judge label files (*.txt, *.qrels, "
                   "compressed or not)")
    common.add_store(p, "read labels from a label store instead of files")
    p.add_argument("--human-source", metavar="NAME",
                   help="with --store: the human source the judges are measured against, as "
                        "in calibrate")
    p.add_argument("--judge-source", action="append", default=[], metavar="NAME",
                   help="with --store: a judge source (repeatable; default: every LLM "
                        "source of the store but the reference)")
    p.add_argument("--annotators", action="store_true",
                   help="with --store: the human annotators instead: each one's pairs, "
                        "seconds per pair and grades; Cohen's kappa (unweighted, linear, "
                        "quadratic) of every two over the pairs both graded; Krippendorff's "
                        "alpha over all; --bootstrap intervals resample queries")
    common.add_runs(p, required=False,
                    help="TREC runs: system agreement (each run scored under both label sets)")
    common.add_measures(p, "nDCG@10")
    common.add_all_queries(p)
    common.add_float32_scores(p)
    p.add_argument("--bootstrap", type=int, default=None, metavar="N",
                   help="bootstrap resamples over queries for 95%% intervals (e.g. 1000; "
                        "default none, and 1000 with --annotators, as labels stats)")
    p.add_argument("--seed", type=common.non_negative_int, default=0,
                   help="bootstrap seed (default 0)")
    p.add_argument("--favours", action="store_true",
                   help="with runs: the runs each judge over- or under-rates against the "
                        "reference, with intervals and both rankings")
    p.add_argument("--top-k", type=int, default=10, metavar="K",
                   help="with --favours: Kendall's tau over the top K runs by the reference "
                        "score, and over all (default 10)")
    p.add_argument("--clip", action="store_true",
                   help="clip grades outside 0..3 (default: reject the file with file:line)")
    p.add_argument("--sort", default=None, help="sort rows by this column (descending)")
    p.add_argument("--confusion", action="store_true", help="print each judge's confusion matrix")
    p.add_argument("--no-ensembles", action="store_true",
                   help="skip the majority and mean-rounded ensemble rows")
    g = p.add_argument_group("held-out calibration and panels (fitted on the reference)")
    g.add_argument("--calibrate", action="store_true",
                   help="add a calibrated row per judge (held-out folds by query)")
    g.add_argument("--panel", action="store_true",
                   help="add a Dawid-Skene panel of all judges (held-out folds by query)")
    g.add_argument("--panel-best", type=int, action="append", default=[], metavar="N",
                   help="add a panel of the N best judges, chosen on training folds "
                        "(repeatable)")
    g.add_argument("--folds", type=int, default=5, help="folds by query (default 5)")
    g.add_argument("--pair-count", type=int, default=None, metavar="N",
                   help="human pairs drawn from each fold's training queries (default: all)")
    g.add_argument("--strength", type=float, default=None,
                   help="Dirichlet prior strength in pseudo-counts (default: 10 for a "
                        "calibration, 4 for a panel)")
    g.add_argument("--panel-method", choices=("dawid-skene", "mean"), default="dawid-skene",
                   help="how --panel/--panel-best combine judges: a Dawid-Skene model "
                        "(default) or the judges' mean grade (best with --decision "
                        "thresholds)")
    g.add_argument("--decision", choices=("mode", "median", "expected", "thresholds"),
                   default="median",
                   help="grade from a calibrated distribution: most probable, median (least "
                        "absolute error; default), expected grade rounded, or thresholds "
                        "on the expected grade fitted on each fold's training sample to "
                        "maximise quadratic kappa")
    common.add_format(p, ("table", "json", "csv", "markdown", "latex"))
    common.add_digits(p, 3)
    common.add_quiet(p)
    p.set_defaults(func=run_audit)


def load_labels(args: argparse.Namespace):
    """(reference name, reference qrels, {judge: qrels}, {judge: clipped count})."""
    from pathlib import Path

    from reljudge.errors import ConfigError
    from reljudge.io.files import content_suffix
    from reljudge.io.label_files import read_judge, read_judges

    if args.store:
        from reljudge.store.by_name import labels_from_store

        if not args.human_source:
            raise ConfigError("with --store give --human-source (the reference) and, to "
                              "audit some judges only, --judge-source")
        name, ref, judges, _ = labels_from_store(
            args.store, args.human_source, args.judge_source or None,
            reference_option="--human-source", judge_option="--judge-source")
        return name, ref, judges, {}
    if not args.reference:
        raise ConfigError("give --reference (or --store with --human-source)")
    files = [Path(j) for j in args.judge]
    if args.judges_dir:
        folder = Path(args.judges_dir)
        if not folder.is_dir():
            raise ConfigError(f"--judges-dir {folder}: "
                              + ("not a folder" if folder.exists() else "no such folder"))
        files += sorted(p for p in folder.iterdir() if content_suffix(p) in (".txt", ".qrels"))
    if not files:
        raise ConfigError(f"{args.judges_dir}: no judge label files (*.txt, *.qrels) in it"
                          if args.judges_dir else "give at least one --judge or --judges-dir")
    ref, _ = read_judge(args.reference, clip=args.clip)
    judges, clipped = read_judges(files, clip=args.clip)
    return Path(args.reference).name, ref, judges, clipped


def run_audit(args: argparse.Namespace) -> int:
    """Load, audit, print."""
    from reljudge.audit import audit_json, audit_measures
    from reljudge.audit.result import measures_table
    from reljudge.cli.common import working
    from reljudge.io.trec import read_runs
    from reljudge.metrics.evaluate import parse_measures
    from reljudge.tables import json_dumps, render

    if args.annotators:
        return _annotators(args)
    measures = [str(m) for m in parse_measures(args.measures or ["nDCG@10"])]
    name, ref, judges, clipped = load_labels(args)
    check_shared(name, ref, judges)
    runs = read_runs(args.runs) if args.runs else None
    if args.favours and not runs:
        from reljudge.errors import ConfigError

        raise ConfigError("--favours compares runs: give RUN files")
    if args.top_k < 2:
        from reljudge.errors import ConfigError

        raise ConfigError(f"--top-k must be 2 or more (a ranking of one run has no tau), "
                          f"got {args.top_k}")
    with working("auditing", args.quiet):
        spec, derived = heldout_rows(args, ref, judges)
        results = audit_measures(ref, judges, runs, measures if runs else measures[:1],
                                 bootstrap=args.bootstrap or 0, seed=args.seed,
                                 with_ensembles=not args.no_ensembles, reference_name=name,
                                 clipped=clipped, derived=derived,
                                 all_queries=args.all_queries,
                                 float32_scores=args.float32_scores, favours=args.favours,
                                 top=args.top_k)
    result = results[0]
    if args.format == "json":
        print(json_dumps(audit_json(results, spec, list(derived))), end="")
        return 0
    columns, values = measures_table(results)
    rows = [dict(zip(columns, v, strict=True)) for v in values]
    if args.sort:
        if args.sort not in columns:
            from reljudge.errors import ConfigError

            raise ConfigError(f"--sort {args.sort}: no such column; columns: {', '.join(columns)}")
        rows.sort(key=lambda r: (r.get(args.sort) is None, -(r.get(args.sort) or 0))
                  if args.sort != "judge" else r["judge"])
    print(render(columns, [[r.get(c) for c in columns] for r in rows], args.format,
                 args.digits), end="")
    if args.format != "table":
        return 0
    print_notes(result, clipped)
    if args.store:
        print_probes(args.store)
    if spec is not None:
        from reljudge.audit.fitted_rows import describe

        print(describe(spec))
    for res in results if args.favours else []:
        for j in res.judges:
            if j.favours is not None:
                print(f"\nthe runs {j.name} favours ({res.measure}, against {name})")
                print(render(*j.favours.table(args.digits), args.format, args.digits), end="")
                print("\n".join(j.favours.lines()))
    if args.favours and result.judges and result.judges[0].favours is not None:
        print(result.judges[0].favours.how())
    if args.confusion:
        for j in result.judges:
            print(f"\nconfusion of {j.name} (rows = reference grade, columns = judge grade)")
            print(render(["ref \\ judge", "0", "1", "2", "3"],
                         [[g, *row] for g, row in enumerate(j.items.confusion)],
                         args.format, args.digits), end="")
    return 0


def check_shared(name: str, ref, judges: dict) -> None:
    """Refuse a judge that labelled no pair the reference labelled: nothing to compare (its
    row was all '-', exit 0)."""
    from reljudge.audit.items import join
    from reljudge.errors import InputError

    for judge, qrels in judges.items():
        if len(join(ref, qrels).qids) == 0:
            raise InputError(f"no pair in common with the reference {name} ({len(ref)} "
                             f"reference pairs, {len(qrels)} judge pairs): nothing to compare; "
                             "give labels of the same queries and passages", judge)


def heldout_rows(args: argparse.Namespace, ref, judges):
    """(spec, {row: out-of-fold qrels}) for --calibrate / --panel / --panel-best, or (None, {})."""
    if not (args.calibrate or args.panel or args.panel_best):
        return None, {}
    from reljudge.audit.fitted_rows import HeldoutSpec, heldout_judges

    spec = HeldoutSpec(args.calibrate, args.panel, tuple(args.panel_best), args.folds,
                       args.pair_count, args.seed, args.strength, args.decision,
                       args.panel_method)
    return spec, heldout_judges(ref, judges, spec)


def print_probes(location) -> None:
    """One line per judge the store holds probes of (``reljudge probe``), apart from the
    audit's numbers."""
    from reljudge.store import LabelStore

    with LabelStore(location, create=False, readonly=True) as store:
        if not store.probe_judges():
            return
        from reljudge.probe.stored import stored_report, summary_lines

        lines = summary_lines(stored_report(store).kinds)
    print("probes (reljudge probe; never part of the numbers above):")
    for line in lines:
        print(f"  {line}")


def print_notes(result, clipped) -> None:
    """Undefined statistics, clipping, one-sided pairs, inter-judge agreement."""
    # clipped counts travel in the result (JudgeAudit.clipped)
    for line in result.notes():
        print(line)


def _annotators(args: argparse.Namespace) -> int:
    """``audit --store S --annotators``: the annotator report."""
    from reljudge.cli.annotators_view import annotator_report, annotator_text
    from reljudge.errors import ConfigError, InputError
    from reljudge.store import LabelStore
    from reljudge.tables import json_dumps

    if not args.store:
        raise ConfigError("--annotators reads a label store: give --store")
    if args.bootstrap is not None and args.bootstrap < 0:
        raise ConfigError(f"--bootstrap resamples must be 0 (none) or more, not {args.bootstrap}")
    with LabelStore(args.store, create=False, readonly=True) as store:
        report = annotator_report(store, args.bootstrap, args.seed)
    if report is None:
        raise InputError(f"{args.store}: no human grades: no annotators to report")
    if args.format == "json":
        print(json_dumps(report.to_dict()), end="")
        return 0
    if args.format in ("csv", "latex"):
        raise ConfigError("--annotators prints tables (table, markdown) or --format json")
    print(annotator_text(report, args.format, args.digits), end="")
    return 0
