"""the rest of the bad-input matrix. Each case is one clean line on stderr
and exit 2 with nothing written, or a right result; the Python front door says what it
expected; reprs are short."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import reljudge
from reljudge.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "hr-handbook"
QRELS = str(EXAMPLE / "human.qrels")
RUNS = [str(EXAMPLE / "runs" / "bm25.run"), str(EXAMPLE / "runs" / "trigram.run")]


def _refused(argv: list[str], capsys, *words: str) -> str:
    """Run the command; it must exit 2 with one line on stderr holding every word."""
    try:
        code = main(argv)
    except SystemExit as e:  # argparse refuses
        code = e.code
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    last = err.splitlines()[-1]
    assert "Traceback" not in err
    for word in words:
        assert word in last, last
    return last


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store of the example's human labels and an LLM judge one grade off."""
    judge = tmp_path / "judge.qrels"
    judge.write_text("".join(f"{q} 0 {d} {(int(g) + 1) % 4}\n" for q, _, d, g in
                             (line.split() for line in Path(QRELS).read_text().splitlines())))
    path = tmp_path / "s.sqlite"
    assert main(["labels", "import", QRELS, "--store", str(path), "--source-kind", "human"]) == 0
    assert main(["labels", "import", str(judge), "--store", str(path), "--source-kind", "llm"]) == 0
    return path


