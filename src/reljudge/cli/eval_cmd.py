"""``reljudge eval``: score runs against qrels."""

from __future__ import annotations

import argparse
import sys

from reljudge.cli.common import emit, note_unjudged

DEFAULT_MEASURES = ["nDCG@10", "P@10", "R@100", "AP", "RR"]
#: what --judged adds (the first: the measure of metrics.queries.unjudged_notes, said on
#: stderr even without --judged)
JUDGED_MEASURES = ["Judged@10", "RBP(residual=True)"]

EXAMPLES = """\
examples:
  reljudge eval qrels.txt bm25.run dense.run
  reljudge eval qrels.txt bm25.run -m nDCG@10 -m 'nDCG(dcg="exp-log2")@10' -m 'P(rel=2)@5'
  reljudge eval qrels.txt bm25.run -m 'nDCG(ideal="run")@10' --per-query --json
  reljudge eval qrels.txt bm25.run --format trec -q -c   # trec_eval -q -c, its official measures
  reljudge eval qrels.txt bm25.run --format trec -m map -m P.5,10 -m ndcg_cut.10
  reljudge eval qrels.txt bm25.run --compat trec_eval-9 -m IPrec@0.6   # pytrec_eval's numbers
  reljudge eval qrels.txt new.run --judged -m nDCG@10 -m Bpref -m 'RBP(p=0.8)'
  reljudge eval -R prefs prefs.txt bm25.run --format trec -q   # trec_eval -R prefs -m all_prefs
  reljudge eval -R qrels_jg qrels.txt bm25.run -m P_avgjg.10   # qrels per assessor, averaged

conventions (trec_eval's, stated):
  ranking    by score descending, ties by docid descending (byte order); the rank column
             of the run file is ignored
  unjudged   documents count as grade 0 and never enter the ideal ranking; so do
             negative grades
  nDCG       gain = grade (dcg='log2', default) or 2^grade-1 (dcg='exp-log2'); ideal ranking
             from all judged documents (ideal='qrels', default) or the run's own top k
             (ideal='run'); a query whose ideal DCG is 0 scores 0
  rel        P, R, AP, RR, Success count grade >= rel as relevant (default rel=1, trec_eval -l)
  queries    the mean is over the run's queries that have qrels; --all-queries averages
             over every qrels query, a query missing from the run scoring 0 (trec_eval -c);
             the same flag in compare, report and run (compare's means are over the queries
             every run has). A run lacking qrels queries gets a warning line on stderr; one
             with no query in the qrels is an error
  names      a run is named by its tag; runs sharing a tag are named by their file names
  measures   in ir_measures syntax (nDCG@10, P(rel=2)@5) or trec_eval's words (map, P_10,
             P.5,10, ndcg_cut.10, iprec_at_recall..10,.20, official)
  --format trec  trec_eval's layout: its names and order, 4 decimals, counts (num_ret,
             num_rel, num_rel_ret) summed in the 'all' lines, gm_map as its geometric mean,
             runid and num_q when asked for (in official, the default there); with several
             runs each line starts with the run's name and a tab
  versions   trec_eval 10's rules by default; --compat trec_eval-9 gives 9.0.8's (those of
             pytrec_eval, ir_measures and the published TREC tables): see the README's
             conventions table. When they would give different numbers for the input at
             hand (distinct scores of a query equal as float32, or IPrec), a note on
             stderr says how many values change
  incomplete Bpref, infAP, RBP and judged_only=True (condensed lists: unjudged documents
             removed) are the measures made for incomplete judgments; --judged adds
             Judged@10 and RBP's residual (how much RBP could still rise if every unjudged
             document were relevant); without it, a run whose Judged@10 is below 0.9 gets a
             note on stderr
"""


#: the line ``reljudge --help`` lists this command with
HELP = "score runs against qrels (trec_eval semantics)"


