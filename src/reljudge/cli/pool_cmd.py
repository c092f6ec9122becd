"""``reljudge pool``: which pairs need labels, and what labelling them would cost."""

from __future__ import annotations

EXAMPLES = """\
examples:
  reljudge pool runs/bm25.run runs/dense.run --depth 10
  reljudge pool runs/*.run --depth 20 --store labels.sqlite --out pairs.txt
  reljudge pool runs/*.run --store labels.sqlite --source nist --queries q.tsv \\
      --passages p.jsonl --model gpt-4o-mini      # adds the labeller's dry-run quote
"""


#: the line ``reljudge --help`` lists this command with
HELP = "pool the top k of runs; what is labelled, what is not"


def register(sub) -> None:
    """Add the ``pool`` subcommand."""
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("pool", help=HELP,
                       description="Pool the (query, document) pairs in the top k of any run, "
                                   "minus those already labelled in the store.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    common.add_runs(p)
    p.add_argument("--depth", type=int, default=10, help="pool depth k (default 10)")
    common.add_store(p, "label store: its judged pairs are not pooled again")
    p.add_argument("--source", action="append", type=common.comma_list, dest="sources",
                   metavar="NAME", help="count only labels of this source as done "
                                        "(repeatable, or NAME,NAME,...; default: every source)")
    p.add_argument("--out", type=common.output_file,
                   help="write the pairs still to label to this file (QID DOCID)")
    p.add_argument("--allow-empty", action="store_true",
                   help="let --out replace a non-empty file when nothing is left to label "
                        "(refused by default)")
    p.add_argument("--queries", help="with --passages and --model: quote the labelling cost "
                                     "(query texts: TSV, JSONL or irds:DATASET_ID)")
    p.add_argument("--passages", help="with --queries: passage texts for the quote "
                                      "(JSONL, TSV or irds:DATASET_ID)")
    p.add_argument("--model", help="judge model for the quote (or OPENAI_MODEL)")
    p.add_argument("--prompt", default="umbrela",
                   help="prompt for the quote: a shipped name or a .toml path "
                        "(default umbrela)")
    p.add_argument("--rbp-p", type=float, default=0.8, metavar="P",
                   help="persistence of the RBP residual reported per run (default 0.8)")
    common.add_format(p, ("table", "json", "csv", "markdown"))
    common.add_digits(p)
    common.add_quiet(p)
    p.set_defaults(func=run)


def run(args) -> int:
    """Pool and report."""
    from reljudge.cli.common import check_outputs, flatten, working
    from reljudge.io.files import atomic_write
    from reljudge.io.trec import read_runs
    from reljudge.pool import build_pool, judged_at_k, rbp_residual
    from reljudge.tables import json_dumps, render

    check_outputs(args.out)
    if (args.queries is None) != (args.passages is None) or args.model and not args.queries:
        from reljudge.errors import ConfigError

        raise ConfigError("the labelling quote needs --queries and --passages together "
                          "(and --model or OPENAI_MODEL); give both, or neither")
    if not 0.0 < args.rbp_p < 1.0:
        from reljudge.errors import ConfigError

        raise ConfigError(f"--rbp-p must be between 0 and 1, found {args.rbp_p}")
    runs = read_runs(args.runs)
    labelled: set = set()
    store = None
    if args.store:
        from reljudge.store import LabelStore

        store = LabelStore(args.store, create=False, readonly=True)
        names = flatten(args.sources)
        if names is not None:
            from reljudge.store import resolve_source

            known = store.sources()
            names = [resolve_source(known, n, where=args.store, option="--source").name
                     for n in names]
        labelled = store.judged_pairs(names)
    with working("pooling", args.quiet):
        pool = build_pool(runs, args.depth, labelled)
    after = labelled | set(pool.pairs)
    judged = {r.name: (judged_at_k(r, labelled, args.depth), judged_at_k(r, after, args.depth))
              for r in runs}
    residual = {r.name: (rbp_residual(r, labelled, args.rbp_p), rbp_residual(r, after, args.rbp_p))
                for r in runs}
    quote = None
    if args.queries and args.passages:
        from reljudge.io import read_passages, read_queries
        from reljudge.judge import JudgeConfig, Labeller

        cfg = JudgeConfig.from_env(model=args.model, prompt=args.prompt)
        with working("quoting the labelling cost", args.quiet):
            passages = read_passages(args.passages, {d for _, d in pool.to_label})
            quote = Labeller(cfg).quote(pool.to_label, read_queries(args.queries),
                                        passages, store)
    if store is not None:
        store.close()
    if args.out:
        atomic_write(args.out, "".join(f"{q} {d}\n" for q, d in pool.to_label),
                     allow_empty=args.allow_empty)
    if args.format == "json":
        print(json_dumps({"depth": args.depth, "pairs": len(pool.pairs), "judged": pool.judged,
                          "to_label": len(pool.to_label),
                          "per_query": [s.__dict__ for s in pool.per_query],
                          "judged_at_k": {n: {"before": b, "after": a}
                                          for n, (b, a) in judged.items()},
                          "rbp_residual": {"p": args.rbp_p, **{n: {"before": b, "after": a}
                                           for n, (b, a) in residual.items()}},
                          "quote": quote.__dict__ if quote else None}), end="")
        return 0
    per_query = render(["qid", "pooled", "judged", "to label", "share judged"],
                       [[s.qid, s.pooled, s.judged, s.to_label, s.judged_share]
                        for s in pool.per_query], args.format, args.digits)
    # one table: the per-query one (per run: --format json)
    if args.format == "csv":
        print(per_query, end="")
        return 0
    # markdown tables need blank lines
    gap = "\n" if args.format == "markdown" else ""
    print(per_query, end="")
    print(f"{gap}total: {len(pool.pairs)} pooled pairs at depth {args.depth}, {pool.judged} "
          f"labelled, {len(pool.to_label)} to label{gap}")
    print(render(["run", f"Judged@{args.depth} now", "after labelling the pool",
                  f"RBP(p={args.rbp_p}) residual now", "after labelling"],
                 [[n, b, a, *residual[n]] for n, (b, a) in judged.items()], args.format,
                 args.digits), end="")
    if quote:
        print(f"labelling quote ({quote.judge}): {quote.to_send} calls after cache "
              f"hits, ~{quote.tokens_in:,} tokens in, ~{quote.tokens_out:,} out, "
              f"~${quote.cost:.4f}" + ("" if quote.price_known else " (model price "
                                           "unknown: $0 assumed)"))
    if args.out:
        print(f"pairs to label written to {args.out}")
    return 0
