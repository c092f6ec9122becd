"""Every command against a matrix of bad inputs: one line on stderr naming the file (and line),
exit 2, no traceback, and no file created, changed or emptied; or exactly the clean scores."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reljudge.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "hr-handbook"

# Which file each command reads in each slot (the others stay clean).
COMMANDS = {
    "eval": (lambda p: ["eval", p["qrels"], p["run"], p["run2"]], ("qrels", "run")),
    "compare": (lambda p: ["compare", p["qrels"], p["run"], p["run2"], "--trials", "50"],
                ("qrels", "run", "run2")),
    "pool": (lambda p: ["pool", p["run"], p["run2"], "--out", p["new"]], ("run",)),
    "label": (lambda p: ["label", "--queries", p["queries"], "--passages", p["passages"],
                         "--runs", p["run"], "--store", p["newstore"]],
              ("queries", "passages", "run")),
    "label --pairs": (lambda p: ["label", "--queries", p["queries"], "--passages",
                                 p["passages"], "--pairs", p["pairs"], "--store", p["newstore"]],
                      ("pairs",)),
    "labels import": (lambda p: ["labels", "import", p["judge"], p["csv"], p["jsonl"],
                                 "--store", p["newstore"], "--source-kind", "llm"],
                      ("judge", "csv", "jsonl")),
    "labels stats --pool": (lambda p: ["labels", "stats", "--store", p["store"], "--pool",
                                       p["pairs"]], ("pairs",)),
    "audit --judges-dir": (lambda p: ["audit", "--reference", p["qrels"], "--judges-dir",
                                      p["judges"]], ("dirjudge",)),
    "run": (lambda p: ["run", p["config"]], ("queries", "passages", "run", "run2", "qrels")),
    "audit": (lambda p: ["audit", "--reference", p["qrels"], "--judge", p["judge"], "--runs",
                         p["run"], p["run2"]], ("qrels", "judge", "run")),
    "report": (lambda p: ["report", p["qrels"], p["run"], p["run2"], "--reference", p["qrels"],
                          "--judge", p["judge"], "--out", p["new"]], ("qrels", "run", "judge")),
}
KIND = {"qrels": "qrels", "judge": "qrels", "run": "run", "run2": "run", "queries": "tsv",
        "passages": "jsonl", "pairs": "pairs", "csv": "csv", "jsonl": "labels",
        "dirjudge": "qrels"}


def _corrupt_line(text: str, how) -> str:
    """The text with its third line changed by ``how``."""
    lines = text.splitlines(keepends=True)
    lines[2] = how(lines[2])
    return "".join(lines)


# name -> (kind -> new content (str or bytes), or None where it does not apply; line expected)
ALL_KINDS = ("qrels", "run", "tsv", "jsonl", "pairs", "csv", "labels")
CONTENT_CASES = {
    "empty": ({k: "" for k in ALL_KINDS}, None),
    "binary": ({k: b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\x00" for k in ALL_KINDS}, 1),
    "nul byte": ({k: (lambda t: _corrupt_line(t, lambda s: s.replace(" ", "\0 ", 1)))
                  for k in ("qrels", "run", "pairs")}, 3),
    "duplicate line": ({k: (lambda t: _corrupt_line(t, lambda s: t.splitlines(True)[1]))
                        for k in ALL_KINDS}, 3),
    "wrong field count": ({"qrels": lambda t: _corrupt_line(t, lambda s: s.split(" ", 1)[1]),
                           "run": lambda t: _corrupt_line(t, lambda s: s.split(" ", 1)[1]),
                           "pairs": lambda t: _corrupt_line(t, lambda s: s.strip() + " 1 2 3\n"),
                           "tsv": lambda t: _corrupt_line(t, lambda s: s.replace("\t", " ")),
                           "jsonl": lambda t: _corrupt_line(t, lambda s: s[:20] + "\n"),
                           "labels": lambda t: _corrupt_line(t, lambda s: s[:12] + "\n"),
                           "csv": lambda t: _corrupt_line(t, lambda s: s.split(",", 1)[1])}, 3),
    "non-numeric value": ({"qrels": lambda t: _corrupt_line(t, lambda s: s.rsplit(" ", 1)[0]
                                                            + " high\n"),
                           "run": lambda t: _corrupt_line(
                               t, lambda s: " ".join(s.split()[:4] + ["n/a", "x"]) + "\n"),
                           "csv": lambda t: _corrupt_line(t, lambda s: s.rsplit(",", 1)[0]
                                                          + ",high\n"),
                           "labels": lambda t: _corrupt_line(t, lambda s: s.replace(
                               '"grade": ', '"grade": "x', 1).replace("}", '"}'))}, 3),
}
PATH_CASES = ("missing", "directory")


def snapshot(root: Path) -> dict:
    """Every file and folder under root with its mode and bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_mode, None if p.is_dir() else p.read_bytes())
    return out