def _bytes(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("flag, value, words", [
    ("--temperature", "-2", ("--temperature", "0")),
    ("--temperature", "2.5", ("--temperature", "2")),
    ("--batch-discount", "2", ("--batch-discount", "1")),
])
def test_label_refuses_a_setting_out_of_its_range(flag, value, words, tmp_path, capsys,
                                                  monkeypatch):
    monkeypatch.setenv("OPENAI_MODEL", "m")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RELJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    _refused(["label", "--queries", str(EXAMPLE / "queries.tsv"), "--passages",
              str(EXAMPLE / "passages.jsonl"), *RUNS, "--store", str(tmp_path / "new.sqlite"),
              flag, value], capsys, *words)
    assert not (tmp_path / "new.sqlite").exists() and not (tmp_path / "cache").exists()


def test_judge_config_refuses_a_temperature_out_of_range():
    with pytest.raises(reljudge.errors.ConfigError, match="temperature"):
        reljudge.JudgeConfig(model="m", temperature=-2)


def test_digits_is_capped(capsys):
    _refused(["eval", QRELS, RUNS[0], "--digits", "50"], capsys, "--digits", "16")
    assert main(["eval", QRELS, RUNS[0], "-m", "P@5", "--digits", "16"]) == 0


def test_conflicts_refuses_a_negative_limit(store, capsys):
    _refused(["labels", "conflicts", "--store", str(store), "--limit", "-3"], capsys,
             "--limit", "0 or more")


def test_conflicts_prints_integer_grades_as_integers(store, capsys):
    assert main(["labels", "conflicts", "--store", str(store), "--limit", "2"]) == 0
    out = capsys.readouterr().out
    row = out.splitlines()[2].split()
    assert row[2:] == ["3", "0", "-3"], out


@pytest.mark.parametrize("argv", [
    ["labels", "import", QRELS, "--source-kind", "human", "--source-name", ""],
    ["labels", "import", QRELS, "--source-kind", "human", "--source-name", " "],
])
def test_labels_import_refuses_an_empty_source_name(argv, tmp_path, capsys):
    target = tmp_path / "new.sqlite"
    _refused([*argv, "--store", str(target)], capsys, "--source-name")
    assert not target.exists()


def test_sample_refuses_an_empty_name(store, capsys):
    before = store.read_bytes()
    _refused(["sample", *RUNS, "--store", str(store), "--name", "", "--budget", "10"], capsys,
             "--name")
    assert store.read_bytes() == before


def test_labels_copy_refuses_a_store_onto_itself(store, capsys, monkeypatch):
    before = store.read_bytes()
    line = _refused(["labels", "copy", str(store), str(store)], capsys, "same store")
    assert str(store) in line
    monkeypatch.chdir(store.parent)
    _refused(["labels", "copy", store.name, str(store)], capsys, "same store")
    assert store.read_bytes() == before


def test_report_refuses_an_out_file_that_is_not_html(tmp_path, capsys):
    _refused(["report", QRELS, *RUNS, "--out", str(tmp_path / "r.pdf")], capsys, "r.pdf",
             ".html")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("extra, flag", [
    (["--queries", str(EXAMPLE / "queries.tsv")], "--passages"),
    (["--passages", str(EXAMPLE / "passages.jsonl")], "--queries"),
    (["--model", "gpt-4o-mini"], "--queries"),
])
def test_pool_refuses_estimate_flags_that_would_be_ignored(extra, flag, tmp_path, capsys):
    _refused(["pool", *RUNS, "--out", str(tmp_path / "p.txt"), *extra], capsys, flag)
    assert not list(tmp_path.iterdir())


def test_audit_says_a_missing_judges_dir_does_not_exist(tmp_path, capsys):
    _refused(["audit", "--reference", QRELS, "--judges-dir", str(tmp_path / "nodir")], capsys,
             "nodir", "no such folder")


def test_estimate_takes_one_measure_as_a_string(tmp_path):
    from tests.helpers import estimate_world, grade_sample

    _, store_path, truth, runs = estimate_world(tmp_path)
    assert main(["sample", "--store", str(store_path), "--judge", "judge-a", "--name", "q8",
                 "--design", "srs-queries", "--query-count", "8", "--seed", "1"]) == 0
    grade_sample(store_path, truth, "q8")
    run_objs = reljudge.read_runs([str(r) for r in runs])
    with reljudge.LabelStore(store_path) as s:
        one = reljudge.estimate(s, run_objs, "DCG@10")
        listed = reljudge.estimate(s, run_objs, ["DCG@10"])
    assert one is not None and listed is not None
    assert repr(one) == repr(listed)


def test_draw_sample_takes_a_pool():
    runs = reljudge.read_runs(RUNS)
    pool = reljudge.build_pool(runs, 10)
    sample = reljudge.draw_sample(pool, "srs-pairs", 10, 0)
    assert sample.pairs() == reljudge.draw_sample(pool.pairs, "srs-pairs", 10, 0).pairs()


def test_draw_sample_names_what_it_expected():
    with pytest.raises(reljudge.errors.InputError, match="pairs"):
        reljudge.draw_sample(42, "srs-pairs", 10, 0)


def test_label_store_repr_names_path_and_backend(store):
    with reljudge.LabelStore(store, create=False, readonly=True) as s:
        text = repr(s)
    assert text == f"LabelStore({str(store)!r}, backend='sqlite')"


def test_merged_repr_is_short(store):
    with reljudge.LabelStore(store, create=False, readonly=True) as s:
        merged = s.merge()
    text = repr(merged)
    assert len(text) < 200 and "48 labels" in text and "chunk_" not in text, text


def test_derived_repr_is_short():
    import numpy as np

    from reljudge.infer.derive import Derived

    pairs = [(f"q{i}", f"d{i}") for i in range(500)]
    d = Derived("cal", "calibrate", pairs, np.full((500, 4), 0.25), None, {})
    text = repr(d)
    assert len(text) < 200 and "500 pairs" in text and "q499" not in text, text


@pytest.mark.parametrize("n, text", [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"),
                                     (11, "11th"), (12, "12th"), (13, "13th"), (21, "21st"),
                                     (22, "22nd"), (101, "101st"), (111, "111th")])
def test_ordinals(n, text):
    from reljudge.tables import ordinal

    assert ordinal(n) == text


def test_copy_names_the_first_differing_event_with_a_right_ordinal(store, tmp_path, capsys):
    other = tmp_path / "other.sqlite"
    shutil.copy(store, other)
    assert main(["labels", "import", QRELS, "--store", str(other), "--source-kind", "human",
                 "--source-name", "second"]) == 0
    fresh = tmp_path / "fresh.sqlite"
    assert main(["labels", "import", RUNS[0].replace("runs/bm25.run", "human.qrels"),
                 "--store", str(fresh), "--source-kind", "llm", "--source-name", "x"]) == 0
    _refused(["labels", "copy", str(other), str(fresh)], capsys, "the 1st of")


def _label(server, tmp_path: Path, *extra: str) -> list[str]:
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("hr01 chunk_01\nhr01 chunk_02\nhr02 chunk_06\n")
    return ["label", "--queries", str(EXAMPLE / "queries.tsv"), "--passages",
            str(EXAMPLE / "passages.jsonl"), "--pairs", str(pairs), "--model", "fake-judge",
            "--base-url", server.base_url, "--cache-dir", str(tmp_path / "cache"), "--quiet",
            *extra]


def test_label_without_a_store_says_where_the_grades_went(tmp_path, capsys):
    from reljudge.testing import FakeOpenAI, hash_grader

    with FakeOpenAI(hash_grader) as server:
        assert main(_label(server, tmp_path)) == 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(tmp_path / "cache") in err[0], err
        assert "--store" in err[0] and "--qrels-out" in err[0], err
        # with somewhere to keep them, nothing is said
        assert main(_label(server, tmp_path, "--qrels-out", str(tmp_path / "j.qrels"))) == 0
        assert capsys.readouterr().err == ""


def test_a_labelling_warning_is_printed_once_on_stderr(tmp_path, capsys):
    """Warnings are told on stderr as they happen; the summary on stdout does not repeat
    them (the 'labelled by another process' one was printed on both)."""
    import json

    from reljudge.testing import FakeOpenAI, hash_grader

    store = str(tmp_path / "s.sqlite")
    edited = tmp_path / "passages.jsonl"
    edited.write_text("".join(
        json.dumps({**r, "text": r["text"] + " (edited)"}) + "\n" if r["docid"] == "chunk_01"
        else json.dumps(r) + "\n"
        for r in map(json.loads, (EXAMPLE / "passages.jsonl").read_text().splitlines())))
    with FakeOpenAI(hash_grader) as server:
        assert main(_label(server, tmp_path, "--store", store)) == 0
        capsys.readouterr()
        argv = _label(server, tmp_path, "--store", store, "--stale", "keep")
        argv[argv.index("--passages") + 1] = str(edited)
        assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "warning:" in err and "stale" in err, err
    assert "warning:" not in out, out


def test_stats_does_not_list_a_killed_local_process_as_labelling(tmp_path, capsys):
    """A claim of a process of this machine that was killed (kill -9: it never released its
    claims) is not 'being labelled now'; one of another machine is, until its lease ends."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    path = tmp_path / "s.sqlite"
    items = [("q1", f"d{i}", 0) for i in range(4)]
    with reljudge.LabelStore(path) as s:
        s.claim("judge", f"{socket.gethostname()}:{proc.pid}:cafe0000", items[:3], lease=60,
                since=time.time())
        s.claim("judge", "another-host:123:beef0000", items[3:], lease=60, since=time.time())
    assert main(["labels", "stats", "--store", str(path)]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if "being labelled now" in x]
    assert lines == ["being labelled now: 1 pair(s) x repeats of judge claimed by "
                     "another-host:123:beef0000"], lines


def test_audit_refuses_a_judge_sharing_no_pair_with_the_reference(tmp_path, capsys):
    other = tmp_path / "other.qrels"
    other.write_text("".join(f"x{line}\n" for line in Path(QRELS).read_text().splitlines()))
    line = _refused(["audit", "--reference", QRELS, "--judge", str(other)], capsys,
                    "other", "no pair in common", "human.qrels")
    assert capsys.readouterr().out == ""
    assert "48" in line
