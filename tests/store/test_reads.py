"""Commands that read labels from a store read each thing once: the sources'
counts in a fixed number of statements, several sources' labels in one read, the stale labels
once per `labels stats`; and they give the numbers the same labels give from files."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reljudge.choices import DERIVED
from reljudge.cli import main
from reljudge.grades import AGGREGATES
from reljudge.judge.report import judge_qrels
from reljudge.labels import RETRACTED, LabelEvent
from reljudge.store import LabelStore
from reljudge.store.events import EventLog
from reljudge.store.merge import merge_rows
from tests.backends import empty_sqlite
from tests.strategies import event

DL23 = Path(__file__).resolve().parent.parent.parent / "examples" / "llmjudge-dl23"


def _store(path: Path, judges: int) -> LabelStore:
    """A store of one human source and ``judges`` LLM sources over 30 pairs, with
    corrections, a second sample, an undo and a failure among them."""
    store = LabelStore(empty_sqlite(path))
    pairs = [(f"q{i % 3}", f"d{i}") for i in range(30)]
    store.add_grades([(q, d, i % 4) for i, (q, d) in enumerate(pairs)], "human", "ann")
    for j in range(judges):
        name = f"judge-{j}"
        store.add_grades([(q, d, (i + j) % 4) for i, (q, d) in enumerate(pairs)], "llm", name)
        store.add_events([LabelEvent("q0", "d0", 3, "llm", name),  # a correction
                          LabelEvent("q1", "d1", 2, "llm", name, repeat=1),  # a 2nd sample
                          LabelEvent("q2", "d2", None, "llm", name, failure=RETRACTED),
                          LabelEvent("q0", "d3", None, "llm", name, failure="HTTP 500",
                                     failure_kind="http_status")])
    return store


def _statements(store: LabelStore) -> list[str]:
    """Every SQL statement the store's SQLite connection runs from now on."""
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    return seen


@pytest.mark.parametrize("judges", [2, 12])
def test_sources_are_counted_in_a_fixed_number_of_statements(tmp_path, judges):
    with _store(tmp_path / "s.sqlite", judges) as store:
        seen = _statements(store)
        found = store.sources()
    assert len(found) == judges + 1
    assert len(seen) <= 3, seen  # was two statements per source, each scanning the events
    assert found[1].events == 34 and found[1].ok == 31 and found[1].failed == 1
    assert found[1].retracted == 1 and sum(found[1].grades.values()) == 31


def _report(tmp_path) -> None:
    """`report` of 30 qrels lines and a run of them against a store of 2 sources."""
    path = tmp_path / "s.sqlite"
    _store(path, 2).close()
    qrels, run = tmp_path / "h.qrels", tmp_path / "a.run"
    qrels.write_text("".join(f"q{i % 3} 0 d{i} {i % 4}\n" for i in range(30)))
    run.write_text("".join(f"q{i % 3} Q0 d{i} {i // 3 + 1} {30 - i} a\n" for i in range(30)))
    assert main(["report", str(qrels), str(run), "--store", str(path), "--out",
                 str(tmp_path / "r.html")]) == 0


def test_several_sources_labels_are_read_in_one_statement(tmp_path):
    with _store(tmp_path / "s.sqlite", 12) as store:
        names = [f"judge-{j}" for j in range(12)]
        # one name, two kinds (an older store's; a new source may not take the name): 2 votes
        store.db.execute("INSERT INTO sources (kind, name) VALUES ('human', 'judge-1')")
        store.add_grades([("q0", "d0", 1)], "human", "judge-1")
        apart = {n: store.merge(f"source={n}").qrels for n in ["ann", *names, "nobody"]}
        seen = _statements(store)
        first = judge_qrels(names, store=store)  # what `label --qrels-out` writes
        assert len([s for s in seen if "FROM events" in s]) == 1, seen  # was one per judge
        seen.clear()
        together = store.source_qrels(["ann", *names, "nobody"])  # audit/calibrate --store
        assert len([s for s in seen if "FROM events" in s]) == 1, seen
        assert len(store.qrels("nobody")) == 0  # no such source: no labels
    assert together == apart
    assert all(list(together[n]) == list(apart[n]) for n in apart)  # the same order too
    assert first == apart["judge-0"]


