"""``reljudge probe``: can the judge be gamed? Control pairs from known grades, graded by the
judge, flip rates and what a run could gain."""

from __future__ import annotations

import argparse

EXAMPLES = """\
examples:
  # what would it cost? (nothing is sent)
  reljudge probe --queries queries.tsv --passages passages.jsonl --qrels human.qrels \\
      --model gpt-4o-mini --dry-run
  # probe the default prompt and the guarded one on the same probes, at most $1
  reljudge probe --queries queries.tsv --passages passages.jsonl --qrels human.qrels \\
      --model gpt-4o-mini --prompt umbrela --prompt guarded --max-cost 1 --store labels.sqlite
  # and what each run could gain by inserting the query into its non-relevant top 10
  reljudge probe --queries q.tsv --passages p.jsonl --qrels human.qrels bm25.run dense.run \\
      --base-url http://localhost:8080/v1 --model local

kinds (--kinds, default all): query-insert (the query at a random word boundary of a known
non-relevant passage), query-words (its content words scattered), rubric-echo (the prompt's
own top-grade description prepended), instruction (an imperative to the assessor asking for
the top grade), salad+query (word salad of the collection with the query inserted), salad
(word salad without the query's words: the control), padding (a known relevant passage
followed by as many off-topic words: should not move). A flip is a pair the judge graded 0
clean and >= 1 (>= 2) probed; rates carry Wilson 95 % intervals, McNemar's exact p compares
probed with clean. Probes and their grades are kept in the store's probe tables, never among
its labels. Every answer is cached first: a run again, after Ctrl-C or a kill, pays nothing
twice. Judge, endpoint and limit flags are those of `reljudge label`.
exit codes: 0 every probe graded; 2 bad input or settings; 3 stopped early (budget or
Ctrl-C: run it again to continue); 4 finished, some probes without a grade
"""

HELP = "probe a judge: can inserted queries, rubric echoes or instructions game it?"


def register(sub) -> None:
    """Add the ``probe`` subcommand."""
    from reljudge.cli import HelpFormatter, common
    from reljudge.cli.label_cmd import add_judge_flags
    from reljudge.probe.kinds import KINDS

    p = sub.add_parser("probe", help=HELP, epilog=EXAMPLES, formatter_class=HelpFormatter,
                       description="Probe a judge with control pairs made from known grades: "
                                   "how often does an altered non-relevant passage get graded "
                                   "relevant?")
    src = p.add_argument_group("what to probe")
    src.add_argument("--queries", required=True, help="queries: TSV (qid<TAB>text) or JSONL")
    src.add_argument("--passages", required=True,
                     help="passages: JSONL ({docid, text, title?}) or TSV (docid<TAB>text); "
                          "their words are the word salad's")
    src.add_argument("--qrels", help="the known grades (human qrels); or --human-source "
                                     "with --store")
    src.add_argument("--human-source", metavar="NAME",
                     help="with --store: the source whose grades are the known ones")
    src.add_argument("--kinds", type=common.comma_list, action="append", metavar="KIND,...",
                     help=f"probe kinds (repeatable; default all: {', '.join(KINDS)})")
    src.add_argument("--per-kind", type=common.positive_int, default=50, metavar="N",
                     help="base pairs per kind, drawn round-robin over the queries (default 50)")
    src.add_argument("--probe-seed", type=int, default=0, metavar="N",
                     help="the seed of the pairs drawn and of every probe's text (default 0; "
                          "--seed is the judge's decoding seed)")
    common.add_runs(src, required=False,
                    help="TREC runs: what each could gain by the query-insert exploit")
    src.add_argument("--depth", type=common.positive_int, default=10,
                     help="with RUN files: the top documents probed (default 10)")
    common.add_measures(src, "nDCG@10")
    out = p.add_argument_group("where probes go")
    out.add_argument("--out", metavar="FILE", type=common.output_file,
                     help="write every probed pair as JSONL: judge, kind, qid, docid, the "
                          "probe's id and exact text, the clean and the probed grade")
    common.add_store(out, "label store to keep the probes and their grades in (apart from "
                          "its labels)")
    add_judge_flags(p, repeated=("prompt",))
    common.add_format(p, ("table", "json"))
    common.add_quiet(p)
    p.set_defaults(func=run_probe)


