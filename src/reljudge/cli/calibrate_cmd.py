"""``reljudge calibrate``: correct one judge, or combine several, from a human sample."""

from __future__ import annotations

import argparse
import sys

EXAMPLES = """\
examples:
  reljudge calibrate --store labels.sqlite --human-source nist --judge-source gpt-4o-mini
  reljudge calibrate --store labels.sqlite --human-source nist --judge-source a \\
      --judge-source b --judge-source c --panel abc --pair-count 1000
  reljudge calibrate --reference human.qrels --judge judge.qrels --out calibrated.tsv

One judge: fits P(human grade | judge grade) on the human-labelled pairs, smoothed by a
Dirichlet prior of --strength pseudo-counts centred on the judge's own grade (0.9, plus 0.1
spread like the human grades: trust the judge until the sample says otherwise); the judge's
logprob grade distributions, when the store holds them for every label, count as soft
counts. Several judges with --panel NAME: a Dawid-Skene panel whose judge confusion matrices
are anchored by the human labels and refined by EM over all pairs (judges may cover different
pairs). The fitted distribution of every pair the judge(s) graded goes to the store as the
source calibrated:JUDGE or panel:NAME (kind llm), with a derivation record of what it was
fitted on; `reljudge labels merge --policy source=calibrated:JUDGE` takes its most probable
grade (add --derived expected for its expected grade). --out writes a TSV:
qid docid p0 p1 p2 p3 expected mode. --folds K (default 5) first measures the same fit on
held-out queries (k-fold by query) and prints it beside the raw judge(s); --folds 0 skips it.

--decision thresholds: kappa-type statistics reward spread, and a calibrated distribution's
mode or median pulls grades to the middle. With thresholds, the expected grade is cut at three
points fitted on the human sample to maximise quadratic kappa (inside each fold too, for the
held-out check); the derived source then holds those grades as certain, and the derivation
record keeps the cuts. On TREC DL 2023 (1,000 human pairs) the mean grade of the 3 or 5 best
judges so cut (--panel-method mean) edged past the best single judge's quadratic kappa and
ordinal alpha on held-out queries, within query noise, but not its Cohen's kappa
(the reljudge docs: Calibration and panels).
"""


#: the line ``reljudge --help`` lists this command with
HELP = "calibrate a judge (or a panel of judges) on human labels"


