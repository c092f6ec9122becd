"""The label store: real SQLite files, append-only events, imports, merge rules, concurrency."""

from __future__ import annotations

import gzip
import json
import lzma
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys

import pytest

from reljudge.cli import main
from reljudge.errors import InputError, StoreError
from reljudge.io.label_files import read_judge, read_labels
from reljudge.io.trec import read_qrels
from reljudge.labels import RETRACTED, LabelEvent
from reljudge.store import LabelStore, conflicts, import_labels, merge_rows
from reljudge.store.schema import SCHEMA_VERSION
from tests.backends import BACKENDS, empty_store, integrity_errors, store_location
from tests.helpers import v1_store


def ev(q, d, grade, kind="llm", name="judge", repeat=0, failure=None, **kw):
    return LabelEvent(q, d, grade, kind, name, repeat, failure=failure, **kw)


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    with LabelStore(empty_store(request, tmp_path)) as s:
        yield s


def test_events_round_trip_with_provenance_and_failures(store):
    store.add_events([
        ev("q1", "d1", 2, probs=(0.1, 0.2, 0.6, 0.1), expected_grade=1.7, tokens_in=120,
           tokens_out=8, cost=0.0003, latency=0.4, raw="O: 2", meta={"model": "m"}),
        ev("q1", "d2", None, failure="unparseable: no final score", raw="I think so",
           failure_kind="unparseable"),
    ])
    got = list(store.events())
    assert got[0].probs == (0.1, 0.2, 0.6, 0.1) and got[0].meta == {"model": "m"}
    assert got[0].cost == 0.0003 and got[0].created_at is not None
    assert got[1].grade is None and got[1].failure.startswith("unparseable")
    assert store.failures() == [("q1", "d2", "judge", "unparseable: no final score",
                                 "I think so")]
    assert store.judged_pairs() == {("q1", "d1")}
    assert store.judged_pairs(ok_only=False) == {("q1", "d1"), ("q1", "d2")}


def test_outcomes_are_the_events_grade_and_failure_in_order(store):
    store.add_events([ev("q1", "d1", None, failure="HTTP 500", failure_kind="http_status"),
                      ev("q1", "d1", 2, repeat=1, meta={"model": "m"}, raw="O: 2"),
                      ev("q2", "d1", 1, name="other"),
                      ev("q1", "d2", None, failure="empty answer", failure_kind="unparseable")])
    want = [(e.qid, e.docid, e.repeat, e.grade, e.failure_kind, e.failure, e.shown)
            for e in store.events(source="judge")]
    assert [tuple(o) for o in store.outcomes("judge")] == want and len(want) == 3
    assert next(iter(store.outcomes("judge"))).failure_kind == "http_status"


def test_passage_titles_are_kept_and_texts_give_them_back_on_request(store):
    store.add_passages({"d1": {"text": "body", "title": "Head"}, "d2": "plain",
                        "d3": {"text": "no title"}})
    pairs = [("q", "d1"), ("q", "d2"), ("q", "d3")]
    assert store.texts(pairs)[1] == {"d1": "body", "d2": "plain", "d3": "no title"}
    assert store.texts(pairs, titles=True)[1] == {"d1": {"text": "body", "title": "Head"},
                                                  "d2": "plain", "d3": "no title"}
    store.add_passages({"d1": "body"})  # the latest input wins, title included
    assert store.texts(pairs, titles=True)[1]["d1"] == "body"


def test_a_passage_given_as_none_is_refused_naming_it_and_nothing_is_written(store):
    with pytest.raises(StoreError, match="passage 'd2': expected a text or a record, found "
                                         "None"):
        store.add_passages({"d1": "body", "d2": None})
    assert store.passages_with_text() == set()


def test_a_failed_judgment_never_becomes_a_grade(store):
    store.add_events([ev("q", "a", None, failure="refused: content_filter",
                         failure_kind="refused")])
    assert store.merge().labels == []
    assert [s.failed for s in store.sources()] == [1]


def test_database_rejects_an_event_with_both_grade_and_failure(store):
    store.add_events([ev("q", "a", 1)])
    with pytest.raises(integrity_errors()):
        store.conn.execute("INSERT INTO events (q, d, source, grade, failure, created_at) "
                           "VALUES (1, 1, 1, 2, 'x', 0)")


# --- merge rules on hand-made cases ----------------------------------------------------------

