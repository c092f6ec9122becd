"""``reljudge labels sources|stats|conflicts``: what a label store holds, read only."""

from __future__ import annotations

from reljudge.cli.common import open_store, steps

#: coverage rows ``labels stats`` shows without --all (the least covered queries)
COVERAGE_ROWS = 20


def do_sources(args) -> int:
    """The sources and the names a user can type for them."""
    from reljudge.grades import SCALE
    from reljudge.store import short_names
    from reljudge.tables import json_dumps, render

    with open_store(args) as store:
        sources = store.sources()
    short = short_names(sources)
    if args.format == "json":
        print(json_dumps({"sources": [{"name": s.name, "short": short.get(s.name, s.name),
                                       "kind": s.kind, "events": s.events, "graded": s.ok,
                                       "failed": s.failed, "grades": s.grades}
                                      for s in sources]}), end="")
        return 0
    rows = [[s.kind, s.name, short.get(s.name, s.name), s.events, s.ok,
             *[s.grades.get(g, 0) for g in SCALE]] for s in sources]
    print(render(["kind", "source", "short", "events", "graded", *map(str, SCALE)], rows,
                 args.format), end="")
    return 0


def do_stats(args) -> int:
    """Sources, failures, coverage."""
    from collections import Counter
    from concurrent.futures import ThreadPoolExecutor

    from reljudge.cli.annotators_view import annotator_report, annotator_text
    from reljudge.grades import SCALE
    from reljudge.io import read_pairs
    from reljudge.judge.claiming import owner_gone
    from reljudge.store import coverage, coverage_summary
    from reljudge.tables import json_dumps, render

    with open_store(args) as store, steps(5, args.quiet) as step:
        policy = store.resolve_policy(args.policy, "--policy source=")
        step("reading the grades")
        # the sources' counts are a pass over every event of their own: made on a second
        # connection while this one reads the grades (both databases run them side by side)
        with ThreadPoolExecutor(1) as apart:
            counting = apart.submit(_source_counts, args)
            standing = store.standing_ids()  # read once for the counts, the merge and the team
            counts = counting.result()
        step("counting each source's labels")
        sources = store.sources(standing, counts)
        # the failed judgments are counted with the sources; and with no failure nor undo
        # (an event without a grade) no judgment can have failed last: neither reads the
        # events again
        history = sum(s.failed for s in sources)
        current = store.current_failures() if any(s.events > s.ok for s in sources) else []
        spend = store.spend()
        claims = store.live_claims(gone=owner_gone)
        stale = store.stale_labels()
        step(f"merging under {policy}")
        votes = store.votes(standing)
        merged = store.merge(policy, args.aggregate, args.fractional, args.derived,
                             stale=stale, votes=votes)
        step("the annotators' agreement")
        team = annotator_report(store, args.bootstrap, args.seed, standing=standing,
                                votes=votes)
        step("coverage")
        pool = read_pairs(args.pool) if args.pool else None
        cov_summary, cov = coverage_summary(coverage(merged, pool),
                                            None if args.all_rows else COVERAGE_ROWS)
    stale_by_kind = dict(Counter(kind for _, _, kind, _ in stale))

    cov_rows = ("all" if len(cov) == cov_summary["queries"] else
                f"the {len(cov)} least covered of {cov_summary['queries']} queries (--all: "
                "every query)")
    # a failure stored with no kind is said so, not "None"
    by_kind = Counter(kind or "not recorded" for *_, kind, _ in current)
    example: dict[str, str] = {}
    for qid, docid, source, _sample, kind, detail in current:
        example.setdefault(kind or "not recorded", f"{qid} {docid} ({source}): {detail}")
    if args.format == "json":
        print(json_dumps({"sources": [s.__dict__ for s in sources],
                          "failures": {"current": len(current), "current_by_kind": dict(by_kind),
                                       "current_examples": example, "history": history},
                          "spend": [{"source": n, "jobs": r, "calls": c, "tokens_in": ti,
                                     "tokens_out": to, "cost": cost}
                                    for n, r, c, ti, to, cost in spend],
                          "claims": [{"source": src, "owner": who, "pairs": n}
                                     for src, who, n in claims],
                          "stale": {"labels": len(stale), "by_kind": stale_by_kind,
                                    "final_labels": merged.stale_counts()},
                          "coverage_summary": {**cov_summary, "rows": cov_rows},
                          "coverage": [{"qid": q, "judged": n, "pooled": p}
                                       for q, n, p in cov],
                          "annotators": team.to_dict() if team else None}), end="")
        return 0
    rows = [[s.kind, s.name, s.events, s.ok, s.failed, s.retracted,
             *[s.grades.get(g, 0) for g in SCALE], s.cost] for s in sources]
    fmt, digits = args.format, args.digits
    print(render(["kind", "source", "events", "ok", "failed", "undone", *map(str, SCALE),
                  "cost $"], rows, fmt, digits), end="")
    # one table: the sources (failures, spend, coverage: --format json)
    if fmt == "csv":
        return 0
    # a markdown table needs a blank line before it
    gap = "\n" if fmt == "markdown" else ""
    print(f"\ncurrent failures (pairs whose latest judgment failed): {len(current)}" +
          "".join(f"\n  {n:>6}  {k}  e.g. {example[k]}" for k, n in by_kind.most_common()))
    print(f"failed judgments in the history (later answered ones included): {history}")
    print(f"stale labels (given to query or passage texts changed since): {len(stale)}"
          + "".join(f"\n  {n:>6}  {k}" for k, n in sorted(stale_by_kind.items())))
    if merged.stale_note():
        print(f"under {merged.policy}: {merged.stale_note()}")
    for src, who, n in claims:
        print(f"being labelled now: {n} pair(s) x repeats of {src} claimed by {who}")
    if spend:
        print("\nspend per judge (the spend ledger: every labelling job):" + gap)
        print(render(["judge", "jobs", "paid calls", "tokens in", "tokens out", "spent $"],
                     [list(r) for r in spend], fmt, digits), end="")
    if team is not None:
        print("\n" + annotator_text(team, fmt, min(digits, 3)), end="")
    print(f"\ncoverage per query under {merged.policy} ({len(merged.final)} final labels):"
          + _coverage_line(cov_summary, cov_rows, digits) + gap)
    print(render(["qid", "judged", "pooled", "share"],
                 [[q, n, p, (n / p if p else None)] for q, n, p in cov], fmt, digits), end="")
    return 0


