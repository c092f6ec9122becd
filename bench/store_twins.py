"""The file-based twins of the store-backed commands that no command does from files: the same
computation from the labels exported from the store (one qrels file a source, named by it),
through reljudge's public functions, as a whole process.

    python bench/store_twins.py merge OUT EXPORTED...
    python bench/store_twins.py stats EXPORTED...
    python bench/store_twins.py sample JUDGE.qrels OUT.json
    python bench/store_twins.py estimate JUDGE.qrels HUMAN.qrels SAMPLE.json RUN...
    python bench/store_twins.py report QRELS OUT.html EXPORTED... -- SAMPLE.json RUN...

The source named ``nist`` is the human one; the others are LLM judges (as bench/store.py
imports them). ``sample`` writes the drawn sample as JSON (``sample_json``): the record a
store keeps in its tables; ``estimate`` and ``report`` read the sample the store command
uses from such a file.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

HUMAN = "nist"  # the human source of the LLMJudge store
JUDGE = "Olz-gpt4o"  # the judge of sample, estimate and report's estimates


def sample_json(sample) -> str:
    """A ``labels.Sample`` as JSON (``read_sample`` reads it back)."""
    return json.dumps(asdict(sample))


def read_sample(path: str):
    """The ``labels.Sample`` a ``sample_json`` file holds."""
    from reljudge.labels import Sample, SampleItem

    held = json.loads(Path(path).read_text())
    return Sample(**{**held, "items": [SampleItem(**i) for i in held["items"]]})


def label_ids(paths: list[str]) -> tuple[dict, np.ndarray, dict, list, list]:
    """The exported files as the store's merges take them: ({source: qrels}, rows (source,
    query, passage, sample, event, grade), {source id: (kind, name)}, queries and passages
    (id, text)), numbered with ``np.unique``."""
    from reljudge.io.label_files import read_judges

    labels, _ = read_judges(paths)
    qtext, q = numbered([t for x in labels.values() for t in x.qid.tolist()])
    dtext, d = numbered([t for x in labels.values() for t in x.docid.tolist()])
    source = np.repeat(np.arange(len(labels)), [len(x) for x in labels.values()])
    grade = np.concatenate([x.grade for x in labels.values()])
    rows = np.column_stack([source, q, d, np.zeros_like(q), np.arange(len(q)), grade])
    sources = {i: ("human" if n == HUMAN else "llm", n) for i, n in enumerate(labels)}
    return (labels, rows, sources, list(enumerate(qtext)),
            list(enumerate(dtext)))


def numbered(texts: list[str]) -> tuple[list[str], np.ndarray]:
    """(each distinct text once, the number of each of ``texts`` among them)."""
    number = {t: i for i, t in enumerate(dict.fromkeys(texts))}
    return list(number), np.fromiter(map(number.__getitem__, texts), np.int64, len(texts))


def merge(out: str, paths: list[str]) -> None:
    """``labels merge --out OUT``: human-first, written as qrels, the count printed."""
    from reljudge.io.trec import write_qrels
    from reljudge.store.merge import merge_ids

    merged = merge_ids(*label_ids(paths)[1:])
    write_qrels(merged.qrels, out)
    print(f"{merged.policy}: {len(merged.labels)} labels")


def source_stats(labels: dict) -> list:
    """Each source's ``SourceStats`` as the files give them: events and grades."""
    from reljudge.grades import SCALE
    from reljudge.store.events import SourceStats

    out = []
    for name, qrels in labels.items():
        count = np.bincount(qrels.grade, minlength=len(SCALE)).tolist()
        out.append(SourceStats("human" if name == HUMAN else "llm", name, len(qrels),
                               len(qrels), 0, dict(zip(SCALE, count, strict=True)), 0.0, 0, 0))
    return out


def stats(paths: list[str]) -> None:
    """``labels stats``: each source's events and grades, the merge's coverage per query."""
    from reljudge.grades import SCALE
    from reljudge.store.merge import coverage, merge_ids
    from reljudge.tables import render

    labels, *ids = label_ids(paths)
    print(render(["kind", "source", "events", "ok", "failed", "undone", *map(str, SCALE),
                  "cost $"], [[s.kind, s.name, s.events, s.ok, s.failed, s.retracted,
                               *[s.grades.get(g, 0) for g in SCALE], s.cost]
                              for s in source_stats(labels)], "table", 4), end="")
    print(render(["qid", "judged", "pooled", "share"],
                 [[q, n, p, None] for q, n, p in coverage(merge_ids(*ids))], "table", 4),
          end="")