def rows(*labels):
    """(qid, docid, kind, source, sample, grade, id) rows, ids in order given."""
    return [(q, d, k, s, smp, g, i) for i, (q, d, k, s, smp, g) in enumerate(labels)]


def final(merged):
    return {(lab.qid, lab.docid): lab.grade for lab in merged.labels}


def test_one_sources_qrels_are_what_the_source_policy_merges(store):
    from reljudge.grades import AGGREGATES
    from reljudge.labels import RETRACTED

    # two kinds of "nist" (an older store's; a new source may not take the name)
    store.db.executemany("INSERT INTO sources (kind, name) VALUES (?, ?)",
                         [("human", "nist"), ("import", "nist")])
    store.add_events([ev("q", "a", 1, "human", "nist"), ev("q", "a", 3, "import", "nist"),
                      ev("q", "a", 2, name="gpt", repeat=0), ev("q", "a", 3, name="gpt",
                                                                   repeat=1),
                      ev("q", "b", 0, name="gpt"), ev("q", "b", 2, name="gpt"),  # corrected
                      ev("q", "c", 3, name="gpt"), ev("q", "c", None, name="gpt",
                                                      failure=RETRACTED),
                      ev("q", "d", 2, "human", "ann")])
    assert store.qrels("gpt").to_dict() == {"q": {"a": 2, "b": 2}}  # a tie: the lower grade
    assert store.qrels("gpt", "mean").to_dict() == {"q": {"a": 3, "b": 2}}  # 2.5 rounds up
    assert store.qrels("nist", "mean").to_dict() == {"q": {"a": 2}}  # both kinds of "nist"
    for source in ("gpt", "nist", "ann", "nobody"):
        for aggregate in AGGREGATES:
            assert store.qrels(source, aggregate) == \
                store.merge(f"source={source}", aggregate).qrels


def test_human_first_prefers_humans_and_fills_holes_with_llm_labels():
    r = rows(("q", "a", "human", "ann", 0, 1), ("q", "a", "llm", "gpt", 0, 3),
             ("q", "b", "llm", "gpt", 0, 2))
    m = merge_rows(r)
    assert final(m) == {("q", "a"): 1, ("q", "b"): 2}
    assert [lab.decided_by for lab in m.labels] == ["human", "llm"]
    assert final(merge_rows(r, "human-only")) == {("q", "a"): 1}
    assert final(merge_rows(r, "llm-only")) == {("q", "a"): 3, ("q", "b"): 2}
    assert final(merge_rows(r, "source=ann")) == {("q", "a"): 1}


def test_majority_tie_goes_to_the_lower_grade():
    r = rows(("q", "a", "human", "ann", 0, 3), ("q", "a", "human", "bob", 0, 1),
             ("q", "a", "human", "cat", 0, 1), ("q", "a", "human", "dan", 0, 3))
    assert final(merge_rows(r)) == {("q", "a"): 1}
    r2 = r + rows(("q", "a", "human", "eve", 0, 3))[:1]
    r2[-1] = ("q", "a", "human", "eve", 0, 3, 99)
    assert final(merge_rows(r2)) == {("q", "a"): 3}


def test_mean_and_median_round_half_up_unless_fractional():
    r = rows(("q", "a", "llm", "gpt", 0, 1), ("q", "a", "llm", "gpt", 1, 2))
    assert final(merge_rows(r, aggregate="mean")) == {("q", "a"): 2}  # 1.5 -> 2
    assert final(merge_rows(r, aggregate="median")) == {("q", "a"): 2}
    assert final(merge_rows(r, aggregate="mean", fractional=True)) == {("q", "a"): 1.5}
    r3 = rows(("q", "a", "llm", "g", 0, 0), ("q", "a", "llm", "g", 1, 0),
              ("q", "a", "llm", "g", 2, 3))
    assert final(merge_rows(r3, aggregate="mean")) == {("q", "a"): 1}  # 1.0
    assert final(merge_rows(r3, aggregate="median")) == {("q", "a"): 0}
    with pytest.raises(StoreError, match="fractional grades cannot be written"):
        _ = merge_rows(r, aggregate="mean", fractional=True).qrels


def test_a_later_label_from_the_same_source_is_a_correction_not_a_vote():
    r = rows(("q", "a", "human", "ann", 0, 0), ("q", "a", "human", "ann", 0, 3))
    m = merge_rows(r)
    assert final(m) == {("q", "a"): 3} and m.labels[0].votes == (3,)


