"""One label summary, one batch summary and one rule for ``label --qrels-out``: the notebook,
the CLI and the pipeline render the same data."""

from __future__ import annotations

from collections import Counter

import pytest

from reljudge.cli import main
from reljudge.judge.report import BatchResult, LabelReport, judge_qrels
from reljudge.labels import LabelEvent
from reljudge.store import LabelStore
from reljudge.store.by_name import labels_from_store
from reljudge.testing import FakeOpenAI, Reply

EVENTS = [LabelEvent("q1", "d1", 3, "llm", "judge-a"), LabelEvent("q1", "d1", 0, "llm", "judge-b"),
          LabelEvent("q1", "d2", 1, "llm", "judge-b"), LabelEvent("q2", "d3", 2, "llm", "judge-a"),
          LabelEvent("q2", "d3", 0, "llm", "judge-a", repeat=1),
          LabelEvent("q2", "d3", 2, "llm", "judge-a", repeat=2)]


def test_qrels_out_takes_each_pair_from_the_first_judge_from_a_store_or_a_run(tmp_path):
    """The one rule: a pair's grade is its first judge's (repeats aggregated), whether the
    grades come from the store or from this run's events; the judges' order decides."""
    report = LabelReport("judge-a", events=EVENTS)
    with LabelStore(tmp_path / "s.sqlite") as store:
        store.add_events(EVENTS)
        for judges in (["judge-a", "judge-b"], ["judge-b", "judge-a"]):
            from_store = judge_qrels(judges, "majority", store=store)
            from_run = judge_qrels(judges, "majority", report=report)
            assert from_store.to_dict() == from_run.to_dict()
        assert judge_qrels(["judge-a", "judge-b"], store=store).to_dict() == \
            {"q1": {"d1": 3, "d2": 1}, "q2": {"d3": 2}}
        assert judge_qrels(["judge-b", "judge-a"], store=store).to_dict() == \
            {"q1": {"d1": 0, "d2": 1}, "q2": {"d3": 2}}
    with pytest.raises(ValueError, match="a store or a report"):
        judge_qrels(["judge-a"])


def test_the_notebook_summary_is_the_cli_summary(tmp_path, capsys):
    """``print(report)`` in a notebook shows what ``reljudge label`` prints: the same table,
    failures by kind with an example, and what to do about them."""
    import json

    from reljudge.judge import JudgeConfig, label_pairs

    queries = {"q1": "leave policy", "q2": "expenses"}
    passages = {"d0": {"text": "too long a passage"}, "d1": {"text": "leave"},
                "d2": {"text": "expenses"}}
    pairs = [("q1", "d0"), ("q1", "d1"), ("q2", "d2")]
    (tmp_path / "q.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in queries.items()))
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"docid": d, **p}) + "\n"
                                              for d, p in passages.items()))
    (tmp_path / "pairs.txt").write_text("".join(f"{q} {d}\n" for q, d in pairs))

    def handler(req):
        if "too long a passage" in req.user_text:
            return Reply.error(400, "context too long")
        return Reply.text("final score: 2")

    with FakeOpenAI(handler) as server:
        assert main(["label", "--queries", str(tmp_path / "q.tsv"), "--passages",
                     str(tmp_path / "p.jsonl"), "--pairs", str(tmp_path / "pairs.txt"),
                     "--base-url", server.base_url, "--api-key", "k", "--model", "m",
                     "--cache-dir", str(tmp_path / "c1"), "--quiet"]) == 4
    printed = capsys.readouterr().out
    with FakeOpenAI(handler) as server:
        report = label_pairs(JudgeConfig(model="m", base_url=server.base_url, api_key="k",
                                         cache_dir=tmp_path / "c2"),
                             pairs, queries, passages)
    assert str(report) == printed
    assert "failures: 1 pair(s) without a grade, by kind:\n" in printed
    assert "  http_status  e.g. q1 d0: " in printed
    assert ">failed</th>" in report._repr_html_()


def test_one_batch_summary_for_the_cli_table_json_and_the_pipeline():
    """BatchResult.summary() is the one batch summary: the CLI's table shows its keys (with
    its headers), its JSON and the pipeline's manifest hold it as it is."""
    from reljudge.cli.label_cmd import BATCH_HEADERS, BATCH_TABLE

    result = BatchResult("j", items=4, submitted_batches=2, submitted_requests=4, graded=1,
                         batch_failures=Counter({"expired": 3}), cost=0.25)
    summary = result.summary()
    assert set(BATCH_TABLE) <= set(summary)
    assert summary["batches_submitted"] == 2 and summary["batches_open"] == 0
    assert summary["failed_lines"] == {"expired": 3} and summary["stop_reason"] is None
    headers = [BATCH_HEADERS.get(k, k.replace("_", " ")) for k in BATCH_TABLE]
    assert headers[:5] == ["judge", "pairs x repeats", "graded", "without grade",
                           "batches submitted"] and headers[-1] == "batch cost $"