def test_labels_stats_reads_the_stale_labels_once(tmp_path, monkeypatch, capsys):
    path = tmp_path / "s.sqlite"
    _store(path, 2).close()
    calls = []
    real = EventLog.stale_labels

    def counted(self):
        calls.append(1)
        return real(self)

    monkeypatch.setattr(EventLog, "stale_labels", counted)
    assert main(["labels", "stats", "--store", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["stale"]["labels"] == 0
    assert len(calls) == 1  # was twice: once in the merge, once for its count


def test_store_backed_audit_json_equals_the_file_based_one(tmp_path, capsys):
    """The vendored slice of LLMJudge (examples/llmjudge-dl23: NIST's labels and five judges'
    of the same 4,423 pairs) audited from its files and from a store holding the same labels:
    the same JSON, byte for byte."""
    judges = sorted(p for p in (DL23 / "judges").glob("*.txt")
                    if p.stem != "RMITIR-llama70B")  # out-of-range grades: files need --clip
    folder = tmp_path / "judges"
    folder.mkdir()
    store = tmp_path / "dl23.sqlite"
    reference = tmp_path / "nist"  # the reference is named after its file, or its source
    reference.write_bytes((DL23 / "human.qrels").read_bytes())
    quiet = ["--format", "json"]
    assert main(["labels", "import", str(reference), "--store", str(store), "--source-kind",
                 "human", "--source-name", "nist", *quiet]) == 0
    for f in judges:
        (folder / f.name).write_bytes(f.read_bytes())
        assert main(["labels", "import", str(f), "--store", str(store), "--source-kind",
                     "llm", "--source-name", f.stem, *quiet]) == 0
    capsys.readouterr()
    runs = sorted(str(p) for p in (DL23 / "runs").glob("*.run"))
    assert main(["audit", "--reference", str(reference), "--judges-dir", str(folder),
                 *runs, "--bootstrap", "50", *quiet]) == 0
    from_files = capsys.readouterr().out
    assert main(["audit", "--store", str(store), "--human-source", "nist", *runs,
                 "--bootstrap", "50", *quiet]) == 0
    from_store = capsys.readouterr().out
    audited = {j["name"] for j in json.loads(from_files)["judges"]}
    assert {f.stem for f in judges} < audited  # and the ensembles
    assert from_store == from_files


def test_the_reports_judges_and_costs_decode_each_meta_once_not_every_event(tmp_path,
                                                                            monkeypatch):
    """`report --store` decoded every LLM event into a LabelEvent to count judges and costs:
    2 s of its 10 on the LLMJudge store. Same facts and costs, read as columns."""
    from reljudge.report import facts

    store = LabelStore(tmp_path / "s.sqlite")
    metas = [{"model": "gpt-4o", "endpoint": "https://api.openai.com/v1", "prompt": "p"},
             {"model": "free-model", "prompt": "p"}]
    store.add_events([LabelEvent(f"q{i % 3}", f"d{i}", i % 4, "llm", f"j{i % 2}",
                                 tokens_in=100 + i, tokens_out=1, cost=0.001 * (i % 3),
                                 meta=metas[i % 2]) for i in range(40)])
    store.add_grades([("q0", "d0", 1)], "human", "ann")
    want = facts.judges_and_costs(store)
    decoded = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda s, *a, **k: decoded.append(s) or real(s))
    monkeypatch.setattr(EventLog, "events", lambda *a, **k: pytest.fail("decodes every event"))
    assert facts.judges_and_costs(store) == want
    assert len(decoded) == 2
    store.close()


def test_estimate_from_a_store_loads_no_scipy_stats(tmp_path):
    """Importing scipy.stats (for three functions scipy.special has) was 0.5-0.8 s of
    `estimate --store`'s time: 7x the labels' read from files on the LLMJudge store."""
    from tests.cli.test_startup import loaded

    path = tmp_path / "s.sqlite"
    _store(path, 1).close()
    run = tmp_path / "a.run"
    run.write_text("".join(f"q{i % 3} Q0 d{i} {i // 3 + 1} {30 - i} a\n" for i in range(30)))
    assert main(["sample", "--store", str(path), "--judge", "judge-0", "--name", "s0",
                 "--budget", "12", "--seed", "1"]) == 0
    modules = loaded("estimate", "--store", str(path), "--sample", "s0", "-m", "DCG@10",
                     str(run))
    assert "reljudge.infer.scores" in modules and "scipy.stats" not in modules


def test_labels_stats_loads_no_event_loop(tmp_path):
    """Reading the claims (whose owner is gone) imported asyncio: 25 ms of `labels stats`."""
    from tests.cli.test_startup import loaded

    path = tmp_path / "s.sqlite"
    _store(path, 1).close()
    assert "asyncio" not in loaded("labels", "stats", "--store", str(path))


def test_estimate_names_its_judge_without_counting_every_sources_events(tmp_path, capsys,
                                                                      monkeypatch):
    """Naming the judge took the sources' counts (a pass over every event): a second."""
    path = tmp_path / "s.sqlite"
    _store(path, 2).close()
    run = tmp_path / "a.run"
    run.write_text("".join(f"q{i % 3} Q0 d{i} {i // 3 + 1} {30 - i} a\n" for i in range(30)))
    args = ["--store", str(path), "--judge", "judge-1", "--seed", "1"]
    assert main(["sample", *args, "--name", "s0", "--budget", "12"]) == 0
    capsys.readouterr()
    want = main(["estimate", *args, "--sample", "s0", "-m", "DCG@10", str(run)]), \
        capsys.readouterr().out
    monkeypatch.setattr(EventLog, "sources", lambda self: pytest.fail("counts every source"))
    assert (main(["estimate", *args, "--sample", "s0", "-m", "DCG@10", str(run)]),
            capsys.readouterr().out) == want
    assert main(["estimate", *args[:2], "--judge", "nobody", "--sample", "s0", str(run)]) == 2
    assert "no source named 'nobody'" in capsys.readouterr().err


def test_a_merge_reads_only_the_grades_its_policy_can_choose(tmp_path):
    """`labels merge` read every judge's grades to keep the human ones (human-first): 150k
    rows for 4,423 labels on the LLMJudge store. A pair with a standing human grade is
    decided by its human grades alone; a pair whose human grade was undone, by the rest."""
    with _store(tmp_path / "s.sqlite", 12) as store:
        store.add_events([LabelEvent("q2", "d5", None, "human", "ann", failure=RETRACTED)])
        every = store.standing_ids()
        read = {policy: len(store.standing_ids(policy)) for policy in
                ("human-first", "adjudicated-first", "human-only", "llm-only", "source=judge-3")}
        assert read == {"human-first": 29 + 12, "adjudicated-first": 29 + 12, "human-only": 29,
                        "llm-only": len(every) - 29, "source=judge-3": 31}
        for policy in read:
            assert store.merge(policy) == store.merge(policy, standing=every)


def test_report_from_a_store_reads_the_standing_labels_once_by_their_ids(tmp_path,
                                                                         monkeypatch):
    """The conflicts and the store's merged labels were read as label rows (every label's
    query, passage and source names joined in) and merged row by row: 2.5 s of `report
    --store`'s 4 on the LLMJudge store. Now one read of the store's ids serves the conflicts,
    the sources' counts and the merge, each merged column by column."""
    reads = []
    real = EventLog.standing_ids
    monkeypatch.setattr(EventLog, "standing_ids",
                        lambda self, *policy: reads.append(1) or real(self, *policy))
    monkeypatch.setattr(EventLog, "label_rows", lambda self: pytest.fail("reads label rows"))
    _report(tmp_path)
    assert len(reads) == 1


def test_a_report_sorts_the_standing_labels_into_votes_once(tmp_path, monkeypatch):
    """The conflicts and the store's merged labels each sorted every standing grade into
    votes (``merge.latest_votes``: a lexsort of the 150k grades of the LLMJudge store); the
    report now sorts them once for both."""
    import reljudge.store.events as events
    import reljudge.store.merge as merge

    sorts = []
    real = merge.latest_votes
    for module in (events, merge):
        monkeypatch.setattr(module, "latest_votes", lambda *a: sorts.append(1) or real(*a))
    _report(tmp_path)
    assert len(sorts) == 1


def test_a_report_reads_the_texts_and_answers_of_the_conflicts_it_shows_alone(tmp_path,
                                                                             monkeypatch):
    """`report --store` shows the 50 largest conflicts, and counts the rest: it read the
    texts and every judge's answer of all of them (2,106 pairs x 33 judges on the LLMJudge
    store)."""
    from reljudge.report.model import ReportSettings, compute
    from reljudge.store import views
    from reljudge.trec_data import Qrels, Run

    path = tmp_path / "s.sqlite"
    _store(path, 2).close()
    qids, docids = [f"q{i % 3}" for i in range(30)], [f"d{i}" for i in range(30)]
    qrels = Qrels.from_arrays(qids, docids, [i % 4 for i in range(30)])
    run = Run.from_arrays(qids, docids, [30.0 - i for i in range(30)], name="a")
    asked = []
    real = views._llm_answers
    monkeypatch.setattr(views, "_llm_answers",
                        lambda store, ids, wanted: asked.append(len(wanted)) or real(store, ids,
                                                                                     wanted))
    with LabelStore(path, create=False, readonly=True) as store:
        every = views.conflicts_with_text(store)
        model = compute(qrels, [run], ReportSettings(conflicts=3, audit_bootstrap=0), store=store)
    assert len(every) > 3 and model.conflict_count == len(every)
    assert model.conflicts == every[:3] and asked == [len(every), 3]


def test_the_reports_costs_read_only_the_events_that_carry_a_cost_or_tokens(tmp_path):
    """Imported labels record no cost: the costs read every LLM event one by one anyway."""
    from reljudge.report import facts

    store = LabelStore(tmp_path / "s.sqlite")
    store.add_grades([(f"q{i % 3}", f"d{i}", i % 4) for i in range(500)], "llm", "imported")
    store.add_events([LabelEvent("q0", f"d{i}", 1, "llm", "paid", tokens_in=100, tokens_out=1,
                                 cost=0.001 * (i % 2), meta={"model": "gpt-4o"})
                      for i in range(6)])
    assert len(store.cost_rows("llm")) == 6
    judges, costs = facts.judges_and_costs(store)
    assert [(j.source, j.model, j.events) for j in judges] == [("imported", None, 500),
                                                               ("paid", "gpt-4o", 6)]
    assert [(c.source, c.spent_tokens, c.cached_tokens) for c in costs] == [
        ("imported", 0, 0), ("paid", 303, 303)]
    store.close()


def test_sample_and_audit_name_sources_without_counting_them(tmp_path, capsys, monkeypatch):
    """Naming the judge or reference took the sources' counts (a pass over every event)."""
    path = tmp_path / "s.sqlite"
    _store(path, 2).close()
    monkeypatch.setattr(EventLog, "sources", lambda self: pytest.fail("counts every source"))
    store = ["--store", str(path)]
    assert main(["sample", *store, "--judge", "judge-1", "--name", "s0", "--budget", "12",
                 "--seed", "1"]) == 0
    assert main(["audit", *store, "--human-source", "ann", "--format", "json"]) == 0


def _column_merge_equals_row_merge(folder: Path, batches: list, derived: bool) -> None:
    """``store.merge`` from the store's ids and from its votes equals ``merge_rows`` of the
    label rows, under every policy, aggregation and derived rule."""
    with LabelStore(empty_sqlite(folder / "s.sqlite")) as store:
        for batch in batches:
            store.add_events(batch)
        if derived:
            store.add_derived("calibrated:j", [("q1", "d1"), ("q2", "d2")],
                              [[0.1, 0.2, 0.3, 0.4], [0.5, 0.3, 0.1, 0.1]], method="isotonic",
                              fitted_on={"judge": "claude"}, grades=[2, 1])
        rows = sorted(store.label_rows(), key=lambda r: r[6])
        assert store.sources(store.standing_ids()) == store.sources()
        votes = store.votes()  # what a report sorts once for its conflicts and merge
        standing: dict = {}  # the ids a policy can choose (a third of a merge's time)
        for policy, aggregate, fractional, rule in itertools.product(
                ("human-first", "adjudicated-first", "human-only", "llm-only", "source=alice",
                 "source=calibrated:j"), AGGREGATES, (False, True), DERIVED):
            by_rows = store.merge(policy, aggregate, fractional, rule, rows=rows)
            # a policy's first merge reads its ids itself; the others take those ids
            assert store.merge(policy, aggregate, fractional, rule,
                               standing=standing.get(policy)) == by_rows, \
                (policy, aggregate, fractional, rule)
            if policy not in standing:
                standing[policy] = store.standing_ids(policy)
            assert store.merge(policy, aggregate, fractional, rule, votes=votes) == by_rows
            if rule == "recorded":
                assert by_rows == merge_rows(rows, policy, aggregate, fractional,
                                             store.stale_labels())


_STREAMS = st.lists(st.lists(event(), min_size=1, max_size=12), min_size=1, max_size=5)


@pytest.mark.slow  # 60 stores, each merged 432 times: the fast set has the sibling below
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=_STREAMS, derived=st.booleans())
def test_the_column_merge_equals_the_row_merge(tmp_path_factory, batches, derived):
    """Two paths, one answer: ``store.merge`` (the store's ids, column by column) gives what
    ``merge_rows`` gives from the label rows in event order, votes in the same order, under
    every policy, aggregation and derived rule; ``sources`` counts the same from those ids."""
    _column_merge_equals_row_merge(tmp_path_factory.mktemp("m"), batches, derived)


