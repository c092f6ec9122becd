"""``reljudge labels``: import, merge, export and inspect the label store."""

from __future__ import annotations

import argparse
import sys

from reljudge.choices import AGGREGATES
from reljudge.cli.common import open_store
from reljudge.grades import GRADE_MAX, GRADE_MIN

VERB_EXAMPLES = {
    "import": """\
examples:
  reljudge labels import human.qrels --store labels.sqlite --source-kind human --source-name nist
  reljudge labels import judges/*.txt --store labels.sqlite --source-kind llm --clip
  reljudge labels import grades.csv --store labels.sqlite --source-kind human --source-name ann

Each file is one source; files are checked whole before any is written (all or nothing).
""",
    "merge": """\
examples:
  reljudge labels merge --store labels.sqlite --out final.qrels
  reljudge labels merge --store labels.sqlite --policy human-first --out final.qrels \\
      --provenance final.provenance.jsonl
  reljudge labels merge --store labels.sqlite --policy source=calibrated:gpt4o --derived expected
""",
    "export": """\
examples:
  reljudge labels export --store labels.sqlite --source nist --out nist.qrels
  reljudge labels export --store labels.sqlite --kind llm --aggregate mean --out llm.qrels
""",
    "copy": """\
examples:
  reljudge labels copy labels.sqlite postgresql://ann@db.lab:5432/judging?schema=dl23
  reljudge labels copy postgresql://ann@db.lab/judging?schema=dl23 backup.sqlite
""",
    "stats": """\
examples:
  reljudge labels stats --store labels.sqlite
  reljudge labels stats --store labels.sqlite --pool pairs.txt --json
  reljudge labels stats --store labels.sqlite --format csv > sources.csv   # the sources table
""",
    "upgrade": """\
examples:
  reljudge labels upgrade --store labels.sqlite

Writing commands (label, labels import, sample, assess, calibrate, run) upgrade an older store
themselves, after copying a SQLite file aside as labels.sqlite.vN.bak, and say so; commands
that only read refuse it with one line naming this command.
""",
    "sources": """\
examples:
  reljudge labels sources --store labels.sqlite
  reljudge labels sources --store labels.sqlite --format json

'short' is the shortest name that designates the source wherever a command takes one
(--judge, --source, --human-source, ...): the model alone when one source has it, else the
name without its hash, else the full name. Any prefix naming one source works too.
""",
    "conflicts": """\
examples:
  reljudge labels conflicts --store labels.sqlite --limit 20
  reljudge labels conflicts --store labels.sqlite --min-diff 2 --format markdown
  reljudge labels conflicts --store labels.sqlite --with-text --format csv > conflicts.csv
""",
}

MERGE_RULES = """
merge policies (which labels decide a pair):
  human-first   human labels when there are any, else LLM and imported ones (default)
  adjudicated-first  an adjudicated grade (reljudge assess --adjudicate) where there is
                one, else as human-first
  human-only    only human labels;  llm-only: only LLM labels
  source=NAME   only the labels of one source
aggregation of several labels of a pair: majority (a tie goes to the lower grade), mean,
median; rounded half up unless --fractional. Of several labels from one source for one pair
(and one sample), the latest is a correction and wins. Failed judgments never decide, and
neither does a grade its source took back (an undo in `reljudge assess`).
A derived source (calibrated:JUDGE, panel:NAME, from `reljudge calibrate`) votes with the grade
its decision rule recorded (the rule calibrate checked on held-out queries, in its derivation
record), or with --derived mode|median|expected by that rule applied now (the reljudge docs:
Calibration and panels).
"""

#: the group's --help: every verb's examples, then the merge rules
EXAMPLES = "examples:\n" + "".join(
    "".join(line + "\n" for line in text.splitlines()[1:] if line.startswith("  "))
    for text in VERB_EXAMPLES.values()) + MERGE_RULES


#: the line ``reljudge --help`` lists this command with
HELP = "import, merge, export and inspect the label store"


