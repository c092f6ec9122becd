"""A run's lines of queries the qrels lack (a track's runs as distributed: every test query,
few of them judged). ``eval`` checks them as ever but converts only the judged queries'
scores; every output stays byte for byte what reading every line gave."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reljudge import InputError
from reljudge.cli import main
from reljudge.io import trec
from reljudge.io.trec import read_qrels, read_run, read_runs
from reljudge.metrics import evaluate_many

JUDGED = ["1012", "2077", "3"]


def write_track(folder: Path, comment: bool = False) -> list[str]:
    """The files of ``track_texts`` written in ``folder``: [qrels, run, ...]."""
    paths = []
    for name, text in track_texts(comment).items():
        paths.append(folder / name)
        paths[-1].write_text(text)
    return [str(p) for p in paths]


@functools.cache  # drawn once: the same seeded track for every test
def track_texts(comment: bool = False) -> dict[str, str]:
    """Qrels of 3 queries and 5 runs of 30 queries (the 3 among them) x 12 documents, in
    the score styles of real runs: long floats with float32 ties of distinct doubles,
    four decimals, one decimal (ties), 1/rank; one run's queries split in two parts; with
    ``comment``, a comment line (the text path reads that run). {file name: text}."""
    rng = np.random.default_rng(11)
    queries = [str(q) for q in rng.permutation([int(q) for q in JUDGED] + list(range(100, 127)))]
    docs = [f"msmarco_passage_{i:02d}_{7_919 * i}" for i in range(40)]
    lines = [f"{q} 0 {d} {g}\n" for q in JUDGED
             for d, g in zip(rng.choice(docs, 15, replace=False).tolist(),
                             rng.integers(0, 4, 15).tolist(), strict=True)]
    files = {"track.qrels": "".join(lines)}
    styles = ["{:.10f}", "{:.4f}", "{:.1f}", "rank", "{:.10f}"]
    for r, style in enumerate(styles):
        lines = []
        for q in queries:
            score = np.sort(rng.gamma(2.0, 3.0, 12))[::-1]
            score[3] = score[2] - 1e-7  # equal to its neighbour as float32, not as a double
            texts = ([repr(1 / i) for i in range(1, 13)] if style == "rank"
                     else [style.format(s) for s in score])
            lines += [f"{q} Q0 {d} {i} {s} run{r}\n" for i, (d, s) in
                      enumerate(zip(rng.choice(docs, 12, replace=False).tolist(), texts,
                                    strict=True), 1)]
        if r == 4:  # a query's lines in two places: the rows are regrouped
            lines = lines[6:] + lines[:6]
        if r == 1 and comment:
            lines.insert(40, "# a comment line: trec_eval skips it\n")
        files[f"run{r}.txt"] = "".join(lines)
    return files


ARGVS = [[], ["-q"], ["-c"], ["-q", "-c", "-n"], ["--judged"], ["--format", "json", "-q"],
         ["--format", "json", "-c"], ["--format", "csv", "-q"], ["--format", "markdown"],
         ["--format", "latex"], ["--format", "trec"], ["--format", "trec", "-q", "-c"],
         ["--format", "trec", "-q", "-m", "all_trec"], ["-J", "-M", "5", "-q"],
         ["--compat", "trec_eval-9", "-q"], ["-m", "IPrec@0.3", "-m", "Bpref", "-q"],
         ["--float32-scores", "-q"]]


@pytest.mark.parametrize("read", ["bytes", "arrow", "text"])
@pytest.mark.parametrize("argv", ARGVS, ids=" ".join)
def test_eval_prints_what_reading_every_line_printed(tmp_path, monkeypatch, capsys, argv,
                                                     read):
    """Every format, -q, -c, --judged, -J/-M, trec_eval 9's rules: stdout, stderr and exit
    code byte for byte those of the same command converting every line; and only the judged
    queries' scores were converted (on the numpy path)."""
    paths = write_track(tmp_path, comment=read == "text")
    if read == "arrow":
        monkeypatch.setattr(trec, "FAST_MIN_BYTES", 0)
    converted: list[int] = []
    numbers = trec.numbers
    monkeypatch.setattr(trec, "numbers", lambda text: converted.append(len(text)) or
                        numbers(text))
    outputs = []
    for skip in (True, False):
        with monkeypatch.context() as m:
            if not skip:  # every run kept whole: every line converted, as before
                m.setattr(trec, "_wanted", lambda ids, queries: None)
            converted.clear()
            code = main(["eval", *paths, *argv])
            outputs.append((code, *capsys.readouterr()))
            if read == "bytes":
                lines = sum(Path(p).read_text().count("\n") for p in paths[1:])
                judged = sum(line.split()[0] in JUDGED for p in paths[1:]
                             for line in Path(p).read_text().splitlines())
                assert sum(converted) == (judged if skip else lines)
    assert outputs[0] == outputs[1]
    assert outputs[0][0] == 0 and "Traceback" not in outputs[0][2]