#: a stream with every policy's sources, a correction, a second sample, a tie, an undo of a
#: human grade (the LLM ones decide the pair then), failures, conflicts, costs and tokens
_STREAM = [[LabelEvent("q1", "d1", 2, "human", "alice"), LabelEvent("q1", "d1", 0, "llm", "claude"),
            LabelEvent("q1", "d1", 3, "llm", "claude", 1), LabelEvent("q1", "d2", 1, "human", "bob"),
            LabelEvent("q1", "d2", 3, "human", "adjudicated:dan"),
            LabelEvent("q1", "d2", 2, "llm", "gpt/umbrela@1#abcd"),  # corrected below
            LabelEvent("q2", "d2", 1, "import", "nist")],
           [LabelEvent("q1", "d1", 1, "human", "alice"),
            LabelEvent("q1", "d2", 0, "llm", "gpt/umbrela@1#abcd", tokens_in=80,
                       meta={"model": "gpt-4o"}),
            LabelEvent("q2", "d2", 2, "llm", "gpt/umbrela@1#abcd", tokens_in=90, cost=0.002),
            LabelEvent("q2", "d2", 3, "llm", "claude"),
            LabelEvent("q1", "d2", None, "human", "bob", failure=RETRACTED),
            LabelEvent("q2", "d1", None, "llm", "claude", failure="no grade in the answer",
                       failure_kind="unparseable")]]


