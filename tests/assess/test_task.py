"""reljudge assess, without a browser: the task over a real store, and the command's errors.

Its helpers (a store with a sample, a running `reljudge assess` process) are in
tests/helpers.py, shared with test_assess_server.py and test_assess_browser.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reljudge.assess import AssessTask, scale_of
from reljudge.cli import main
from reljudge.errors import ConfigError, InputError, StoreError
from reljudge.judge.prompts import builtin_names, load_template
from reljudge.labels import RETRACTED, LabelEvent
from reljudge.store import LabelStore
from tests.helpers import PAIRS, add_sample, assess_server, make_store


@pytest.fixture
def store_path(tmp_path) -> Path:
    return make_store(tmp_path / "labels.sqlite")


def task_of(store: LabelStore, annotator: str = "alice", sample: str = "s1") -> AssessTask:
    return AssessTask(store, store.sample_pairs(sample), annotator, sample=sample,
                      scale=scale_of(load_template("umbrela").scale))


# -- the scale ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", builtin_names())
def test_every_shipped_prompt_gives_four_named_steps(name):
    steps = scale_of(load_template(name).scale)
    assert [s.grade for s in steps] == [0, 1, 2, 3]
    assert steps[0].name == "irrelevant" and steps[3].name.startswith("perfectly relevant")
    assert all(s.text for s in steps)


def test_scale_text_is_split_into_name_and_description():
    steps = scale_of("0 = bad: no use.\n1 = meh: some use.\n2 = good: helps.\n3 = best: answers.")
    assert [(s.name, s.text) for s in steps] == [("bad", "no use."), ("meh", "some use."),
                                                 ("good", "helps."), ("best", "answers.")]


def test_a_scale_missing_a_grade_is_refused():
    with pytest.raises(ConfigError, match="each grade 0..3"):
        scale_of("0 = no, 1 = some, 3 = yes")


# -- the task over the store ----------------------------------------------------------------
def test_grades_undo_and_resume_are_events_in_the_store(store_path):
    with LabelStore(store_path) as store:
        task = task_of(store)
        assert task.given() == {}
        task.grade(0, 2, seconds=3.5, note="clear")
        task.grade(1, 0, seconds=1.0)
        given = task.grade(0, 3, seconds=2.0)  # a correction
        assert {i: g.grade for i, g in given.items()} == {0: 3, 1: 0}
        index, given = task.undo()  # the latest grade was pair 0's correction
        assert index == 0 and set(given) == {1}
    with LabelStore(store_path) as store:  # a new process sees the same
        task = task_of(store)
        assert {i: g.grade for i, g in task.given().items()} == {1: 0}
        events = list(store.events(kind="human"))
        assert [(e.docid, e.grade, e.failure) for e in events] == [
            ("d0", 2, None), ("d1", 0, None), ("d0", 3, None), ("d0", None, RETRACTED)]
        assert {e.source_name for e in events} == {"alice"}
        assert events[0].meta == {"sample": "s1", "position": 0, "note": "clear"}
        assert events[0].latency == 3.5 and events[0].created_at > 0
        assert [(lab.docid, lab.grade) for lab in store.merge("human-only").labels] == [
            ("d1", 0)]


def test_undo_with_nothing_given_writes_nothing(store_path):
    with LabelStore(store_path) as store:
        n = store.count()
        assert task_of(store).undo() == (None, {})
        assert store.count() == n


def test_two_annotators_on_one_sample_are_kept_apart(store_path):
    with LabelStore(store_path) as store:
        alice, bob = task_of(store, "alice"), task_of(store, "bob")
        alice.grade(0, 3)
        bob.grade(0, 1)
        bob.undo()
        assert {i: g.grade for i, g in alice.given().items()} == {0: 3}
        assert bob.given() == {}
        alice.grade(2, 1)
        bob.grade(2, 2)
        merged = store.merge("human-only", "mean", fractional=True)
        assert {(lab.docid, lab.grade, lab.sources) for lab in merged.labels} == {
            ("d0", 3.0, ("alice",)), ("evil", 1.5, ("alice", "bob"))}


def test_a_grade_for_another_sample_does_not_count_as_done_here(store_path):
    with LabelStore(store_path) as store:
        add_sample(store, "s2", PAIRS[:3])
        task_of(store, sample="s2").grade(0, 1)
        assert task_of(store, sample="s1").given() == {}
        assert set(task_of(store, sample="s2").given()) == {0}


@pytest.mark.parametrize(("call", "message"), [
    (lambda t: t.grade(0, 4), "a grade is an integer 0..3"),
    (lambda t: t.grade(0, True), "a grade is an integer 0..3"),
    (lambda t: t.grade(0, "2"), "a grade is an integer 0..3"),
    (lambda t: t.grade(10, 1), "no pair number 10"),
    (lambda t: t.grade(-1, 1), "no pair number -1"),
    (lambda t: t.grade(0, 1, seconds=float("nan")), "seconds spent"),
    (lambda t: t.grade(0, 1, seconds=-1), "seconds spent"),
    (lambda t: t.grade(0, 1, note="x" * 2001), "at most 2000"),
])
def test_a_bad_grade_is_refused_and_nothing_written(store_path, call, message):
    with LabelStore(store_path) as store:
        n = store.count()
        with pytest.raises(InputError, match=message):
            call(task_of(store))
        assert store.count() == n


def test_llm_grades_are_the_latest_of_each_judge(store_path):
    with LabelStore(store_path) as store:
        store.add_events([LabelEvent("q1", "d0", 1, "llm", "gpt-judge"),
                          LabelEvent("q1", "d0", 3, "llm", "other")])
        assert task_of(store).llm_grades() == {0: [("gpt-judge", 1), ("other", 3)],
                                              4: [("gpt-judge", 0)]}


def test_an_unknown_sample_names_the_known_ones(store_path):
    with LabelStore(store_path) as store, pytest.raises(StoreError, match="known samples: s1"):
        store.sample_pairs("nope")


def test_missing_texts_are_an_error_unless_given_as_files(tmp_path):
    with LabelStore(tmp_path / "bare.sqlite") as store:
        store.add_events([LabelEvent("q9", "z1", 1, "import", "x")])
        scale = scale_of(load_template("basic").scale)
        with pytest.raises(InputError, match=r"no text for 1 queries \(e\.g\. 'q9'\); 1 "):
            AssessTask(store, [("q9", "z1")], "a", pairs_file="p.txt", scale=scale)
        task = AssessTask(store, [("q9", "z1")], "a", pairs_file="p.txt", scale=scale,
                          queries={"q9": "a query"}, passages={"z1": "a passage"})
        assert (task.items[0].query, task.items[0].passage) == ("a query", "a passage")


# -- the command ----------------------------------------------------------------------------
def test_cli_errors_are_one_line_and_exit_2(store_path, tmp_path, capsys):
    bad = tmp_path / "pairs.txt"
    bad.write_text("q1 d0\nq1 d1 extra fields here\n")
    cases = [
        (["--store", str(store_path), "--sample", "nope", "--annotator", "a"], "known samples: s1"),
        (["--store", str(tmp_path / "none.sqlite"), "--sample", "s1", "--annotator", "a"],
         "no such label store"),
        (["--store", str(store_path), "--pairs", str(bad), "--annotator", "a"],
         f"{bad}:2: expected"),
        (["--store", str(store_path), "--sample", "s1", "--annotator", "a", "--prompt",
          "nope"], "unknown prompt"),
        (["--store", str(store_path), "--sample", "s1", "--annotator", " "], "annotator"),
    ]
    for args, message in cases:
        assert main(["assess", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "none.sqlite").exists()


def test_sample_and_pairs_are_exclusive(store_path):
    with pytest.raises(SystemExit) as e:
        main(["assess", "--store", str(store_path), "--sample", "s1", "--pairs", "x",
              "--annotator", "a"])
    assert e.value.code == 2


def test_the_command_prints_the_url_and_stops_on_ctrl_c(store_path):
    """`python -m reljudge assess` itself: its start-up, what it prints, its Ctrl-C."""
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator",
                       "alice", fresh=True) as (url, proc, lines):
        assert url.startswith("http://127.0.0.1:") and "token" not in url
        assert lines[0] == "grading sample s1 as alice: 0 of 10 pairs graded so far"
    assert proc.returncode == 3  # stopped with pairs left ungraded: not everything was done


def test_a_narrative_is_shown_when_the_store_has_one(store_path):
    with LabelStore(store_path) as store:
        assert task_of(store).items[0].narrative is None
        store.conn.execute("ALTER TABLE queries ADD COLUMN narrative TEXT")
        store.conn.execute("UPDATE queries SET narrative = 'cats, not lions' WHERE qid = 'q1'")
        items = task_of(store).items
        assert (items[0].narrative, items[4].narrative) == ("cats, not lions", None)