@pytest.fixture(scope="module")
def clean_inputs(tmp_path_factory) -> Path:
    """The clean inputs and a store of the human labels, made once (each test gets a copy)."""
    tmp_path = tmp_path_factory.mktemp("clean")
    shutil.copy(EXAMPLE / "human.qrels", tmp_path / "q.qrels")
    shutil.copy(EXAMPLE / "runs" / "bm25.run", tmp_path / "a.run")
    shutil.copy(EXAMPLE / "runs" / "trigram.run", tmp_path / "b.run")
    shutil.copy(EXAMPLE / "queries.tsv", tmp_path / "queries.tsv")
    shutil.copy(EXAMPLE / "passages.jsonl", tmp_path / "passages.jsonl")
    judged = [f"{q} 0 {d} {max(0, int(g) - (i % 2))}\n" for i, (q, _, d, g) in
              enumerate(line.split() for line in (tmp_path / "q.qrels").read_text().splitlines())]
    (tmp_path / "judge.qrels").write_text("".join(judged))
    rows = [line.split() for line in judged]
    (tmp_path / "judge.csv").write_text("qid,docid,grade\n" + "".join(
        f"{q},{d},{g}\n" for q, _, d, g in rows))
    (tmp_path / "judge.jsonl").write_text("".join(
        json.dumps({"qid": q, "docid": d, "grade": int(g)}) + "\n" for q, _, d, g in rows))
    (tmp_path / "pairs.txt").write_text("".join(f"{q} {d}\n" for q, _, d, _ in rows[:40]))
    (tmp_path / "judges").mkdir()
    shutil.copy(tmp_path / "judge.qrels", tmp_path / "judges" / "dj.qrels")
    (tmp_path / "pipeline.toml").write_text(GOOD_CONFIG)
    assert main(["labels", "import", str(tmp_path / "q.qrels"), "--store",
                 str(tmp_path / "s.sqlite"), "--source-kind", "human", "--json"]) == 0
    return tmp_path


@pytest.fixture
def ws(clean_inputs, tmp_path, monkeypatch):
    """A folder of clean inputs, and their paths by slot."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(var, raising=False)
    shutil.copytree(clean_inputs, tmp_path, dirs_exist_ok=True)
    paths = {"qrels": "q.qrels", "run": "a.run", "run2": "b.run", "queries": "queries.tsv",
             "passages": "passages.jsonl", "judge": "judge.qrels", "new": "new.html",
             "newstore": "new.sqlite", "csv": "judge.csv", "jsonl": "judge.jsonl",
             "pairs": "pairs.txt", "store": "s.sqlite", "judges": "judges",
             "dirjudge": "judges/dj.qrels", "config": "pipeline.toml"}
    return tmp_path, {k: str(tmp_path / v) for k, v in paths.items()}


def run_cli(argv, capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, needle: str, line: int | None = None) -> None:
    """Exactly one stderr line, reljudge's, naming the file (and the line)."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("reljudge: error: "), err
    assert "Traceback" not in err
    assert needle in lines[0], (needle, err)
    if line is not None:
        assert f"{needle}:{line}:" in lines[0], (line, err)


