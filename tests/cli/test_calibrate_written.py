"""calibrate writes what it validated: one decision rule, recorded in the derivation, used for
the held-out check and for the labels written (and by labels merge); labels never checked, or
worse than the raw judge on held-out queries, are not written unless --force."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from reljudge.cli import main
from reljudge.grades import decide
from reljudge.infer.derive import Derived
from reljudge.labels import LabelEvent
from reljudge.store import LabelStore


@pytest.fixture
def lenient(tmp_path):
    """300 pairs over 30 queries; the judge grades one above the human, capped at 3."""
    rng = np.random.default_rng(5)
    human = rng.choice(4, size=300, p=[0.4, 0.3, 0.2, 0.1])
    judge = np.minimum(human + 1, 3)
    events = [LabelEvent(f"q{i % 30}", f"d{i}", int(h), "human", "nist")
              for i, h in enumerate(human)]
    events += [LabelEvent(f"q{i % 30}", f"d{i}", int(j), "llm", "lenient")
               for i, j in enumerate(judge)]
    db = tmp_path / "labels.sqlite"
    with LabelStore(db) as s:
        s.add_events(events)
    return str(db), human


def merged(db, derived="recorded"):
    with LabelStore(db, create=False) as s:
        m = s.merge("source=calibrated:lenient", derived=derived)
        return {(label.qid, label.docid): label.grade for label in m.labels}


@pytest.mark.parametrize("decision", ["median", "mode", "expected"])
def test_the_labels_written_are_the_rules_grades_and_the_derivation_says_which(lenient,
                                                                             decision, capsys):
    db, human = lenient
    assert main(["calibrate", "--store", db, "--human-source", "nist", "--judge-source",
                 "lenient", "--decision", decision, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fitted_on"]["decision_rule"] == decision and out["not_written"] is None
    with LabelStore(db, create=False) as s:
        dists = s.distributions("calibrated:lenient")
        record = s.derivations()[0]
    assert record["fitted_on"]["decision_rule"] == decision
    pairs = sorted(dists)
    want = decide(np.array([dists[p] for p in pairs]), decision)
    got = merged(db)
    assert [got[p] for p in pairs] == want.tolist()  # merge's default: the recorded rule
    for rule in ("mode", "median"):  # labels merge --derived offers the same rules
        applied = merged(db, rule)
        assert [applied[p] for p in pairs] == decide(np.array([dists[p] for p in pairs]),
                                                     rule).tolist()
    truth = {(f"q{i % 30}", f"d{i}"): int(h) for i, h in enumerate(human)}
    mae = np.mean([abs(got[p] - truth[p]) for p in pairs])
    assert mae < 1.0  # better than the raw judge's (every grade one too high but at 3)


def test_labels_never_checked_are_not_written_unless_forced(lenient, capsys):
    db, _ = lenient
    out = Path(db).with_name("probs.tsv")
    argv = ["calibrate", "--store", db, "--human-source", "nist", "--judge-source", "lenient",
            "--folds", "0", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "not written" in err and "never checked on held-out queries" in err
    assert not out.exists()  # "nothing was written": --out neither
    with LabelStore(db, create=False) as s:
        assert s.derivations() == [] and "calibrated:lenient" not in {
            x.name for x in s.sources()}
    assert main([*argv, "--force"]) == 0
    with LabelStore(db, create=False) as s:
        assert len(s.derivations()) == 1
    assert out.read_text().startswith("qid\tdocid\tp0")


def test_held_out_figures_worse_than_the_raw_judge_refuse_the_write():
    def derived(decision, mine, raw, raw_pairs=300):
        return Derived("calibrated:j", "calibration", [], np.zeros((0, 4)), None, {},
                       heldout={"calibrated:j": {"pairs": 300, **mine},
                                "j": {"pairs": raw_pairs, **raw}}, decision=decision)

    worse = derived("median", {"mae": 0.90, "kappa_quadratic": 0.0},
                    {"mae": 0.868, "kappa_quadratic": 0.4})
    assert "held-out mae (0.900, decision median) is worse than the raw judge j's (0.868)" \
        in worse.worse_than_raw()
    better = derived("median", {"mae": 0.703, "kappa_quadratic": 0.3},
                     {"mae": 0.868, "kappa_quadratic": 0.4})
    assert better.worse_than_raw() is None  # median aims at MAE
    cut = derived("thresholds", {"mae": 0.5, "kappa_quadratic": 0.30},
                  {"mae": 0.9, "kappa_quadratic": 0.40})
    assert "kappa_quadratic" in cut.worse_than_raw()  # thresholds aim at quadratic kappa
    few = derived("median", {"mae": 0.9, "kappa_quadratic": 0.1},
                  {"mae": 0.1, "kappa_quadratic": 0.9}, raw_pairs=20)
    assert few.worse_than_raw() is None  # a judge of 20 of 300 pairs is no yardstick


def test_a_sample_larger_than_the_pairs_there_are_says_so(lenient, capsys):
    db, _ = lenient
    assert main(["calibrate", "--store", db, "--human-source", "nist", "--judge-source",
                 "lenient", "--pair-count", "5000"]) == 2
    assert "--pair-count 5000: only 300 pairs have both a human and a judge label" in \
        capsys.readouterr().err
