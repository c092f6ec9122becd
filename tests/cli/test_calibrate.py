"""``reljudge calibrate`` and the audit's held-out calibrated / panel rows, end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reljudge.cli import main
from reljudge.store import LabelStore, import_labels


def write_sets(tmp_path, nq=10, per=40, seed=0):
    """A human file and three judges: lenient by one grade, noisy, and one missing pairs."""
    rng = np.random.default_rng(seed)
    human = rng.choice(4, size=(nq, per), p=[0.45, 0.28, 0.18, 0.09])
    sets = {"human": human, "lenient": np.minimum(human + 1, 3),
            "noisy": np.where(rng.random(human.shape) < 0.6, human,
                              rng.integers(0, 4, human.shape)),
            "partial": np.where(rng.random(human.shape) < 0.7, human, -1)}
    paths = {}
    for name, g in sets.items():
        paths[name] = tmp_path / f"{name}.qrels"
        paths[name].write_text("".join(f"q{q} 0 d{q}_{i} {g[q, i]}\n" for q in range(nq)
                                       for i in range(per) if g[q, i] >= 0))
    return paths


def test_calibrate_into_the_store_records_the_derivation(tmp_path, capsys):
    paths = write_sets(tmp_path)
    db = str(tmp_path / "labels.sqlite")
    with LabelStore(db) as s:
        import_labels(s, paths["human"], "human", "nist")
        import_labels(s, paths["lenient"], "llm", "lenient")
    assert main(["calibrate", "--store", db, "--human-source", "nist", "--judge-source",
                 "lenient", "--pair-count", "200", "--folds", "5"]) == 0
    out = capsys.readouterr().out
    assert "fitted on 200 human pairs" in out and "held-out check: 5-fold by query" in out
    assert "wrote 400 labels" in out and "source calibrated:lenient" in out
    with LabelStore(db) as s:
        (d,) = s.derivations()
        assert d["source"] == "calibrated:lenient" and d["method"] == "calibration"
        f = d["fitted_on"]
        assert (f["judge_source"], f["human_source"], f["pairs_used"]) == \
            ("lenient", "nist", 200)
        assert len(f["pairs"]) == 200 and f["heldout"]["by"] == "query"
        # the lenient judge's grade g means human g-1 (its 3 is a human 2 or 3): calibration
    # undoes the shift, up to the human 3s (9%) that the judge's 3 cannot tell apart
        merged = s.merge("source=calibrated:lenient").qrels.to_dict()
        human = s.merge("source=nist").qrels.to_dict()
    agree = np.mean([merged[q][d] == g for q in human for d, g in human[q].items()])
    raw = np.mean([g == min(g + 1, 3) for q in human for g in human[q].values()])
    assert agree > 0.85 and raw < 0.2
    held = f["heldout"]["stats"]
    assert held["calibrated:lenient"]["mae"] < held["lenient"]["mae"]


def test_panel_from_files_writes_the_distributions(tmp_path, capsys):
    paths = write_sets(tmp_path, seed=1)
    out_tsv = tmp_path / "panel.tsv"
    args = ["calibrate", "--reference", str(paths["human"]), "--panel", "three",
            "--out", str(out_tsv), "--folds", "0"]
    for j in ("lenient", "noisy", "partial"):
        args += ["--judge", str(paths[j])]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "panel:three: fitted on 400 human pairs" in out and "converged" in out
    lines = out_tsv.read_text().splitlines()
    assert lines[0].split("\t") == ["qid", "docid", "p0", "p1", "p2", "p3", "expected", "mode"]
    assert len(lines) == 401
    p = np.array([[float(x) for x in line.split("\t")[2:6]] for line in lines[1:]])
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fitted_on"]["judge_sources"] == ["lenient", "noisy", "partial"]


def test_calibrate_bad_inputs_exit_2_with_one_line(tmp_path, capsys):
    paths = write_sets(tmp_path)
    db = str(tmp_path / "labels.sqlite")
    cases = [
        (["calibrate", "--store", db, "--human-source", "nist", "--judge-source", "x"],
         "no such label store"),
        (["calibrate", "--reference", str(paths["human"])], "give --reference and --judge"),
        (["calibrate", "--reference", str(paths["human"]), "--judge", str(paths["noisy"]),
          "--judge", str(paths["lenient"])], "or --panel NAME"),
        (["calibrate", "--store", db, "--human-source", "nist", "--judge-source", "x"],
         "no source named 'nist'"),
        (["calibrate", "--reference", str(paths["human"]), "--judge", str(paths["noisy"]),
          "--folds", "1"], "--folds 1"),
        (["calibrate", "--reference", str(paths["human"]), "--judge", str(paths["noisy"]),
          "--folds", "11"], "10 queries cannot fill 11 folds"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
        if message == "no such label store":
            LabelStore(db).close()  # an existing but empty store for the next case


def test_audit_adds_held_out_calibrated_and_panel_rows(tmp_path, capsys):
    paths = write_sets(tmp_path, seed=2)
    base = ["audit", "--reference", str(paths["human"]), "--no-ensembles"]
    for j in ("lenient", "noisy", "partial"):
        base += ["--judge", str(paths[j])]
    assert main([*base, "--calibrate", "--panel", "--panel-best", "2", "--pair-count", "150",
                 "--folds", "5"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]
            if line and not line.startswith(("note", "among", "calibrated/panel"))}
    assert {"calibrated:lenient", "calibrated:noisy", "calibrated:partial", "panel:all",
            "panel:best2"} <= set(rows)
    assert rows["calibrated:lenient"][1] == "400" and rows["calibrated:partial"][1] == \
        rows["partial"][1]
    assert "5-fold cross-fitting by query" in out and "150 human pairs" in out
    assert main([*base, "--calibrate", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["heldout"]["by"] == "query" and "calibrated:noisy" in data["heldout"]["rows"]
    assert main([*base, "--panel-best", "3"]) == 2
    assert "--panel-best 3: give 2 to 2" in capsys.readouterr().err


def test_a_judge_with_logprob_distributions_is_calibrated_on_them(tmp_path, capsys):
    from reljudge.labels import LabelEvent

    rng = np.random.default_rng(3)
    human = rng.integers(0, 4, 200)
    events = [LabelEvent(f"q{i % 10}", f"d{i}", int(h), "human", "nist") for i, h in
              enumerate(human)]
    for i, h in enumerate(human):
        p = np.full(4, 0.1)
        p[min(int(h) + 1, 3)] += 0.6  # confidently lenient
        events.append(LabelEvent(f"q{i % 10}", f"d{i}", int(p.argmax()), "llm", "j",
                                 probs=tuple(p.tolist()), expected_grade=float(p @ range(4))))
    db = str(tmp_path / "labels.sqlite")
    with LabelStore(db) as s:
        s.add_events(events)
    assert main(["calibrate", "--store", db, "--human-source", "nist", "--judge-source", "j",
                 "--folds", "0", "--json", "--force"]) == 0  # unchecked: written on --force
    data = json.loads(capsys.readouterr().out)
    assert data["fitted_on"]["judge_probs"] is True
    counts = np.array(data["fitted_on"]["model"]["counts"])
    assert counts.sum() == pytest.approx(200) and (counts != counts.round()).any()  # soft


def test_a_mean_panel_cut_at_thresholds_is_stored_as_grades_with_its_cuts(tmp_path, capsys):
    paths = write_sets(tmp_path, seed=4)
    db = str(tmp_path / "labels.sqlite")
    with LabelStore(db) as s:
        import_labels(s, paths["human"], "human", "nist")
        for j in ("lenient", "noisy", "partial"):
            import_labels(s, paths[j], "llm", j)
    argv = ["calibrate", "--store", db, "--human-source", "nist", "--panel", "mean3",
            "--panel-method", "mean", "--decision", "thresholds", "--pair-count", "250"]
    for j in ("lenient", "noisy", "partial"):
        argv += ["--judge-source", j]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "mean of 3 judges' grades" in out and "thresholds on the expected grade" in out
    with LabelStore(db) as s:
        (d,) = s.derivations()
        f = d["fitted_on"]
        dist = s.distributions("panel:mean3")
        merged = s.merge("source=panel:mean3").qrels.to_dict()
        human = s.merge("source=nist").qrels.to_dict()
    cuts = f["decision"]["cuts"]
    assert f["decision"]["decision"] == "thresholds" and cuts == sorted(cuts)
    assert f["heldout"]["decision"] == "thresholds" and f["heldout"]["by"] == "query"
    assert all(sorted(p) == [0.0, 0.0, 0.0, 1.0] for p in dist.values())  # certain grades
    # two of three judges near the human grade: the cut mean agrees with it on most pairs
    agree = np.mean([merged[q][d] == g for q in human for d, g in human[q].items()])
    assert agree > 0.8
    held = f["heldout"]["stats"]["panel:mean3"]
    assert held["kappa_quadratic"] > f["heldout"]["stats"]["noisy"]["kappa_quadratic"]


def test_audit_panel_rows_by_mean_and_thresholds(tmp_path, capsys):
    paths = write_sets(tmp_path, seed=5)
    base = ["audit", "--reference", str(paths["human"]), "--no-ensembles", "--panel",
            "--panel-method", "mean", "--pair-count", "200"]
    for j in ("lenient", "noisy", "partial"):
        base += ["--judge", str(paths[j])]
    argv = [*base, "--decision", "thresholds"]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "panel:all" in data["heldout"]["rows"]
    assert (data["heldout"]["panel_method"], data["heldout"]["decision"]) == \
        ("mean", "thresholds")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "panels: mean" in out and "decision thresholds" in out
    with pytest.raises(SystemExit) as bad:
        main([*base, "--decision", "vote"])
    assert bad.value.code == 2