def _matrix():
    """Every (command, slot, case). The first command to meet a (kind of file, case) is in the
    fast set; the same case on the other commands' slots of that kind is marked slow."""
    seen = set()
    for cmd, (_, slots) in COMMANDS.items():
        for slot in slots:
            cases = [*PATH_CASES, *(case for case, (by_kind, _) in CONTENT_CASES.items()
                                    if KIND[slot] in by_kind)]
            for case in cases:
                repeat = (KIND[slot], case) in seen
                seen.add((KIND[slot], case))
                yield pytest.param(cmd, slot, case, id=f"{cmd}-{slot}-{case}",
                                   marks=[pytest.mark.slow] if repeat else [])


@pytest.mark.parametrize(("cmd", "slot", "case"), list(_matrix()))
def test_bad_input_is_one_line_exit_2_and_nothing_written(ws, capsys, cmd, slot, case):
    root, paths = ws
    target = Path(paths[slot])
    line = None
    if case == "missing":
        target.unlink()
    elif case == "directory":
        target.unlink()
        target.mkdir()
    else:
        by_kind, line = CONTENT_CASES[case]
        new = by_kind[KIND[slot]]
        if callable(new):
            new = new(target.read_text())
        target.write_bytes(new if isinstance(new, bytes) else new.encode())
    capsys.readouterr()
    before = snapshot(root)
    code, _, err = run_cli(COMMANDS[cmd][0](paths), capsys)
    assert code == 2, err
    folder_emptied = slot == "dirjudge" and case == "missing"
    assert_one_line_error(err, target.parent.name if folder_emptied else target.name, line)
    assert snapshot(root) == before


# --- inputs that must give exactly the scores of the clean file (the io front door) ---------

def _bom(data: bytes) -> bytes:
    return b"\xef\xbb\xbf" + data


def _crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def _gzip_large(data: bytes, suffix: str) -> bytes:
    """A compressed file of more than 1 MB whose first lines are the clean file's."""
    lines = data.decode().splitlines()
    pad = []
    for i in range(60_000):  # extra queries with no qrels: ignored by the default rule
        pad.append(f"zz{i} Q0 d{i} 1 1.0 pad\n" if suffix == ".run" else f"zz{i} 0 d{i} 0\n")
    text = "\n".join(lines) + "\n" + "".join(pad)
    return gzip.compress(text.encode(), compresslevel=0)


SAME_SCORES = [
    pytest.param("bom", lambda d, s: _bom(d), "", id="bom"),
    pytest.param("crlf", lambda d, s: _crlf(d), "", id="crlf"),
    pytest.param("gzip small", lambda d, s: gzip.compress(d), ".gz", id="gzip-small"),
    pytest.param("gzip large", _gzip_large, ".gz", id="gzip-large"),
]


@pytest.mark.parametrize("slot", ["qrels", "run"])
@pytest.mark.parametrize(("case", "make", "ext"), SAME_SCORES)
def test_encoded_inputs_score_exactly_as_the_clean_file(ws, capsys, slot, case, make, ext):
    root, paths = ws
    argv = ["eval", paths["qrels"], paths["run"], "--json", "-m", "nDCG@10", "-m", "AP"]
    code, out, _ = run_cli(argv, capsys)
    assert code == 0
    clean = json.loads(out)
    src = Path(paths[slot])
    encoded = src.with_name(src.name + ext)
    encoded.write_bytes(make(src.read_bytes(), src.suffix))
    if ext:
        src.unlink()
    paths = {**paths, slot: str(encoded)}
    code, out, err = run_cli(["eval", paths["qrels"], paths["run"], "--json", "-m", "nDCG@10",
                              "-m", "AP"], capsys)
    assert code == 0, err
    got = json.loads(out)
    assert got["runs"]["bm25"]["mean"] == clean["runs"]["bm25"]["mean"]
    assert got["runs"]["bm25"]["queries"] == clean["runs"]["bm25"]["queries"]


