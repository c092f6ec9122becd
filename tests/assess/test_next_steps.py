"""The grading page's last screen: the commands it shows run as shown.

A team grades a sample drawn by `reljudge sample` from two runs, in a store without passage
texts (they come from a file); every command of the finished summary is then run through
the CLI from another folder, exactly as shown (only the adjudicator's NAME filled in); the
adjudication server as a process of its own."""

from __future__ import annotations

import json
import shlex

import pytest

from reljudge.assess import AssessTask, scale_of
from reljudge.assess.next_steps import estimate_measure
from reljudge.assess.team import share_of
from reljudge.cli import main
from reljudge.judge.prompts import load_template
from reljudge.labels import Sample
from reljudge.store import LabelStore
from tests.assess.test_server import fetch
from tests.helpers import assess_server, estimate_world

SCALE = scale_of(load_template("umbrela").scale)


def _team_graded(tmp_path, monkeypatch):
    """A pair sample of two runs' pool, graded by alice and bob (sharing half, disagreeing on
    some shared pairs); the store has no passage text, p.jsonl has them. Opened by a relative
    path, as a person types it. Returns (alice's summary, the texts file)."""
    tmp, store_path, truth, runs = estimate_world(tmp_path)
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "p",
                 "--design", "stratified-pairs", "--budget", "80", "--seed", "1",
                 *map(str, runs)]) == 0
    texts = tmp / "p.jsonl"
    texts.write_text("".join(json.dumps({"docid": d, "text": f"passage {d}"}) + "\n"
                             for _, d in truth))
    monkeypatch.chdir(tmp)
    with LabelStore("labels.sqlite") as store:
        pairs = store.sample_pairs("p")
        store.assign_sample("p", ["alice", "bob"], 0.5)
        summaries = {}
        for k, name in enumerate(("bob", "alice")):
            share = share_of(pairs, name, ["alice", "bob"], 0.5, "sample:p")
            task = AssessTask(store, share.pairs, name, sample="p", scale=SCALE,
                              passages={d: f"passage {d}" for _, d in pairs},
                              shared=share.shared, text_files={"passages": "p.jsonl"})
            for i, it in enumerate(task.items):
                g = truth[(it.qid, it.docid)]
                task.grade(i, (g + 1) % 4 if k and i % 5 == 0 else g, seconds=1.0)
            summaries[name] = task.summary()
    return summaries["alice"], texts


@pytest.mark.slow  # a server process and four command processes
def test_every_command_of_the_finished_page_runs_as_shown(tmp_path, monkeypatch, capsys):
    summary, texts = _team_graded(tmp_path, monkeypatch)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    commands = [step["command"] for step in summary["next"]]
    store = str(tmp_path / "labels.sqlite")
    assert all(f"--store {store}" in c for c in commands), commands  # the absolute path
    (adjudicate,) = [c for c in commands if "--adjudicate" in c]
    assert f"--passages {texts}" in adjudicate and "--queries" not in adjudicate  # held
    (estimate,) = [c for c in commands if c.startswith("reljudge estimate")]
    assert estimate.endswith(" -m nDCG@10") and "RUN" not in estimate
    for command in commands:
        argv = shlex.split(command.replace("--annotator NAME", "--annotator dan"))
        assert argv[0] == "reljudge"
        if "--adjudicate" in argv:  # a server: settle every disagreement, then stop it
            with assess_server(*argv[2:]) as (url, proc, _):
                state = json.loads(fetch(url + "api/state")[1])
                assert state["total"] > 0
                for i in range(state["total"]):
                    assert fetch(url + "api/grade", {"index": i, "grade": 2})[0] == 200
                assert fetch(url + "api/stop", {})[0] == 200
                assert proc.wait(30) == 0, command
            continue
        with monkeypatch.context() as m:
            m.chdir(elsewhere)
            assert main(argv[1:]) == 0, (command, capsys.readouterr().err)


def test_estimate_is_shown_with_a_measure_the_design_supports():
    def sample(unit: str, params: dict) -> Sample:
        return Sample("s", unit, "x", 0, 1, [], params)

    assert estimate_measure(sample("query", {})) == "nDCG@10"
    assert estimate_measure(sample("pair", {})) == "nDCG@10"  # the ratio estimator (infer.ratio)
    assert estimate_measure(sample("pair", {"pool": {"runs": ["a"], "depth": 5}})) == "nDCG@5"
    assert estimate_measure(sample("pair", {"pool": {"runs": ["a"], "depth": 20}})) == "nDCG@10"
    active = Sample("s", "pair", "active", 0, 1, [], {})
    assert estimate_measure(active) == "DCG@10"  # weighted designs: the linear measures


@pytest.mark.parametrize("design", ["srs-queries", "stratified-pairs"])
def test_the_shown_estimate_is_one_the_sample_supports(tmp_path, design, capsys):
    """The estimate shown for each design runs (nDCG@10 from a pair sample too)."""
    tmp, store_path, truth, runs = estimate_world(tmp_path)
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "s",
                 "--design", design, "--budget", "60", *map(str, runs)]) == 0
    with LabelStore(store_path) as store:
        task = AssessTask(store, store.sample_pairs("s"), "ann", sample="s", scale=SCALE,
                          passages={d: "text" for _, d in truth})
        (before,) = [s["what"] for s in task.next_steps()
                     if s["command"].startswith("reljudge estimate")]
        assert f"once every pair of the sample has a human grade: 0 of {len(task.items)}" \
            in before
        for i, it in enumerate(task.items):
            task.grade(i, truth[(it.qid, it.docid)])
        (command,) = [s["command"] for s in task.next_steps()
                      if s["command"].startswith("reljudge estimate")]
    capsys.readouterr()
    assert main(shlex.split(command)[1:]) == 0, capsys.readouterr().err