@example(batches=_STREAM, derived=True)
@example(batches=_STREAM, derived=False)
@settings(max_examples=2, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=_STREAMS, derived=st.booleans())
def test_the_column_merge_equals_the_row_merge_on_a_few_streams(tmp_path_factory, batches,
                                                                derived):
    """The fast set's share of the sweep above: the same equalities on a stream of every
    case, with and without a derived source, and on two drawn streams."""
    _column_merge_equals_row_merge(tmp_path_factory.mktemp("m"), batches, derived)


def _facts_event_by_event(store: LabelStore) -> tuple[list, list]:
    """``report.facts.judges_and_costs`` as it was: every LLM event read and weighed alone."""
    from reljudge.judge.cost import price_for
    from reljudge.report.facts import Cost, JudgeFacts, _host

    facts: dict[tuple, int] = {}
    costs: dict[str, list] = {}
    for e in store.events(kind="llm"):
        meta = e.meta or {}
        key = (e.source_name, meta.get("model"), _host(meta.get("endpoint")),
               meta.get("prompt"), meta.get("prompt_version"), meta.get("prompt_hash"))
        facts[key] = facts.get(key, 0) + 1
        c = costs.setdefault(e.source_name, [0.0, 0, 0.0, 0, 0])
        tokens = (e.tokens_in or 0) + (e.tokens_out or 0)
        if e.cost:
            c[0] += e.cost
            c[1] += tokens
        elif tokens:
            p = price_for(meta.get("model") or "")
            value = p.cost(e.tokens_in or 0, e.tokens_out or 0) if p.known else 0.0
            c[2:] = [c[2] + value, c[3] + tokens, c[4]] if value > 0 else [c[2], c[3],
                                                                           c[4] + tokens]
    return [JudgeFacts(*k, n) for k, n in facts.items()], [Cost(s, *v) for s, v in costs.items()]