# --- same-tag runs ---------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", ["eval", "compare", "report"])
def test_runs_with_one_tag_are_named_by_file_in_every_command(ws, capsys, cmd):
    root, paths = ws
    shutil.copy(paths["run"], root / "a-copy.run")  # same tag: bm25
    runs = [paths["run"], str(root / "a-copy.run")]
    argv = {"eval": ["eval", paths["qrels"], *runs, "--json"],
            "compare": ["compare", paths["qrels"], *runs, "--json", "--trials", "50"],
            "report": ["report", paths["qrels"], *runs, "--out", str(root / "r.html")]}[cmd]
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    if cmd == "report":
        page = (root / "r.html").read_text()
        assert "a.run" in page and "a-copy.run" in page
    else:
        assert set(json.loads(out)["runs"]) == {"a.run", "a-copy.run"}


# --- stores that do not exist ------------------------------------------------------------------

READ_ONLY_STORE = {
    "labels stats": lambda p, s: ["labels", "stats", "--store", s],
    "labels conflicts": lambda p, s: ["labels", "conflicts", "--store", s],
    "labels export": lambda p, s: ["labels", "export", "--store", s, "--source", "x", "--out",
                                   p["qrels"]],
    "labels merge": lambda p, s: ["labels", "merge", "--store", s, "--out", p["qrels"]],
    "pool": lambda p, s: ["pool", p["run"], "--store", s],
    "audit": lambda p, s: ["audit", "--store", s, "--reference-source", "a", "--judge-source",
                           "b"],
    "report": lambda p, s: ["report", p["qrels"], p["run"], "--store", s, "--out", p["new"]],
}


@pytest.mark.parametrize("cmd", list(READ_ONLY_STORE))
def test_a_mistyped_store_is_refused_and_not_created(ws, capsys, cmd):
    root, paths = ws
    before = snapshot(root)
    code, _, err = run_cli(READ_ONLY_STORE[cmd](paths, str(root / "lables.sqlite")), capsys)
    assert code == 2
    assert_one_line_error(err, "lables.sqlite: no such label store")
    assert snapshot(root) == before


def test_merge_of_a_store_without_labels_does_not_empty_an_existing_file(ws, capsys):
    root, paths = ws
    empty = root / "other.qrels"
    empty.write_text("")
    assert run_cli(["labels", "import", str(paths["qrels"]), "--store", str(root / "s.sqlite"),
                    "--source-kind", "human"], capsys)[0] == 0
    before = snapshot(root)
    code, _, err = run_cli(["labels", "merge", "--store", str(root / "s.sqlite"), "--policy",
                            "llm-only", "--out", paths["qrels"]], capsys)
    assert code == 2
    assert_one_line_error(err, "s.sqlite: no labels under llm-only")
    assert snapshot(root) == before


# --- flag and value mistakes -----------------------------------------------------------------

