"""``reljudge label``: grade query-passage pairs with an LLM."""

from __future__ import annotations

import argparse
from pathlib import Path

from reljudge.grades import GRADE_MAX, GRADE_MIN

EXAMPLES = """\
examples:
  # what would it cost? (nothing is sent)
  reljudge label --queries queries.tsv --passages passages.jsonl bm25.run dense.run \\
      --depth 10 --model gpt-4o-mini --dry-run
  # label the pool into the store, at most $2, 32 calls at a time
  reljudge label --queries queries.tsv --passages passages.jsonl bm25.run --depth 10 \\
      --store labels.sqlite --model gpt-4o-mini --max-cost 2 --concurrency 32
  # a local model behind vLLM / Ollama / llama.cpp (any OpenAI-compatible server)
  reljudge label --queries q.tsv --passages p.jsonl --pairs pairs.txt --qrels-out llm.qrels \\
      --base-url http://localhost:11434/v1 --model llama3.1:8b --prompt basic
  # one job over two vLLM replicas, 32 calls in flight on each (or --endpoints endpoints.toml)
  reljudge label --queries q.tsv --passages p.jsonl bm25.run --store labels.sqlite \\
      --model Qwen/Qwen2.5-7B-Instruct --concurrency 32 \\
      --base-url http://gpu1:8000/v1 --base-url http://gpu2:8000/v1

endpoint: --base-url / --api-key / --model, or OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL.
several endpoints: --base-url repeated (each gets --concurrency, --rpm and --tpm of its own),
or --endpoints FILE, a TOML file of [[endpoints]] tables (or a JSON list) with url and
optional api_key_env, model, concurrency, rpm, tpm. A pair goes to an endpoint with a free
worker; an endpoint whose breaker opens (--breaker-after) or that fails fatally is drained
and its pairs go to the others; the job stops (exit 2) only when every endpoint is down. The
summary says what each endpoint answered and which were drained, and why. Endpoints serving
one model are replicas (--no-replicas: not): one cache entry per request whichever answered.
The key is used for requests only: it is never written to the cache, the store or any output.
Every answer is cached (--cache-dir) before anything else happens, so a re-run, or a run after
a crash or Ctrl-C, pays only for what it does not have. Unreadable answers are re-asked once;
answers cut off at --max-tokens before their grade (kind truncated) are not; those, refusals
and failed calls are recorded as failures with their reason, never as grades.
Before the first paid call the endpoint is checked (it answers; a key is there if it needs
one); a job whose calls fail with connection/TLS errors, or the same error, --breaker-after
times in a row stops at once with the URL and the cause. --max-cost is a cap: a call starts
only if its worst-case cost (prompt + --max-tokens) fits beside the calls in flight.
exit codes:
  0  every pair got a grade
  2  bad input or settings, or the endpoint cannot be used (unreachable, TLS, key, breaker;
     with several endpoints: every one of them)
  3  stopped early (budget or Ctrl-C): run the same command again to continue
  4  finished, but some pairs have no grade (the summary lists failures by kind; a re-run asks
     again for failed calls, --retry-failed also for refused or unreadable answers)
  5  --batch: batches are still running at the provider (nothing is wrong): run the same
     command again later (or pass --wait) to collect their answers

batch API (--batch, needs --store): builds the same requests as online (same prompt,
parameters and cache keys), uploads them in files of at most --batch-requests requests and
--batch-bytes bytes, records every file and batch id in the store, and exits 5. Running the
same command again collects finished batches into the answer cache and the store, submits
what is still missing (expired or failed lines included; --batch-fallback online sends those
online at once instead) and never submits a pair twice, even after kill -9. --wait polls every
--poll-interval seconds until every batch is done. Cost is at --batch-discount times the
online price; --max-cost is reserved per batch file (its worst case) before it is submitted.
"""

EXIT_OK, EXIT_STOPPED, EXIT_FAILURES, EXIT_RUNNING = 0, 3, 4, 5

