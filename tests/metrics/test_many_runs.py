"""Many runs in one pass (metrics.many_runs) and small run files read with numpy (io.fields):
a track's worth of runs; relstring from the evaluation's ranking."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reljudge.cli import main
from reljudge.io import fields, trec
from reljudge.metrics import evaluate, evaluate_many, ranking
from reljudge.metrics.ranking import rankings
from reljudge.metrics.trec_names import relstring_column, relstrings
from reljudge.trec_data import Qrels, Run

MEASURES = ["nDCG@10", "nDCG", "P@5", "R@20", "RR", "AP", "Bpref", "Judged@10", "NumRet",
            "NumRel", "IPrec@0.3", "nDCG(judged_only=True)@5"]
QUERIES = ["q1", "q2", "q10", "q3"]


# built once: a strategy built inside a draw is built and validated again at every example
_DOCS = st.sampled_from([f"d{i}" for i in range(30)])
_SOME_QUERIES = st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)
_JUDGED = st.dictionaries(_DOCS, st.integers(-1, 3), min_size=1, max_size=15)
_SCORED = st.dictionaries(_DOCS, st.one_of(st.integers(0, 3).map(float),
                                           st.floats(-5, 5, allow_nan=False)),
                          min_size=1, max_size=25)


@st.composite
def track(draw):
    """Qrels and several runs of different depths and score styles (ties, missing queries)."""
    qrels = {q: draw(_JUDGED) for q in draw(_SOME_QUERIES)}
    runs = [Run.from_dict({q: draw(_SCORED) for q in draw(_SOME_QUERIES)}, name=f"r{i}")
            for i in range(draw(st.integers(2, 5)))]
    return qrels, runs


TRACKS = given(data=track(), all_queries=st.booleans(), max_docs=st.sampled_from([None, 3, 40]),
                judged_only=st.booleans(),
                compat=st.sampled_from(["trec_eval-10", "trec_eval-9"]))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@TRACKS
@pytest.mark.slow  # a 100-example sweep: the fast set runs the same on 20 just below
def test_runs_evaluated_together_equal_each_run_evaluated_alone(data, all_queries, max_docs,
                                                                 judged_only, compat):
    together_equals_alone(data, all_queries, max_docs, judged_only, compat)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@TRACKS
def test_runs_evaluated_together_equal_each_run_evaluated_alone_on_a_few_examples(
        data, all_queries, max_docs, judged_only, compat):
    together_equals_alone(data, all_queries, max_docs, judged_only, compat)


def together_equals_alone(data, all_queries, max_docs, judged_only, compat) -> None:
    """evaluate_many's values bit for bit, rankings and errors those of evaluate run by run."""
    qrels, runs = data
    if not any(set(r.query_ids()) & {q for q, d in qrels.items() if d} for r in runs):
        return
    options = dict(all_queries=all_queries, max_docs=max_docs, judged_only=judged_only,
                   compat=compat)
    try:
        alone = {r.name: evaluate(qrels, r, MEASURES, **options) for r in runs}
    except Exception as e:  # the same error, for the first run that has it
        with pytest.raises(type(e), match=re.escape(str(e))):
            evaluate_many(qrels, runs, MEASURES, **options)
        return
    together = evaluate_many(qrels, runs, MEASURES, **options)
    for name, ev in alone.items():
        assert together[name].query_ids == ev.query_ids
        assert together[name].scores.tobytes() == ev.scores.tobytes()  # bit for bit
        assert (together[name].ranking.grades == ev.ranking.grades).all()


def test_a_batch_of_runs_is_ranked_in_one_pass(monkeypatch, tmp_path):
    """63 small runs: one pass of the ranking (one score matrix), not one per run."""
    calls = []
    real = ranking.neg_scores

    def counted(*args):
        calls.append(args[3])  # rows of the matrix
        return real(*args)

    monkeypatch.setattr(ranking, "neg_scores", counted)
    rng = np.random.default_rng(3)
    qrels = Qrels.from_dict({f"q{q}": {f"d{d}": int(g) for d, g in
                                       enumerate(rng.integers(0, 3, 30))} for q in range(5)})
    runs = [Run.from_dict({f"q{q}": {f"d{d}": float(rng.integers(0, 4)) for d in range(40)}
                           for q in range(5)}, name=f"r{i}") for i in range(63)]
    result = evaluate_many(qrels, runs, ["AP", "nDCG@10"])
    assert len(result) == 63 and calls == [63 * 5]


def write_runs(folder, n: int = 3) -> list[str]:
    """Qrels and ``n`` small run files with ties; their paths."""
    (folder / "q.qrels").write_text("".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(4)
                                            for d in range(0, 20, 2)))
    paths = [str(folder / "q.qrels")]
    for i in range(n):
        lines = [f"q{q} Q0 d{d} {d + 1} {(d * (i + 1)) % 5 / 2} r{i}\n" for q in range(4)
                 for d in range(20)]
        (folder / f"r{i}.run").write_text("".join(lines))
        paths.append(str(folder / f"r{i}.run"))
    return paths