MISTAKES = {
    "measure twice": (lambda p: ["eval", p["qrels"], p["run"], "-m", "nDCG@10", "-m",
                                 "nDCG@10"], "measure nDCG@10 given twice"),
    "compare measure twice": (lambda p: ["compare", p["qrels"], p["run"], p["run2"], "-m", "AP",
                                         "-m", "AP"], "measure AP given twice"),
    "depth 0": (lambda p: ["pool", p["run"], "--depth", "0"], "at least 1, not 0"),
    "label depth 0": (lambda p: ["label", "--queries", p["queries"], "--passages",
                                 p["passages"], "--runs", p["run"], "--depth", "0"],
                      "at least 1, not 0"),
    "pool --out a directory": (lambda p: ["pool", p["run"], "--out", p["dir"]],
                               "adir: is a directory"),
    "report --out a directory": (lambda p: ["report", p["qrels"], p["run"], "--out", p["dir"]],
                                 "adir: is a directory"),
    "run a directory": (lambda p: ["run", p["dir"]], "adir: is a directory"),
    "unknown baseline": (lambda p: ["compare", p["qrels"], p["run"], p["run2"], "--baseline",
                                    "nope"], "baseline 'nope' is not one of the runs"),
    "import without a kind": (lambda p: ["labels", "import", p["judge"], "--store",
                                         p["newstore"]], "needs --source-kind human or llm"),
    "judge without reference": (lambda p: ["report", p["qrels"], p["run"], "--judge",
                                           p["judge"], "--out", p["new"]],
                                "needs both --reference and at least one --judge"),
    "out-of-scale judge in report": (lambda p: ["report", p["qrels"], p["run"], "--reference",
                                                p["qrels"], "--judge", p["bigjudge"], "--out",
                                                p["new"]], "big.qrels:1: grade 5"),
    "negative digits": (lambda p: ["eval", p["qrels"], p["run"], "--digits", "-1"],
                        "argument --digits: expected 0 or more"),
    "zero trials": (lambda p: ["compare", p["qrels"], p["run"], p["run2"], "--trials", "0"],
                    "argument --trials: expected 1 or more, found 0"),
    "alpha out of range": (lambda p: ["compare", p["qrels"], p["run"], p["run2"], "--alpha",
                                      "5"], "alpha must be between 0 and 1"),
    "negative bootstrap": (lambda p: ["audit", "--reference", p["qrels"], "--judge", p["judge"],
                                      "--bootstrap", "-1"], "bootstrap resamples must be 0"),
    "label --qrels-out a directory": (lambda p: ["label", "--queries", p["queries"],
                                                 "--passages", p["passages"], "--runs",
                                                 p["run"], "--qrels-out", p["dir"]],
                                      "adir: is a directory"),
    "merge --provenance a directory": (lambda p: ["labels", "merge", "--store", p["store"],
                                                  "--out", p["new"], "--provenance", p["dir"]],
                                       "adir: is a directory"),
    "run without any qrels query": (lambda p: ["eval", p["qrels"], p["otherrun"]],
                                    "run other has no query that the qrels have"),
}


@pytest.mark.parametrize("name", list(MISTAKES))
def test_mistakes_are_one_line_exit_2_and_nothing_written(ws, capsys, name):
    root, paths = ws
    (root / "adir").mkdir()
    (root / "big.qrels").write_text("hr01 0 chunk_01 5\n")
    (root / "other.run").write_text("zz Q0 d 1 1.0 other\n")
    run_cli(["labels", "import", paths["qrels"], "--store", str(root / "s.sqlite"),
             "--source-kind", "human"], capsys)
    paths = {**paths, "dir": str(root / "adir"), "bigjudge": str(root / "big.qrels"),
             "otherrun": str(root / "other.run"), "store": str(root / "s.sqlite")}
    argv, needle = MISTAKES[name]
    before = snapshot(root)
    try:
        code, _, err = run_cli(argv(paths), capsys)
    except SystemExit as e:  # argparse's own checks exit from inside the parser
        code, err = e.code, capsys.readouterr().err
    assert code == 2, err
    assert_one_line_error(err, needle)
    assert snapshot(root) == before


def test_report_names_each_judge_and_clips_on_request(ws, capsys):
    root, paths = ws
    (root / "big.qrels").write_text(Path(paths["judge"]).read_text().replace(" 3\n", " 5\n", 1))
    argv = ["report", paths["qrels"], paths["run"], "--reference", paths["qrels"], "--judge",
            paths["judge"], "--judge", str(root / "big.qrels"), "--out", paths["new"]]
    assert run_cli(argv, capsys)[0] == 2
    assert not Path(paths["new"]).exists()
    code, _, err = run_cli([*argv, "--clip"], capsys)
    assert code == 0, err
    page = Path(paths["new"]).read_text()
    assert "<td>judge</td>" in page and "<td>big</td>" in page


# --- the pipeline config ---------------------------------------------------------------------

GOOD_CONFIG = """\
[inputs]
queries = "queries.tsv"
passages = "passages.jsonl"
runs = ["a.run", "b.run"]
human_qrels = "q.qrels"

[pool]
depth = 10

[eval]
measures = ["nDCG@10", "P@5"]

[output]
dir = "out"
"""