def test_repeats_of_one_judge_are_votes():
    r = rows(("q", "a", "llm", "g", 0, 2), ("q", "a", "llm", "g", 1, 2),
             ("q", "a", "llm", "g", 2, 0))
    m = merge_rows(r)
    assert final(m) == {("q", "a"): 2} and sorted(m.labels[0].votes) == [0, 2, 2]


def test_unknown_policy_and_aggregate_are_rejected():
    with pytest.raises(StoreError, match="unknown merge policy"):
        merge_rows([], "llm-first")
    with pytest.raises(StoreError, match="unknown aggregation"):
        merge_rows([], "human-first", "mode")


def test_conflicts_are_sorted_by_disagreement():
    r = rows(("q", "a", "human", "h", 0, 3), ("q", "a", "llm", "g", 0, 0),
             ("q", "b", "human", "h", 0, 1), ("q", "b", "llm", "g", 0, 2),
             ("q", "c", "human", "h", 0, 2), ("q", "c", "llm", "g", 0, 2))
    found = conflicts(r)
    assert [(c.docid, c.diff) for c in found] == [("a", -3.0), ("b", 1.0)]


# --- imports -------------------------------------------------------------------------------

def test_out_of_range_grade_is_rejected_with_file_and_line_and_nothing_written(store, tmp_path):
    p = tmp_path / "judge.qrels"
    p.write_text("q 0 a 1\nq 0 b 5\nq 0 c 2\n")
    with pytest.raises(InputError, match=r"judge.qrels:2: grade 5 is outside the scale 0..3"):
        import_labels(store, p, "llm")
    assert store.count() == 0
    report = import_labels(store, p, "llm", clip=True)
    assert report.events == 3 and report.clipped == [(2, 5, 3)]
    assert final(store.merge()) == {("q", "a"): 1, ("q", "b"): 3, ("q", "c"): 2}


def test_same_file_is_not_imported_twice_unless_forced(store, tmp_path):
    p = tmp_path / "h.qrels"
    p.write_text("q 0 a 1\n")
    assert import_labels(store, p, "human").events == 1
    assert import_labels(store, p, "human").skipped
    assert import_labels(store, p, "human", force=True).events == 1
    assert store.count() == 2


def test_csv_and_jsonl_imports_and_their_errors(store, tmp_path):
    c = tmp_path / "h.csv"
    c.write_text("qid,docid,grade,note\nq,a,2,ok\nq,b,x,bad\n")
    with pytest.raises(InputError, match=r"h.csv:3: expected an integer grade, found 'x'"):
        import_labels(store, c, "human")
    c.write_text("qid,docid,grade\nq,a,2\n")
    j = tmp_path / "l.jsonl"
    j.write_text('{"qid": "q", "docid": "b", "grade": 1}\n{"qid": "q", "grade": 1}\n')
    with pytest.raises(InputError, match=r"l.jsonl:2: expected"):
        import_labels(store, j, "llm")
    j.write_text('{"qid": "q", "docid": "b", "grade": 1}\n')
    import_labels(store, c, "human")
    import_labels(store, j, "llm")
    assert final(store.merge()) == {("q", "a"): 2, ("q", "b"): 1}


def test_unknown_ids_are_reported_when_the_store_knows_texts(store, tmp_path):
    store.add_queries({"q1": "what"})
    store.add_passages({"d1": {"text": "t"}})
    p = tmp_path / "h.qrels"
    p.write_text("q1 0 d1 1\nq2 0 d9 0\n")
    r = import_labels(store, p, "human")
    assert r.unknown_queries == ["q2"] and r.unknown_passages == ["d9"]


def test_cli_import_of_several_files_is_all_or_nothing(tmp_path, capsys):
    good, bad = tmp_path / "a.qrels", tmp_path / "b.qrels"
    good.write_text("q 0 a 1\n")
    bad.write_text("q 0 a 7\n")
    db = tmp_path / "s.sqlite"
    assert main(["labels", "import", str(good), str(bad), "--store", str(db),
                 "--source-kind", "human"]) == 2
    assert "b.qrels:1: grade 7" in capsys.readouterr().err
    with LabelStore(db) as s:
        assert s.count() == 0