def register(sub) -> None:
    """Add the ``labels`` subcommand and its verbs."""
    from reljudge.cli import HelpFormatter, labels_show
    from reljudge.cli.common import (
        add_digits,
        add_format,
        add_quiet,
        add_store,
        name,
        non_negative_int,
        output_file,
    )

    p = sub.add_parser("labels", help=HELP,
                       description="The label store: every label and where it came from, "
                                   "in a SQLite file\nor a PostgreSQL schema.",
                       epilog=EXAMPLES, formatter_class=HelpFormatter)
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)

    def verb(name: str, help_: str) -> argparse.ArgumentParser:
        epilog = VERB_EXAMPLES[name] + (MERGE_RULES if name in ("merge", "export", "stats",
                                                                  "conflicts") else "")
        v = verbs.add_parser(name, help=help_, description=help_, epilog=epilog,
                             formatter_class=HelpFormatter)
        add_store(v, "the label store", required=True)
        return v

    v = verb("import", "import labels from TREC qrels, CSV (header qid,docid,grade; also "
                       "query_id, doc_id, docno, relevance, label) or JSONL (the same keys)")
    v.add_argument("files", nargs="+", metavar="FILE",
                   help="label files: TREC qrels, CSV or JSONL (compressed or not), or "
                        "irds:DATASET_ID (its qrels)")
    v.add_argument("--source-kind", choices=("human", "llm", "import"),
                   help="who gave the labels (required): human or llm; 'import' (neither) "
                        "must be chosen explicitly, since merges rank human labels first")
    v.add_argument("--source-name", type=name, help="assessor or judge name (default: the file's stem, "
                   "a compression suffix aside; files sharing a stem are told apart by their "
                   "folders)")
    v.add_argument("--label-format", choices=("qrels", "csv", "jsonl"),
                   help="file format (default: from the file name, a .gz/.bz2/.xz/.zst suffix "
                        "aside: .csv, .jsonl, else qrels)")
    v.add_argument("--clip", action="store_true",
                   help="clip grades outside 0..3 instead of rejecting the file")
    v.add_argument("--force", action="store_true", help="import a file again even if it was")
    add_format(v, ("table", "json", "csv", "markdown"))
    v.set_defaults(func=do_import)

    v = verb("merge", "merge labels into final qrels with provenance")
    _merge_flags(v)
    v.add_argument("--out", type=output_file, help="write the final TREC qrels here")
    v.add_argument("--provenance", type=output_file,
                   help="write one record per final label here (.jsonl or .tsv)")
    add_format(v, ("table", "json", "csv", "markdown"))
    add_quiet(v)
    v.set_defaults(func=do_merge)

    v = verb("export", "export the labels of one source (or kind) alone as qrels")
    group = v.add_mutually_exclusive_group(required=True)
    group.add_argument("--source", help="the source name")
    group.add_argument("--kind", choices=("human", "llm"), help="every source of a kind")
    v.add_argument("--aggregate", choices=AGGREGATES, default="majority",
                   help="several labels of a pair: majority (default), mean or median")
    v.add_argument("--out", required=True, type=output_file,
                   help="the TREC qrels file to write")
    v.set_defaults(func=do_export)

    v = verb("stats", "label sources, grade distributions, failures and coverage per query")
    v.add_argument("--pool", help="pairs file (QID DOCID) to report coverage against")
    v.add_argument("--bootstrap", type=non_negative_int, default=None, metavar="N",
                   help="query resamples for the annotators' agreement intervals (default "
                        "1000; 0: none)")
    v.add_argument("--seed", type=non_negative_int, default=0,
                   help="bootstrap seed (default 0)")
    v.add_argument("--all", action="store_true", dest="all_rows",
                   help=f"coverage: a row for every query (default: a summary and the "
                        f"{labels_show.COVERAGE_ROWS} least covered queries)")
    _merge_flags(v)
    add_format(v, ("table", "json", "csv", "markdown"))
    add_digits(v)
    add_quiet(v)
    v.set_defaults(func=labels_show.do_stats)

    v = verb("upgrade", "bring a store of an older reljudge to this one's schema (a SQLite "
                        "file as it was is kept beside it, a PostgreSQL schema is upgraded in "
                        "one transaction; commands that only read never upgrade)")
    v.set_defaults(func=do_upgrade)

    c = verbs.add_parser("copy", help="copy a whole store: SQLite to PostgreSQL and back",
                         description="Copy every label event, text, sample, derivation, import "
                                     "and ledger row of SRC into DST (created if new), ids "
                                     "kept, in one transaction of DST. Run it again to bring "
                                     "DST up to date: only what SRC gained is added. Claims "
                                     "(leases of running processes) are not copied.",
                         epilog=VERB_EXAMPLES["copy"], formatter_class=HelpFormatter)
    c.add_argument("src", metavar="SRC", help="the store to copy (a SQLite file or a "
                                              "postgresql:// URL; ?schema=NAME)")
    c.add_argument("dst", metavar="DST", help="where to copy it (the same forms)")
    add_format(c, ("table", "json"))
    c.set_defaults(func=do_copy)

    v = verb("sources", "the label sources: kind, events, grades, and the short names to type")
    add_format(v, ("table", "json", "csv", "markdown"))
    v.set_defaults(func=labels_show.do_sources)

    v = verb("conflicts", "pairs where the human and the LLM labels disagree, largest first")
    v.add_argument("--aggregate", choices=AGGREGATES, default="majority",
                   help="several labels of a pair: majority (default), mean or median")
    v.add_argument("--min-diff", type=grade_gap, default=1.0,
                   help=f"smallest |LLM - human| shown, 0 to {GRADE_MAX - GRADE_MIN} "
                        "(default 1)")
    v.add_argument("--limit", type=non_negative_int, default=50, help="rows to show (0: all)")
    v.add_argument("--with-text", action="store_true",
                   help="add the query and passage text, the sources of both labels and the "
                        "judge's raw answer (its reasoning); cut to fit in the table, whole in "
                        "JSON and CSV")
    add_format(v, ("table", "json", "csv", "markdown"))
    add_digits(v, 1)
    v.set_defaults(func=labels_show.do_conflicts)