def _source_counts(args) -> dict[int, tuple]:
    """``source_counts()`` of the store of ``args``, read on a connection of its own."""
    with open_store(args) as store:
        return store.source_counts()


def _coverage_line(summary: dict, rows: str, digits: int) -> str:
    """The coverage summary in words: "" when every row is shown anyway and few."""
    if rows == "all" and summary["queries"] <= COVERAGE_ROWS:
        return ""
    spreads = [(name, summary[key]) for name, key in (("judged", "judged"),
                                                     ("share of the pool", "share"))
               if summary[key] is not None]
    said = "; ".join(f"{name} per query min {s['min']:.{digits}g}, median "
                     f"{s['median']:.{digits}g}, max {s['max']:.{digits}g}"
                     for name, s in spreads)
    return (f"\n{summary['queries']} queries; {said}" + ("" if rows == "all" else
                                                        f"\nbelow: {rows}"))


def do_conflicts(args) -> int:
    """Human vs LLM disagreements."""
    from reljudge.tables import render

    if args.with_text:
        return _conflicts_with_text(args)
    with open_store(args) as store:
        found = [c for c in store.conflicts(args.aggregate) if abs(c.diff) >= args.min_diff]
    total = len(found)
    if args.limit:
        found = found[: args.limit]
    rows = [[c.qid, c.docid, *map(whole, (c.human, c.llm, c.diff))] for c in found]
    print(render(["qid", "docid", "human", "llm", "llm - human"], rows, args.format,
                 args.digits), end="")
    if args.format == "table":
        print(f"{total} conflicting pairs with |llm - human| >= {args.min_diff:g}"
              + (f" (showing {len(found)})" if total > len(found) else ""))
    return 0


def whole(grade: float) -> float | int:
    """A grade as an int when it is one (3, not 3.0); a mean of grades stays a float."""
    return int(grade) if float(grade).is_integer() else grade


#: characters shown in the table
TEXT_WIDTH = {"query": 40, "passage": 60, "reasoning": 60}


def _cut(text: str | None, width: int) -> str | None:
    """One line of at most ``width`` characters, an ellipsis marking a cut."""
    if text is None:
        return None
    line = " ".join(text.split())
    if len(line) <= width:
        return line
    cut = line[: width - 1]
    # not mid-word when avoidable
    if line[width - 1] != " " and " " in cut[width // 2:]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"


def _conflicts_with_text(args) -> int:
    """Conflicts with both texts, both labels' sources and the judge's answers."""
    from reljudge.store.views import CONFLICT_COLUMNS, conflict_row, conflicts_with_text
    from reljudge.tables import json_dumps, render

    with open_store(args) as store:
        # read once: the count and the conflicts shown
        standing = store.standing_ids()
        total = sum(1 for c in store.conflicts(args.aggregate, standing=standing)
                    if abs(c.diff) >= args.min_diff)
        found = conflicts_with_text(store, args.aggregate, args.min_diff, args.limit,
                                    standing=standing)
    if args.format == "json":
        print(json_dumps([{"qid": c.qid, "docid": c.docid, "query": c.query,
                           "passage": c.passage, "human": c.human,
                           "human_sources": list(c.human_sources), "llm": c.llm,
                           "llm_sources": list(c.llm_sources), "llm - human": c.diff,
                           "answers": list(c.answers)} for c in found]), end="")
        return 0
    rows: list[list] = [[whole(v) if isinstance(v, float) else v for v in conflict_row(c)]
                        for c in found]
    if args.format == "table":
        cut = {CONFLICT_COLUMNS.index(k): w for k, w in TEXT_WIDTH.items()}
        rows = [[_cut(v, cut[i]) if i in cut else v for i, v in enumerate(r)] for r in rows]
    print(render(CONFLICT_COLUMNS, rows, args.format, args.digits), end="")
    if args.format == "table":
        print(f"{total} conflicting pairs with |llm - human| >= {args.min_diff:g}"
              + (f" (showing {len(found)})" if total > len(found) else "")
              + "; long texts cut to one line: --format json or csv for the whole")
    return 0