def register(sub) -> None:
    """Add the ``eval`` subcommand."""
    from reljudge.choices import COMPAT, KINDS
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("eval", help=HELP,
                       description="Score one or more TREC runs against graded qrels.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    p.add_argument("qrels", help="TREC qrels file (QID ITER DOCID GRADE) or irds:DATASET_ID; "
                                 "with -R, judgments in that form")
    common.add_runs(p)
    common.add_measures(p, DEFAULT_MEASURES)
    p.add_argument("-q", "--per-query", action="store_true",
                   help="one row per query and run (trec_eval -q)")
    p.add_argument("-n", "--no-summary", action="store_true",
                   help="with --per-query: the queries' rows only, no 'all' row (trec_eval -n)")
    common.add_all_queries(p, short=True)
    p.add_argument("-M", "--max-docs", type=common.positive_int, metavar="N",
                   help="only each query's first N documents count (trec_eval -M)")
    p.add_argument("-J", "--judged-only", action="store_true",
                   help="every measure over the judged documents only: unjudged ones leave "
                        "each ranking and those below move up (trec_eval -J)")
    p.add_argument("-Z", "--zscores", metavar="FILE",
                   help="with --format trec: each value as its z-score against FILE's "
                        "QID MEASURE MEAN STDDEV lines (trec_eval -Z)")
    p.add_argument("-l", "--rel-level", type=common.positive_int, default=1, metavar="N",
                   help="measures given in trec_eval's words count grade >= N as relevant "
                        "(trec_eval -l; in ir_measures syntax: P(rel=2)@10)")
    p.add_argument("-N", "--num-docs", type=common.non_negative_int, default=0, metavar="N",
                   help="documents in the collection, for trec_eval's utility (trec_eval -N)")
    p.add_argument("--compat", choices=COMPAT, default=COMPAT[0],
                   help="whose rules where trec_eval's versions differ: trec_eval-10 "
                        "(default: scores as float64, iprec_at_recall's cut-off lround(r x R)) "
                        "or trec_eval-9 (9.0.8, as pytrec_eval and ir_measures: scores "
                        "rounded to float32, cut-off int(r x R + 0.9))")
    common.add_float32_scores(p)
    p.add_argument("--judged", action="store_true",
                   help="add the columns " + " and ".join(JUDGED_MEASURES) + ": how much of "
                        "each score rests on unjudged documents")
    p.add_argument("--strict", action="store_true",
                   help="refuse what trec_eval skips, naming the line: comment lines (# first) "
                        "and text after a run line's tag")
    p.add_argument("-R", "--judgments", choices=("qrels", *KINDS), default="qrels",
                   help="the judgments' form (trec_eval -R): qrels (default); prefs, lines "
                        "QID JG JSG DOCID LEVEL, and qrels_prefs, a qrels file read as "
                        "preferences, both scored with -m all_prefs (default) or prefs_simp, "
                        "...; qrels_jg, the qrels' second column naming judgment groups, "
                        "scored with -m qrels_jg (default): map_avgjg, P_avgjg, "
                        "Rprec_mult_avgjg")
    common.add_format(p, ("table", "json", "csv", "markdown", "trec", "latex"))
    common.add_digits(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Evaluate and print."""
    from reljudge.errors import ConfigError
    from reljudge.io.trec import read_zscores

    trec = args.format == "trec"
    if args.zscores and not trec:
        raise ConfigError("-Z/--zscores goes with --format trec (trec_eval's z-score lines)")
    zscores = read_zscores(args.zscores) if args.zscores else None
    if args.judgments == "qrels":
        results, lines, strings, found = _evaluate_qrels(args)
    else:
        results, lines, strings, found = _evaluate_grouped(args)
    # trec_eval's layout; several runs: each line starts with the run's name
    if trec:
        from reljudge.metrics.trec_names import trec_lines

        out = []
        for name, ev in results.items():
            prefix = f"{name}\t" if len(results) > 1 else ""
            columns = [ev.column(tm.measure) if tm.measure else strings.get((name, tm.name))
                       for tm in lines]
            out += [prefix + line for line in trec_lines(
                lines, name, ev.query_ids, columns, per_query=args.per_query,
                summary=not args.no_summary, zscores=zscores)]
        emit("".join(line + "\n" for line in out))
        return 0
    return _emit_table(args, results, found)


def _evaluate_qrels(args: argparse.Namespace):
    """(results by run, trec_eval output lines, relstring columns, coverage warnings) of
    graded qrels."""
    from reljudge.io.trec import read_qrels, read_runs
    from reljudge.metrics import evaluate_many
    from reljudge.metrics.queries import coverage_warnings
    from reljudge.metrics.trec_names import as_trec, plain_measures, relstring_column

    trec = args.format == "trec"
    given = args.measures or (["official"] if trec else DEFAULT_MEASURES)
    lines = as_trec(given, args.rel_level, args.num_docs) if trec else []
    measures = (list(dict.fromkeys(str(tm.measure) for tm in lines if tm.measure))
                if trec else plain_measures(given, args.rel_level, args.num_docs))
    if args.judged and not trec:
        measures += [m for m in JUDGED_MEASURES if m not in measures]
    computed = measures + [m for m in JUDGED_MEASURES[:1] if m not in measures]
    qrels = read_qrels(args.qrels, strict=args.strict)
    # two files with one tag: named by file instead; a query the qrels lack never changes a
    # value or a line printed (not with -c, -q or --judged either): its lines are checked only
    runs = read_runs(args.runs, strict=args.strict, queries=set(qrels.query_ids()))
    found = coverage_warnings(qrels, runs, args.all_queries)
    for line in found:
        print(f"reljudge: {line}", file=sys.stderr)
    options = dict(all_queries=args.all_queries, float32_scores=args.float32_scores or None,
                   compat=args.compat, max_docs=args.max_docs, judged_only=args.judged_only)
    results = evaluate_many(qrels, runs, computed, **options)
    # the unjudged note: the Judged columns say it already
    if not args.judged and not trec:
        note_unjudged(results)
    results = {name: ev.select(measures) for name, ev in results.items()}
    # say where 9's rules differ
    if args.compat == "trec_eval-10" and not args.float32_scores:
        from reljudge.metrics.compat import trec_eval_9_difference

        differs = trec_eval_9_difference(qrels, runs, results, **options)
        if differs:
            print(f"reljudge: {differs.note()}", file=sys.stderr)
    strings = {(run.name, tm.name): relstring_column(results[run.name], tm.length)
               for run in runs for tm in lines if tm.summary == "string" and args.per_query}
    return results, lines, strings, found


def _evaluate_grouped(args: argparse.Namespace):
    """The same for preference or judgment-group judgments (``-R``)."""
    from reljudge.errors import ConfigError
    from reljudge.io.prefs import read_prefs
    from reljudge.io.trec import read_runs
    from reljudge.metrics.judgment_groups import evaluate_groups, group_measures
    from reljudge.metrics.prefs import PREFS_SUMMED, evaluate_prefs, prefs_measures
    from reljudge.metrics.queries import coverage_warnings
    from reljudge.metrics.trec_names import named_lines

    if args.judged_only or args.judged:
        raise ConfigError(f"-J and --judged go with qrels, not -R {args.judgments}")
    groups = args.judgments == "qrels_jg"
    given = args.measures or (["qrels_jg"] if groups else ["all_prefs"])
    names = ([name for name, _ in group_measures(given, args.rel_level)] if groups
             else prefs_measures(given))
    lines = named_lines(given, names, () if groups else PREFS_SUMMED,
                        ("qrels_jg",) if groups else ("all_prefs", "prefs"))
    judgments = read_prefs(args.qrels, args.judgments, strict=args.strict)
    runs = read_runs(args.runs, strict=args.strict)
    options = dict(all_queries=args.all_queries, compat=args.compat, max_docs=args.max_docs,
                   float32_scores=args.float32_scores or None)
    if groups:
        options["rel"] = args.rel_level
    found = coverage_warnings(judgments.query_ids(), runs, args.all_queries, "judged")
    for line in found:
        print(f"reljudge: {line}", file=sys.stderr)
    evaluate = evaluate_groups if groups else evaluate_prefs
    results = {run.name: evaluate(judgments, run, given, **options) for run in runs}
    return results, lines, {}, found


def _emit_table(args: argparse.Namespace, results: dict, found: list[str]) -> int:
    """The table, CSV, Markdown, LaTeX or JSON output."""
    from reljudge.metrics.evaluation_json import evaluation_json
    from reljudge.metrics.queries import rule_text
    from reljudge.tables import json_dumps, render

    measures = next(iter(results.values())).measures
    if args.format == "json":
        emit(json_dumps(evaluation_json(results, measures, all_queries=args.all_queries,
                                        per_query=args.per_query, warnings=found)))
        return 0
    if args.per_query:
        headers = ["run", "query", *measures]
        rows = [[name, q, *row] for name, ev in results.items()
                for q, row in zip(ev.query_ids, ev.scores.tolist(), strict=False)]
        if not args.no_summary:
            rows += [[name, "all", *ev.mean().values()] for name, ev in results.items()]
    else:
        headers = ["run", "queries", *measures]
        rows = [[name, len(ev.query_ids), *ev.mean().values()] for name, ev in results.items()]
    emit(render(headers, rows, args.format, args.digits))
    if args.format == "table":
        emit(f"queries: {rule_text(args.all_queries)}; rules: {args.compat}\n")
    return 0