#: the keys of BatchResult.summary() the ``label --batch`` table shows, in order; a header is
#: its key with spaces unless named here
BATCH_TABLE = ("judge", "items", "graded", "without_grade", "batches_submitted",
               "requests_submitted", "batches_collected", "answers_collected", "batches_open",
               "tokens_in", "tokens_out", "cost")
BATCH_HEADERS = {"items": "pairs x repeats", "cost": "batch cost $"}

#: JudgeConfig fields shown in the "the judge" group; every other field is a "limits" flag
JUDGE_GROUP = ("model", "base_url", "api_key", "prompt", "temperature", "max_tokens",
               "token_field", "seed", "logprobs", "repeats", "aggregate")


def add_judge_flags(parser, repeated: tuple[str, ...] = ()):
    """The groups "the judge" and "limits, money and cache": every JudgeConfig flag and
    --dry-run; returns the limits group for a command's own flags."""
    judge = parser.add_argument_group("the judge")
    limits = parser.add_argument_group("limits, money and cache")
    add_config_flags(judge, limits, repeated)
    limits.add_argument("--dry-run", action="store_true",
                        help="print what would be sent and a quote of its cost; send nothing")
    return limits


def add_config_flags(judge, limits, repeated: tuple[str, ...] = ()) -> None:
    """One flag per JudgeConfig field (its type, choices and help come from the model);
    ``repeated``: fields whose flag may be given several times (a list)."""
    import typing
    from pathlib import Path

    from pydantic import SecretStr

    from reljudge.judge import JudgeConfig

    for name, field in JudgeConfig.model_fields.items():
        group = judge if name in JUDGE_GROUP else limits
        flag = "--" + name.replace("_", "-")
        # repeatable: several endpoints at once
        if name == "base_url":
            group.add_argument(flag, action="append", metavar="URL",
                               help=f"{field.description}; repeat it to spread the job over "
                               "several endpoints (each with --concurrency, --rpm, --tpm)")
            continue
        if name == "endpoints":
            group.add_argument(flag, metavar="FILE", help=field.description)
            continue
        types = [t for t in typing.get_args(field.annotation) or (field.annotation,)
                 if t is not type(None)]
        kind = types[0] if len(types) == 1 else field.annotation
        # yes, no, or decided by the job
        if kind is bool and field.default is None:
            group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None,
                               help=field.description)
        elif kind is bool:
            group.add_argument(flag, action="store_true", default=None,
                               help=field.description)
        elif name in repeated:
            group.add_argument(flag, action="append", help=f"{field.description} (repeatable)")
        elif typing.get_origin(kind) is typing.Literal:
            group.add_argument(flag, choices=typing.get_args(kind), help=field.description)
        else:
            convert = kind if kind in (int, float) else str
            assert kind in (int, float, str, Path, SecretStr), (name, kind)
            group.add_argument(flag, type=convert, help=field.description)


#: the grade scale as the help texts write it
SCALE = f"{GRADE_MIN}-{GRADE_MAX}"
#: the line ``reljudge --help`` lists this command with
HELP = f"grade query-passage pairs {SCALE} with an LLM"


