"""``reljudge batch``: the Batch API jobs recorded in a label store (status, collect, cancel)."""

from __future__ import annotations

import argparse
import sys

EXAMPLES = """\
examples:
  reljudge batch status --store labels.sqlite     # poll the provider, show every batch
  reljudge batch collect --store labels.sqlite    # answers of finished batches -> cache, store
  reljudge batch collect --store labels.sqlite --wait
  reljudge batch cancel --store labels.sqlite     # cancel the batches still running

The judge settings are the ones saved when the batches were submitted (reljudge label
--batch); the key comes from --api-key or OPENAI_API_KEY and is never saved. status never
submits anything. collect submits no new request: it only creates the batch of a file that a
killed run uploaded but did not submit; pairs an expired or cancelled batch did not answer are
sent again by the next `reljudge label --batch` run (or online with --batch-fallback online).
exit codes:
  0  done (collect: every pair of the collected batches has a grade)
  2  bad input or settings, or the provider cannot be reached
  3  collect --wait: stopped by Ctrl-C (the batches keep running; collect again later)
  4  collect: some pairs of the collected batches have no grade (expired or failed lines)
  5  collect: batches are still running; collect again later (or pass --wait)
"""


#: the line ``reljudge --help`` lists this command with
HELP = "status, collect or cancel recorded Batch API jobs"


def register(sub) -> None:
    """Add the ``batch`` subcommand."""
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("batch", help=HELP,
                       description="The Batch API jobs recorded in a label store by "
                                   "`reljudge label --batch`.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    p.add_argument("action", choices=("status", "collect", "cancel"),
                   help="status: poll and show every batch; collect: answers of finished "
                        "batches into the cache and the store; cancel: cancel running ones")
    common.add_store(p, "the label store the batches are recorded in", required=True)
    p.add_argument("--api-key", help="API key of the batch endpoint (or OPENAI_API_KEY)")
    p.add_argument("--wait", action="store_true",
                   help="collect: poll until every batch is done")
    common.add_format(p, ("table", "json", "csv", "markdown"))
    common.add_quiet(p)
    p.set_defaults(func=run_batch)


def run_batch(args: argparse.Namespace) -> int:
    """Poll, collect or cancel; print the recorded batches."""
    import asyncio

    from reljudge.cli import common
    from reljudge.judge.batch.recorded import collect_recorded, recorded_jobs
    from reljudge.store import LabelStore
    from reljudge.store.batches import BatchLog

    code = 0
    # where the per-poll progress lines (none with --quiet) and warnings go
    say = (lambda _line: None) if args.quiet else common.say
    with LabelStore(args.store, create=False) as store:
        if args.action == "status":
            for job in recorded_jobs(store, args.api_key, say=say, on_warning=common.warn):
                # statuses and counts only: nothing collected or sent
                job.poll(create=False)
        elif args.action == "cancel":
            for job in recorded_jobs(store, args.api_key, say=say, on_warning=common.warn):
                for bid in job.cancel():
                    print(f"batch {bid}: cancel requested", file=sys.stderr)
        else:
            results = asyncio.run(collect_recorded(store, args.api_key, wait=args.wait,
                                                   say=say, on_warning=common.warn,
                                                   handle_sigint=True))
            if any(r.stop_reason for r in results):
                code = 3
            elif any(r.open for r in results):
                code = 5
            elif any(r.without_grade for r in results):
                code = 4
        print_batches(BatchLog(store).batches(), args.format)
    return code


def print_batches(records, fmt: str = "table") -> None:
    """One line per recorded batch: ids, status, the provider's counts."""
    from reljudge.tables import json_dumps, render

    rows = [[r.id, r.provider_id or "-", r.input_file_id or "-", r.source, r.status, r.total,
             r.completed, r.failed, "yes" if r.collected else "no"] for r in records]
    header = ["#", "batch", "input file", "judge", "status", "requests", "completed", "failed",
              "collected"]
    if fmt == "json":
        print(json_dumps([dict(zip(header, row, strict=True)) for row in rows]), end="")
    elif rows or fmt != "table":
        print(render(header, rows, fmt), end="")
    else:
        print("no batches recorded in this store")