BAD_CONFIGS = {
    "string depth": (GOOD_CONFIG.replace("depth = 10", 'depth = "10"'), "[pool.depth]"),
    "zero depth": (GOOD_CONFIG.replace("depth = 10", "depth = 0"), "[pool.depth]"),
    "bad measure": (GOOD_CONFIG.replace('"P@5"', '"P@five"'), "P@five"),
    "measure twice": (GOOD_CONFIG.replace('"P@5"', '"nDCG@10"'), "given twice"),
    "unknown policy": (GOOD_CONFIG + '\n[merge]\npolicy = "humans-first"\n', "humans-first"),
    "unknown aggregate": (GOOD_CONFIG + '\n[merge]\naggregate = "mode"\n', "'mode'"),
    "missing input": (GOOD_CONFIG.replace("b.run", "c.run"), "c.run"),
    "input is a folder": (GOOD_CONFIG.replace('"b.run"', '"."'), "not found (or not files)"),
    "unknown key": (GOOD_CONFIG.replace("depth = 10", "depth = 10\ndepht = 5"), "depht"),
    "not TOML": ("[inputs\nqueries = 1\n", "not valid TOML"),
    "all_queries a string": (GOOD_CONFIG.replace('"P@5"]', '"P@5"]\nall_queries = "yes"'),
                             "all_queries"),
    "store is the run's qrels": (GOOD_CONFIG.replace('dir = "out"', 'dir = "out"\nstore = '
                                                     '"./out/qrels.txt"'),
                                 "is the run's own qrels.txt in [output] dir"),
    "store is an input": (GOOD_CONFIG.replace('dir = "out"', 'dir = "out"\nstore = "q.qrels"'),
                          "is also an input of the run"),
    "store in a missing folder": (GOOD_CONFIG.replace('dir = "out"', 'dir = "out"\nstore = '
                                                      '"nodir/labels.sqlite"'),
                                  "is in a folder that does not exist"),
}


@pytest.mark.parametrize("name", list(BAD_CONFIGS))
def test_a_bad_pipeline_config_is_refused_before_any_stage_writes(ws, capsys, name):
    root, _ = ws
    text, needle = BAD_CONFIGS[name]
    config = root / "pipeline.toml"
    config.write_text(text)
    before = snapshot(root)
    for argv in (["run", str(config)], ["report", "--pipeline", str(config)]):
        code, _, err = run_cli(argv, capsys)
        assert code == 2, err
        assert_one_line_error(err, "pipeline.toml")
        assert needle in err
    assert snapshot(root) == before


def test_the_good_config_runs(ws, capsys):
    root, _ = ws
    (root / "pipeline.toml").write_text(GOOD_CONFIG)
    code, out, err = run_cli(["run", str(root / "pipeline.toml"), "--quiet"], capsys)
    assert code == 0, err
    assert "[eval] queries: means over each run's queries that have qrels" in out
    from reljudge.pipeline.config import WRITTEN  # what the config check keeps apart

    made = {p.name for p in (root / "out").iterdir() if not p.name.startswith(".")}
    assert made - {"labels.sqlite", "labels.sqlite-wal", "labels.sqlite-shm"} <= set(WRITTEN)
    assert {"config.toml", "manifest.json", "qrels.txt", "scores.json"} <= made


# --- outputs: modes and atomic replacement ------------------------------------------------------

def test_outputs_honour_the_umask_and_keep_an_existing_mode(ws, capsys):
    root, paths = ws
    old = os.umask(0o022)
    try:
        out = root / "pairs.txt"
        assert run_cli(["pool", paths["run"], "--out", str(out)], capsys)[0] == 0
        assert out.stat().st_mode & 0o777 == 0o644
        out.chmod(0o640)
        assert run_cli(["pool", paths["run"], "--depth", "3", "--out", str(out)], capsys)[0] == 0
        assert out.stat().st_mode & 0o777 == 0o640
        os.umask(0o077)
        new = root / "r.html"
        assert run_cli(["report", paths["qrels"], paths["run"], "--out", str(new)], capsys)[0] == 0
        assert new.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