def known_grades(args: argparse.Namespace):
    """The known grades: --qrels, or --human-source of an existing --store."""
    from reljudge.errors import ConfigError

    if bool(args.qrels) == bool(args.human_source):
        raise ConfigError("probe: give the known grades as --qrels FILE or as "
                          "--human-source NAME with --store (one of them)")
    if args.qrels:
        from reljudge.io.trec import read_qrels

        return read_qrels(args.qrels)
    if not args.store:
        raise ConfigError("probe: --human-source needs --store")
    from reljudge.store import LabelStore

    with LabelStore(args.store, create=False, readonly=True) as store:
        known = store.qrels(args.human_source)
        if not len(known):
            raise ConfigError(f"probe: the store {store.path} has no grades of source "
                              f"{args.human_source!r}")
    return known


def run_probe(args: argparse.Namespace) -> int:
    """Build the probes, (dry run: quote) ask the judge, print the report; every input is
    checked before the store is opened or anything is sent."""
    from reljudge.cli.common import check_outputs, flatten, show_progress, warn
    from reljudge.cli.label_cmd import check_cache, config_from_args
    from reljudge.io import read_passages, read_queries
    from reljudge.io.trec import read_run
    from reljudge.probe.kinds import DEFAULT_KINDS
    from reljudge.probe.run import analyse, check_budget, plan_probes, run_probe_job
    from reljudge.store.probes import ProbeSink

    check_outputs(args.out)
    prompts = args.prompt or []
    args.prompt = prompts[0] if prompts else None
    config = config_from_args(args)
    queries = read_queries(args.queries)
    passages = read_passages(args.passages)
    runs = [read_run(p) for p in args.runs or []]
    known = known_grades(args)
    plan = plan_probes(config, queries, passages, known, prompts=prompts or [config.prompt],
                       kinds=flatten(args.kinds) or DEFAULT_KINDS, per_kind=args.per_kind,
                       seed=args.probe_seed, runs=runs, depth=args.depth, on_warning=warn)
    if not args.dry_run:
        check_cache(config.resolved_cache_dir())
    # an existing store only: a refusal below creates none
    store = _open_store(args)
    try:
        quotes = plan.quotes(ProbeSink(store) if store is not None else None)
        if args.dry_run:
            print_quotes(quotes, args.format == "json")
            return 0
        check_budget(config, quotes, store.total_spend() if store is not None else 0.0)
        if store is None and args.store:
            from reljudge.store import LabelStore

            store = LabelStore(args.store)
        reports = run_probe_job(plan, store, progress=show_progress(args.quiet),
                                handle_sigint=True)
        result = analyse(plan, reports, store, runs, args.measures or ["nDCG@10"])
    finally:
        if store is not None:
            store.close()
    if args.out:
        import json

        from reljudge.io.files import atomic_write

        atomic_write(args.out, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                       for r in result.pairs))
    print_result(result, args.format == "json")
    if result.stop_reason:
        return 3
    return 0 if result.complete else 4


def _open_store(args: argparse.Namespace):
    """The store when it exists (read only for a dry run); None for a SQLite file not made
    yet (a PostgreSQL store is opened, and made, at once)."""
    if not args.store:
        return None
    from pathlib import Path

    from reljudge.store import LabelStore
    from reljudge.store.postgres import is_url

    if not is_url(args.store) and not Path(args.store).exists():
        return None
    return LabelStore(args.store, readonly=args.dry_run)


def print_quotes(quotes, as_json: bool) -> None:
    """The dry run's table: per template what would be sent and its cost."""
    from reljudge.tables import json_dumps, render

    if as_json:
        print(json_dumps([e.__dict__ for e in quotes]), end="")
        return
    print(render(["judge", "probe pairs", "in store", "in cache", "to send", "est. tokens in",
                  "est. tokens out", "est. cost $"],
                 [[e.judge, e.items, e.already_done, e.cached, e.to_send, e.tokens_in,
                   e.tokens_out, e.cost] for e in quotes]), end="")
    print("dry run: nothing was sent"
          + ("" if all(e.price_known for e in quotes) else
             " (no price known for this model: $0 assumed; pass --price-in/--price-out)"))


def print_result(result, as_json: bool) -> None:
    """The report: a table per template x kind, the runs' gains, warnings."""
    from reljudge.cli.common import warn
    from reljudge.probe.report import gains_table, kinds_table
    from reljudge.tables import json_dumps, render

    if as_json:
        print(json_dumps(result.summary()), end="")
        return
    print(render(*kinds_table(result.kinds)), end="")
    if result.gains:
        print()
        print(render(*gains_table(result.gains)), end="")
    if result.skipped_queries:
        print(f"{len(result.skipped_queries)} queries skipped: no known non-relevant pair")
    for note in result.warnings:
        warn(note)
