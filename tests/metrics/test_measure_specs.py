"""A measure is described in one place, ``metrics.measures.SPECS``: a spec registered there
alone is parsed, computed, kept in its range and printed under its trec_eval name; and every
spec carries all of that, so that no table beside it is needed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reljudge.cli import main
from reljudge.errors import MeasureError
from reljudge.infer.ranges import measure_range
from reljudge.metrics import evaluate
from reljudge.metrics.gain_kernels import dcg_at
from reljudge.metrics.measures import COUNT, SPECS, MeasureSpec, TrecName, parse_measure, trec
from reljudge.metrics.trec_names import TREC_EVAL_NAMES, as_trec, read_measure, trec_measures

QRELS = {"q1": {"a": 3, "b": 0}, "q2": {"c": 1}}
RUN = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"x": 3.0, "c": 2.0}}

#: trec_eval's ideal_dcg, which reljudge does not offer: the DCG of the ideal ranking
TOY = MeasureSpec("ToyIdealDCG", "DCG of the qrels' ideal ranking, gain = grade.", {},
                  cutoff="none", bounds=COUNT, aliases=("toy_idcg",),
                  kernel=lambda m, r, compat: dcg_at(r, True, None, "log2"),
                  trec_eval=trec("ideal_dcg"))


@pytest.fixture
def toy(monkeypatch):
    """TOY added to the registry for one test (and taken out again)."""
    monkeypatch.setitem(SPECS, TOY.name, TOY)
    return TOY


def test_unregistered_toy_is_unknown():
    with pytest.raises(MeasureError, match="unknown measure 'ToyIdealDCG'"):
        parse_measure("ToyIdealDCG")
    with pytest.raises(MeasureError, match="ideal_dcg is not offered"):
        trec_measures(["ideal_dcg"])


def test_a_spec_in_the_registry_is_parsed_computed_bounded_and_named(toy, monkeypatch, tmp_path,
                                                                     capsys):
    m = parse_measure("ToyIdealDCG")
    assert parse_measure("TOY_IDCG") == m  # its alias
    with pytest.raises(MeasureError, match="takes no cutoff"):
        parse_measure("ToyIdealDCG@5")
    # ideal rankings: q1 (3, 0) -> 3/log2(2); q2 (1) -> 1/log2(2)
    ev = evaluate(QRELS, RUN, ["ToyIdealDCG"])
    assert ev.column("ToyIdealDCG").tolist() == [3.0, 1.0]
    assert measure_range(m) == (0.0, math.inf)
    # trec_eval's name, both ways: read as the measure, and the measure printed under it
    assert read_measure("ideal_dcg") == m
    assert [(tm.name, tm.measure) for tm in as_trec(["ToyIdealDCG"])] == [("ideal_dcg", m)]
    (tmp_path / "q.qrels").write_text("q1 0 a 3\nq1 0 b 0\nq2 0 c 1\n")
    (tmp_path / "r.run").write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"
                                    "q2 Q0 x 1 3.0 t\nq2 Q0 c 2 2.0 t\n")
    args = [str(tmp_path / "q.qrels"), str(tmp_path / "r.run"), "--format", "trec", "-q"]
    for given in ("ideal_dcg", "ToyIdealDCG"):
        assert main(["eval", *args, "-m", "map", "-m", given]) == 0
        assert capsys.readouterr().out.splitlines() == [  # in trec_eval's order, after map
            f"{'map':<22}\tq1\t1.0000", f"{'ideal_dcg':<22}\tq1\t3.0000",
            f"{'map':<22}\tq2\t0.5000", f"{'ideal_dcg':<22}\tq2\t1.0000",
            f"{'map':<22}\tall\t0.7500", f"{'ideal_dcg':<22}\tall\t2.0000"]
    monkeypatch.delitem(SPECS, TOY.name)  # and taken out, it is gone from every table
    with pytest.raises(MeasureError, match="unknown measure 'toy_idcg'"):
        parse_measure("toy_idcg")
    with pytest.raises(MeasureError, match="ideal_dcg is not offered"):
        trec_measures(["ideal_dcg"])


def test_a_spec_must_say_its_kernel_and_its_trec_eval_names():
    with pytest.raises(TypeError, match="trec_eval"):
        MeasureSpec("X", "doc", kernel=TOY.kernel)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="kernel"):
        MeasureSpec("X", "doc", trec_eval=None)  # type: ignore[call-arg]


def test_every_spec_has_a_kernel_bounds_and_trec_eval_names():
    claimed: dict[str, str] = {}
    spellings: dict[str, str] = {}
    for name, spec in SPECS.items():
        assert spec.name == name
        assert callable(spec.kernel), name
        low, high = spec.bounds
        assert isinstance(low, float) and isinstance(high, float) and low < high, name
        assert spec.trec_eval is None or spec.trec_eval, f"{name}: None when trec_eval has none"
        for t in spec.trec_eval or ():
            assert isinstance(t, TrecName) and t.name in TREC_EVAL_NAMES, (name, t)
            assert t.summary in ("mean", "sum", "gmean"), (name, t)
            assert t.name not in claimed, f"{t.name}: {claimed.get(t.name)} and {name}"
            claimed[t.name] = name
            if t.params:
                parse_measure(f"{name}({t.params})")
        for alias in spec.aliases:
            assert alias == alias.lower() and alias not in spellings, (name, alias)
            spellings[alias] = name
    # trec_eval's lines that are not measures, and the one measure reljudge does not offer
    assert set(TREC_EVAL_NAMES) - set(claimed) == {"runid", "num_q", "relstring", "ideal_dcg"}


def test_every_kernel_gives_one_value_per_query_in_bounds():
    values = evaluate(QRELS, RUN, [_example(spec) for spec in SPECS.values()]).scores
    assert values.shape == (2, len(SPECS))
    for j, spec in enumerate(SPECS.values()):
        low, high = spec.bounds
        assert np.all((values[:, j] >= low) & (values[:, j] <= high)), spec.name


def _example(spec: MeasureSpec) -> str:
    """The spec's measure with a cutoff where it needs one."""
    cutoff = {"required": "@2", "recall": "@0.5", "factor": "@0.5"}.get(spec.cutoff, "")
    return spec.name + cutoff

