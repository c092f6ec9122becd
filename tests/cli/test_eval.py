"""``reljudge eval``: output formats, and bad input as one line on stderr with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reljudge.cli import main

QRELS = "q1 0 a 3\nq1 0 b 0\nq2 0 c 1\n"
RUN = "q1 Q0 a 1 2.0 bm25\nq1 Q0 b 2 1.0 bm25\nq2 Q0 x 1 3.0 bm25\nq2 Q0 c 2 2.0 bm25\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "q.qrels").write_text(QRELS)
    (tmp_path / "r.run").write_text(RUN)
    return tmp_path


def test_eval_table_json_and_trec_formats(files, capsys):
    args = [str(files / "q.qrels"), str(files / "r.run"), "-m", "RR", "-m", "P@1"]
    assert main(["eval", *args]) == 0
    out = capsys.readouterr().out
    assert "bm25" in out and "0.7500" in out and "0.5000" in out
    assert main(["eval", *args, "--json", "--per-query"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"]["bm25"]["mean"] == {"RR": 0.75, "P@1": 0.5}
    assert data["runs"]["bm25"]["per_query"]["q2"] == {"RR": 0.5, "P@1": 0.0}
    assert main(["eval", *args, "--format", "trec"]) == 0
    # trec_eval's layout: its names and order, the name padded to 22 characters
    assert capsys.readouterr().out.splitlines() == [f"{'recip_rank':<22}\tall\t0.7500",
                                                    f"{'P_1':<22}\tall\t0.5000"]


@pytest.mark.parametrize(("name", "text", "needle"), [
    ("q.qrels", "q1 0 a\n", "q.qrels:1: expected 'QID ITER DOCID GRADE'"),
    ("q.qrels", "q1 0 a x\n", "q.qrels:1: expected an integer grade, found 'x'"),
    ("q.qrels", "q1 0 a 1\nq1 0 a 2\n", "q.qrels:2: duplicate judgment"),
    ("r.run", "q1 Q0 a 1 high t\n", "r.run:1: expected a numeric score, found 'high'"),
    ("r.run", "q1 Q0 a 1 1 t\nq1 Q0 a 2 0 t\n", "r.run:2: duplicate document 'a'"),
])
@pytest.mark.slow  # a real process per case (the same errors in-process: test_bad_inputs, test_trec)
def test_bad_files_give_one_line_error_and_exit_2(files, name, text, needle):
    (files / name).write_text(text)
    proc = subprocess.run([sys.executable, "-m", "reljudge", "eval", str(files / "q.qrels"),
                           str(files / "r.run")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert needle in lines[0]


def test_bad_measure_exits_2_with_message(files, capsys):
    code = main(["eval", str(files / "q.qrels"), str(files / "r.run"), "-m", "nDCG@x"])
    assert code == 2
    assert "cutoff of 'nDCG@x' must be a positive integer" in capsys.readouterr().err


def test_eval_does_not_import_the_llm_client():
    code = ("import sys; from reljudge.cli import main; import contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try: main(['eval', '--help'])\n"
            "    except SystemExit: pass\n"
            "print('openai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_judged_adds_judged_at_10_and_rbp_residual_columns(files, capsys):
    args = [str(files / "q.qrels"), str(files / "r.run"), "-m", "Bpref"]
    assert main(["eval", *args, "--judged", "--json", "--per-query"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["measures"] == ["Bpref", "Judged@10", "RBP(residual=True)"]
    # q2: the unjudged x at rank 1 could still add (1 - 0.8) to RBP; q1 is fully judged
    assert data["runs"]["bm25"]["per_query"]["q2"]["RBP(residual=True)"] == pytest.approx(0.2)
    assert data["runs"]["bm25"]["mean"]["Judged@10"] == 0.75
    assert captured.err == ""  # the columns say it: no note


def test_a_run_resting_on_unjudged_documents_gets_a_note_on_stderr(files, capsys):
    args = [str(files / "q.qrels"), str(files / "r.run"), "-m", "RR", "--json"]
    assert main(["eval", *args]) == 0
    captured = capsys.readouterr()
    assert list(json.loads(captured.out)["runs"]["bm25"]["mean"]) == ["RR"]  # no extra column
    assert captured.err.startswith("note: bm25: Judged@10 = 0.75")
    (files / "r.run").write_text(RUN.replace("q2 Q0 x 1 3.0", "q2 Q0 c 1 3.0")
                                 .replace("q2 Q0 c 2 2.0", "q2 Q0 x 2 2.0"))
    (files / "q.qrels").write_text(QRELS + "q2 0 x 0\n")
    assert main(["eval", *args]) == 0
    assert capsys.readouterr().err == ""


def test_eval_says_when_trec_eval_9s_float32_rule_gives_other_numbers(tmp_path, capsys):
    """a and b of q1 score distinct doubles, equal as float32: trec_eval 10 ranks a first,
    trec_eval 9 (pytrec_eval, ir_measures) ties them and puts b first (docid descending). eval
    said nothing of it; now a note on stderr counts the values that change
    and names --compat trec_eval-9, which reproduces pytrec_eval's numbers."""
    import pytrec_eval
    near = 1.0 + 1e-12
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 1, "d": 0}}
    run = {"q1": {"a": near, "b": 1.0}, "q2": {"c": 0.5, "d": 0.25}}
    (tmp_path / "q.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                                              for d, g in docs.items()))
    (tmp_path / "r.run").write_text("".join(f"{q} Q0 {d} 1 {s!r} t\n" for q, docs in run.items()
                                            for d, s in docs.items()))
    args = [str(tmp_path / "q.qrels"), str(tmp_path / "r.run"), "-m", "RR", "-m", "P@1",
            "--json", "--per-query"]
    assert main(["eval", *args]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["runs"]["t"]["per_query"]["q1"] == {"RR": 1.0, "P@1": 1.0}
    assert err.count("\n") == 1
    assert "note: 2 of 4 per-query values (means by up to 0.5000) differ under trec_eval 9's " \
           "rules (scores rounded to float32 before ranking)" in err
    assert "--compat trec_eval-9 reproduces them" in err
    assert main(["eval", *args, "--compat", "trec_eval-9"]) == 0
    out, err = capsys.readouterr()
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "P_1"}).evaluate(run)
    ours = json.loads(out)["runs"]["t"]["per_query"]
    assert {q: (v["RR"], v["P@1"]) for q, v in ours.items()} == \
        {q: (v["recip_rank"], v["P_1"]) for q, v in theirs.items()}
    assert ours["q1"] == {"RR": 0.5, "P@1": 0.0} and err == ""
    assert main(["eval", *args, "--float32-scores"]) == 0
    assert capsys.readouterr().err == ""  # asked for the float32 rule: nothing to say
    (tmp_path / "r.run").write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq2 Q0 c 1 1.0 t\n")
    assert main(["eval", *args]) == 0
    assert capsys.readouterr().err == ""  # no near tie: nothing differs, nothing said


