"""The audit: every statistic against its reference implementation, plus hand-checked cases."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from reljudge.audit import audit
from reljudge.audit import systems as sy
from reljudge.audit.items import join
from reljudge.audit.judges import audit_measures
from reljudge.audit.result import result_to_dict
from reljudge.errors import InputError
from reljudge.io import read_judge
from reljudge.io.trec import read_qrels
from reljudge.stats import agreement as ag
from reljudge.trec_data import Qrels, Run
from tests.helpers import Lazy

stats = Lazy("scipy.stats")
sklearn_metrics = Lazy("sklearn.metrics")


def qrels(grades: dict[str, int]) -> Qrels:
    return Qrels.from_dict({"q": grades})


def check_against_references(a: np.ndarray, b: np.ndarray) -> None:
    c = ag.confusion(a, b)[None]
    got = ag.all_statistics(c)
    for weights, name in [(None, "kappa"), ("linear", "kappa_linear"),
                          ("quadratic", "kappa_quadratic")]:
        want = sklearn_metrics.cohen_kappa_score(a, b, weights=weights)
        assert got[name][0] == pytest.approx(want, abs=1e-9), name
    for cut in (1, 2, 3):
        if len(set(a >= cut)) > 1 or len(set(b >= cut)) > 1:
            want = sklearn_metrics.cohen_kappa_score(a >= cut, b >= cut)
            assert got[f"kappa_ge{cut}"][0] == pytest.approx(want, abs=1e-9)
    for level in ("nominal", "ordinal", "interval"):
        want = krippendorff.alpha(reliability_data=np.vstack([a, b]),
                                  level_of_measurement=level, value_domain=[0, 1, 2, 3])
        assert got[f"alpha_{level}"][0] == pytest.approx(want, abs=1e-9), level
    assert got["pearson"][0] == pytest.approx(stats.pearsonr(a, b)[0], abs=1e-9)
    assert got["spearman"][0] == pytest.approx(stats.spearmanr(a, b)[0], abs=1e-9)
    assert got["leniency"][0] == pytest.approx(np.mean(b - a), abs=1e-12)
    assert got["mae"][0] == pytest.approx(np.mean(np.abs(b - a)), abs=1e-12)


def test_every_statistic_equals_its_reference_on_random_labels():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.integers(0, 4, 200)
        b = np.clip(a + rng.integers(-2, 3, 200), 0, 3)
        check_against_references(a, b)


@pytest.mark.slow  # every label set of the LLMJudge release
def test_real_llmjudge_labels_match_sklearn_krippendorff_and_scipy(llmjudge):
    ref = read_qrels(llmjudge / "human" / "test.qrels")
    files = sorted((llmjudge / "llm" / "labels").glob("*.txt"))
    assert len(files) == 33
    for f in files:
        judge, _ = read_judge(f, clip=True)
        j = join(ref, judge)
        assert len(j.reference) == 4423 and j.only_judge == 0 and j.only_reference == 0
        check_against_references(j.reference, j.judge)


def test_real_system_agreement_matches_scipy(llmjudge):
    ref = read_qrels(llmjudge / "human" / "test.qrels")
    judge, _ = read_judge(llmjudge / "llm" / "labels" / "Olz-gpt4o.txt")
    runs = synthetic_runs(ref, 8)
    result = audit(ref, judge, runs, measure="nDCG@10")
    s = result.judges[0].systems
    assert s.kendall_tau == pytest.approx(stats.kendalltau(s.reference_scores,
                                                           s.judge_scores)[0], abs=1e-9)
    assert s.spearman == pytest.approx(stats.spearmanr(s.reference_scores,
                                                       s.judge_scores)[0], abs=1e-9)


def synthetic_runs(ref: Qrels, n: int) -> list[Run]:
    """Runs of graded quality: each ranks the judged documents by grade plus noise."""
    rng = np.random.default_rng(11)
    runs = []
    for i in range(n):
        noise = 0.4 + i * 0.5
        scores = ref.grade + rng.normal(0, noise, len(ref))
        runs.append(Run.from_arrays(ref.qid, ref.docid, scores, name=f"sys{i}", check=False))
    return runs


def test_perfect_agreement():
    q = qrels({"a": 0, "b": 1, "c": 2, "d": 3})
    r = audit(q, q, with_ensembles=False).judges[0].items
    assert r.stats["exact"] == 1.0 and r.stats["kappa"] == 1.0
    assert r.stats["alpha_ordinal"] == 1.0 and r.stats["mae"] == 0.0


def test_constant_raters_make_kappa_undefined_and_say_why():
    ref = qrels({"a": 2, "b": 2, "c": 2})
    r = audit(ref, ref).judges[0].items
    assert r.stats["kappa"] is None
    assert r.undefined["kappa"] == "both raters give a single grade"
    judge = qrels({"a": 1, "b": 1, "c": 1})
    r = audit(qrels({"a": 0, "b": 2, "c": 3}), judge).judges[0].items
    assert r.stats["kappa"] == pytest.approx(0.0)  # defined: expected disagreement > 0
    assert r.stats["pearson"] is None and r.undefined["pearson"] == "the judge gives a single grade"


def test_a_judge_that_never_uses_a_grade():
    ref = qrels({"a": 0, "b": 1, "c": 2, "d": 3, "e": 3})
    judge = qrels({"a": 0, "b": 1, "c": 2, "d": 2, "e": 2})  # never says 3
    r = audit(ref, judge).judges[0].items
    assert r.precision[3] is None and r.recall[3] == 0.0
    assert r.precision[2] == pytest.approx(1 / 3)
    check_against_references(np.array([0, 1, 2, 3, 3]), np.array([0, 1, 2, 2, 2]))


def test_tau_ap_hand_cases():
    names = ["a", "b", "c", "d"]
    ref = np.array([4.0, 3, 2, 1])
    assert sy.tau_ap(ref, ref, names) == pytest.approx(1.0)
    assert sy.tau_ap(ref, ref[::-1].copy(), names) == pytest.approx(-1.0)
    # judge order b, a, c, d: C(2)=0/1, C(3)=2/2, C(4)=3/3 -> 2/3 * 2 - 1 = 1/3
    assert sy.tau_ap(ref, np.array([3.0, 4, 2, 1]), names) == pytest.approx(1 / 3)
    # a swap at the bottom costs less: a, b, d, c -> (1 + 1 + 2/3) * 2/3 - 1 = 7/9
    assert sy.tau_ap(ref, np.array([4.0, 3, 1, 2]), names) == pytest.approx(7 / 9)
    assert sy.kendall_tau_b(ref, np.array([3.0, 4, 2, 1])) == pytest.approx(
        sy.kendall_tau_b(ref, np.array([4.0, 3, 1, 2])))


def test_pairs_on_one_side_only_are_counted():
    ref = qrels({"a": 1, "b": 2, "c": 0})
    judge = qrels({"a": 1, "z": 3})
    r = audit(ref, judge).judges[0].items
    assert (r.pairs, r.only_reference, r.only_judge) == (1, 2, 1)


def test_out_of_scale_grades_are_rejected_with_line_or_clipped(tmp_path):
    p = tmp_path / "j.qrels"
    p.write_text("q 0 a 1\nq 0 b 10\n")
    with pytest.raises(InputError, match=r"j.qrels:2: grade 10 is outside"):
        read_judge(p)
    q, clipped = read_judge(p, clip=True)
    assert clipped == 1 and q.get("q", "b") == 3


def test_bootstrap_is_seeded_and_brackets_the_estimate(llmjudge):
    ref = read_qrels(llmjudge / "human" / "test.qrels")
    judge, _ = read_judge(llmjudge / "llm" / "labels" / "Olz-gpt4o.txt")
    a = audit(ref, judge, bootstrap=300, seed=5).judges[0].items
    b = audit(ref, judge, bootstrap=300, seed=5).judges[0].items
    assert a.ci == b.ci
    lo, hi = a.ci["kappa_quadratic"]
    assert lo < a.stats["kappa_quadratic"] < hi


def test_many_judges_agreement_matches_krippendorff_and_ensembles_are_rows():
    rng = np.random.default_rng(9)
    truth = rng.integers(0, 4, 60)
    judges = {}
    data = []
    for j in range(4):
        g = np.clip(truth + rng.integers(-1, 2, 60), 0, 3)
        missing = rng.random(60) < 0.1
        data.append(np.where(missing, np.nan, g))
        keep = ~missing
        judges[f"j{j}"] = Qrels.from_arrays(["q"] * keep.sum(),
                                            [f"d{i}" for i in np.flatnonzero(keep)], g[keep])
    ref = Qrels.from_arrays(["q"] * 60, [f"d{i}" for i in range(60)], truth)
    result = audit(ref, judges)
    assert [j.name for j in result.judges][-2:] == ["ensemble-majority", "ensemble-mean-rounded"]
    for level in ("nominal", "ordinal", "interval"):
        want = krippendorff.alpha(reliability_data=np.array(data), level_of_measurement=level,
                                  value_domain=[0, 1, 2, 3])
        assert result.among_judges[f"alpha_{level}"] == pytest.approx(want, abs=1e-9)


def test_audit_measures_equals_one_audit_per_measure_with_the_bootstrap_only_first():
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 4, 80)
    ref = Qrels.from_arrays([f"q{i % 4}" for i in range(80)], [f"d{i}" for i in range(80)],
                            truth)
    judges = {f"j{j}": Qrels.from_arrays(ref.qid, ref.docid,
                                         np.clip(truth + rng.integers(-1, 2, 80), 0, 3))
              for j in range(3)}
    runs = synthetic_runs(ref, 4)
    measures = ["nDCG@10", "AP", "P@5"]
    got = audit_measures(ref, judges, runs, measures, bootstrap=30, seed=2)
    want = [audit(ref, judges, runs, measure=m, bootstrap=30 if i == 0 else 0, seed=2)
            for i, m in enumerate(measures)]
    assert [result_to_dict(r) for r in got] == [result_to_dict(r) for r in want]
    assert got[0].judges[0].items.ci and not got[1].judges[0].items.ci
    no_runs = audit_measures(ref, judges, None, measures[:2])
    assert [result_to_dict(r) for r in no_runs] == \
        [result_to_dict(audit(ref, judges, measure=m)) for m in measures[:2]]


def test_fleiss_kappa_hand_case():
    # 3 raters, 4 units (Fleiss 1971 style small example computed by hand)
    values = np.array([[0, 1, 1, 3], [0, 1, 2, 3], [0, 1, 2, 3]])
    # p_j over 12 ratings: 0:3, 1:4, 2:2, 3:3 -> Pe = (9+16+4+9)/144
    pe = 38 / 144
    p_i = np.array([1, 1, 1 / 3, 1])
    assert ag.fleiss_kappa(values) == pytest.approx((p_i.mean() - pe) / (1 - pe))


def _three_label_files(tmp_path):
    rng = np.random.default_rng(3)
    pairs = [(f"q{q}", f"d{d}") for q in range(12) for d in range(8)]
    ref = rng.integers(0, 4, len(pairs))
    files = {}
    for name, noise in (("human", 0), ("a", 1), ("b", 2)):
        g = ref if not noise else np.clip(ref + rng.integers(-noise, noise + 1, len(pairs)), 0, 3)
        files[name] = tmp_path / f"{name}.qrels"
        files[name].write_text("".join(f"{q} 0 {d} {x}\n"
                                       for (q, d), x in zip(pairs, g, strict=True)))
    runs = tmp_path / "r.run"
    runs.write_text("".join(f"{q} Q0 {d} {i + 1} {8 - i} r\n" for q, d in pairs
                            for i in [int(d[1:])]))
    return files, runs


def test_the_cli_audit_json_is_the_library_audit_json(tmp_path, capsys):
    """Two paths, one answer: ``reljudge audit --json`` prints audit.audit_json of the same
    audit, held-out rows included (the CLI adds nothing the library cannot produce)."""
    import json

    from reljudge.audit import audit_json
    from reljudge.audit.fitted_rows import HeldoutSpec, heldout_judges
    from reljudge.cli import main
    from reljudge.io.trec import read_runs
    from reljudge.tables import json_dumps

    files, run = _three_label_files(tmp_path)
    assert main(["audit", "--reference", str(files["human"]), "--judge", str(files["a"]),
                 "--judge", str(files["b"]), str(run), "-m", "nDCG@5", "-m", "P@5", "--calibrate",
                 "--folds", "3", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    ref = read_judge(files["human"])[0]
    judges = {n: read_judge(files[n])[0] for n in ("a", "b")}
    spec = HeldoutSpec(calibrate=True, folds=3)
    derived = heldout_judges(ref, judges, spec)
    results = audit_measures(ref, judges, read_runs([run]), ["nDCG@5", "P@5"],
                             reference_name="human.qrels", clipped={"a": 0, "b": 0},
                             derived=derived)
    assert printed == json.loads(json_dumps(audit_json(results, spec, list(derived))))
    assert set(printed) >= {"systems_by_measure", "heldout"}


def test_heldout_judges_refuses_panels_it_cannot_form_as_the_cli_does(tmp_path):
    from reljudge.audit.fitted_rows import HeldoutSpec, heldout_judges
    from reljudge.errors import ConfigError

    files, _ = _three_label_files(tmp_path)
    ref = read_judge(files["human"])[0]
    one = {"a": read_judge(files["a"])[0]}
    with pytest.raises(ConfigError, match="--panel needs at least two judges"):
        heldout_judges(ref, one, HeldoutSpec(panel=True))
    two = {**one, "b": read_judge(files["b"])[0]}
    with pytest.raises(ConfigError, match=r"--panel-best 2: give 2 to 1 \(of 2 judges"):
        heldout_judges(ref, two, HeldoutSpec(panel_best=(2,)))
    with pytest.raises(ConfigError, match="--pair-count 0: give a positive number of pairs"):
        heldout_judges(ref, two, HeldoutSpec(calibrate=True, pair_count=0))