def test_relstring_reads_the_ranking_kept_in_the_evaluation(tmp_path, monkeypatch, capsys):
    """eval --format trec -q with relstring ranks each run once (it ranked every run again
    for relstring), and prints what ranking again would give."""
    paths = write_runs(tmp_path)
    ev = evaluate_many(trec.read_qrels(paths[0]), trec.read_runs(paths[1:]), ["AP"])
    _, qids, ranked = rankings(trec.read_qrels(paths[0]), trec.read_run(paths[1]))
    assert relstring_column(ev["r0"], 10) == relstrings(ranked, 10)
    assert ev["r0"].query_ids == qids

    passes = []
    real = ranking.neg_scores
    monkeypatch.setattr(ranking, "neg_scores", lambda *a: passes.append(1) or real(*a))
    assert main(["eval", *paths, "--format", "trec", "-q", "-m", "relstring", "-m", "map"]) == 0
    out = capsys.readouterr().out
    assert len(passes) == 1
    assert f"r0\t{'relstring':<22}\tq0\t'{relstrings(ranked, 10)[0]}'\n" in out


def test_small_run_files_are_read_into_compact_columns(tmp_path):
    """A small ASCII run file is read by numpy into compact columns (it was read into a
    Python str per field), equal to what the text reader gives."""
    paths = write_runs(tmp_path, 1)
    run = trec.read_run(paths[1])
    assert run.compact
    rows = [line.split() for line in Path(paths[1]).read_text().splitlines()]
    expected: dict = {}
    for q, _, d, _, s, _ in rows:
        expected.setdefault(q, {})[d] = float(s)
    assert run.to_dict() == expected and run.name == "r0"


decimals = st.from_regex(r"-?[0-9]{0,17}\.?[0-9]{0,17}", fullmatch=True)
others = st.floats(allow_nan=False, allow_infinity=False).map(repr)


@given(values=st.lists(st.one_of(decimals, others, st.sampled_from(
    ["1_0", "+3", "1e5", ".", "-", "--1", "0x1", "-.", "1.2.3", "inf", "-nan", "1e999",
     "9" * 400, "9" * 299, "9" * 305 + ".5", "1." + "5" * 400, "5-"])), min_size=1, max_size=30))
def test_numbers_are_pythons_float_or_refused_as_float_refuses(values):
    """``numbers`` converts as ``float`` (a few values with ``float`` itself, more with numpy:
    both tried), ``numbers_ok`` says whether every value is a finite float."""
    text = np.array([v.encode() for v in values if v] or [b"0"])
    try:
        expected = [float(v) for v in text.tolist()]
    except ValueError:
        expected = None
    few = fields.FEW_NUMBERS
    try:
        for fields.FEW_NUMBERS in (few, 0):
            assert fields.numbers_ok(text) == (expected is not None
                                               and bool(np.isfinite(expected).all()))
            if expected is None:
                with pytest.raises(ValueError):
                    fields.numbers(text)
                continue
            got = fields.numbers(text)
            assert np.array(expected).tobytes() == got.tobytes()  # bit for bit, -0.0 too
    finally:
        fields.FEW_NUMBERS = few


@pytest.mark.parametrize(("text", "ncols"), [
    (b"a b c\nd e f\n", 3), (b"a b c\nd e f", 3), (b"a  b\tc\r\nd e f\n", 3),
    (b"a b\nc d e f\n", 3), (b"a b c\n\nd e f\n", 3), (b"a b c\x1c\n", 3), (b"a b \xc3\xa9\n", 3),
    (b"", 3), (b"a b c d\n", 3), (b"a\x01 b c\n", 3)])
def test_split_fields_gives_bytes_split_or_hands_the_file_back(text, ncols):
    got = fields.split_fields(text, ncols, range(ncols))
    lines = text.split(b"\n")
    regular = text.isascii() and all(len(line.split()) == ncols for line in
                                     (lines[:-1] if text.endswith(b"\n") else lines))
    regular = regular and text and not any(c in text for c in b"\x1c\x01")
    if not regular:
        assert got is None
    else:
        assert [c.tolist() for c in got] == [text.split()[i::ncols] for i in range(ncols)]


def test_memory_of_a_track_does_not_grow_with_its_number_of_runs():
    """60 runs of 50 queries x top 100 take no more working memory to rank than 20 (batches of
    ``BATCH_ROWS`` rows): batches of 1M rows ranked a whole track at once, 3x the memory
    for 3x the runs; `reljudge eval` of 63 such runs peaked at 97 MB, now 66 MB
    (pytrec_eval's script: 28 MB)."""
    import tracemalloc

    rng = np.random.default_rng(7)
    qids = [f"q{q}".encode() for q in range(50)]
    qrels = Qrels.from_codes((qids, np.repeat(np.arange(50), 200)),
                             np.array([f"D{d}".encode() for d in range(200)] * 50),
                             rng.integers(0, 4, 50 * 200))

    names = np.array([f"D{d}".encode() for d in range(400)])

    def run(i: int) -> Run:
        docs = np.concatenate([rng.choice(400, 100, replace=False) for _ in qids])
        return Run.from_codes((qids, np.repeat(np.arange(50), 100)), names[docs],
                              np.round(rng.gamma(2.0, 3.0, 5000), 1), name=f"r{i}")

    peaks = []
    for n in (20, 60):
        runs = [run(i) for i in range(n)]
        tracemalloc.start()
        kept = evaluate_many(qrels, runs, ["nDCG@10", "P@10", "R@100", "AP", "RR"])
        held, peak = tracemalloc.get_traced_memory()
        peaks.append(peak - held)  # beyond the results (with each run's rankings) kept
        tracemalloc.stop()
        del kept
    assert peaks[1] < 1.5 * peaks[0], peaks