def sample(judge: str, out: str) -> None:
    """``sample --judge J --budget 300 --seed 1``: drawn from the judge's labels, recorded."""
    from reljudge.infer.sample import draw
    from reljudge.io.files import atomic_write
    from reljudge.io.label_files import read_judge

    grades = {(q, d): g for q, d, g in read_judge(judge)[0]}
    drawn = draw(sorted(grades), "stratified-pairs", 300, 1, name="s", grades=grades,
                 params={"judge": JUDGE, "pool": {"judge_labelled": True}})
    atomic_write(out, sample_json(drawn))
    print(f"sample {drawn.name!r}: {drawn.design}, {len(drawn.items)} pairs")


def estimates(judge: str, human: str, sample_file: str, runs: list[str], measures: list[str],
              rank: bool):
    """The ``StoreEstimates`` of ``estimate`` (``report``'s: unranked)."""
    from reljudge.infer.scores import StoreEstimates, estimate_runs
    from reljudge.io.label_files import read_judge
    from reljudge.io.trec import read_run

    drawn = read_sample(sample_file)
    wanted = set(drawn.pairs())
    truth = read_judge(human)[0]
    graded = type(truth).from_arrays(*zip(*[(q, d, g) for q, d, g in truth if (q, d) in wanted],
                                          strict=True))
    rankings: list | None = [] if rank else None
    favours: list | None = [] if rank else None
    notes: list[str] = []
    rows, diffs = estimate_runs(drawn, read_judge(judge)[0], graded,
                                [read_run(r) for r in runs], measures, rankings=rankings,
                                notes=notes, favours=favours)
    return StoreEstimates(drawn.name, drawn.design, JUDGE, rows, diffs, [], rankings, notes, [],
                          favours)


def estimate(judge: str, human: str, sample_file: str, runs: list[str]) -> None:
    """``estimate --sample S -m DCG@10 RUN...``: the tables printed."""
    from reljudge.infer.scores import estimate_table
    from reljudge.tables import render

    est = estimates(judge, human, sample_file, runs, ["DCG@10"], rank=True)
    text = render(*estimate_table(est.rows, 0.95), "table", 4)
    text += "\n" + render(*estimate_table(est.diffs, 0.95, with_p=True), "table", 4)
    for ranking in est.rankings or []:
        text += "\n" + render(*ranking.table(4), "table", 4)
    for favours in est.favours or []:
        text += "\n" + render(*favours.table(4), "table", 4)
    print(text + est.note() + "\n" + est.ranking_note())
    for favours in est.favours or []:
        print("\n".join(favours.lines()))
    if est.favours:
        print(est.favours[0].how())
    for line in est.warnings():
        print(line, file=sys.stderr)


def report(qrels: str, out: str, paths: list[str], sample_file: str, runs: list[str]) -> None:
    """``report QRELS RUN... --store S``: the comparison, the sample's estimates, the
    conflicts, each source's counts and the merge's coverage, in one page."""
    from reljudge.io.files import atomic_write
    from reljudge.io.trec import read_qrels, read_runs
    from reljudge.report.html import render
    from reljudge.report.model import ReportSettings, StoreTables, compute
    from reljudge.store.merge import conflicts_between, coverage, latest_votes, merge_votes
    from reljudge.store.views import ConflictText

    settings = ReportSettings(inputs=[("qrels", qrels), *[("run", r) for r in runs]])
    model = compute(read_qrels(qrels), read_runs(runs), settings)
    folder = Path(paths[0]).parent
    model.estimates = estimates(str(folder / f"{JUDGE}.qrels"), str(folder / f"{HUMAN}.qrels"),
                                sample_file, runs, model.comparison.measures,
                                rank=False)
    labels, rows, sources, queries, passages = label_ids(paths)
    votes = latest_votes(rows, queries, passages)  # once for both sides, as the store does
    found = [c for c in conflicts_between(merge_votes(votes, sources, "human-only"),
                                          merge_votes(votes, sources, "llm-only"))
             if abs(c.diff) >= 1]
    model.conflict_count = len(found)
    model.conflicts = [ConflictText(c.qid, c.docid, None, None, c.human, c.human_sources, c.llm,
                                    c.llm_sources, ()) for c in found[:settings.conflicts]]
    merged = merge_votes(votes, sources)
    model.store = StoreTables(source_stats(labels), 0, [(q, n) for q, n, _ in coverage(merged)])
    page = render(model)
    atomic_write(out, page)
    print(f"wrote {out} ({len(page) / 1024:.0f} KB)")


def main(argv: list[str]) -> None:
    """Run one twin."""
    command, rest = argv[0], argv[1:]
    if command == "merge":
        merge(rest[0], rest[1:])
    elif command == "stats":
        stats(rest)
    elif command == "sample":
        sample(rest[0], rest[1])
    elif command == "estimate":
        estimate(rest[0], rest[1], rest[2], rest[3:])
    elif command == "report":
        cut = rest.index("--")
        report(rest[0], rest[1], rest[2:cut], rest[cut + 1], rest[cut + 2:])
    else:
        sys.exit(f"bench/store_twins.py: unknown twin {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