def test_a_run_of_unjudged_queries_only_is_refused_as_before(tmp_path, capsys):
    """A run with none of the qrels' queries is kept whole: the same error, naming its
    queries, with and without -c."""
    paths = write_track(tmp_path)
    Path(paths[0]).write_text("elsewhere 0 d 1\n")
    for argv in ([], ["-c"]):
        assert main(["eval", *paths[:2], *argv]) == 2
        error = capsys.readouterr().err.splitlines()[-1]
        assert "error" in error and "run0" in error
        assert "run queries e.g. ['1" in error if argv else "no query that the qrels" in error
    whole = read_run(paths[1])
    assert read_run(paths[1], queries={"elsewhere"}).to_dict() == whole.to_dict()


BAD = ["{q} Q0 dx 9 0.5", "{q} Q0 dx x 0.5 t", "{q} Q0 dx 9.0 0.5 t", "{q} Q0 dx 9 nan t",
       "{q} Q0 dx 9 inf t", "{q} Q0 dx 9 -inf t", "{q} Q0 dx 9 1e999 t", "{q} Q0 dx 9 abc t",
       "{q} Q0 dx 9 --1 t", "{q} Q0 dx 9 . t", "{q} Q0 dx 9 - t", "{q} Q0 dx 9 -. t",
       "{q} Q0 dx 9 1.2.3 t", "{q} Q0 dx 9 0x1 t", "{q} Q0 dx 9 " + "9" * 400 + " t",
       "{q} Q0 d1 9 0.5 t", "{q} Q0 dx 9 0.5 t x", "{q} Q0 dx\x019 0.5 t",
       # and what is no error
       "{q} Q0 dx 9 1_0 t", "{q} Q0 dx 9 +.5e3 t", "{q} Q0 dx +9 -.5 t", "{q} Q0 dé 9 5. t",
       "{q} Q0 dx 9 " + "9" * 305 + ".5 t", "{q} Q0 dx 9 12345." + "6" * 400 + " t",
       "{q} Q0 dx 9 -0 t", "#{q} Q0 dx 9 0.5 t"]


@pytest.mark.parametrize("big", [False, True], ids=["numpy", "arrow"])
@pytest.mark.parametrize("line", BAD)
@pytest.mark.parametrize("where", ["judged", "unjudged"])
def test_a_bad_line_of_an_unjudged_query_is_the_same_error(tmp_path, monkeypatch, line, where,
                                                          big):
    """Each malformed line, in a judged or an unjudged query, on the numpy and the Arrow
    path: the error read_run gives with ``queries`` is the one it gives without, to the
    character (file and line); a good line gives the same judged rows."""
    if big:
        monkeypatch.setattr(trec, "FAST_MIN_BYTES", 0)
    rows = [f"{q} Q0 d{i} {i} {0.5 + i / 7!r} t" for q in ("a", "b", "c") for i in range(1, 5)]
    rows.insert(6, line.format(q="a" if where == "judged" else "b"))  # among b's lines
    (tmp_path / "x.run").write_text("\n".join(rows) + "\n", encoding="utf-8")

    def outcome(**kw):
        try:
            run = read_run(tmp_path / "x.run", **kw)
        except InputError as e:
            return str(e)
        return run.name, {q: v for q, v in run.to_dict().items() if q in ("a", "c")}

    assert outcome(queries={"a", "c"}) == outcome()