def test_pool_does_not_empty_a_pairs_file_unless_asked(ws, capsys):
    root, paths = ws
    store = root / "s.sqlite"
    out = root / "pairs.txt"
    out.write_text("hr01 chunk_99\n")
    run_cli(["labels", "import", paths["qrels"], "--store", str(store), "--source-kind",
             "human"], capsys)
    # label everything in the pool so nothing is left to label
    pool = root / "all.txt"
    assert run_cli(["pool", paths["run"], "--depth", "1", "--out", str(pool)], capsys)[0] == 0
    pairs = [line.split() for line in pool.read_text().splitlines()]
    extra = root / "extra.qrels"
    extra.write_text("".join(f"{q} 0 {d} 0\n" for q, d in pairs))
    run_cli(["labels", "import", str(extra), "--store", str(store), "--source-kind", "llm"],
            capsys)
    before = snapshot(root)
    code, _, err = run_cli(["pool", paths["run"], "--depth", "1", "--store", str(store), "--out",
                            str(out)], capsys)
    assert code == 2
    assert_one_line_error(err, "pairs.txt: refusing to replace this non-empty file")
    assert {k: v for k, v in snapshot(root).items() if "sqlite" not in k} == \
        {k: v for k, v in before.items() if "sqlite" not in k}
    code, _, err = run_cli(["pool", paths["run"], "--depth", "1", "--store", str(store), "--out",
                            str(out), "--allow-empty"], capsys)
    assert code == 0, err
    assert out.read_text() == ""


# --- a few real processes ----------------------------------------------------------------------