def test_cli_merge_writes_qrels_and_provenance(tmp_path, capsys):
    h, j = tmp_path / "h.qrels", tmp_path / "j.qrels"
    h.write_text("q 0 a 1\n")
    j.write_text("q 0 a 3\nq 0 b 2\n")
    db = str(tmp_path / "s.sqlite")
    assert main(["labels", "import", str(h), "--store", db, "--source-kind", "human"]) == 0
    assert main(["labels", "import", str(j), "--store", db, "--source-kind", "llm"]) == 0
    out, prov = tmp_path / "final.qrels", tmp_path / "final.jsonl"
    assert main(["labels", "merge", "--store", db, "--out", str(out),
                 "--provenance", str(prov)]) == 0
    assert read_qrels(out).to_dict() == {"q": {"a": 1, "b": 2}}
    records = [json.loads(x) for x in prov.read_text().splitlines()]
    assert records[0]["decided_by"] == "human" and records[1]["sources"] == ["j"]
    assert main(["labels", "export", "--store", db, "--source", "j", "--out",
                 str(tmp_path / "j2.qrels")]) == 0
    assert read_qrels(tmp_path / "j2.qrels").to_dict() == {"q": {"a": 3, "b": 2}}


# --- schema, concurrency, crash safety -------------------------------------------------------

def test_opening_a_version_1_store_migrates_it_and_keeps_its_events(tmp_path):
    path = v1_store(tmp_path / "old.sqlite")
    with LabelStore(path) as s:
        assert s.migrated_from == 1
        assert s.conn.execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION)
        assert final(s.merge()) == {("q", "a"): 2}
        h = tmp_path / "h.qrels"
        h.write_text("q 0 b 1\n")
        assert import_labels(s, h, "human").events == 1  # v2's import table works
        s.add_derived("panel:p", [("q", "a")], [[0, 0, 1, 0]], method="m", fitted_on={})
        assert [d["source"] for d in s.derivations()] == ["panel:p"]  # so does v3's


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "new.sqlite"
    LabelStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '99'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer than this reljudge"):
        LabelStore(path)


WRITER = """
import sys
from reljudge.store import LabelStore
from reljudge.labels import LabelEvent
path, tag, n, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = LabelStore(path)
for start in range(0, n, batch):
    s.add_events(LabelEvent(f"q{i % 50}", f"{tag}{i}", i % 4, "llm", tag)
                 for i in range(start, min(n, start + batch)))
print("done", flush=True)
"""


@pytest.mark.slow  # two processes writing 20,000 rows
def test_two_processes_appending_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "s.sqlite")
    LabelStore(path).close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, path, tag, "10000", "100"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for tag in ("a", "b")]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    with LabelStore(path) as s:
        assert s.count() == 20000
        assert {x.name: x.events for x in s.sources()} == {"a": 10000, "b": 10000}


#: WRITER that says "inside" (once) while SQLite runs its insert inside the open transaction
WRITER_SAYS_INSIDE = WRITER.replace("s = LabelStore(path)\n", """s = LabelStore(path)
said = []
def tell():
    if s.conn.in_transaction and not said:
        said.append(1)
        print("inside", flush=True)
    return 0
s.conn.set_progress_handler(tell, 10000)
""")


