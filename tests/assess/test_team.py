"""A team on one sample: the split (--team, --overlap), the summary and next commands, the
stop button, and adjudication (--adjudicate, --conflicts, merge --policy adjudicated-first).
Real server processes on 127.0.0.1 and a real SQLite store; the browser side is in
test_assess_browser."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from reljudge.assess import AssessTask, scale_of
from reljudge.assess.adjudicate import to_settle
from reljudge.assess.team import pairs_seed, parse_team, share_of, split
from reljudge.cli import main
from reljudge.errors import ConfigError, StoreError
from reljudge.judge.prompts import load_template
from reljudge.labels import LabelEvent
from reljudge.store import LabelStore
from tests.assess.test_server import fetch
from tests.helpers import PAIRS, assess_server, make_store

SCALE = scale_of(load_template("umbrela").scale)
MANY = [(f"q{q}", f"d{q}-{d}") for q in range(7) for d in range(9)]  # 63 pairs


@pytest.fixture
def store_path(tmp_path):
    return make_store(tmp_path / "labels.sqlite")


# -- the split ------------------------------------------------------------------------------
@pytest.mark.parametrize("overlap", [0.0, 0.2, 0.5, 1.0])
@pytest.mark.parametrize("team", [["alice", "bob"], ["alice", "bob", "carol"]])
def test_the_split_gives_every_pair_to_everyone_or_to_exactly_one(team, overlap):
    shared, own = split(MANY, team, overlap, "sample:s1")
    assert len(shared) == int(overlap * len(MANY) + 0.5)
    for m in team:
        assert not shared & set(own[m])
    counts = Counter(p for m in team for p in own[m])
    assert set(counts) | shared == set(MANY) and set(counts.values()) <= {1}
    sizes = [len(own[m]) for m in team]
    assert max(sizes) - min(sizes) <= 1  # dealt in turn
    for m in team:  # each share keeps the sample's order: shared and own pairs interleaved
        mine = share_of(MANY, m, team, overlap, "sample:s1").pairs
        assert mine == [p for p in MANY if p in shared or p in own[m]]


def test_the_split_depends_on_the_seed_only_and_a_pairs_file_on_its_pairs():
    team = ["alice", "bob"]
    assert split(MANY, team, 0.3, "sample:s1") == split(MANY, team, 0.3, "sample:s1")
    assert split(MANY, team, 0.3, "sample:s1")[0] != split(MANY, team, 0.3, "sample:s2")[0]
    assert pairs_seed(MANY) == pairs_seed(list(reversed(MANY)))
    assert pairs_seed(MANY) != pairs_seed(MANY[1:])


def test_team_and_overlap_are_checked():
    assert parse_team(" alice, bob ") == ["alice", "bob"]
    for bad in ("alice", "alice,alice", "alice,,bob"):
        with pytest.raises(ConfigError):
            parse_team(bad)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ConfigError, match="--overlap"):
            split(MANY, ["a", "b"], bad, "s")
    with pytest.raises(ConfigError, match="not in the team"):
        share_of(MANY, "dan", ["a", "b"], 0.2, "s")


def test_a_samples_team_is_recorded_once_and_a_different_one_refused(store_path):
    with LabelStore(store_path) as store:
        assert store.sample_assignment("s1") is None
        held = store.assign_sample("s1", ["alice", "bob"], 0.2)
        assert store.assign_sample("s1", ["alice", "bob"], 0.2) == held
        with pytest.raises(StoreError, match="already assigned to the team alice,bob"):
            store.assign_sample("s1", ["alice", "carol"], 0.2)
        with pytest.raises(StoreError, match="no sample named"):
            store.assign_sample("nope", ["alice", "bob"], 0.2)


def test_a_team_given_in_another_order_is_refused_saying_the_order_deals_the_pairs(
        store_path, capsys):
    """The order of --team deals the pairs: bob,alice would give each member the other's
    pairs, so once alice,bob is recorded it is refused, in one line naming the order."""
    with LabelStore(store_path) as store:
        store.assign_sample("s1", ["alice", "bob"], 0.2)
    before = store_path.read_bytes()
    code = main(["assess", "--store", str(store_path), "--sample", "s1", "--annotator", "bob",
                 "--team", "bob,alice", "--overlap", "0.2"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--team bob,alice" in err and "the order deals the pairs" in err
    assert "give --team alice,bob" in err
    assert store_path.read_bytes() == before


@pytest.mark.slow  # a server process per member
def test_each_member_serves_their_share_and_the_store_keeps_the_team(store_path):
    seen = {}
    for name in ("alice", "bob"):
        extra = ("--team", "alice,bob", "--overlap", "0.4") if name == "alice" else ()
        with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", name,
                           *extra) as (url, _, lines):
            state = json.loads(fetch(url + "api/state")[1])
            seen[name] = [(x["qid"], x["docid"]) for x in state["items"]]
            assert lines[0].endswith("(4 of them shared by the team)")
    shared, own = split(PAIRS, ["alice", "bob"], 0.4, "sample:s1")
    assert len(shared) == 4
    for name in ("alice", "bob"):
        assert seen[name] == [p for p in PAIRS if p in shared or p in own[name]]
    assert set(seen["alice"]) | set(seen["bob"]) == set(PAIRS)


@pytest.mark.parametrize("args, message", [
    (("--annotator", "dan", "--team", "alice,bob", "--overlap", "0.2"), "not in the team"),
    (("--annotator", "alice", "--team", "alice,bob"), "--team and --overlap go together"),
    (("--annotator", "alice", "--team", "alice,bob", "--overlap", "2"), "from 0 to 1"),
    (("--annotator", "adjudicated:x"), "kept for adjudicated grades"),
    (("--annotator", "alice", "--conflicts"), "--conflicts goes with --adjudicate"),
    (("--annotator", "alice", "--adjudicate", "--team", "a,b", "--overlap", "0.2"),
     "no --team or --overlap"),
])
def test_bad_team_settings_are_one_line_errors(store_path, capsys, args, message):
    try:
        code = main(["assess", "--store", str(store_path), "--sample", "s1", *args])
    except SystemExit as e:
        code = e.code
    assert code == 2
    assert message in capsys.readouterr().err
    with LabelStore(store_path) as store:  # nothing recorded by a refused command
        assert store.sample_assignment("s1") is None


# -- summary, next commands, stop -----------------------------------------------------------
def test_the_summary_counts_time_grades_and_agreement_with_the_llm(store_path):
    with LabelStore(store_path) as store:
        store.add_events([LabelEvent("q1", "d1", 3, "llm", "gpt-judge")])
        task = AssessTask(store, PAIRS, "alice", sample="s1", scale=SCALE)
        task.grade(0, 2, seconds=4.0)                    # judge 2: same
        task.grade(1, 1, seconds=6.0, llm_shown=True)    # judge 3: two apart, seen
        task.grade(4, 3, seconds=2.0)                    # judge gave 0 for q2 d4: three apart
        s = task.summary()
    assert (s["graded"], s["total"], s["complete"]) == (3, 10, False)
    assert s["seconds"] == {"pairs": 3, "total": 12.0, "median": 4.0}
    assert s["grades"] == {"0": 0, "1": 1, "2": 1, "3": 1}
    (judge,) = s["llm"]
    assert judge["judge"] == "gpt-judge" and judge["pairs"] == 3 and judge["seen"] == 1
    assert judge["exact"] == pytest.approx(1 / 3) and judge["within_1"] == pytest.approx(1 / 3)
    assert judge["mean_diff"] == pytest.approx(((2 - 2) + (3 - 1) + (0 - 3)) / 3)
    commands = [n["command"] for n in s["next"]]
    assert any(c.startswith(f"reljudge estimate --store {store_path} --sample s1 --judge "
                            "gpt-judge") for c in commands)
    assert f"reljudge calibrate --store {store_path} --human-source alice --judge-source " \
           "gpt-judge" in commands


def test_every_next_command_parses_as_the_cli_reads_it(store_path):
    from reljudge.cli import build_parser

    parser = build_parser()
    parsed = []
    with LabelStore(store_path) as store:
        for task in (AssessTask(store, PAIRS, "alice", sample="s1", scale=SCALE,
                                shared=frozenset(PAIRS[:3])),
                     AssessTask(store, PAIRS, "dan", sample="s1", scale=SCALE, settles={})):
            for step in task.next_steps():
                argv = step["command"].replace("RUN [RUN ...]", "a.run b.run").replace(
                    "NAME", "dan").split()[1:]
                parser.parse_args(argv)  # exits 2 on an unknown flag
                parsed.append(" ".join(argv[:2] if argv[0] == "labels" else argv[:1]))
    # every kind of step was parsed, the team's and the adjudicator's: a loop over no steps
    # would check nothing
    assert set(parsed) >= {"labels stats", "assess", "labels merge", "calibrate"}, parsed


@pytest.mark.slow  # a server process, graded to the end, then stopped
def test_the_stop_button_ends_the_server_exit_0_when_every_pair_is_graded(store_path):
    with assess_server("--store", str(store_path), "--sample", "s1",
                       "--annotator", "alice") as (url, proc, _):
        for i in range(len(PAIRS)):
            assert fetch(url + "api/grade", {"index": i, "grade": i % 4, "seconds": 1.5})[0] \
                == 200
        summary = json.loads(fetch(url + "api/summary")[1])
        assert summary["complete"] and summary["seconds"]["median"] == 1.5
        status, body, _ = fetch(url + "api/stop", {})
        assert status == 200 and json.loads(body)["stopping"] is True
        assert proc.wait(30) == 0


@pytest.mark.slow  # a server process; the stop button's exit 0 stays fast
def test_stopping_with_pairs_left_exits_3(store_path):
    with assess_server("--store", str(store_path), "--sample", "s1",
                       "--annotator", "alice") as (url, proc, _):
        fetch(url + "api/grade", {"index": 0, "grade": 1})
        assert fetch(url + "api/stop", {})[0] == 200
        assert proc.wait(30) == 3


# -- adjudication ---------------------------------------------------------------------------
def graded_by_two(store_path):
    """alice and bob grade the sample; they differ on pairs 1 and 5; the judge is 2+ away
    from both on pair 7 only."""
    alice = [2, 1, 0, 3, 1, 2, 0, 0, 3, 1]
    bob = [2, 3, 0, 3, 1, 0, 0, 0, 3, 1]
    with LabelStore(store_path) as store:
        for name, grades in (("alice", alice), ("bob", bob)):
            task = AssessTask(store, PAIRS, name, sample="s1", scale=SCALE)
            for i, g in enumerate(grades):
                task.grade(i, g, note="hmm" if (name, i) == ("bob", 1) else "")
        store.add_events([LabelEvent(*PAIRS[7], 3, "llm", "gpt-judge",
                                     raw="The passage answers it fully. Grade: 3")])
    return alice, bob


def test_the_pairs_to_settle_are_disagreements_and_with_conflicts_judge_gaps(store_path):
    graded_by_two(store_path)
    with LabelStore(store_path) as store:
        settle = to_settle(store, PAIRS)
        assert list(settle) == [PAIRS[1], PAIRS[5]]
        assert [(g.source, g.grade) for g in settle[PAIRS[1]]] == [("alice", 1), ("bob", 3)]
        assert settle[PAIRS[1]][1].meta["note"] == "hmm"
        with_judge = to_settle(store, PAIRS, judge_diff=2)
        assert list(with_judge) == [PAIRS[1], PAIRS[5], PAIRS[7]]
        assert [(g.kind, g.source, g.grade) for g in with_judge[PAIRS[7]]] == [
            ("human", "alice", 0), ("human", "bob", 0), ("llm", "gpt-judge", 3)]
        # pair 0: the judge gave 2 and both people 2; pair 4: judge 0, people 1: not 2 apart
        assert PAIRS[0] not in with_judge and PAIRS[4] not in with_judge


def test_an_adjudicated_grade_links_what_it_settles_and_decides_under_its_policy(store_path,
                                                                                 tmp_path):
    alice, bob = graded_by_two(store_path)
    with LabelStore(store_path) as store:
        settle = to_settle(store, PAIRS, judge_diff=2)
        task = AssessTask(store, list(settle), "dan", sample="s1", scale=SCALE, settles=settle)
        assert task.source == "adjudicated:dan"
        for i, g in enumerate((2, 1, 3)):
            task.grade(i, g, note="by the guidelines" if i == 0 else "")
        (first, *_), = [list(store.events(source="adjudicated:dan"))]
        assert first.meta["settles"] == [g.event for g in settle[PAIRS[1]]]
        assert first.meta["adjudicator"] == "dan" and first.meta["sample"] == "s1"
        events = {e.event: e for e in store.standing("human")}
        assert {events[i].source for i in first.meta["settles"]} == {"alice", "bob"}
    out = tmp_path / "final.qrels"
    main(["labels", "merge", "--store", str(store_path), "--policy", "adjudicated-first",
          "--out", str(out)])
    final = {(q, d): int(g) for q, _, d, g in (line.split() for line in out.read_text().splitlines())}
    assert final[PAIRS[1]] == 2 and final[PAIRS[5]] == 1 and final[PAIRS[7]] == 3
    for i in (0, 2, 3, 4, 6, 8, 9):  # where they agreed, the two people decide
        assert final[PAIRS[i]] == alice[i] == bob[i]
    with LabelStore(store_path) as store:  # human-first: the adjudicator is one more vote
        votes = {(lab.qid, lab.docid): lab.votes for lab in store.merge("human-first").labels}
    assert sorted(votes[PAIRS[1]]) == [1, 2, 3]


def test_adjudicating_a_sample_without_disagreement_says_so_and_exits_0(store_path, capsys):
    assert main(["assess", "--store", str(store_path), "--sample", "s1", "--annotator", "dan",
                 "--adjudicate"]) == 0
    assert "nothing to settle" in capsys.readouterr().err


def test_the_adjudication_page_shows_every_grade_and_the_judges_reasoning(store_path):
    graded_by_two(store_path)
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "dan",
                       "--adjudicate", "--conflicts", "--order", "given") as (url, _, lines):
        assert lines[0].startswith("settling sample s1 as adjudicated:dan: 0 of 3")
        state = json.loads(fetch(url + "api/state")[1])
        assert state["adjudicating"] and state["source"] == "adjudicated:dan"
        item = json.loads(fetch(url + "api/item/2")[1])
        assert (item["qid"], item["docid"]) == PAIRS[7]
        assert item["settle"][-1] == {"source": "gpt-judge", "kind": "llm", "grade": 3,
                                      "note": "",
                                      "reasoning": "The passage answers it fully. Grade: 3"}
        assert fetch(url + "api/grade", {"index": 2, "grade": 1})[0] == 200
    with LabelStore(store_path) as store:
        (e,) = store.events(source="adjudicated:dan")
    assert e.source_kind == "human" and (e.qid, e.docid, e.grade) == (*PAIRS[7], 1)
    assert len(e.meta["settles"]) == 3
