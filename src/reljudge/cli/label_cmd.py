"""``reljudge label``: grade query-passage pairs with an LLM."""

from __future__ import annotations

import argparse
import sys

EXAMPLES = """\
examples:
  # what would it cost? (nothing is sent)
  reljudge label --queries queries.tsv --passages passages.jsonl --runs bm25.run dense.run \\
      --depth 10 --model gpt-4o-mini --dry-run
  # label the pool into the store, at most $2, 32 calls at a time
  reljudge label --queries queries.tsv --passages passages.jsonl --runs bm25.run --depth 10 \\
      --store labels.sqlite --model gpt-4o-mini --max-cost 2 --concurrency 32
  # a local model behind vLLM / Ollama / llama.cpp (any OpenAI-compatible server)
  reljudge label --queries q.tsv --passages p.jsonl --pairs pairs.txt --qrels-out llm.qrels \\
      --base-url http://localhost:11434/v1 --model llama3.1:8b --prompt basic

endpoint: --base-url / --api-key / --model, or OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL.
The key is used for requests only: it is never written to the cache, the store or any output.
Every answer is cached (--cache-dir) before anything else happens, so a re-run, or a run after
a crash or Ctrl-C, pays only for what it does not have. Unreadable answers are re-asked once;
refusals and failed calls are recorded as failures with their reason, never as grades.
exit codes: 0 done, 2 bad input or endpoint refused the job, 3 stopped early (budget or Ctrl-C:
run the same command again to continue).
"""


def register(sub) -> None:
    """Add the ``label`` subcommand."""
    from reljudge.cli import HelpFormatter

    p = sub.add_parser("label", help="grade query-passage pairs 0-3 with an LLM",
                       description="Grade (query, passage) pairs on the TREC 0-3 scale with any "
                                   "OpenAI-compatible LLM endpoint.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    src = p.add_argument_group("what to label")
    src.add_argument("--queries", required=True, help="queries: TSV (qid<TAB>text) or JSONL")
    src.add_argument("--passages", required=True,
                     help="passages: JSONL ({docid, text, title?}) or TSV (docid<TAB>text)")
    which = src.add_mutually_exclusive_group(required=True)
    which.add_argument("--pairs", help="pairs file: QID DOCID, QID 0 DOCID, qrels or JSONL")
    which.add_argument("--runs", nargs="+", metavar="RUN", help="TREC runs to pool from")
    src.add_argument("--depth", type=int, default=10, help="pool depth with --runs (default 10)")
    out = p.add_argument_group("where labels go")
    out.add_argument("--store", help="label store (SQLite) to write every judgment to")
    out.add_argument("--qrels-out", help="write this judge's final grades as TREC qrels")
    judge = p.add_argument_group("the judge")
    judge.add_argument("--model", help="model name (or OPENAI_MODEL)")
    judge.add_argument("--base-url", help="endpoint URL (or OPENAI_BASE_URL); default OpenAI")
    judge.add_argument("--api-key", help="API key (or OPENAI_API_KEY); local servers need none")
    judge.add_argument("--prompt", default="umbrela",
                       help="umbrela (default), basic, json, or a template .toml file")
    judge.add_argument("--temperature", type=float, default=0.0)
    judge.add_argument("--max-tokens", type=int, help="output token limit per answer")
    judge.add_argument("--seed", type=int, help="sampling seed, where the endpoint supports it")
    judge.add_argument("--logprobs", action="store_true",
                       help="ask for logprobs; store P(grade) and the expected grade")
    judge.add_argument("--samples", type=int, default=1, help="ask N times per pair")
    judge.add_argument("--aggregate", choices=("majority", "mean", "median"),
                       default="majority", help="how samples combine (majority: ties go to "
                                                "the lower grade)")
    run = p.add_argument_group("limits, money and cache")
    run.add_argument("--concurrency", type=int, default=16, help="calls in flight (default 16)")
    run.add_argument("--rpm", type=float, help="requests per minute limit")
    run.add_argument("--tpm", type=float, help="tokens per minute limit")
    run.add_argument("--timeout", type=float, default=60.0,
                     help="seconds per call, the whole call (default 60)")
    run.add_argument("--transport", choices=("auto", "aiohttp", "httpx"), default="auto",
                     help="HTTP library under the openai SDK's endpoint, headers and errors: "
                          "aiohttp (auto: the default, fastest at high concurrency) or the "
                          "SDK's own httpx client")
    run.add_argument("--max-attempts", type=int, default=6, help="attempts per call")
    run.add_argument("--max-cost", type=float, help="stop starting calls after this many USD")
    run.add_argument("--price-in", type=float, help="USD per million input tokens")
    run.add_argument("--price-out", type=float, help="USD per million output tokens")
    run.add_argument("--cache-dir", help="answer cache folder (default: the user cache dir)")
    run.add_argument("--retry-failed", action="store_true",
                     help="ask again for pairs whose earlier judgment failed (unreadable or "
                          "refused); failed calls (timeouts, 5xx) are always asked again")
    run.add_argument("--dry-run", action="store_true",
                     help="print what would be sent and its estimated cost; send nothing")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_label)