def grade_gap(text: str) -> float:
    """An argparse type: a difference of two grades, 0 to the scale's width."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, found {text!r}") from None
    if not (math.isfinite(value) and 0 <= value <= GRADE_MAX - GRADE_MIN):
        raise argparse.ArgumentTypeError(f"expected 0 to {GRADE_MAX - GRADE_MIN} (grades are "
                                         f"{GRADE_MIN}-{GRADE_MAX}), found {text}")
    return value


def _merge_flags(v: argparse.ArgumentParser) -> None:
    from reljudge.choices import DERIVED

    v.add_argument("--policy", default="human-first",
                   help="human-first (default), adjudicated-first, human-only, llm-only or "
                        "source=NAME")
    v.add_argument("--aggregate", choices=AGGREGATES, default="majority",
                   help="several labels of a pair: majority (default; a tie goes to the lower "
                        "grade), mean or median")
    v.add_argument("--fractional", action="store_true",
                   help="keep fractional aggregated grades (provenance file only)")
    v.add_argument("--derived", choices=DERIVED, default="recorded",
                   help="a derived (calibrated / panel) source votes with the grade its "
                        "decision rule recorded when `reljudge calibrate` wrote it (default), "
                        "or by a rule applied now: its most probable grade (mode), its median "
                        "or its expected grade")


def do_upgrade(args) -> int:
    """Bring the store to this reljudge's schema, keeping a SQLite file as it was beside it."""
    from reljudge.store.schema import SCHEMA_VERSION

    with open_store(args) as store:
        if store.migrated_from == SCHEMA_VERSION:
            print(f"{store.path}: schema {SCHEMA_VERSION}, nothing to upgrade")
            return 0
        kept = "" if store.backup is None else \
            f"; the file as it was is kept as {store.backup}"
        print(f"{store.path}: upgraded from schema {store.migrated_from} to "
              f"{SCHEMA_VERSION}{kept}")
    return 0


def do_import(args) -> int:
    """Import each file as one source."""
    from reljudge.io.label_files import check_scale, label_names, read_labels
    from reljudge.store import import_labels
    from reljudge.tables import json_dumps, render

    if args.source_kind is None:
        from reljudge.errors import ConfigError

        raise ConfigError("labels import needs --source-kind human or llm (or import, chosen "
                          "explicitly): the default human-first merge lets human labels "
                          "decide, so labels of an unknown kind would be outvoted by LLM ones")
    # validate every file before writing any: all or nothing
    for path in args.files:
        check_scale(read_labels(path, args.label_format), args.clip)
    # a file given twice is imported once
    files = list(dict.fromkeys(args.files))
    names = [args.source_name] * len(files) if args.source_name else label_names(files)
    reports = []
    with open_store(args, create=True) as store:
        for path in args.files:
            name = names[files.index(path)]
            reports.append(import_labels(store, path, args.source_kind, name,
                                         fmt=args.label_format, clip=args.clip, force=args.force))
    if args.format == "json":
        print(json_dumps([r.__dict__ for r in reports]), end="")
        return 0
    rows = [[r.path, r.kind, r.name, "already imported" if r.skipped else r.events,
             len(r.clipped), len(r.unknown_queries), len(r.unknown_passages)] for r in reports]
    print(render(["file", "kind", "source", "events", "clipped", "unknown qids",
                  "unknown docids"], rows, args.format), end="")
    # the import reports, beside a csv or markdown table, on stderr
    for r in reports:
        for line, was, now in r.clipped:
            print(f"clipped: {r.path}:{line}: grade {was} -> {now}",
                  file=sys.stdout if args.format == "table" else sys.stderr)
    return 0