def _answers_row_by_row(rows: list[tuple], pairs: set[tuple[str, str]]) -> dict:
    """The LLM answers of ``conflicts_with_text`` as they were read: from the label rows."""
    latest: dict[tuple, tuple[int, int]] = {}
    for qid, docid, kind, source, sample, grade, eid in rows:
        key = (qid, docid, source, sample)
        if kind == "llm" and (qid, docid) in pairs and (key not in latest
                                                        or eid > latest[key][0]):
            latest[key] = (eid, grade)
    answers: dict[tuple[str, str], list[tuple]] = {}
    for (qid, docid, source, sample), (_, grade) in sorted(latest.items()):
        answers.setdefault((qid, docid), []).append((source, sample, grade))
    return answers


def _column_conflicts_equal_row_ones(folder: Path, batches: list) -> None:
    """``store.conflicts``, ``conflicts_with_text`` and the report's judges and costs equal
    what the label rows and the events one by one give."""
    from reljudge.report.facts import judges_and_costs
    from reljudge.store import conflicts
    from reljudge.store.views import conflicts_with_text

    with LabelStore(empty_sqlite(folder / "s.sqlite")) as store:
        for batch in batches:
            store.add_events(batch)
        rows = sorted(store.label_rows(), key=lambda r: r[6])
        votes = store.votes()
        for aggregate in AGGREGATES:
            want = conflicts(rows, aggregate)
            assert store.conflicts(aggregate) == want, aggregate
            assert store.conflicts(aggregate, votes=votes) == want
        found = conflicts_with_text(store, min_diff=0.5)
        want = _answers_row_by_row(rows, {(c.qid, c.docid) for c in found})
        assert {(c.qid, c.docid): [(a["source"], a["repeat"], a["grade"]) for a in c.answers]
                for c in found if c.answers} == want
        assert judges_and_costs(store) == _facts_event_by_event(store)


