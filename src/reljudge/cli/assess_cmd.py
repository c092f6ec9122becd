"""``reljudge assess``: a local web page where people grade pairs, straight into the store."""

from __future__ import annotations

EXAMPLES = """\
examples:
  reljudge assess --store labels.sqlite --sample audit-200 --annotator alice
  reljudge assess --store labels.sqlite --pairs todo.txt --annotator bob --port 8765
  reljudge assess --store labels.sqlite --sample audit-200 --annotator carol --host 0.0.0.0
a team: 20 % of the pairs graded by everyone (for agreement), the rest split among them
  reljudge assess --store labels.sqlite --sample audit-200 --annotator alice \\
      --team alice,bob,carol --overlap 0.2
  reljudge assess --store labels.sqlite --sample audit-200 --annotator dan --adjudicate --conflicts

keys on the page: 0-3 grade the pair (and move to the next ungraded one once the store has
it; a held key grades once), right arrow or j next, left arrow or k previous, u undo your
latest grade, n write a note (keys then type text; Enter saves it with the pair's grade, or
keeps it for the grade key that follows when the pair is ungraded; Esc back to grading), l
show or hide the LLM's grade (hidden at first). Pairs come a query at a time unless --order
says otherwise. A grade the server could not store keeps its pair on screen, marked NOT
saved, and is sent again every few seconds until it is stored.

Each grade is a human label event of source NAME written to the store at once, with the
seconds spent, the note, and whether the LLM's grade was on screen; reloading the page (or
restarting the server) resumes at the first ungraded pair. An undo is an append-only
retraction: the pair counts as ungraded again for merge, stats and audit until it is graded
again. When every pair is graded the page shows a summary (pairs, time per pair, grades,
agreement with the LLM) and a button that stops the server.

from the grades to scores (the page's last screen shows these ready to run: the store's
absolute path, your sample, its judge and the runs it was drawn from, the --queries /
--passages files the store lacks texts of, and a measure the sample supports: DCG@10 from a
pair sample, nDCG@10 from whole queries):
  reljudge labels stats --store labels.sqlite      # per annotator: pairs, speed, agreement
  reljudge assess ... --adjudicate                 # settle the pairs annotators disagree on
  reljudge labels merge --store labels.sqlite --policy adjudicated-first --out final.qrels
  reljudge estimate --store labels.sqlite --sample audit-200 --judge JUDGE RUN... -m DCG@10
  reljudge calibrate --store labels.sqlite --human-source alice --judge-source JUDGE

exit codes: 0 every pair of the task is graded when the server stops; 3 stopped with pairs
left ungraded (run the same command again to go on); 2 bad input or settings.
"""


#: the line ``reljudge --help`` lists this command with
HELP = "a local web page where people grade pairs into the store"


