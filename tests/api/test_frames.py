"""Results as DataFrames and as readable tables: each frame equals the CLI's JSON for the same
inputs, every result prints the CLI's table, and pandas is imported only when asked for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.audit import audit
from reljudge.cli import main
from reljudge.errors import ReljudgeError
from reljudge.io import read_judge
from reljudge.io.coerce import as_qrels, as_run
from reljudge.io.trec import read_qrels, read_runs
from reljudge.metrics import evaluate_many
from reljudge.stats import compare
from reljudge.trec_data import Qrels, Run
from tests.helpers import Lazy
from tests.helpers import grade_sample as _grade

pd = Lazy("pandas")

EX = Path(__file__).resolve().parents[2] / "examples" / "llmjudge-dl23"
QRELS = str(EX / "human.qrels")
RUNS = [str(EX / "runs" / f"synthetic-{i}.run") for i in (1, 2, 3)]
JUDGE = str(EX / "judges" / "Olz-gpt4o.txt")


def cli_json(capsys, *argv: str):
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_evaluation_frames_equal_eval_json_per_query_and_mean(capsys):
    measures = ["nDCG@10", "AP", "P(rel=2)@5"]
    got = cli_json(capsys, "eval", QRELS, *RUNS, "--per-query", *sum((["-m", m] for m in measures), []))
    results = evaluate_many(read_qrels(QRELS), read_runs(RUNS), measures)
    per_query = pd.concat([ev.to_dataframe() for ev in results.values()], ignore_index=True)
    means = pd.concat([ev.to_dataframe(mean=True) for ev in results.values()], ignore_index=True)
    assert list(per_query.columns) == ["run", "query", *measures]
    assert len(per_query) == sum(len(r["per_query"]) for r in got["runs"].values())
    for row in per_query.itertuples(index=False):
        want = got["runs"][row.run]["per_query"][row.query]
        assert list(row[2:]) == [want[m] for m in measures]
    assert list(means["run"]) == list(got["runs"])
    for row in means.itertuples(index=False):
        assert row.queries == got["runs"][row.run]["queries"]
        # eval computes Judged@10 beside the asked-for measures: the means are still bit for
        # bit the same (each column is summed on its own)
        assert list(row[2:]) == [got["runs"][row.run]["mean"][m] for m in measures]


def test_comparison_frame_equals_compare_json(capsys):
    args = ["-m", "nDCG@10", "-m", "RR", "--trials", "500", "--seed", "3"]
    got = cli_json(capsys, "compare", QRELS, *RUNS, *args)
    c = compare(read_qrels(QRELS), read_runs(RUNS), ["nDCG@10", "RR"], trials=500, seed=3)
    df = c.to_dataframe()
    assert len(df) == 3 * 2 and df["baseline"].sum() == 2
    for r in df.to_dict("records"):
        want = got["runs"][r["run"]][r["measure"]]
        assert [r["ci_low"], r["ci_high"]] == want["ci"]
        for key in ("mean", "se", "diff", "p", "p_adjusted", "significant", "note"):
            assert r[key] == want[key] or (want[key] is None and pd.isna(r[key])), key
        assert r["effect_size"] == want["effect_size"] or (
            want["effect_size"] is None and pd.isna(r["effect_size"]))


def test_audit_frame_equals_audit_json(capsys):
    got = cli_json(capsys, "audit", "--reference", QRELS, "--judge", JUDGE, "--clip",
                   *RUNS)
    judge, clipped = read_judge(JUDGE, clip=True)
    result = audit(read_qrels(QRELS), {"Olz-gpt4o": judge}, read_runs(RUNS),
                   clipped={"Olz-gpt4o": clipped})
    df = result.to_dataframe()
    (want,) = got["judges"]
    row = df.iloc[0]
    assert row["judge"] == want["name"] and row["pairs"] == want["items"]["pairs"]
    for col, stat in [("exact", "exact"), ("kappa", "kappa"), ("kappa_lin", "kappa_linear"),
                      ("kappa_quad", "kappa_quadratic"), ("alpha_ord", "alpha_ordinal"),
                      ("mae", "mae")]:
        assert row[col] == want["items"]["stats"][stat], col
    assert row["tau"] == want["systems"]["kendall_tau"]
    assert row["max_rank_change"] == want["systems"]["max_rank_change"]


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.text("abq1 ", min_size=1, max_size=3),
                       st.dictionaries(st.text("xyz2", min_size=1, max_size=3),
                                       st.integers(0, 3), min_size=1, max_size=4),
                       min_size=1, max_size=4),
       st.floats(-5, 5, allow_nan=False))
def test_qrels_and_run_frames_read_back_to_the_same_data(data, shift):
    qrels = Qrels.from_dict(data)
    assert as_qrels(qrels.to_dataframe()) == qrels
    run = Run.from_dict({q: {d: g + shift for d, g in docs.items()} for q, docs in data.items()},
                        name="r")
    back = as_run(run.to_dataframe())
    assert back.to_dict() == run.to_dict()
    assert list(run.to_dataframe().columns) == ["qid", "docid", "score"]


def test_results_print_the_cli_table_not_arrays(capsys):
    capsys.readouterr()
    assert main(["eval", QRELS, *RUNS, "-m", "nDCG@10", "-m", "AP"]) == 0
    cli_table = capsys.readouterr().out
    results = evaluate_many(read_qrels(QRELS), read_runs(RUNS), ["nDCG@10", "AP"])
    for ev in results.values():
        lines = str(ev).splitlines()
        assert lines[0] == cli_table.splitlines()[0]  # same header
        assert lines[2].split() == next(line for line in cli_table.splitlines()
                                        if line.startswith(ev.run + " ")).split()
        assert "array(" not in repr(ev) and str(ev) in repr(ev)
        assert "<table>" in ev._repr_html_() and f"<td>{ev.run}</td>" in ev._repr_html_()
    c = compare(read_qrels(QRELS), read_runs(RUNS), ["nDCG@10"], trials=200)
    capsys.readouterr()
    assert main(["compare", QRELS, *RUNS, "-m", "nDCG@10", "--trials", "200"]) == 0
    assert str(c) == capsys.readouterr().out  # the table and the legend, as printed
    assert "array(" not in repr(c) and "▼" in c._repr_html_()


def test_audit_prints_its_cli_table_and_notes(capsys):
    judge, clipped = read_judge(JUDGE, clip=True)
    result = audit(read_qrels(QRELS), {"Olz-gpt4o": judge}, read_runs(RUNS),
                   clipped={"Olz-gpt4o": clipped})
    capsys.readouterr()
    assert main(["audit", "--reference", QRELS, "--judge", JUDGE, "--clip", *RUNS]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(str(result))
    assert "Olz-gpt4o" in result._repr_html_() and "array(" not in repr(result)


def test_pandas_is_not_imported_until_a_frame_is_asked_for(tmp_path):
    code = ("import sys; from reljudge.metrics import evaluate; from reljudge.stats import compare;"
            "ev = evaluate({'q': {'a': 1}}, {'q': {'a': .5, 'b': .2}}, 'AP'); str(ev); repr(ev);"
            "ev._repr_html_();"
            "c = compare({'q': {'a': 1}}, [{'q': {'a': .5}}, {'q': {'b': .5}}], 'AP', trials=10);"
            "str(c); c._repr_html_();"
            "from reljudge.audit import audit; a = audit({'q': {'a': 1, 'b': 0}}, "
            "{'q': {'a': 1, 'b': 1}}); str(a); a._repr_html_();"
            f"from reljudge.store import LabelStore; s = LabelStore({str(tmp_path / 's.db')!r});"
            "from reljudge.store.views import conflicts_with_text; conflicts_with_text(s);"
            "print('pandas' in sys.modules); ev.to_dataframe(); print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_without_pandas_to_dataframe_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ReljudgeError, match="pip install pandas"):
        Qrels.from_dict({"q": {"a": 1}}).to_dataframe()
    ev = evaluate_many({"q": {"a": 1}}, {"r": {"q": {"a": 1.0}}}, "AP")["r"]
    with pytest.raises(ReljudgeError, match="pip install pandas"):
        ev.to_dataframe()


def test_store_estimates_frame_equals_estimate_json_and_prints_its_table(world, capsys):
    from reljudge.infer.scores import estimate
    from reljudge.store import LabelStore

    _tmp, store_path, truth, runs = world
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "q10",
                 "--design", "srs-queries", "--query-count", "10", "--seed", "3"]) == 0
    _grade(store_path, truth, "q10")
    got = cli_json(capsys, "estimate", "--store", str(store_path), "--sample", "q10",
                   *map(str, runs), "-m", "nDCG@10")
    with LabelStore(store_path, create=False) as store:
        est = estimate(store, read_runs([str(r) for r in runs]), ["nDCG@10"], sample="q10")
    records = est.to_dataframe().to_dict("records")
    want = got["runs"] + got["differences"]
    assert len(records) == len(want) == 3
    for r, w in zip(records, want, strict=True):
        assert r.keys() == w.keys()
        assert {k: v for k, v in r.items() if not (w[k] is None and pd.isna(v))} == \
            {k: v for k, v in w.items() if v is not None}
    text = str(est)
    assert "ppi 95% CI" in text and "sys1 - sys0" in text and est.note() in text
    assert "RunEstimate(" not in repr(est) and "<table>" in est._repr_html_()