def register(sub) -> None:
    """Add the ``calibrate`` subcommand."""
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("calibrate", help=HELP,
                       description="Fit a judge's calibration, or a panel of judges, on a "
                                   "human sample and write the derived labels.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    common.add_store(p, "label store to read from and write the derived source to")
    p.add_argument("--human-source", help="with --store: the human source to fit on")
    p.add_argument("--judge-source", action="append", default=[],
                   help="with --store: a judge source (repeatable, with --panel)")
    p.add_argument("--reference", help="human qrels file (instead of --human-source)")
    p.add_argument("--judge", action="append", default=[],
                   help="judge qrels file (repeatable, with --panel)")
    p.add_argument("--clip", action="store_true",
                   help="clip file grades outside 0..3 (default: reject with file:line)")
    p.add_argument("--panel", metavar="NAME", help="combine the judges into panel:NAME")
    p.add_argument("--no-em", action="store_true",
                   help="panel: fit on the human-labelled pairs only (no EM over the rest)")
    p.add_argument("--strength", type=float, default=None,
                   help="Dirichlet prior strength in pseudo-counts (default: 10 for a "
                        "calibration, 4 for a panel)")
    p.add_argument("--pair-count", type=int, default=None, metavar="N",
                   help="fit on N random human-labelled pairs (default: all of them)")
    p.add_argument("--seed", type=common.non_negative_int, default=0,
                   help="seed of --pair-count and the folds")
    p.add_argument("--folds", type=int, default=5,
                   help="held-out check: folds by query (default 5; 0 skips the check)")
    p.add_argument("--panel-method", choices=("dawid-skene", "mean"), default="dawid-skene",
                   help="with --panel: a Dawid-Skene model (default) or the judges' mean "
                        "grade (best with --decision thresholds)")
    p.add_argument("--force", action="store_true",
                   help="write the derived labels to --store even when they were not checked "
                        "on held-out queries (--folds 0) or did worse there than the raw "
                        "judge")
    p.add_argument("--decision", choices=("mode", "median", "expected", "thresholds"),
                   default="median",
                   help="how a grade is read off each distribution (default median): the "
                        "grade the held-out check measures, the one written to --store (the "
                        "derivation records the rule) and the one `labels merge` takes; "
                        "thresholds: grades cut from the expected grade "
                        "at three points fitted on the sample to maximise quadratic kappa")
    p.add_argument("--out", type=common.output_file,
                   help="write the distributions to this TSV file")
    common.add_format(p, ("table", "json", "csv", "markdown", "latex"))
    common.add_digits(p, 3)
    common.add_quiet(p)
    p.set_defaults(func=run_calibrate)


def _load(args: argparse.Namespace):
    """(human name, human qrels, {judge: qrels}, {judge: probs or None})."""
    from pathlib import Path

    from reljudge.errors import ConfigError
    from reljudge.io.label_files import read_judge, read_judges

    if args.store:
        from reljudge.store.by_name import labels_from_store

        if args.reference or args.judge:
            raise ConfigError("give either --store with sources or --reference/--judge files")
        if not args.human_source or not args.judge_source:
            raise ConfigError("with --store give --human-source and --judge-source")
        return labels_from_store(args.store, args.human_source, args.judge_source,
                                 reference_option="--human-source",
                                 judge_option="--judge-source", reference_kind="human",
                                 probs=True, readonly=False)
    if not args.reference or not args.judge:
        raise ConfigError("give --reference and --judge files, or --store with "
                          "--human-source and --judge-source")
    human, _ = read_judge(args.reference, clip=args.clip)
    judges, _ = read_judges(args.judge, clip=args.clip)
    return Path(args.reference).name, human, judges, dict.fromkeys(judges)


def run_calibrate(args: argparse.Namespace) -> int:
    """Fit, check on held-out queries, write."""
    from reljudge.cli.common import check_outputs, working
    from reljudge.errors import ConfigError
    from reljudge.infer.derive import calibrate_judge, panel_judges
    from reljudge.tables import json_dumps, render

    check_outputs(args.out)
    if args.pair_count is not None and args.pair_count < 1:
        raise ConfigError(f"--pair-count {args.pair_count}: give a positive number of pairs")
    if args.folds == 1 or args.folds < 0:
        raise ConfigError(f"--folds {args.folds}: give 0 (no check) or at least 2")
    human_name, human, judges, probs = _load(args)
    kw = {} if args.strength is None else {"strength": args.strength}
    if args.panel:
        if len(judges) < 2:
            raise ConfigError("--panel needs at least two judges")
        with working("fitting the panel", args.quiet):
            derived = panel_judges(human, judges, name=args.panel, human_name=human_name,
                                   em=not args.no_em, pair_count=args.pair_count, **kw,
                                   seed=args.seed, folds=args.folds, decision=args.decision,
                                   method=args.panel_method)
    else:
        if len(judges) != 1:
            raise ConfigError("give one judge to calibrate, or --panel NAME for several")
        (judge_name, judge), = judges.items()
        with working("calibrating", args.quiet):
            derived = calibrate_judge(human, judge, judge_name=judge_name,
                                      human_name=human_name, probs=probs[judge_name], **kw,
                                      pair_count=args.pair_count, seed=args.seed, folds=args.folds,
                                      decision=args.decision)
    refused = derived.worse_than_raw() if args.store and not args.force else None
    # refused: nothing is written, --out neither
    if args.out and refused is None:
        from reljudge.infer.calibrate import expected_grade
        from reljudge.io.files import atomic_write

        expected = expected_grade(derived.probs)
        atomic_write(args.out, "qid\tdocid\tp0\tp1\tp2\tp3\texpected\tmode\n" + "".join(
            f"{q}\t{d}\t" + "\t".join(f"{x:.6f}" for x in p) + f"\t{e:.6f}\t"
            f"{int(p.argmax())}\n" for (q, d), p, e in zip(derived.pairs, derived.probs,
                                                            expected, strict=True)))
    written = None
    if args.store and refused is None:
        from reljudge.store import LabelStore

        with LabelStore(args.store, create=False) as store:
            written = store.add_derived(derived.name, derived.pairs, derived.probs.tolist(),
                                        method=derived.method, fitted_on=derived.fitted_on,
                                        grades=derived.grades().tolist())
    if args.format == "json":
        print(json_dumps({"source": derived.name, "derivation": written,
                          "pairs": len(derived.pairs), "fitted_on": derived.fitted_on,
                          "not_written": refused}), end="")
        return _refused(args, derived, refused)
    _print_model(derived, args.format, render, args.digits)
    say = _say(args.format)
    if derived.heldout and args.format != "csv":
        cols = ["labels", "pairs", "kappa", "kappa_quadratic", "alpha_ordinal", "mae"]
        print(f"\nheld-out check: {args.folds}-fold by query, decision {args.decision}")
        print(render(cols, [[k, *(v[c] for c in cols[1:])] for k, v in derived.heldout.items()],
                     args.format, args.digits), end="")
    if written is not None:
        say(f"\nwrote {len(derived.pairs)} labels to {args.store} as source {derived.name} "
            f"(derivation {written})")
    if args.out and refused is None:
        say(f"wrote {len(derived.pairs)} distributions to {args.out}")
    return _refused(args, derived, refused)


def _refused(args, derived, why: str | None) -> int:
    """Exit 2, saying why, when the derived labels were not written to the store."""
    if why is None:
        return 0
    print(f"reljudge: error: {derived.name} not written to {args.store}: {why}; nothing was "
          "written (--force writes them anyway)", file=sys.stderr)
    return 2


def _say(fmt: str):
    """How to print the lines around the tables: csv is one table (the model's) on stdout, so
    with csv the rest goes to stderr (or to --format json)."""
    return print if fmt != "csv" else (lambda *a, **k: print(*a, **k, file=sys.stderr))


def _print_model(derived, fmt: str, render, digits: int = 3) -> None:
    import numpy as np

    f = derived.fitted_on
    say = _say(fmt)
    say(f"{derived.name}: fitted on {f['pairs_used']} human pairs of "
        f"{len(f['queries_used'])} queries ({f['human_source']})")
    if derived.method == "calibration":
        say("P(human grade | judge grade)")
        rows = [[g, *row.tolist()] for g, row in enumerate(derived.model.table)]
        print(render(["judge \\ human", "0", "1", "2", "3"], rows, fmt, digits), end="")
    elif derived.model is None:
        say(f"mean of {len(f['judge_sources'])} judges' grades")
    else:
        m = derived.model
        say(f"Dawid-Skene: {m.iterations} EM iterations, "
            f"{'converged' if m.converged else 'NOT converged'}; grade prior "
            + " ".join(f"{x:.3f}" for x in m.prior))
        rows = [[j, *np.diagonal(c).tolist()] for j, c in zip(m.judges, m.confusion,
                                                              strict=True)]
        print(render(["judge", "P(0|0)", "P(1|1)", "P(2|2)", "P(3|3)"], rows, fmt, digits),
              end="")
    if "decision" in f:
        d = f["decision"]
        say(f"thresholds on the expected grade: {' '.join(f'{c:.3f}' for c in d['cuts'])} "
            f"(quadratic kappa {d['kappa_quadratic']:.4f} on the {d['pairs']} sampled pairs)")