@pytest.mark.parametrize("case", ["empty run", "same tag", "missing store"])
@pytest.mark.slow  # a real process per case (the matrix above runs the same in-process)
def test_real_processes_exit_2_with_one_line(ws, case):
    root, paths = ws
    if case == "empty run":
        Path(paths["run"]).write_text("")
        argv, needle, want = ["eval", paths["qrels"], paths["run"]], "a.run: empty file", 2
    elif case == "same tag":
        shutil.copy(paths["run"], root / "c.run")
        argv, needle, want = ["compare", paths["qrels"], paths["run"], str(root / "c.run"),
                              "--trials", "50"], "", 0
    else:
        argv, needle, want = ["labels", "stats", "--store", str(root / "x.sqlite")], \
            "x.sqlite: no such label store", 2
    before = snapshot(root)
    p = subprocess.run([sys.executable, "-m", "reljudge", *argv], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == want, p.stderr
    if want == 2:
        assert_one_line_error(p.stderr, needle)
    else:
        assert "a.run (baseline)" in p.stdout and "c.run" in p.stdout
    assert snapshot(root) == before


# --- outputs that are the store, another output or an input (issue "nothing lost") -----------
# The same file whatever its spelling: as given, ./name from its folder, a symbolic link, a
# hard link. One line, exit 2, and the store and every input byte for byte as they were.

SPELLINGS = ("as given", "dot slash", "symlink", "hard link")


def _spelled(root: Path, target: str, how: str, name: str) -> str:
    """``target`` (a file under root) spelled ``how``; links are made as ``name``."""
    if how == "as given":
        return target
    if how == "dot slash":
        return "./" + os.path.relpath(target, root)
    if how == "symlink":
        os.symlink(target, root / name)
    else:
        os.link(target, root / name)
    return str(root / name)


# command -> (argv given the paths and the output to write, the file it must not replace,
# words the one line says)
CLOBBER = {
    "labels merge --out": (lambda p, o: ["labels", "merge", "--store", p["store"], "--out", o],
                           "store", "is the label store"),
    "labels merge --provenance": (lambda p, o: ["labels", "merge", "--store", p["store"],
                                                "--out", p["new"], "--provenance", o],
                                  "store", "is the label store"),
    "labels export --out": (lambda p, o: ["labels", "export", "--store", p["store"],
                                          "--source", "q", "--out", o],
                            "store", "is the label store"),
    "labels merge two outputs": (lambda p, o: ["labels", "merge", "--store", p["store"],
                                               "--out", p["qrels"], "--provenance", o],
                                 "qrels", "are the same file"),
    "label --qrels-out the store": (lambda p, o: ["label", "--queries", p["queries"],
                                                  "--passages", p["passages"], "--pairs",
                                                  p["pairs"], "--store", p["store"],
                                                  "--qrels-out", o],
                                    "store", "is the label store"),
    "label --qrels-out an input": (lambda p, o: ["label", "--queries", p["queries"],
                                                 "--passages", p["passages"], "--pairs",
                                                 p["pairs"], "--qrels-out", o],
                                   "pairs", "is also an input of this command (--pairs"),
    "pool --out a run": (lambda p, o: ["pool", p["run"], p["run2"], "--out", o],
                         "run2", "is also an input of this command (RUN"),
    "pool --out the store": (lambda p, o: ["pool", p["run"], "--store", p["store"], "--out", o],
                             "store", "is the label store"),
    "sample --out the store": (lambda p, o: ["sample", "--store", p["store"], "--judge", "j",
                                             "--name", "s", "--out", o],
                               "store", "is the label store"),
    "calibrate --out the store": (lambda p, o: ["calibrate", "--store", p["store"],
                                                "--human-source", "q", "--judge-source", "j",
                                                "--out", o],
                                  "store", "is the label store"),
    "calibrate --out the reference": (lambda p, o: ["calibrate", "--reference", p["qrels"],
                                                    "--judge", p["judge"], "--output", o],
                                      "qrels", "is also an input of this command (--reference"),
    "report --out a run": (lambda p, o: ["report", p["qrels"], p["run"], "--out", o],
                           "run", "is also an input of this command (RUN"),
    "report --out the store": (lambda p, o: ["report", p["qrels"], p["run"], "--store",
                                             p["store"], "--out", o],
                               "store", "is the label store"),
}


@pytest.mark.parametrize("how", SPELLINGS)
@pytest.mark.parametrize("cmd", list(CLOBBER))
def test_an_output_that_is_the_store_another_output_or_an_input_is_refused(ws, capsys,
                                                                           monkeypatch, cmd,
                                                                           how):
    root, paths = ws
    monkeypatch.chdir(root)
    argv, slot, words = CLOBBER[cmd]
    name = "link.html" if cmd.startswith("report") else "link.out"
    if cmd.startswith("report") and how in ("as given", "dot slash"):
        how = "hard link"  # report writes .html only: an input is met through a link
    out = _spelled(root, paths[slot], how, name)
    before = snapshot(root)
    code, _, err = run_cli(argv(paths, out), capsys)
    assert code == 2, err
    assert_one_line_error(err, words)
    assert "nothing was written" in err
    assert snapshot(root) == before


@pytest.mark.parametrize("end", ["-wal", "-shm", "-journal"])
def test_an_output_that_is_a_file_sqlite_keeps_beside_the_store_is_refused(ws, capsys, end):
    root, paths = ws
    os.symlink(paths["store"], root / "link.sqlite")  # SQLite's files are beside the target
    before = snapshot(root)
    code, _, err = run_cli(["labels", "merge", "--store", str(root / "link.sqlite"), "--out",
                            paths["store"] + end], capsys)
    assert code == 2
    assert_one_line_error(err, "is the label store's SQLite file")
    assert snapshot(root) == before


def test_labels_copy_to_a_hard_link_of_its_source_is_refused(ws, capsys):
    root, paths = ws
    os.link(paths["store"], root / "again.sqlite")
    before = snapshot(root)
    code, _, err = run_cli(["labels", "copy", paths["store"], str(root / "again.sqlite")],
                           capsys)
    assert code == 2
    assert_one_line_error(err, "are the same store")
    assert snapshot(root) == before


def test_distinct_outputs_and_inputs_still_write(ws, capsys):
    root, paths = ws
    code, _, err = run_cli(["labels", "merge", "--store", paths["store"], "--out",
                            str(root / "final.qrels"), "--provenance",
                            str(root / "final.jsonl")], capsys)
    assert code == 0, err
    assert (root / "final.qrels").read_text() and (root / "final.jsonl").read_text()