@pytest.mark.slow  # 60 stores: the fast set has the sibling below
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=_STREAMS)
def test_the_column_conflicts_and_costs_equal_the_row_ones(tmp_path_factory, batches):
    """Two paths, one answer: the conflicts merged from the store's ids (``store.conflicts``,
    ``conflicts_with_text``) are ``merge.conflicts`` of the label rows in event order, with the
    same LLM answers, under every aggregation; the report's judges and costs read grouped are
    those of every event weighed alone."""
    _column_conflicts_equal_row_ones(tmp_path_factory.mktemp("c"), batches)


@example(batches=_STREAM)
@settings(max_examples=2, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=_STREAMS)
def test_the_column_conflicts_and_costs_equal_the_row_ones_on_a_few_streams(tmp_path_factory,
                                                                           batches):
    """The fast set's share of the sweep above: a stream of every case and two drawn ones."""
    _column_conflicts_equal_row_ones(tmp_path_factory.mktemp("c"), batches)


def test_a_merge_by_a_source_the_store_lacks_is_one_line_naming_its_sources(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    with LabelStore(path) as store:
        store.add_grades([("q1", "d1", 2)], "human", "nist")
        assert len(store.merge("source=nist").labels) == 1
    assert main(["labels", "merge", "--store", str(path), "--policy", "source=nsit"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no source named 'nsit'" in err and "nist" in err, err


@pytest.mark.parametrize("odd", [None, "large values", "a fraction"])
def test_the_standing_grades_read_a_column_at_a_time_are_those_read_a_row_at_a_time(tmp_path,
                                                                                   odd):
    """The standing grades' ids were read a Python tuple of six integers a row (0.3 s of
    `audit --store` on the LLMJudge store); ``id_rows`` reads each column as one text. Large
    or negative ids, samples and grades read the same; a grade that is not a whole number (a
    store written by hand) is read a row at a time, as before."""
    from reljudge.store.events import _STANDING, _UNDONE
    from reljudge.store.id_rows import COLUMNS, id_rows

    with _store(tmp_path / "s.sqlite", 3) as store:
        with store.db.transaction() as conn:
            if odd == "large values":
                conn.execute("UPDATE events SET sample = 5000, grade = -99 WHERE id = 40")
                conn.execute("UPDATE events SET id = ? WHERE id = 42", (1 << 60,))
                conn.execute("INSERT INTO passages (id, docid) VALUES (-5, 'd-5')")
                conn.execute("UPDATE events SET d = -5 WHERE id = 43")
            elif odd == "a fraction":
                conn.execute("UPDATE events SET grade = 2.5 WHERE id = 41")
        sql = f"SELECT {COLUMNS} FROM events e {_UNDONE} WHERE e.grade IS NOT NULL AND {_STANDING}"
        seen = _statements(store)
        read = id_rows(store.conn, sql)
        six = np.asarray(store.conn.execute(sql).fetchall(), np.int64).reshape(-1, 6)
        order = np.lexsort(read.T[::-1])
        assert read[order].tolist() == sorted(six.tolist()) and len(six) == 30 + 3 * 31
        assert (sql in seen[:-1]) == (odd == "a fraction")  # a row at a time only then
        assert sorted(store.standing_ids().tolist()) == sorted(six.tolist())


@pytest.mark.parametrize("large", [False, True])
def test_the_votes_sorted_by_one_packed_key_are_those_of_a_sort_by_columns(tmp_path,
                                                                        monkeypatch, large):
    """``latest_votes`` sorts by one int64 a row when the ids' ranges fit in 63 bits, else by
    ``np.lexsort`` of the columns (an event id of 2**60): both give the same votes from the
    standing grades in any order."""
    from reljudge.store import merge

    with _store(tmp_path / "s.sqlite", 3) as store:
        if large:
            with store.db.transaction() as conn:
                conn.execute("UPDATE events SET id = ? WHERE id = 42", (1 << 60,))
        standing = store.standing_ids()[::-1]
        queries, passages = store.pair_ids()
        packed = merge.latest_votes(standing, queries, passages).rows
        assert (merge._packed([standing[:, k] for k in range(5)]) is None) == large
        monkeypatch.setattr(merge, "_packed", lambda columns: None)
        assert merge.latest_votes(standing, queries, passages).rows.tolist() == packed.tolist()
        assert store.merge(votes=merge.latest_votes(standing, queries, passages)) == \
            store.merge(rows=sorted(store.label_rows(), key=lambda r: r[6]))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(event(), min_size=1, max_size=12), min_size=1, max_size=5))
def test_labels_stats_counts_failures_from_the_sources_as_the_events_give_them(
        tmp_path_factory, batches):
    """`labels stats` counts the failed judgments from the sources' counts, and looks for
    current failures only when some event has no grade: the same numbers as reading the
    failures themselves."""
    with LabelStore(empty_sqlite(tmp_path_factory.mktemp("f") / "s.sqlite")) as store:
        for batch in batches:
            store.add_events(batch)
        sources = store.sources(store.standing_ids())
        assert sum(s.failed for s in sources) == len(store.failures())
        assert any(s.events > s.ok for s in sources) or store.current_failures() == []
        assert any(s.events > s.ok for s in sources) == any(
            e.grade is None for e in store.events())
