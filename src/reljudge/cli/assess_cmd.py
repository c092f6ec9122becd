"""``reljudge assess``: a local web page where people grade pairs, straight into the store."""

from __future__ import annotations

EXAMPLES = """\
examples:
  reljudge assess --store labels.sqlite --sample audit-200 --annotator alice
  reljudge assess --store labels.sqlite --pairs todo.txt --annotator bob --port 8765
  reljudge assess --store labels.sqlite --sample audit-200 --annotator carol --host 0.0.0.0

keys on the page: 0-3 grade the pair (and move to the next ungraded one; a held key grades
once), right arrow or j next, left arrow or k previous, u undo your latest grade, n write a
note (keys then type text; Enter saves it with the pair's grade, or keeps it for the grade
key that follows when the pair is ungraded; Esc back to grading), l show or hide the LLM's
grade (hidden at first). Pairs come a query at a time unless --order says otherwise.

Each grade is a human label event of source NAME written to the store at once, with the
seconds spent and the note; reloading the page (or restarting the server) resumes at the
first ungraded pair. An undo is an append-only retraction: the pair counts as ungraded again
for merge, stats and audit until it is graded again.
"""


def register(sub) -> None:
    """Add the ``assess`` subcommand."""
    from reljudge.assess.task import ORDERS
    from reljudge.cli import HelpFormatter

    p = sub.add_parser("assess", help="a local web page where people grade pairs into the store",
                       description="Serve a page on which a person grades query-passage "
                                   "pairs (0-3, by keyboard);\nevery grade goes into the label "
                                   "store as it is given.\nNeeds the 'assess' extra "
                                   "(pip install 'reljudge[assess]').",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    p.add_argument("--store", required=True, help="the label store (SQLite file; must exist)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--sample", metavar="NAME", help="grade this human sample of the store")
    what.add_argument("--pairs", metavar="FILE",
                      help="grade these pairs (QID DOCID, QID 0 DOCID, qrels or JSONL)")
    p.add_argument("--annotator", required=True, metavar="NAME",
                   help="who grades: the name of the human label source")
    p.add_argument("--host", help="address to listen on, e.g. 0.0.0.0 to share on a LAN "
                                  "(default 127.0.0.1); with --host every request must carry "
                                  "the token printed at start")
    p.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    p.add_argument("--order", choices=ORDERS, default="query",
                   help="the order of the pairs: query (default) a query at a time, as TREC "
                        "assessors work: the query is read once, then its passages (queries "
                        "and passages shuffled); random: every pair shuffled; given: as the "
                        "sample or pairs file lists them. The same on every restart")
    p.add_argument("--prompt", default="umbrela",
                   help="the prompt whose scale text describes the grades (default umbrela; "
                        "a shipped name or a .toml path)")
    p.add_argument("--queries", metavar="FILE",
                   help="query texts (TSV or JSONL); used instead of the store's, and "
                        "needed for queries whose text the store lacks")
    p.add_argument("--passages", metavar="FILE",
                   help="passage texts (JSONL or TSV); used instead of the store's, and "
                        "needed for passages whose text the store lacks")
    p.set_defaults(func=run)


def run(args) -> int:
    """Check everything, then serve until Ctrl-C."""
    import contextlib
    import sys
    from pathlib import Path

    from reljudge.errors import ConfigError

    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise ConfigError("reljudge assess needs the 'assess' extra: "
                          "pip install 'reljudge[assess]'") from None
    from reljudge.assess import AssessTask, scale_of
    from reljudge.assess.server import DEFAULT_HOST, new_token, serve
    from reljudge.io import read_pairs, read_passages, read_queries
    from reljudge.judge.prompts import load_template
    from reljudge.store import LabelStore

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be 0..65535, found {args.port}")
    if not Path(args.store).is_file():
        raise ConfigError(f"{args.store}: no such label store")
    scale = scale_of(load_template(args.prompt).scale)
    queries = read_queries(args.queries) if args.queries else None
    pairs = read_pairs(args.pairs) if args.pairs else None
    store = LabelStore(args.store)
    try:
        if pairs is None:
            pairs = store.sample_pairs(args.sample)
        passages = (read_passages(args.passages, {d for _, d in pairs})  # with titles
                    if args.passages else None)  # irds: the ids graded here only
        task = AssessTask(store, pairs, args.annotator, sample=args.sample,
                          pairs_file=args.pairs, scale=scale, queries=queries,
                          passages=passages, order=args.order)
        token = new_token() if args.host is not None else None
        done = len(task.given())

        def announce(urls: list[str]) -> None:
            print(f"grading {task.name} as {args.annotator}: {done} of {len(task.items)} "
                  f"pairs graded so far")
            for url in urls:  # on a LAN (--host 0.0.0.0): one per address of this machine
                print(f"open {url}", flush=True)
            if token:
                print(f"token: {token} (every request must carry it)", flush=True)
            print("press Ctrl-C to stop", file=sys.stderr, flush=True)

        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a person ends it
            serve(task, host=args.host or DEFAULT_HOST, port=args.port, token=token,
                  announce=announce)
        print(f"stopped: {len(task.given())} of {len(task.items)} pairs of {task.name} "
              f"graded by {args.annotator}", file=sys.stderr)
    finally:
        store.close()
    return 0