def test_float32_ties_counts_the_documents_of_ties_made_by_float32_rounding():
    from reljudge.metrics.compat import float32_ties
    from reljudge.trec_data import Run

    near = 1.0 + 1e-12
    run = {"a": {"x": 1.0, "y": near, "z": 1.0 + 2e-12, "w": 1.0, "v": 0.5, "u": 0.5},
           "b": {"x": 1.0, "y": near}, "c": {"x": near}, "d": {"x": 0.5, "y": 0.25}}
    for r in (Run.from_dict(run), Run.from_dict(run).compacted()):
        assert float32_ties(r) == 6  # a's four near 1.0 and b's two; equal doubles alone: none
    assert float32_ties(Run.from_dict({"a": {"x": 1.0, "y": 1.0}})) == 0


def test_the_trec_eval_9_check_evaluates_again_only_the_runs_with_float32_ties(monkeypatch):
    """Of 40 runs, only the one with a float32 tie is evaluated again with every measure (all
    40 were), on its tied query alone; every run with IPrec, whose rule
    differs. The note is the one evaluating every run again with every measure gives."""
    import importlib

    import numpy as np

    from reljudge.metrics import compat, evaluate, evaluate_many
    from reljudge.trec_data import Qrels, Run

    rng = np.random.default_rng(5)
    judged = {f"q{q}": {f"d{d}": int(g) for d, g in enumerate(rng.integers(0, 3, 12))}
              for q in range(4)}
    qrels = Qrels.from_dict({**judged, "q1": {**judged["q1"], "d0": 2, "d1": 0}})
    runs = [Run.from_dict({f"q{q}": {f"d{d}": float(rng.integers(0, 50)) / 7 for d in range(15)}
                           for q in range(4)}, name=f"r{i}") for i in range(40)]
    near = dict(runs[7].to_dict())
    near["q1"] = {**near["q1"], "d0": 9.0 + 1e-12, "d1": 9.0}  # equal as float32: d1 first
    runs[7] = Run.from_dict(near, name="r7")
    measures = ["AP", "nDCG@5", "IPrec@0.5", "P@3"]
    results = evaluate_many(qrels, runs, measures)
    asked = []
    real = evaluate_many

    def counted(qrels, runs, measures, **options):
        asked.append(([r.name for r in runs], list(measures)))
        return real(qrels, runs, measures, **options)

    monkeypatch.setattr(importlib.import_module("reljudge.metrics.evaluate"), "evaluate_many",
                        counted)
    got = compat.trec_eval_9_difference(qrels, runs, results)
    assert asked == [([f"r{i}" for i in range(40)], ["IPrec@0.5"]), (["r7"], measures)]
    nine = {r.name: evaluate(qrels, r, measures, compat="trec_eval-9") for r in runs}
    changed = sum(int((results[n].scores != ev.scores).sum()) for n, ev in nine.items())
    largest = max(abs(results[n].mean()[m] - ev.mean()[m]) for n, ev in nine.items()
                  for m in measures)
    assert (got.changed, got.values, got.largest) == (changed, 40 * 4 * 4, largest)
    assert changed