@pytest.mark.slow  # a SIGKILLed process
def test_a_process_killed_mid_import_leaves_no_partial_batch(tmp_path):
    path = str(tmp_path / "s.sqlite")
    LabelStore(path).close()
    # one huge transaction; kill it while it runs (the child says when it is inside)
    proc = subprocess.Popen([sys.executable, "-c", WRITER_SAYS_INSIDE, path, "x", "50000",
                             "50000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "inside\n", proc.stderr.read()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with LabelStore(path) as s:
        assert s.count() in (0, 50000)
        assert s.count() == 0, "the kill came too late to test a partial batch"


#: for each line "STORE<tab>GO" it reads: imports FILE into STORE once GO exists (so that two
#: start at once); prints what it did
IMPORTER = """
import os, sys, time
from reljudge.store import LabelStore, import_labels
labels = sys.argv[1]
for line in sys.stdin:
    store, go = line.rstrip("\\n").split("\\t")
    with LabelStore(store) as s:
        print("ready", flush=True)
        while not os.path.exists(go):
            time.sleep(0.001)
        report = import_labels(s, labels, "llm", "judge")
    print("skipped" if report.skipped else report.events, flush=True)
"""


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.slow  # two processes at once, five times
def test_two_processes_importing_one_file_at_once_import_it_once(request, tmp_path, backend):
    labels = tmp_path / "judge.qrels"
    labels.write_text("".join(f"q{i % 50} 0 d{i} {i % 4}\n" for i in range(4000)))
    # two processes, each making the five attempts (a new store each time)
    procs = [subprocess.Popen([sys.executable, "-c", IMPORTER, str(labels)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        for attempt in range(5):
            location = str(store_location(request, tmp_path, f"s{attempt}", backend=backend))
            LabelStore(location).close()
            go = tmp_path / f"go{attempt}"
            for p in procs:
                p.stdin.write(f"{location}\t{go}\n")
                p.stdin.flush()
            assert [p.stdout.readline() for p in procs] == ["ready\n"] * 2
            go.touch()
            said = sorted(p.stdout.readline().strip() for p in procs)
            assert said == ["4000", "skipped"], (attempt, said)
            with LabelStore(location) as s:
                assert s.count() == 4000, attempt
    except BaseException:
        for p in procs:
            p.kill()
        raise
    finally:
        outs = [p.communicate(timeout=120) for p in procs]  # closes their input: they end
    assert [p.returncode for p in procs] == [0, 0], outs


# --- real data -------------------------------------------------------------------------------

@pytest.mark.slow  # imports the 33 real LLMJudge label files
def test_real_llmjudge_labels_import_and_merge(llmjudge, tmp_path):
    files = sorted((llmjudge / "llm" / "labels").glob("*.txt"))
    assert len(files) == 33
    with LabelStore(tmp_path / "real.sqlite") as s:
        human = llmjudge / "human" / "test.qrels"
        assert import_labels(s, human, "human", "nist").events == 4423
        rejected = {}
        for f in files:
            try:
                import_labels(s, f, "llm")
            except InputError as e:
                rejected[f.name] = str(e)
        assert set(rejected) == {"RMITIR-llama70B.txt", "h2oloo-zeroshot2.txt"}
        assert "RMITIR-llama70B.txt:2449: grade 5" in rejected["RMITIR-llama70B.txt"]
        assert "(1 more)" in rejected["RMITIR-llama70B.txt"]
        assert "h2oloo-zeroshot2.txt:3187: grade 10" in rejected["h2oloo-zeroshot2.txt"]
        clipped = {f: import_labels(s, llmjudge / "llm" / "labels" / f, "llm", clip=True)
                   for f in rejected}
        assert [c[1:] for c in clipped["RMITIR-llama70B.txt"].clipped] == [(5, 3), (5, 3)]
        assert [c[1:] for c in clipped["h2oloo-zeroshot2.txt"].clipped] == [(10, 3)]
        assert s.count() == 4423 * 34
        merged = s.merge("human-first")
        assert merged.qrels == read_qrels(human)
        assert all(lab.decided_by == "human" for lab in merged.labels)


@pytest.mark.parametrize(("name", "data"), [
    ("excel.csv", b"\xef\xbb\xbfqid,docid,grade\r\nhr01,a,2\r\nhr01,b,0\r\n"),  # what spreadsheets write
    ("pandas.csv", b"query_id,doc_id,relevance\nhr01,a,2\nhr01,b,0\n"),
    # mtime=0: the bytes, and so the test's id, must not change from one second to the next
    # (pytest-xdist aborts when its workers collect different ids)
    ("irds.csv.gz", gzip.compress(b"QUERY_ID,DOCNO,LABEL,iteration\nhr01,a,2,0\nhr01,b,0,0\n",
                                  mtime=0)),
    ("l.jsonl", b'\xef\xbb\xbf{"query_id": "hr01", "doc_id": "a", "relevance": 2}\r\n'
                b'{"qid": "hr01", "docno": "b", "label": 0}\r\n'),
    ("l.jsonl.xz", lzma.compress(b'{"qid": "hr01", "docid": "a", "grade": 2}\n'
                                 b'{"qid": "hr01", "docid": "b", "grade": 0}\n')),
    ("l.qrels", b"\xef\xbb\xbfhr01 0 a 2\r\nhr01 0 b 0\r\n"),
])
def test_label_files_accept_bom_crlf_compression_and_column_synonyms(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    labels = read_labels(p)
    assert labels.rows == [("hr01", "a", 2), ("hr01", "b", 0)]
    assert labels.lines == ([1, 2] if "qrels" in name or "jsonl" in name else [2, 3])
    judge, clipped = read_judge(p)
    assert judge.to_dict() == {"hr01": {"a": 2, "b": 0}} and clipped == 0


@pytest.mark.parametrize(("name", "text", "needle"), [
    ("h.csv", "qid,query_id,docid,grade\nq,q,a,1\n",
     r"h.csv:1: columns 'qid' and 'query_id' both name the query id; keep one"),
    ("h.csv", "qid,passage,grade\nq,a,1\n", r"h.csv:1: expected a document id column \(one of "),
    ("h.csv", "", r"h.csv:1: expected a header with query id, document id and grade"),
    ("l.jsonl", '{"qid": "q", "docid": "a", "grade": 1, "label": 2}\n',
     r"l.jsonl:1: columns 'grade' and 'label' both name the grade"),
    ("l.jsonl", '{"qid": null, "docid": "a", "grade": 1}\n',
     r"l.jsonl:1: expected a query id \(text or number\), found None"),
])
def test_label_files_with_unclear_columns_are_refused(tmp_path, name, text, needle):
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match=needle):
        read_labels(tmp_path / name)


def test_a_compressed_label_file_imports_under_its_plain_name(store, tmp_path):
    p = tmp_path / "assessor7.csv.gz"
    p.write_bytes(gzip.compress(b"\xef\xbb\xbfquery_id,doc_id,relevance\r\nq,a,2\r\n"))
    report = import_labels(store, p, "human")
    assert report.name == "assessor7" and report.events == 1
    assert final(store.merge()) == {("q", "a"): 2}


def test_opening_a_missing_store_without_create_is_an_error_and_creates_nothing(tmp_path):
    with pytest.raises(StoreError, match="typo.sqlite: no such label store"):
        LabelStore(tmp_path / "typo.sqlite", create=False)
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(StoreError, match="dir.sqlite is a folder; give a file path such as "):
        LabelStore(tmp_path / "dir.sqlite", create=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.sqlite"]
    with LabelStore(tmp_path / "s.sqlite") as s:
        s.add_queries({"q": "text"})
    with LabelStore(tmp_path / "s.sqlite", create=False) as s:
        assert s.count() == 0


def test_labels_import_requires_a_source_kind_and_says_why(tmp_path, capsys):
    f = tmp_path / "a.qrels"
    f.write_text("q 0 a 1\n")
    assert main(["labels", "import", str(f), "--store", str(tmp_path / "s.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "needs --source-kind human or llm" in err and "outvoted by LLM ones" in err
    assert not (tmp_path / "s.sqlite").exists()
    assert main(["labels", "import", str(f), "--store", str(tmp_path / "s.sqlite"),
                 "--source-kind", "import"]) == 0


def test_a_derived_source_records_what_it_was_fitted_on(store):
    store.add_events([ev("q1", "d1", 3, name="j"), ev("q1", "d1", 2, kind="human", name="h")])
    fitted_on = {"judge_source": "j", "human_source": "h", "pairs": [["q1", "d1"]],
                 "method": "dirichlet", "strength": 4.0, "folds": None}
    did = store.add_derived("calibrated:j", [("q1", "d1"), ("q2", "d9")],
                            [[0.1, 0.2, 0.6, 0.1], [0.5, 0.1, 0.1, 0.3]],
                            method="calibration", fitted_on=fitted_on)
    (rec,) = store.derivations()
    assert rec["id"] == did and rec["source"] == "calibrated:j"
    assert rec["method"] == "calibration" and rec["fitted_on"] == fitted_on
    got = {(e.qid, e.docid): e for e in store.events(source="calibrated:j")}
    assert got[("q1", "d1")].grade == 2 and got[("q2", "d9")].grade == 0
    assert got[("q1", "d1")].expected_grade == pytest.approx(1.7)
    assert got[("q1", "d1")].meta == {"derivation": did}
    assert store.distributions("calibrated:j")[("q2", "d9")] == (0.5, 0.1, 0.1, 0.3)
    mode = {(lab.qid, lab.docid): lab.grade for lab in store.merge("source=calibrated:j").labels}
    assert mode == {("q1", "d1"): 2.0, ("q2", "d9"): 0.0}
    exp = store.merge("source=calibrated:j", fractional=True, derived="expected").labels
    assert [lab.grade for lab in exp] == [pytest.approx(1.7), pytest.approx(1.2)]
    rounded = store.merge("source=calibrated:j", derived="expected").labels
    assert [lab.grade for lab in rounded] == [2.0, 1.0]
    # the plain judge is untouched by the derived choice
    assert store.merge("source=j", derived="expected").labels[0].grade == 3.0


def test_a_derived_source_cannot_take_a_plain_sources_name_or_bad_distributions(store):
    store.add_events([ev("q1", "d1", 3, name="calibrated:j")])
    with pytest.raises(StoreError, match="not derived"):
        store.add_derived("calibrated:j", [("q1", "d1")], [[1, 0, 0, 0]], method="m",
                          fitted_on={})
    with pytest.raises(StoreError, match="summing to 1"):
        store.add_derived("calibrated:k", [("q1", "d1")], [[0.5, 0, 0, 0]], method="m",
                          fitted_on={})
    for bad in ([math.nan, 0, 0, 1], [0.5, math.inf, -math.inf, 0.5], [0.5, 0.5, 0]):
        with pytest.raises(StoreError, match="summing to 1"):  # nan passed the old check
            store.add_derived("calibrated:k", [("q1", "d1")], [bad], method="m", fitted_on={})
    assert store.derivations() == [] and store.count() == 1
    with pytest.raises(StoreError, match="unknown derived"):
        store.merge(derived="thresholds")  # median is a rule merge offers now


# --- the API stores only what the CLI would (the same checks on every write) -----------------

@pytest.mark.parametrize(("row", "needle"), [
    (("q1", "d1", 9), "a grade is an integer 0..3, found 9"),
    (("q1", "d1", -1), "found -1"),
    (("q1", "d1", 1.5), "found 1.5"),
    (("q1", "d1", True), "found True"),
    (("", "d1", 2), "a query id is a non-empty string, found ''"),
    (("q1", " ", 2), "a passage id is a non-empty string"),
    (("q1", "d1"), "expected (qid, docid, grade)"),
])
def test_add_grades_refuses_what_labels_import_refuses_and_writes_nothing(store, row, needle):
    store.add_grades([("q1", "d0", 1)], "human", "a")
    with pytest.raises(InputError, match=re.escape(needle)):
        store.add_grades([("q1", "d2", 2), row], "human", "a")
    assert store.count() == 1
    assert [lab.grade for lab in store.merge().labels] == [1.0]


@pytest.mark.parametrize(("event", "needle"), [
    (ev("q1", "d1", 9), "found 9"),
    (ev("q1", "d1", 2.5), "found 2.5"),
    (ev("q1", "", 2), "a passage id is a non-empty string"),
    (ev("q1", "d1", 2, name=" "), "a source name is a non-empty string"),
    (ev("q1", "d1", None, failure="HTTP 500"), "a failure needs its failure_kind"),
])
def test_add_events_refuses_what_no_reader_could_use_and_writes_nothing(store, event, needle):
    with pytest.raises(InputError, match=re.escape(needle)):
        store.add_events([ev("q1", "d0", 1), event])
    assert store.count() == 0
    store.add_events([ev("q1", "d1", None, failure="HTTP 500", failure_kind="http_status"),
                      ev("q1", "d2", 2, kind="human", name="a"),
                      ev("q1", "d2", None, kind="human", name="a", failure=RETRACTED)])
    assert store.count() == 3  # a failure with its kind, and an undo (its own kind), are fine


def test_a_failure_stored_without_a_kind_is_shown_as_not_recorded(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    with LabelStore(path) as store:
        store.add_events([ev("q1", "d1", None, failure="HTTP 500", failure_kind="http_status")])
        store.conn.execute("UPDATE events SET failure_kind = NULL")  # as an older store's
    assert main(["labels", "stats", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert "not recorded  e.g. q1 d1" in out and "None" not in out


def test_a_full_disk_is_named_not_hidden_by_a_failed_rollback(tmp_path):
    with LabelStore(tmp_path / "s.sqlite") as store:
        store.add_grades([("q0", "d0", 1)], "human", "a")
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # the disk as good as full
        with pytest.raises(StoreError, match="disk is full .*nothing of this write was kept"):
            store.add_grades([(f"q{i}", f"d{i}", i % 4) for i in range(20000)], "human", "a")
        assert store.count() == 1


def test_an_empty_file_given_as_a_store_is_not_a_store_to_upgrade(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    path.write_bytes(b"")
    assert main(["labels", "stats", "--store", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "no label store in it (an empty file of 0 bytes" \
        in err, err
    assert "upgrade" not in err and path.read_bytes() == b""
