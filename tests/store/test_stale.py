"""An edited text never keeps its old label silently: each label records a digest of what its
judge was shown; a pair whose query or passage text changed since is stale. ``label`` asks
stale LLM pairs again by default (``--stale relabel|keep|fail``), ``labels stats`` and
``labels merge`` count them, human labels on changed texts are flagged (not dropped), and
every text a passage had is kept in the store's text history."""

from __future__ import annotations

import asyncio
import json
import re

from reljudge.assess.task import AssessTask, scale_of
from reljudge.cli import main
from reljudge.judge import JudgeConfig, Labeller
from reljudge.judge.batch.job import BatchJob
from reljudge.judge.prompts import load_template
from reljudge.labels import shown_digest
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI, Reply
from reljudge.testing.fake_batch import FakeBatchAPI

N = 6


def answer(req) -> Reply:
    """Grade 3 for a passage that says "revised", else (passage number) mod 3."""
    if "revised" in req.user_text:
        return Reply.text("reasoning\n##final score: 3")
    n = int(re.search(r"passage (\d+)", req.user_text).group(1))
    return Reply.text(f"reasoning\n##final score: {n % 3}")


def inputs(tmp_path, edited: str | None = None) -> list[str]:
    """The files of a label run over N pairs; ``edited``: a docid whose text was revised."""
    (tmp_path / "q.tsv").write_text("".join(f"q{i}\tquery {i}\n" for i in range(2)))
    (tmp_path / "p.tsv").write_text("".join(
        f"d{i}\tpassage {i}{' revised' if f'd{i}' == edited else ''}\n" for i in range(N)))
    (tmp_path / "pairs.txt").write_text("".join(f"q{i % 2} d{i}\n" for i in range(N)))
    return ["--queries", str(tmp_path / "q.tsv"), "--passages", str(tmp_path / "p.tsv"),
            "--pairs", str(tmp_path / "pairs.txt"), "--model", "m", "--quiet",
            "--cache-dir", str(tmp_path / "cache"), "--store", str(tmp_path / "s.sqlite"),
            "--max-attempts", "1"]


def label(tmp_path, server, *extra: str, edited: str | None = None) -> int:
    return main(["label", *inputs(tmp_path, edited), "--base-url", server.base_url, *extra])


def label_then_edit(tmp_path, capsys, edited: str, *extra: str) -> tuple[int, int, str, str]:
    """Label every pair, edit one passage, label again with ``extra``: (exit code of the
    second run, calls the server answered in all, its stdout, its stderr)."""
    with FakeOpenAI(answer) as server:
        assert label(tmp_path, server) == 0
        capsys.readouterr()
        code = label(tmp_path, server, *extra, edited=edited)
        calls = server.calls
    out, err = capsys.readouterr()
    return code, calls, out, err


def llm_grades(tmp_path) -> dict:
    with LabelStore(tmp_path / "s.sqlite", create=False) as s:
        return {(lab.qid, lab.docid): lab.grade for lab in s.merge("llm-only").labels}


def test_an_edited_passage_is_asked_again_once_and_said(tmp_path, capsys):
    with FakeOpenAI(answer) as server:
        assert label(tmp_path, server) == 0
        assert server.calls == N
        assert label(tmp_path, server) == 0  # nothing changed: nothing asked
        assert server.calls == N
        capsys.readouterr()
        assert label(tmp_path, server, "--json", edited="d4") == 0
        assert server.calls == N + 1  # the edited pair, and only it, is asked again
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["stale"] == 1 and summary["already_done"] == N - 1
    assert "1 pair(s) x repeats were labelled on query or passage texts that have changed " \
           "since: asked again" in err
    assert llm_grades(tmp_path)[("q0", "d4")] == 3  # the new label decides
    with LabelStore(tmp_path / "s.sqlite", create=False) as s:
        assert s.stale_labels() == set()  # the latest label rests on the texts now
        history = s.text_history("passage", "d4")
        assert [(t, h) for t, h, _ in history] == [("passage 4", None)]  # kept, not overwritten
        assert s.text_history("passage", "d3") == []
        assert s.passage_texts(["d4"]) == {"d4": "passage 4 revised"}