@pytest.mark.parametrize("all_queries", [False, True])
def test_the_trec_eval_9_check_evaluates_again_only_the_queries_with_float32_ties(
        monkeypatch, all_queries):
    """A run with float32 ties in 2 of its 30 queries is evaluated again on those 2 queries'
    rows only (the whole run was: the other queries keep their ranking, so no
    value of theirs can change); a run without ties, not at all. The note is the one evaluating
    every run again gives, with and without --all-queries (a qrels query no run has)."""
    import importlib

    import numpy as np

    from reljudge.metrics import compat, evaluate, evaluate_many
    from reljudge.trec_data import Qrels, Run

    rng = np.random.default_rng(11)
    judged = {f"q{q}": {f"d{d}": int(g) for d, g in enumerate(rng.integers(0, 3, 12))}
              for q in range(31)}
    for q in ("q3", "q17"):
        judged[q].update(d0=2, d1=0)
    scores = {f"q{q}": {f"d{d}": float(rng.integers(0, 50)) / 7 for d in range(15)}
              for q in range(30)}
    plain = Run.from_dict(scores, name="plain")
    for q in ("q3", "q17"):  # equal as float32: trec_eval 9 puts d1 first, 10 puts d0 first
        scores[q].update(d0=9.0 + 1e-12, d1=9.0)
    runs = [Run.from_dict(scores, name="tied"), plain]
    measures = ["AP", "nDCG@5", "P@3", "RR"]
    options = dict(all_queries=all_queries)
    qrels = Qrels.from_dict(judged)
    results = evaluate_many(qrels, runs, measures, **options)
    asked = []
    real = evaluate_many

    def counted(qrels, runs, measures, **options):
        asked.append([(r.name, sorted(r.query_ids()), len(r)) for r in runs])
        return real(qrels, runs, measures, **options)

    monkeypatch.setattr(importlib.import_module("reljudge.metrics.evaluate"), "evaluate_many",
                        counted)
    got = compat.trec_eval_9_difference(qrels, runs, results, **options)
    assert asked == [[("tied", ["q17", "q3"], 30)]]
    nine = {r.name: evaluate(qrels, r, measures, compat="trec_eval-9", **options) for r in runs}
    changed = sum(int((results[n].scores != ev.scores).sum()) for n, ev in nine.items())
    largest = max(abs(results[n].mean()[m] - ev.mean()[m]) for n, ev in nine.items()
                  for m in measures)
    assert (got.changed, got.values, got.largest) == (changed, 2 * (30 + all_queries) * 4,
                                                      largest)
    assert changed


def test_float32_ties_are_found_alike_in_file_order_and_shuffled():
    """The tie search skips its sort when a run's rows come as files have them (queries
    grouped, scores descending): the same counts as sorting, zeros of both signs included."""
    import numpy as np

    from reljudge.metrics.compat import float32_ties
    from reljudge.trec_data import Run

    rng = np.random.default_rng(3)
    base = np.r_[rng.integers(0, 40, 200) / 8 + rng.integers(0, 3, 200) * 1e-12,
                 1e-50, 0.0, -0.0, 0.0, -1e-50, -0.0, -2.5, -2.5 - 1e-12]
    qid = np.repeat(["a", "b", "c"], [70, 70, len(base) - 140])
    tied = []
    in_file_order = np.lexsort((np.signbit(base), -base, qid))  # +0.0 before -0.0
    for order in (in_file_order, rng.permutation(len(base))):
        run = Run.from_arrays(qid[order], [f"d{i}" for i in order], base[order])
        tied.append(float32_ties(run))
    assert tied[0] == tied[1] > 0


