"""`reljudge probe` end to end: dry run, a run into a store, a rerun that pays nothing, bad
inputs refused in one line with nothing sent or written, and a kill -9 mid-probe."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reljudge.cli import main
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI
from reljudge.testing.graders import lexical_grader
from tests.helpers import kill_after_calls

HR = Path(__file__).resolve().parents[2] / "examples" / "hr-handbook"


def args(server, tmp_path, *more, qrels=None, queries=None, passages=None):
    return ["probe", "--queries", str(queries or HR / "queries.tsv"),
            "--passages", str(passages or HR / "passages.jsonl"),
            "--qrels", str(qrels or HR / "human.qrels"), "--model", "m",
            "--base-url", server.base_url, "--api-key", "k",
            "--cache-dir", str(tmp_path / "cache"), *more]


def test_probe_is_a_command_with_help(capsys):
    with pytest.raises(SystemExit) as e:
        main(["probe", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for word in ("--kinds", "--per-kind", "--probe-seed", "--prompt", "--max-cost", "--dry-run",
                 "query-insert", "salad", "padding", "--human-source"):
        assert word in text


def test_a_dry_run_sends_nothing_and_creates_no_store(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    with FakeOpenAI(lexical_grader) as server:
        assert main(args(server, tmp_path, "--dry-run", "--store", str(db), "--json")) == 0
        assert server.calls == 0
    est = json.loads(capsys.readouterr().out)
    assert est[0]["to_send"] == est[0]["items"] > 0 and not db.exists()


@pytest.mark.slow  # two templates, twice
def test_a_run_into_a_store_then_a_rerun_pays_nothing_and_reports_the_same(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    with FakeOpenAI(lexical_grader) as server:
        assert main(args(server, tmp_path, "--store", str(db), "--json", "--prompt", "umbrela",
                         "--prompt", "guarded", "--per-kind", "6")) == 0
        first = json.loads(capsys.readouterr().out)
        paid = server.calls
        shutil.rmtree(tmp_path / "cache")  # the store alone settles what was asked
        assert main(args(server, tmp_path, "--store", str(db), "--json", "--prompt", "umbrela",
                         "--prompt", "guarded", "--per-kind", "6")) == 0
        again = json.loads(capsys.readouterr().out)
        assert server.calls == paid
    assert again["kinds"] == first["kinds"] and len(first["judges"]) == 2
    assert first["skipped_queries"] == ["hr12"] or len(first["skipped_queries"]) == 1
    assert {k["kind"] for k in first["kinds"]} >= {"query-insert", "salad", "rubric-echo"}
    with LabelStore(db) as store:
        assert store.count() == 0 and store.probe_texts()  # probes only, no label


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def refused(server, tmp_path, capsys, argv, expected: str) -> None:
    """Exit 2, one line naming the problem, nothing sent, no store made."""
    db = tmp_path / "new.sqlite"
    assert main([*argv, "--store", str(db)]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1, err
    assert server.calls == 0 and not db.exists()


def test_bad_inputs_are_refused_before_any_call(tmp_path, capsys):
    with FakeOpenAI(lexical_grader) as server:
        relevant_only = write(tmp_path, "rel.qrels", "hr01 0 chunk_01 3\nhr02 0 chunk_05 2\n")
        refused(server, tmp_path, capsys, args(server, tmp_path, qrels=relevant_only),
                "no known non-relevant pair (grade 0) for any query: nothing to probe (2 "
                "queries have known grades, all relevant)")
        stop = write(tmp_path, "q.tsv", (HR / "queries.tsv").read_text()
                     .replace("What is the maternity leave policy?", "What is the?"))
        refused(server, tmp_path, capsys, args(server, tmp_path, queries=stop),
                "query hr01 ('What is the?') has no content words")
        ghost = write(tmp_path, "ghost.qrels", "hr01 0 chunk_01 3\nhr01 0 nowhere 0\n")
        refused(server, tmp_path, capsys, args(server, tmp_path, qrels=ghost),
                "1 probed passage(s) have no text (first: query hr01, document nowhere)")
        refused(server, tmp_path, capsys, args(server, tmp_path, "--kinds", "salad,qurey"),
                "unknown probe kind 'qurey'; known: query-insert")
        refused(server, tmp_path, capsys,
                args(server, tmp_path, "--price-in", "1000", "--price-out", "1000",
                     "--max-cost", "0.5"),
                "more than --max-cost $0.5: raise --max-cost, or probe fewer pairs")
        refused(server, tmp_path, capsys, ["probe", "--queries", str(HR / "queries.tsv"),
                                           "--passages", str(HR / "passages.jsonl"),
                                           "--model", "m", "--base-url", server.base_url],
                "give the known grades as --qrels FILE or as --human-source")


def test_out_writes_every_probed_pair_with_its_text_and_grades(tmp_path, capsys):
    from reljudge.probe.kinds import content_words, words

    out = tmp_path / "pairs.jsonl"
    with FakeOpenAI(lexical_grader) as server:
        assert main(args(server, tmp_path, "--json", "--kinds", "query-insert,salad",
                         "--per-kind", "7", "--out", str(out))) == 0
    report = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 14 and {r["kind"] for r in rows} == {"query-insert", "salad"}
    queries = dict(line.split("\t") for line in (HR / "queries.tsv").read_text().splitlines())
    for r in rows:  # the recorded text, graded again by the lexical rule: the recorded grade
        wanted = content_words(queries[r["qid"]])
        found = {w.lower() for w in words(r["text"])}
        assert r["probe_grade"] == min(3, int(4 * sum(w in found for w in wanted) / len(wanted)))
    for k in report["kinds"]:
        mine = [r for r in rows if r["kind"] == k["kind"]]
        assert k["flips1"] == sum(r["clean_grade"] == 0 and r["probe_grade"] >= 1 for r in mine)


def test_a_query_without_a_known_non_relevant_pair_is_skipped_and_counted(tmp_path, capsys):
    qrels = write(tmp_path, "k.qrels", "hr01 0 chunk_01 3\nhr01 0 chunk_10 0\n"
                                       "hr02 0 chunk_05 2\n")
    with FakeOpenAI(lexical_grader) as server:
        assert main(args(server, tmp_path, "--json", "--kinds", "query-insert",
                         qrels=qrels)) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["skipped_queries"] == ["hr02"] and out["kinds"][0]["n"] == 1


def test_known_grades_from_a_stores_reference_source(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    assert main(["labels", "import", "--store", str(db), str(HR / "human.qrels"),
                 "--source-kind", "human", "--source-name", "nist"]) == 0
    capsys.readouterr()
    with FakeOpenAI(lexical_grader) as server:
        argv = args(server, tmp_path, "--json", "--kinds", "salad", "--store", str(db))
        argv[argv.index("--qrels"):argv.index("--qrels") + 2] = ["--human-source", "nist"]
        assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kinds"][0]["n"] == 11  # hr-handbook's known non-relevant pairs


KILL_SCRIPT = """
import sys
from reljudge.cli import main
sys.exit(main(sys.argv[1:]))
"""


def slow_lexical(request):
    reply = lexical_grader(request)
    reply.delay = 0.03
    return reply


@pytest.mark.slow  # SIGKILL, then a rerun
def test_kill_9_mid_probe_then_rerun_pays_no_answer_twice_and_reports_the_same(tmp_path,
                                                                              capsys):
    """The probe killed is a process of its own; the rerun and the run never interrupted
    (what they read is the store and the cache, not a process) run in this one."""
    with FakeOpenAI(slow_lexical) as server:
        argv = args(server, tmp_path, "--store", str(tmp_path / "s.sqlite"), "--json",
                    "--per-kind", "8", "--concurrency", "4", "--quiet")
        killed_at = kill_after_calls(server, [sys.executable, "-c", KILL_SCRIPT, *argv], 25,
                                     60, stdout=subprocess.PIPE)
        capsys.readouterr()
        assert main(argv) == 0
        done = capsys.readouterr().out
        asked = [r.user_text for r in server.requests]
        total = len(set(asked))
        assert 25 <= killed_at < total, "the run finished before it could be killed"
        assert len(asked) - total <= 4  # only the calls in flight at the kill are asked again
    with FakeOpenAI(lexical_grader) as fresh:  # the same probes, never interrupted
        clean = args(fresh, tmp_path / "fresh", "--store", str(tmp_path / "fresh.sqlite"),
                     "--json", "--per-kind", "8", "--quiet")
        (tmp_path / "fresh").mkdir()
        assert main(clean) == 0
        whole = capsys.readouterr().out
        assert fresh.calls == total
    assert json.loads(done)["kinds"] == json.loads(whole)["kinds"]


@pytest.mark.slow  # label, probe, audit and report on one store
def test_audit_and_report_show_the_stores_probes_apart(tmp_path, capsys):
    db, runs = str(tmp_path / "s.sqlite"), [str(HR / "runs" / r) for r in ("bm25.run",
                                                                          "trigram.run")]
    assert main(["labels", "import", "--store", db, str(HR / "human.qrels"),
                 "--source-kind", "human", "--source-name", "nist"]) == 0
    with FakeOpenAI(lexical_grader) as server:
        judge = ["--model", "m", "--base-url", server.base_url, "--api-key", "k",
                 "--cache-dir", str(tmp_path / "cache")]
        assert main(["label", "--queries", str(HR / "queries.tsv"), "--passages",
                     str(HR / "passages.jsonl"), *runs, "--store", db, *judge]) == 0
        audit = ["audit", "--store", db, "--human-source", "nist", *runs]
        capsys.readouterr()
        assert main(audit) == 0
        assert "probes (reljudge probe" not in capsys.readouterr().out  # none yet
        assert main(["probe", "--queries", str(HR / "queries.tsv"), "--passages",
                     str(HR / "passages.jsonl"), "--human-source", "nist", "--store", db,
                     *judge, *runs]) == 0
    capsys.readouterr()
    assert main(audit) == 0
    out = capsys.readouterr().out
    lines = out[out.index("probes (reljudge probe"):].splitlines()
    assert len(lines) == 2 and "m/umbrela@1#" in lines[1]
    assert "query-insert flips" in lines[1] or "query-words flips" in lines[1]
    assert "control salad 0/" in lines[1]
    page = tmp_path / "r.html"
    assert main(["report", str(HR / "human.qrels"), *runs, "--store", db, "--out",
                 str(page)]) == 0
    html = page.read_text()
    assert "Can the judge be gamed?" in html and "rank exploited" in html
    assert "query-insert" in html and "salad (control)" in html


def test_a_store_whose_spend_leaves_no_room_is_refused_with_nothing_written(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    with LabelStore(db) as store:
        store.update_spend(store.open_spend("m/umbrela", "http://x/v1"), 3, 10, 5, 1.0)
    with FakeOpenAI(lexical_grader) as server:
        assert main(args(server, tmp_path, "--store", str(db), "--max-total-cost", "0.5",
                         "--price-in", "1", "--price-out", "1")) == 2
        assert server.calls == 0
    err = capsys.readouterr().err
    assert "beside the $1.0000 the store has spent, more than --max-total-cost $0.5" in err
    with LabelStore(db) as store:
        assert store.probe_texts() == [] and store.probe_spend() == 0


def test_a_clean_pair_labelled_before_costs_nothing(tmp_path, capsys):
    """The clean passage is asked with the very prompt `label` sent: the answer cache has it."""
    with FakeOpenAI(lexical_grader) as server:
        assert main(["label", "--queries", str(HR / "queries.tsv"), "--passages",
                     str(HR / "passages.jsonl"), "--pairs", str(HR / "human.qrels"),
                     "--model", "m", "--base-url", server.base_url, "--api-key", "k",
                     "--cache-dir", str(tmp_path / "cache"), "--quiet"]) == 0
        capsys.readouterr()
        assert main(args(server, tmp_path, "--kinds", "salad", "--dry-run", "--json")) == 0
    est = json.loads(capsys.readouterr().out)[0]
    assert est["items"] == 22 and est["cached"] == 11 and est["to_send"] == 11