def test_stale_keep_keeps_the_old_label_and_stats_and_merge_say_so(tmp_path, capsys):
    with FakeOpenAI(answer) as server:
        assert label(tmp_path, server) == 0
        assert label(tmp_path, server, "--stale", "keep", edited="d4") == 0
        assert server.calls == N
    assert "kept (--stale keep)" in capsys.readouterr().err
    assert llm_grades(tmp_path)[("q0", "d4")] == 1  # the label given to "passage 4"
    store = str(tmp_path / "s.sqlite")
    assert main(["labels", "stats", "--store", store, "--format", "json"]) == 0
    stats = json.loads(capsys.readouterr().out)["stale"]
    assert stats == {"labels": 1, "by_kind": {"llm": 1}, "final_labels": {"llm": 1}}
    prov = tmp_path / "prov.jsonl"
    assert main(["labels", "merge", "--store", store, "--out", str(tmp_path / "q.txt"),
                 "--provenance", str(prov), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["stale"] == {"llm": 1}
    assert "1 final label(s) rest on grades given to query or passage texts that have " \
           "changed since (1 decided by llm)" in err
    rows = [json.loads(line) for line in prov.read_text().splitlines()]
    assert [(r["docid"], r["stale"]) for r in rows if r["stale"]] == [("d4", True)]
    assert len(rows) == N  # kept, not dropped
    with FakeOpenAI(answer) as server:  # the default later: asked again
        assert label(tmp_path, server, edited="d4") == 0
        assert server.calls == 1


def test_stale_fail_stops_before_any_call_naming_a_pair(tmp_path, capsys):
    code, calls, _, err = label_then_edit(tmp_path, capsys, "d2", "--stale", "fail")
    assert code == 2 and calls == N
    assert "1 pair(s) were labelled on query or passage texts that have changed since " \
           "(e.g. q0 d2)" in err and "--stale relabel" in err


def test_a_dry_run_counts_stale_pairs_to_send_and_writes_no_text(tmp_path, capsys):
    code, calls, out, _ = label_then_edit(tmp_path, capsys, "d1", "--dry-run", "--json")
    assert code == 0 and calls == N
    assert json.loads(out)["to_send"] == 1
    with LabelStore(tmp_path / "s.sqlite", create=False) as s:
        assert s.passage_texts(["d1"]) == {"d1": "passage 1"}
        assert s.text_history("passage", "d1") == []


def test_human_labels_on_changed_texts_are_flagged_not_dropped(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    with LabelStore(db) as s:
        s.add_queries({"q0": "query 0"})
        s.add_passages({"d0": "passage 0", "d1": {"text": "passage 1", "title": "One"}})
    qrels = tmp_path / "nist.qrels"
    qrels.write_text("q0 0 d0 2\nq0 0 d1 1\nq0 0 d9 3\n")
    assert main(["labels", "import", str(qrels), "--store", str(db), "--source-kind",
                 "human", "--source-name", "nist"]) == 0
    with LabelStore(db) as s:
        assert s.stale_labels() == set()
        s.add_passages({"d1": {"text": "passage 1", "title": "One, retitled"}})  # the title
        s.add_passages({"d0": "passage 0"})  # the same text: nothing changes
        assert s.stale_labels() == {("q0", "d1", "human", "nist")}
        merged = s.merge("human-first")
    assert {(lab.docid, lab.grade, lab.stale) for lab in merged.labels} == {
        ("d0", 2, False), ("d1", 1, True), ("d9", 3, False)}  # d9: no text, cannot be told
    assert merged.stale_counts() == {"human": 1}
    capsys.readouterr()
    assert main(["labels", "stats", "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert "stale labels (given to query or passage texts changed since): 1" in out
    assert "1 final label(s) rest on grades given" in out


def test_a_person_grading_records_what_the_page_showed(tmp_path):
    db = tmp_path / "s.sqlite"
    with LabelStore(db) as s:
        s.add_queries({"q0": "query 0"})
        s.add_passages({"d0": {"text": "passage 0", "title": "T"}, "d1": "passage 1"})
        task = AssessTask(s, [("q0", "d0"), ("q0", "d1")], "ann", pairs_file="pairs.txt",
                          scale=scale_of(load_template("umbrela").scale), passages={"d1": "passage 1, as given"})
        task.grade(0, 2)
        task.grade(1, 1)
        shown = {e.docid: e.shown for e in s.events()}
        assert shown == {"d0": shown_digest("query 0", "passage 0", "T"),
                         "d1": shown_digest("query 0", "passage 1, as given")}
        # d1's page showed another text than the store holds; d0's passage is edited later
        s.add_passages({"d0": {"text": "passage 0, edited", "title": "T"}})
        assert s.stale_labels() == {("q0", "d0", "human", "ann")}


def test_two_paths_one_answer_a_batch_run_relabels_the_edited_pair_as_online_does(tmp_path):
    queries = {"q0": "query 0"}

    def passages(edited):
        return {f"d{i}": f"passage {i}{' revised' if i == edited else ''}" for i in range(4)}

    pairs = [("q0", f"d{i}") for i in range(4)]
    grades = {}
    with FakeOpenAI(answer) as online, FakeBatchAPI(answer) as batch:
        for path in ("online", "batch"):
            cfg = JudgeConfig(model="m", base_url=online.base_url, api_key="k",
                              batch_url=batch.base_url, batch=path == "batch",
                              cache_dir=tmp_path / path, poll_interval=0.01, max_attempts=1)
            with LabelStore(tmp_path / f"{path}.sqlite") as s:
                for edited in (None, 2):
                    if path == "batch":
                        result = asyncio.run(BatchJob(Labeller(cfg), s).run(
                            pairs, queries, passages(edited), wait=True))
                        assert result.complete and result.stale == (edited is not None)
                    else:
                        report = asyncio.run(Labeller(cfg).label(pairs, queries,
                                                                 passages(edited), s))
                        assert report.complete and report.stale == (edited is not None)
                grades[path] = {lab.docid: lab.grade
                                for lab in s.merge("llm-only").labels}
                assert s.stale_labels() == set()
                events = [e for e in s.events() if e.docid == "d2"]
                assert [e.grade for e in events] == [2, 3]
                assert events[-1].shown == shown_digest("query 0", "passage 2 revised")
        assert online.calls == 5  # the online path: 4 pairs, then the edited one
    assert grades["online"] == grades["batch"] == {"d0": 0, "d1": 1, "d2": 3, "d3": 0}