# --- a float32 tie in a query without judgments changes nothing ------------------------------

#: q2 has no judgments; its two scores are distinct doubles, equal as float32 (a tie that
#: trec_eval 9 breaks otherwise), as in official TREC Deep Learning 2021 runs
TIED_RUN = ("q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d3 3 1.0 r\n"
            "q2 Q0 a 1 3.6645510054 r\nq2 Q0 b 2 3.6645509959 r\n")
TIED_QRELS = "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\n"
OTHER_RUN = "q1 Q0 d3 1 3.0 b\nq1 Q0 d1 2 2.0 b\nq1 Q0 d2 3 1.0 b\n"


@pytest.fixture
def tied(tmp_path):
    """Two folders, each with qrels, run r.run and another run b.run: in ``with`` r.run holds
    the unjudged q2 and its float32 tie, in ``without`` it does not."""
    import numpy as np

    assert np.float32(3.6645510054) == np.float32(3.6645509959)
    for name, run in (("with", TIED_RUN), ("without", TIED_RUN.split("q2")[0])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "q.qrels").write_text(TIED_QRELS)
        (tmp_path / name / "r.run").write_text(run)
        (tmp_path / name / "b.run").write_text(OTHER_RUN)
    return tmp_path


@pytest.mark.parametrize("argv", [
    ["eval", "q.qrels", "r.run"],
    ["eval", "q.qrels", "r.run", "-q", "--json"],
    ["eval", "q.qrels", "r.run", "--format", "trec"],
    ["eval", "q.qrels", "r.run", "--format", "trec", "-q", "-m", "all_trec"],
    ["eval", "q.qrels", "r.run", "b.run", "-m", "IPrec@0.8", "-m", "AP"],
    ["compare", "q.qrels", "r.run", "b.run", "-m", "nDCG@10", "-m", "AP", "--trials", "100"],
    ["audit", "--reference", "q.qrels", "--judge", "b.run.qrels", "r.run", "b.run",
     "--bootstrap", "50"],
    ["report", "q.qrels", "r.run", "b.run", "-m", "AP", "--out", "report.html"],
], ids=["eval", "eval -q", "eval trec", "eval trec -q all_trec", "eval IPrec", "compare",
        "audit", "report"])
def test_a_tie_in_an_unjudged_query_changes_nothing(tied, argv, monkeypatch, capsys):
    """Every path that evaluates a run again on some of its queries (eval's note under
    trec_eval 9's rules, -q, --format trec, compare, audit, report) gives, for a run whose
    only float32 tie is in a query without judgments, exactly what it gives for the run
    without that query; it refused the run ('no query in common') when it re-evaluated the
    tied queries alone."""
    import re

    outputs = []
    for name in ("with", "without"):
        monkeypatch.chdir(tied / name)
        (tied / name / "b.run.qrels").write_text("q1 0 d1 1\nq1 0 d2 1\nq1 0 d3 3\n")
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 0, err
        html = Path("report.html").read_text() if argv[0] == "report" else ""
        # the report's inputs table names each file with its checksum and size
        html = re.sub(r"<td>[0-9a-f]{12}</td><td class=\"num\">\d+</td>", "", html)
        # and the minute it was written, which two runs on a loaded machine may straddle
        html = re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", "", html)
        outputs.append((out, err, html))
    assert outputs[0] == outputs[1]


def test_a_tie_in_an_unjudged_query_scores_as_pytrec_eval(tied, monkeypatch, capsys):
    """pytrec_eval (trec_eval 9) evaluates the judged query alone; so does eval, under both
    rules, and the same numbers come out."""
    import pytrec_eval
    qrels = {"q1": {"d1": 2, "d2": 0, "d3": 1}}
    run = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"a": 3.6645510054, "b": 3.6645509959}}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank", "P_5"}).evaluate(run)
    monkeypatch.chdir(tied / "with")
    for compat in ("trec_eval-10", "trec_eval-9"):
        code = main(["eval", "q.qrels", "r.run", "-m", "AP", "-m", "RR", "-m", "P@5", "-q",
                     "--json", "--compat", compat])
        out, err = capsys.readouterr()
        assert code == 0, err
        ours = json.loads(out)["runs"]["r"]["per_query"]
        assert list(ours) == ["q1"]
        assert ours["q1"] == pytest.approx({"AP": theirs["q1"]["map"],
                                            "RR": theirs["q1"]["recip_rank"],
                                            "P@5": theirs["q1"]["P_5"]}, abs=1e-12)