def do_merge(args) -> int:
    """Merge and write."""
    from reljudge.cli.common import check_outputs, steps, warn
    from reljudge.io.trec import write_qrels
    from reljudge.tables import json_dumps, render

    check_outputs(args.out, args.provenance)
    with open_store(args) as store, steps(3, args.quiet) as step:
        policy = store.resolve_policy(args.policy, "--policy source=")
        step("reading the grades")
        standing = store.standing_ids(policy)
        step(f"merging under {policy}")
        merged = store.merge(policy, args.aggregate, args.fractional, args.derived,
                             standing=standing)
        if not len(merged.final) and (args.out or args.provenance):
            from reljudge.errors import StoreError

            raise StoreError(f"{args.store}: no labels under {merged.policy}; nothing written")
        step("writing")
        if args.out:
            write_qrels(merged.qrels, args.out)
        if args.provenance:
            merged.write_provenance(args.provenance)
    by = merged.decided_counts()
    if args.format == "json":
        print(json_dumps({"policy": merged.policy, "aggregate": merged.aggregate,
                          "labels": len(merged.final), "decided_by": dict(by),
                          "stale": merged.stale_counts(), "out": args.out,
                          "provenance": args.provenance}), end="")
    else:
        print(render(["policy", "aggregate", "final labels", *[f"by {k}" for k in sorted(by)]],
                     [[merged.policy, merged.aggregate, len(merged.final),
                       *[by[k] for k in sorted(by)]]], args.format), end="")
    if merged.stale_note():
        warn(merged.stale_note())
    return 0


def do_export(args) -> int:
    """Write one source (or kind) alone."""
    from reljudge.cli.common import check_outputs
    from reljudge.io.trec import write_qrels

    check_outputs(args.out)
    with open_store(args) as store:
        policy = (store.resolve_policy(f"source={args.source}", "--source") if args.source
                  else f"{args.kind}-only")
        merged = store.merge(policy, args.aggregate)
    if not len(merged.final):
        from reljudge.errors import StoreError

        raise StoreError(f"{args.store}: no labels for {policy}")
    write_qrels(merged.qrels, args.out)
    print(f"wrote {len(merged.final)} labels ({policy}) to {args.out}")
    return 0


def do_copy(args) -> int:
    """``labels copy SRC DST``."""
    from reljudge.cli.common import check_store_path
    from reljudge.errors import ConfigError
    from reljudge.io.files import file_identity
    from reljudge.store import LabelStore
    from reljudge.store.copy import copy_store
    from reljudge.store.postgres import is_url
    from reljudge.tables import json_dumps, render

    check_store_path(args.src, "SRC")
    check_store_path(args.dst, "DST")
    # a link to the other is the same file
    if (args.src == args.dst if is_url(args.src) or is_url(args.dst)
            else file_identity(args.src) == file_identity(args.dst)):
        raise ConfigError(f"labels copy: {args.src} and {args.dst} are the same store; give "
                          "another DST to copy it into")
    with LabelStore(args.src, create=False, readonly=True) as src, LabelStore(args.dst) as dst:
        report = copy_store(src, dst)
    if args.format == "json":
        print(json_dumps({"source": report.source, "destination": report.destination,
                          "rows": report.rows, "total": report.total}), end="")
        return 0
    print(render(["table", "rows copied"], [[t, n] for t, n in report.rows.items()]), end="")
    print(f"copied {report.total} rows from {report.source} to {report.destination}"
          + (" (it was up to date)" if report.total == 0 else ""))
    return 0