runs_of = st.lists(st.tuples(st.sampled_from(["j1", "j2", "u1", "u2", "u3"]),
                             st.sampled_from([f"d{i}" for i in range(9)]),
                             st.integers(0, 5).map(lambda x: x / 4)),
                   min_size=1, max_size=40, unique_by=lambda t: (t[0], t[1]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=st.dictionaries(st.sampled_from(["j1", "j2", "j3"]),
                             st.dictionaries(st.sampled_from([f"d{i}" for i in range(9)]),
                                             st.integers(-1, 3), min_size=1, max_size=6),
                             min_size=1, max_size=3),
       runs=st.lists(runs_of, min_size=1, max_size=3), all_queries=st.booleans(),
       compat=st.sampled_from(["trec_eval-10", "trec_eval-9"]), big=st.booleans())
@pytest.mark.slow  # hypothesis: files written and read twice per example
def test_evaluations_of_runs_read_with_queries_are_those_of_whole_runs(
        tmp_path_factory, qrels, runs, all_queries, compat, big):
    folder = tmp_path_factory.mktemp("u")
    (folder / "q.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                                            for d, g in docs.items()))
    paths = []
    for r, rows in enumerate(runs):  # in the order drawn: a query's lines may be split
        paths.append(folder / f"r{r}.run")
        paths[-1].write_text("".join(f"{q} Q0 {d} {i} {s} r{r}\n"
                                     for i, (q, d, s) in enumerate(rows)))
    trec.FAST_MIN_BYTES = 0 if big else 1 << 20
    try:
        q = read_qrels(folder / "q.qrels")
        results = []
        for queries in (None, set(q.query_ids())):
            try:
                results.append(evaluate_many(q, read_runs(paths, queries=queries),
                                             ["nDCG@5", "AP", "RR", "P@3", "Bpref", "Judged@3"],
                                             all_queries=all_queries, compat=compat))
            except InputError as e:
                results.append(str(e))
    finally:
        trec.FAST_MIN_BYTES = 1 << 20
    whole, part = results
    if isinstance(whole, str):
        assert part == whole
        return
    assert isinstance(part, dict) and list(part) == list(whole)
    for name, ev in whole.items():
        assert part[name].query_ids == ev.query_ids
        assert part[name].scores.tobytes() == ev.scores.tobytes()


def test_eval_of_a_run_with_unjudged_queries_is_pytrec_evals(tmp_path, capsys):
    """Under trec_eval 9's rules, the values pytrec_eval gives for the whole runs."""
    import json

    import pytrec_eval
    paths = write_track(tmp_path)
    with open(paths[0]) as f:
        evaluator = pytrec_eval.RelevanceEvaluator(
            pytrec_eval.parse_qrel(f), {"ndcg_cut.10", "P.10", "recall.100", "map",
                                        "recip_rank"})
    assert main(["eval", *paths, "--compat", "trec_eval-9", "-q", "--format", "json"]) == 0
    ours = json.loads(capsys.readouterr().out)["runs"]
    for r, path in enumerate(paths[1:]):
        with open(path) as f:
            theirs = evaluator.evaluate(pytrec_eval.parse_run(f))
        assert sorted(theirs) == sorted(JUDGED) == sorted(ours[f"run{r}"]["per_query"])
        for q, values in ours[f"run{r}"]["per_query"].items():
            assert values == pytest.approx(
                {"nDCG@10": theirs[q]["ndcg_cut_10"], "P@10": theirs[q]["P_10"],
                 "R@100": theirs[q]["recall_100"], "AP": theirs[q]["map"],
                 "RR": theirs[q]["recip_rank"]}, abs=1e-12)