def config_from_args(args: argparse.Namespace):
    """A JudgeConfig from the flags (and OPENAI_* variables)."""
    from reljudge.judge import JudgeConfig

    return JudgeConfig.from_env(
        model=args.model, base_url=args.base_url, api_key=args.api_key, prompt=args.prompt,
        temperature=args.temperature, max_tokens=args.max_tokens, seed=args.seed,
        logprobs=args.logprobs, samples=args.samples, aggregate=args.aggregate,
        concurrency=args.concurrency, rpm=args.rpm, tpm=args.tpm, timeout=args.timeout,
        transport=args.transport,
        max_attempts=args.max_attempts, max_cost=args.max_cost, cache_dir=args.cache_dir,
        price_in=args.price_in, price_out=args.price_out, retry_failed=args.retry_failed)


def run_label(args: argparse.Namespace) -> int:
    """Load inputs, label, print the summary."""
    import asyncio

    from reljudge.cli.common import check_outputs
    from reljudge.io import read_pairs, read_passages, read_queries
    from reljudge.judge import Labeller
    from reljudge.report.tables import json_dumps, render

    check_outputs(args.qrels_out)
    queries = read_queries(args.queries)
    passages = read_passages(args.passages)
    if args.pairs:
        pairs = read_pairs(args.pairs)
    else:
        from reljudge.pool import build_pool
        from reljudge.trec import read_run

        pairs = build_pool([read_run(r) for r in args.runs], args.depth).pairs
    labeller = Labeller(config_from_args(args))
    store = None
    if args.store:
        from reljudge.store import LabelStore

        store = LabelStore(args.store)
        store.add_queries(queries)
        store.add_passages(passages)
    try:
        if args.dry_run:
            est = labeller.estimate(pairs, queries, passages, store)
            if args.json:
                print(json_dumps(est.__dict__), end="")
            else:
                price = "" if est.price_known else " (no price known for this model: $0 " \
                                                   "assumed; pass --price-in/--price-out)"
                print(render(["judge", "pairs x samples", "in store", "in cache", "to send",
                              "est. tokens in", "est. tokens out", "est. cost $"],
                             [[est.judge, est.items, est.already_done, est.cached, est.to_send,
                               est.tokens_in, est.tokens_out, est.cost]]), end="")
                print(f"dry run: nothing was sent{price}")
            return 0
        report = asyncio.run(labeller.label(pairs, queries, passages, store,
                                            progress=not args.quiet and sys.stderr.isatty()))
        if args.qrels_out:
            write_judge_qrels(report, store, labeller.judge_id, args.aggregate, args.qrels_out)
    finally:
        if store is not None:
            store.close()
    print_report(report, args.json)
    return 3 if report.stop_reason else 0


def write_judge_qrels(report, store, judge_id: str, aggregate: str, path: str) -> None:
    """This judge's final grades (from the store when given: all runs, else this run)."""
    import numpy as np

    from reljudge.trec import write_qrels
    from reljudge.types import Qrels

    if store is not None:
        qrels = store.merge(f"source={judge_id}", aggregate).qrels
    else:
        grades = report.grades(aggregate)
        qrels = Qrels.from_arrays([q for q, _ in grades], [d for _, d in grades],
                                  np.array(list(grades.values()), dtype=np.int64))
    write_qrels(qrels, path)


def print_report(report, as_json: bool) -> None:
    """The labelling summary: failures are always in it."""
    from reljudge.report.tables import json_dumps, render

    if as_json:
        print(json_dumps(report.summary()), end="")
        return
    print(render(["judge", "pairs x samples", "already in store", "from cache", "paid calls",
                  "labelled", "failed", "not sent", "tokens in", "tokens out", "cost $"],
                 [[report.judge, report.items, report.already_done, report.cached, report.calls,
                   report.labelled, report.failed, report.not_sent, report.tokens_in,
                   report.tokens_out, report.cost]]), end="")
    if report.failed:
        print("failures: " + ", ".join(f"{n} {r}" for r, n in
                                       report.failure_reasons.most_common()))
    else:
        print("failures: none")
    if not report.price_known and report.calls:
        print("cost: no price known for this model ($0 assumed); pass --price-in/--price-out")
    if report.stop_reason:
        print(f"stopped early ({report.stop_reason}): run the same command again to continue; "
              f"nothing already answered will be paid for again")