def test_labels_from_store_resolves_names_as_users_type_them(tmp_path):
    """A judge named by its model alone; an unknown name's error names the option."""
    from reljudge.errors import StoreError

    path = tmp_path / "s.sqlite"
    with LabelStore(path) as store:
        store.add_events([LabelEvent("q1", "d1", 2, "human", "ann"),
                          LabelEvent("q1", "d1", 1, "llm", "gpt-x/umbrela@1#abcd1234")])
    found = labels_from_store(path, "ann", ["gpt-x"], probs=True)
    assert found.reference == "ann" and list(found.judges) == ["gpt-x/umbrela@1#abcd1234"]
    assert found.judges["gpt-x/umbrela@1#abcd1234"].to_dict() == {"q1": {"d1": 1}}
    assert found.distributions == {"gpt-x/umbrela@1#abcd1234": None}
    with pytest.raises(StoreError, match="--judge-source"):
        labels_from_store(path, "ann", ["nobody"], judge_option="--judge-source")


# -- labels stats on a store of many queries: a summary, the least covered rows, --all ------------

def _many_queries(tmp_path):
    """A store of 300 queries with 1 to 7 labels each, and a pool of 8 pairs per query."""
    path = tmp_path / "many.sqlite"
    with LabelStore(path) as store:
        store.add_grades([(f"q{q:03d}", f"d{d}", (q + d) % 4) for q in range(300)
                          for d in range(q % 7 + 1)], "human", "nist")
    pool = tmp_path / "pool.txt"
    pool.write_text("".join(f"q{q:03d} d{d}\n" for q in range(300) for d in range(8)))
    return path, pool


def test_labels_stats_summarises_coverage_and_shows_every_query_with_all(tmp_path, capsys):
    import json

    path, pool = _many_queries(tmp_path)
    assert main(["labels", "stats", "--store", str(path), "--pool", str(pool)]) == 0
    out = capsys.readouterr().out
    coverage = out[out.index("coverage per query"):]
    assert "300 queries; judged per query min 1, median 4, max 7" in coverage
    assert "share of the pool per query min 0.125, median 0.5, max 0.875" in coverage
    rows = [line for line in coverage.splitlines() if line[:2] in ("q0", "q1", "q2")]
    assert len(rows) == 20 and all(line.split()[1] == "1" for line in rows)  # least covered
    assert main(["labels", "stats", "--store", str(path), "--pool", str(pool), "--all"]) == 0
    out = capsys.readouterr().out
    assert len([line for line in out[out.index("coverage per query"):].splitlines()
                if line[:2] in ("q0", "q1", "q2")]) == 300
    assert main(["labels", "stats", "--store", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["coverage"]) == 20 and data["coverage_summary"]["queries"] == 300
    assert data["coverage_summary"]["judged"] == {"min": 1.0, "median": 4.0, "max": 7.0}
    assert main(["labels", "stats", "--store", str(path), "--json", "--all"]) == 0
    assert len(json.loads(capsys.readouterr().out)["coverage"]) == 300


@pytest.mark.parametrize("command", [["stats"], ["merge", "--out", "m.qrels"]])
def test_labels_stats_and_merge_draw_their_steps_once_past_the_delay(tmp_path, monkeypatch,
                                                                     command):
    """A million-label store takes seconds: a bar of the steps on stderr once the command has
    run ``STEPS_AFTER`` seconds, none before that nor with --quiet."""
    import io
    import time

    from rich.console import Console

    import reljudge.cli.common as common
    import reljudge.judge.progress as progress
    from reljudge.store.events import EventLog

    path = str(tmp_path / "s.sqlite")
    with LabelStore(path) as store:
        store.add_events(EVENTS)
    real = EventLog.standing_ids
    monkeypatch.setattr(EventLog, "standing_ids",
                        lambda self, *a: time.sleep(0.2) or real(self, *a))  # a slow step
    monkeypatch.setattr(common, "show_progress", lambda quiet: not quiet)
    drawn = {}
    for after, quiet in ((0.05, []), (60.0, []), (0.05, ["--quiet"])):
        shown = io.StringIO()
        monkeypatch.setattr(progress, "stderr_console",
                            lambda shown=shown: Console(file=shown, force_terminal=True))
        monkeypatch.setattr(common, "STEPS_AFTER", after)
        monkeypatch.chdir(tmp_path)
        assert main(["labels", *command, "--store", path, *quiet]) == 0
        drawn[(after, bool(quiet))] = shown.getvalue()
    assert "reading the grades" in drawn[(0.05, False)]
    assert drawn[(60.0, False)] == drawn[(0.05, True)] == ""