def register(sub) -> None:
    """Add the ``assess`` subcommand."""
    from reljudge.choices import ORDERS
    from reljudge.cli import HelpFormatter, common

    p = sub.add_parser("assess", help=HELP,
                       description="Serve a page on which a person grades query-passage "
                                   "pairs (0-3, by keyboard);\nevery grade goes into the label "
                                   "store as it is given.\nNeeds the 'assess' extra "
                                   "(pip install 'reljudge[assess]').",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    common.add_store(p, "the label store (must exist)", required=True)
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
    team = p.add_argument_group("a team (several annotators) and adjudication")
    team.add_argument("--team", metavar="A,B,...",
                      help="the annotators sharing the sample (with --overlap); each runs "
                           "this command with their own --annotator and grades their share. "
                           "A sample's team is recorded in the store the first time, and "
                           "may be left out after")
    team.add_argument("--overlap", type=float, metavar="F",
                      help="with --team: the share of pairs (0-1) every annotator grades, so "
                           "that agreement can be measured; the rest is split among them")
    team.add_argument("--adjudicate", action="store_true",
                      help="settle disagreements: the pairs where two annotators' grades "
                           "differ, with every grade, note and the judge's reasoning shown; "
                           "the grades go to the source adjudicated:NAME, linked to the "
                           "events they settle")
    team.add_argument("--conflicts", action="store_true",
                      help="with --adjudicate: also the pairs where an annotator and an LLM "
                           "judge differ by 2 or more")
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
    """Check everything, then serve until the page's stop button or Ctrl-C."""
    import contextlib
    import sys

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
    if args.conflicts and not args.adjudicate:
        raise ConfigError("--conflicts goes with --adjudicate")
    if args.adjudicate and (args.team or args.overlap is not None):
        raise ConfigError("--adjudicate settles every disagreement of the task: give no "
                          "--team or --overlap with it")
    if (args.team is None) != (args.overlap is None):
        raise ConfigError("--team and --overlap go together")
    scale = scale_of(load_template(args.prompt).scale)
    queries = read_queries(args.queries) if args.queries else None
    pairs = read_pairs(args.pairs) if args.pairs else None
    # a SQLite file or a PostgreSQL URL
    store = LabelStore(args.store, create=False)
    try:
        if pairs is None:
            pairs = store.sample_pairs(args.sample)
        pairs, shared, settles = _what_to_grade(store, pairs, args)
        if settles is not None and not settles:
            print(f"nothing to settle: no pair of {args.sample or args.pairs} has annotators' "
                  "grades that differ" + (" or an annotator and a judge 2 or more apart"
                                          if args.conflicts else ""), file=sys.stderr)
            return 0
        # with titles; of an irds: dataset, the ids graded here only
        passages = (read_passages(args.passages, {d for _, d in pairs})
                    if args.passages else None)
        task = AssessTask(store, pairs, args.annotator, sample=args.sample,
                          pairs_file=args.pairs, scale=scale, queries=queries,
                          passages=passages, order=args.order, settles=settles, shared=shared,
                          text_files={k: v for k, v in (("queries", args.queries),
                                                        ("passages", args.passages)) if v})
        token = new_token() if args.host is not None else None
        done = len(task.given())

        def announce(urls: list[str]) -> None:
            what = "settling" if task.adjudicating else "grading"
            print(f"{what} {task.name} as {task.source}: {done} of {len(task.items)} "
                  f"pairs graded so far" + (f" ({len(shared)} of them shared by the team)"
                                            if shared else ""))
            # on a LAN (--host 0.0.0.0): one per address of this machine
            for url in urls:
                print(f"open {url}", flush=True)
            if token:
                print(f"token: {token} (every request must carry it)", flush=True)
            print("stop with the page's button once every pair is graded, or Ctrl-C",
                  file=sys.stderr, flush=True)

        # Ctrl-C is how a person ends it
        with contextlib.suppress(KeyboardInterrupt):
            serve(task, host=args.host or DEFAULT_HOST, port=args.port, token=token,
                  announce=announce)
        graded = len(task.given())
        print(f"stopped: {graded} of {len(task.items)} pairs of {task.name} graded by "
              f"{task.source}" + ("" if graded == len(task.items) else
                                  "; run the same command again to go on"), file=sys.stderr)
    finally:
        store.close()
    return 0 if graded == len(task.items) else 3


def _what_to_grade(store, pairs, args):
    """(the pairs this person grades, the pairs the team shares, what each pair settles or
    None): a team member's share (``assess.team``), an adjudicator's conflicts, or all."""
    from reljudge.assess.adjudicate import to_settle
    from reljudge.assess.team import (
        check_order,
        check_overlap,
        pairs_seed,
        parse_team,
        share_of,
    )
    from reljudge.errors import ConfigError

    if args.adjudicate:
        settles = to_settle(store, pairs, 2 if args.conflicts else None)
        return list(settles), frozenset(), settles
    team = parse_team(args.team) if args.team is not None else None
    overlap = check_overlap(args.overlap) if args.overlap is not None else None
    if team is not None and args.annotator not in team:
        raise ConfigError(f"{args.annotator!r} is not in the team {','.join(team)}; give one "
                          "of its names as --annotator")
    if args.sample is not None:
        if team is not None:
            check_order(store.sample_assignment(args.sample), team, f"sample {args.sample!r}")
            store.assign_sample(args.sample, team, overlap)
        held = store.sample_assignment(args.sample)
        if held is None:
            return pairs, frozenset(), None
        team, overlap, seed = held["team"], held["overlap"], f"sample:{args.sample}"
    elif team is None:
        return pairs, frozenset(), None
    else:
        seed = f"pairs:{pairs_seed(pairs)}"
    if args.annotator not in team:
        raise ConfigError(f"{args.annotator!r} is not in the team {','.join(team)} of "
                          f"{args.sample or args.pairs}; give one of its names as --annotator "
                          "(or --adjudicate to settle its disagreements)")
    # --team comes with --overlap; a sample records both
    assert overlap is not None
    share = share_of(pairs, args.annotator, team, overlap, seed)
    return share.pairs, share.shared, None