def register(sub) -> None:
    """Add the ``label`` subcommand."""
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("label", help=HELP,
                       description=f"Grade (query, passage) pairs on the TREC {SCALE} scale with "
                                   "any OpenAI-compatible LLM endpoint.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    src = p.add_argument_group("what to label")
    src.add_argument("--queries", required=True, help="queries: TSV (qid<TAB>text), JSONL or "
                                                  "irds:DATASET_ID")
    src.add_argument("--passages", required=True,
                     help="passages: JSONL ({docid, text, title?}), TSV (docid<TAB>text) "
                          "or irds:DATASET_ID (the pooled ids only)")
    src.add_argument("--pairs", help="pairs file: QID DOCID, QID 0 DOCID, qrels or JSONL "
                                     "(instead of RUN files)")
    common.add_runs(src, required=False,
                    help="TREC runs to pool from, to depth --depth (or give --pairs)")
    src.add_argument("--depth", type=int, default=10, help="pool depth with RUN files (default 10)")
    out = p.add_argument_group("where labels go")
    common.add_store(out, "label store to write every judgment to")
    out.add_argument("--qrels-out", type=common.output_file,
                     help="write this judge's final grades as TREC qrels")
    run = add_judge_flags(p)
    run.add_argument("--wait", action="store_true",
                     help="with --batch: poll until every batch is done (default: submit, exit "
                          "5, run again to collect)")
    common.add_format(p, ("table", "json"))
    common.add_quiet(p)
    p.set_defaults(func=run_label)


def config_from_args(args: argparse.Namespace):
    """A JudgeConfig from the flags (and OPENAI_* variables): ``--base-url`` once is the
    endpoint, repeated (or ``--endpoints FILE``) several endpoints."""
    from reljudge.errors import ConfigError
    from reljudge.judge import JudgeConfig
    from reljudge.judge.http.endpoints import endpoints_from_file

    values = {name: getattr(args, name) for name in JudgeConfig.model_fields}
    # --base-url is repeatable: a list
    urls = values["base_url"] or []
    if values["endpoints"]:
        if urls:
            raise ConfigError("give --base-url or --endpoints FILE, not both")
        values["endpoints"] = endpoints_from_file(values["endpoints"])
        values["base_url"] = None
    elif len(urls) > 1:
        values["endpoints"] = [{"url": u} for u in urls]
        values["base_url"] = None
    else:
        values["base_url"] = urls[0] if urls else None
    return JudgeConfig.from_env(**values)


def run_label(args: argparse.Namespace) -> int:
    """Load inputs, label, print the summary."""
    import asyncio

    from reljudge.cli.common import check_outputs, show_progress, warn
    from reljudge.errors import ConfigError
    from reljudge.io import read_pairs, read_passages, read_queries
    from reljudge.io.trec import write_qrels
    from reljudge.judge import Labeller
    from reljudge.judge.report import judge_qrels
    from reljudge.tables import json_dumps, render

    if bool(args.pairs) == bool(args.runs):
        raise ConfigError("label: give RUN files to pool from, or --pairs FILE (one of them)")
    if args.wait and not args.batch:
        raise ConfigError("--wait waits for Batch API jobs: it goes with --batch")
    check_outputs(args.qrels_out)
    queries = read_queries(args.queries)
    if args.pairs:
        pairs = read_pairs(args.pairs)
    else:
        from reljudge.io.trec import read_run
        from reljudge.pool import build_pool

        pairs = build_pool([read_run(r) for r in args.runs], args.depth).pairs
    # of an irds: dataset, these ids only
    passages = read_passages(args.passages, {d for _, d in pairs})
    config = config_from_args(args)
    check_cache(config.resolved_cache_dir())
    labeller = Labeller(config, on_warning=warn)
    check_texts(labeller, args, pairs, queries, passages)
    store = None
    from reljudge.store.postgres import is_url

    # a SQLite file this command would create (a PostgreSQL store is never removed)
    new_store = bool(args.store) and not is_url(args.store) and not Path(args.store).exists()
    # a dry run writes nothing
    if args.store and not (args.dry_run and new_store):
        from reljudge.store import LabelStore

        store = LabelStore(args.store, readonly=args.dry_run)
    try:
        if store is not None and not args.dry_run:
            # every refusal before a write
            labeller.check(pairs, queries, passages, store)
            # a text replaced goes to the store's text history
            store.add_queries(queries)
            store.add_passages(passages)
        if args.dry_run:
            est = labeller.quote(pairs, queries, passages, store)
            if args.format == "json":
                print(json_dumps(est.__dict__), end="")
            else:
                price = "" if est.price_known else " (no price known for this model: $0 " \
                                                   "assumed; pass --price-in/--price-out)"
                print(render(["judge", "pairs x repeats", "in store", "in cache", "to send",
                              "est. tokens in", "est. tokens out", "est. cost $"],
                             [[est.judge, est.items, est.already_done, est.cached, est.to_send,
                               est.tokens_in, est.tokens_out, est.cost]]), end="")
                print(f"dry run: nothing was sent{price}"
                      + (f" (batch price: x{config.batch_discount})" if config.batch else ""))
            return 0
        if config.batch:
            return run_batch_job(args, labeller, store, pairs, queries, passages)
        report = asyncio.run(labeller.label(pairs, queries, passages, store,
                                            progress=show_progress(args.quiet),
                                            handle_sigint=True))
        if args.qrels_out:
            write_qrels(judge_qrels(labeller.judge_ids, config.aggregate, store=store,
                                    report=report), args.qrels_out)
    except BaseException:
        if new_store and store is not None and not any(x.events for x in store.sources()):
            # the command made this file and wrote no label: nothing is left
            store.close()
            remove_store_files(args.store)
        raise
    finally:
        if store is not None:
            store.close()
    print_report(report, args.format == "json")
    say_where_grades_went(args, config)
    if report.stop_reason:
        return EXIT_STOPPED
    return EXIT_OK if report.complete else EXIT_FAILURES


def check_texts(labeller, args: argparse.Namespace, pairs, queries, passages) -> None:
    """Refuse pairs whose query or passage has no text (or an empty one), naming the files."""
    from reljudge.errors import InputError

    try:
        labeller.check_inputs(pairs, queries, passages)
    except InputError as e:
        raise InputError(f"{e.detail} (texts from --queries {args.queries}, --passages "
                         f"{args.passages})") from None


def check_cache(folder: Path) -> None:
    """Refuse an answer cache folder this process cannot write: every answer goes there
    before anything else happens."""
    from reljudge.errors import ConfigError, InputError
    from reljudge.io.files import check_writable

    try:
        check_writable(folder, folder=True)
    except InputError as e:
        raise ConfigError(f"the answer cache (--cache-dir) {e}") from None


def say_where_grades_went(args: argparse.Namespace, config) -> None:
    """Without --store or --qrels-out the grades are only in the answer cache: say so."""
    from reljudge.cli.common import say

    if not args.store and not args.qrels_out:
        say(f"reljudge: the grades are only in the answer cache ({config.resolved_cache_dir()}); "
            "run the same command with --store FILE or --qrels-out FILE to keep them (from "
            "the cache, no new calls)")


def remove_store_files(path) -> None:
    """Delete a SQLite store and its -wal, -shm and -journal companions."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def run_batch_job(args, labeller, store, pairs, queries, passages) -> int:
    """``label --batch``: collect, grade, submit; print where the job stands."""
    import asyncio

    from reljudge.cli.common import say, show_progress
    from reljudge.io.trec import write_qrels
    from reljudge.judge.batch.job import BatchJob
    from reljudge.judge.report import judge_qrels
    from reljudge.tables import json_dumps, render

    job = BatchJob(labeller, store, say=say)
    result = asyncio.run(job.run(pairs, queries, passages, wait=args.wait,
                                 progress=show_progress(args.quiet), handle_sigint=True))
    if args.qrels_out and not result.open:
        write_qrels(judge_qrels([labeller.judge_id], labeller.config.aggregate, store=store),
                    args.qrels_out)
    summary = result.summary()
    if args.format == "json":
        print(json_dumps(summary), end="")
    else:
        print(render([BATCH_HEADERS.get(k, k.replace("_", " ")) for k in BATCH_TABLE],
                     [[summary[k] for k in BATCH_TABLE]]), end="")
        for kind, n in result.batch_failures.most_common():
            print(f"  {n:>6} batch line(s) failed: {kind}")
        if result.open:
            print(f"{len(result.open)} batch(es) still running: run the same command again to "
                  "collect them (or pass --wait)")
    if not result.open:
        say_where_grades_went(args, labeller.config)
    if result.stop_reason:
        return EXIT_STOPPED
    if result.open:
        return EXIT_RUNNING
    return EXIT_OK if result.complete else EXIT_FAILURES


def print_report(report, as_json: bool) -> None:
    """The labelling summary: failures are always in it; the warnings only in JSON (the
    table's reader saw them on stderr as they happened)."""
    from dataclasses import replace

    from reljudge.tables import json_dumps

    print(json_dumps(report.summary()) if as_json else replace(report, warnings=[]), end="")
