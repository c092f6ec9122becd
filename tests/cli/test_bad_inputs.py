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

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "hr-handbook"

# Which file each command reads in each slot (the others stay clean).
COMMANDS = {
    "eval": (lambda p: ["eval", p["qrels"], p["run"], p["run2"]], ("qrels", "run")),
    "compare": (lambda p: ["compare", p["qrels"], p["run"], p["run2"], "--trials", "50"],
                ("qrels", "run", "run2")),
    "pool": (lambda p: ["pool", p["run"], p["run2"], "--out", p["new"]], ("run",)),
    "label": (lambda p: ["label", "--queries", p["queries"], "--passages", p["passages"],
                         p["run"], "--store", p["newstore"]],
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
    "audit": (lambda p: ["audit", "--reference", p["qrels"], "--judge", p["judge"],
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
    "audit": lambda p, s: ["audit", "--store", s, "--human-source", "a", "--judge-source",
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
                                 p["passages"], p["run"], "--depth", "0"],
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
                                                 "--passages", p["passages"], p["run"],
                                                 "--qrels-out", p["dir"]],
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
    assert_refused(root, argv(paths), needle, capsys)


def assert_refused(root: Path, argv: list[str], needle: str, capsys) -> None:
    """The command exits 2 with one line naming ``needle``, and root is as it was."""
    before = snapshot(root)
    try:
        code, _, err = run_cli(argv, capsys)
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


# --- refusals before anything is written: flags and values that passed silently ------------

def _label(p, *flags):
    """`reljudge label` of the clean inputs against a port nothing listens on."""
    return ["label", "--queries", p["queries"], "--passages", p["passages"], p["run"],
            "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--store", p["newstore"],
            *flags]


REFUSALS = {
    "compare one run": (lambda p: ["compare", p["qrels"], p["run"]],
                        "compare needs two runs or more"),
    "compare --sample without --store": (lambda p: ["compare", p["qrels"], p["run"], p["run2"],
                                                    "--sample", "s1"], "give --store too"),
    "--json --format csv": (lambda p: ["eval", p["qrels"], p["run"], "--json", "--format",
                                       "csv"], "--json and --format csv: two output formats"),
    "--format csv --json": (lambda p: ["compare", p["qrels"], p["run"], p["run2"], "--format",
                                       "csv", "--json"], "two output formats"),
    "conflicts --min-diff -1": (lambda p: ["labels", "conflicts", "--store", p["store"],
                                           "--min-diff", "-1"], "--min-diff: expected 0 to 3"),
    "conflicts --min-diff nan": (lambda p: ["labels", "conflicts", "--store", p["store"],
                                            "--min-diff", "nan"], "--min-diff: expected 0 to 3"),
    "label --max-cost inf": (lambda p: _label(p, "--max-cost", "inf"),
                             "--max-cost: Input should be a finite number"),
    "label --timeout nan": (lambda p: _label(p, "--timeout", "nan"),
                            "--timeout: Input should be a finite number"),
    "label --wait without --batch": (lambda p: _label(p, "--wait"), "goes with --batch"),
    "label --max-tokens 100000000": (lambda p: _label(p, "--max-tokens", "100000000"),
                                     "--max-tokens: Input should be less than or equal to"),
    "audit --calibrate --sample beyond the human pairs": (
        lambda p: ["audit", "--reference", p["qrels"], "--judge", p["judge"], "--calibrate",
                   "--pair-count", "10000000"], "--pair-count 10000000: there are 48 human pairs"),
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_refusals_are_one_line_exit_2_and_nothing_written(ws, capsys, name):
    root, paths = ws
    argv, needle = REFUSALS[name]
    assert_refused(root, argv(paths), needle, capsys)


def test_a_run_file_after_a_flag_is_one_more_run_not_an_unrecognized_argument(ws, capsys):
    root, p = ws
    code, out, err = run_cli(_label(p, "--depth", "3", p["run2"], "--dry-run", "--json"),
                             capsys)
    assert code == 0, err
    both = json.loads(out)["items"]
    code, out, _ = run_cli(_label(p, p["run2"], "--depth", "3", "--dry-run", "--json"), capsys)
    assert code == 0 and json.loads(out)["items"] == both  # the same pool either way
    code, out, err = run_cli(["compare", p["qrels"], p["run"], "-m", "AP", p["run2"],
                              "--trials", "50", "--json"], capsys)
    assert code == 0, err
    assert len(json.loads(out)["runs"]) == 2


# --- a judge that cannot be used: refused before the pipeline or the demo writes -----------------

DEAD = "http://127.0.0.1:9/v1"  # nothing listens on port 9 (discard)


@pytest.mark.parametrize("argv", [
    pytest.param(lambda p: ["run", p["config"], "--model", "m", "--base-url", DEAD],
                 id="run, dead endpoint"),
    pytest.param(lambda p: ["demo", "--examples", str(EXAMPLE.parent), "--out-dir", p["demo"],
                            "--model", "m", "--base-url", DEAD], id="demo, dead endpoint"),
    pytest.param(lambda p: ["demo", "--examples", str(EXAMPLE.parent), "--out-dir", p["demo"],
                            "--model", "m"], id="demo --model without an endpoint"),
])
@pytest.mark.parametrize("before", ["none", "an earlier demo"])
def test_a_judge_that_cannot_be_used_is_refused_before_anything_is_written(ws, capsys, argv,
                                                                          before):
    root, paths = ws
    paths = {**paths, "demo": str(root / "demo")}
    if before != "none":  # an earlier demo's folder is left as it was, not emptied
        (root / "demo").mkdir()
        (root / "demo" / ".reljudge-demo").write_text("made by reljudge demo\n")
        (root / "demo" / "old.txt").write_text("kept\n")
    start = snapshot(root)
    code, out, err = run_cli(argv(paths), capsys)
    assert code == 2, err
    assert_one_line_error(err, "127.0.0.1:9" if "--base-url" in argv(paths) else "no endpoint")
    assert snapshot(root) == start  # no pool.tsv, store, manifest or emptied folder


@pytest.mark.slow  # two pipeline runs
def test_a_rerun_that_needs_no_call_runs_with_the_endpoint_down(ws, capsys):
    from reljudge.testing import FakeOpenAI, Reply

    root, paths = ws
    config = Path(paths["config"])
    config.write_text(config.read_text() + f'cache_dir = "{root / "cache"}"\n')
    with FakeOpenAI(lambda r: Reply.text("final score: 1")) as server:
        code, _, err = run_cli(["run", paths["config"], "--model", "m", "--base-url",
                                server.base_url, "--quiet"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["run", paths["config"], "--model", "m", "--base-url", DEAD,
                            "--quiet"], capsys)
    assert code == 0, err  # every answer is in the store: the endpoint is not needed
# --- one line, not a traceback: full disks, grades beyond 64 bits, bad seeds, read-only folders

@pytest.fixture
def tiny_disk(tmp_path):
    """``make(size)``: a folder on a tmpfs of that size (mounted as root; skipped where mount is
    refused), unmounted after the test."""
    mounted = []

    def make(size: str) -> Path:
        folder = tmp_path / f"disk{len(mounted)}"
        folder.mkdir()
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                           capture_output=True, text=True)
        if p.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
        mounted.append(folder)
        return folder

    yield make
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _reljudge(argv, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reljudge", *argv], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def _events(store: Path) -> int:
    import sqlite3

    with sqlite3.connect(store) as db:
        return db.execute("SELECT count(*) FROM events").fetchone()[0]


def _many_labels(path: Path, n: int = 20_000) -> Path:
    path.write_text("".join(f"q{i % 50} 0 d{i} {i % 4}\n" for i in range(n)))
    return path


@pytest.mark.parametrize(("size", "needle"), [
    ("16k", "s.sqlite: cannot create the label store: disk I/O error"),
    ("256k", "s.sqlite: cannot be written, the disk is full (nothing of this write was kept)")])
def test_labels_import_on_a_full_disk_is_one_line_and_keeps_nothing(ws, tiny_disk, capsys,
                                                                    size, needle):
    """A store that cannot even be made leaves no half-made file; one made whose import then
    fills the disk keeps not one of the import's labels (its transaction rolled back). Both
    say so in one line (not 'cannot rollback - no transaction is active')."""
    root, _ = ws
    disk = tiny_disk(size)
    code, _, err = run_cli(["labels", "import", str(_many_labels(root / "many.qrels")),
                            "--store", str(disk / "s.sqlite"), "--source-kind", "human"], capsys)
    assert code == 2
    assert_one_line_error(err, needle)
    if size == "16k":
        assert list(disk.iterdir()) == []
    else:
        assert _events(disk / "s.sqlite") == 0


@pytest.mark.slow  # a scripted LLM server and two labelling processes
@pytest.mark.parametrize("where", ["store", "cache"])
def test_label_on_a_full_disk_is_one_line(ws, tiny_disk, where):
    """``label`` whose store or answer cache is on a full disk stops with one line naming
    which, exit 2."""
    from reljudge.testing.fake_openai import FakeOpenAI, Reply

    root, paths = ws
    disk = tiny_disk("64k" if where == "store" else "300k")
    store = disk / "s.sqlite" if where == "store" else root / "new.sqlite"
    cache = disk / "cache" if where == "cache" else root / "cache"
    with FakeOpenAI(lambda req: Reply.text("final score: 2")) as server:
        p = _reljudge(["label", "--queries", paths["queries"], "--passages", paths["passages"],
                       paths["run"], "--depth", "20", "--store", str(store), "--cache-dir",
                       str(cache), "--model", "m", "--base-url", server.base_url, "--api-key",
                       "x", "--quiet"])
    assert p.returncode == 2, p.stderr
    needle = ("s.sqlite: cannot be written, the disk is full" if where == "store" else
              f"the answer cache {cache} cannot be")
    assert_one_line_error(p.stderr, needle)
    assert "disk is full" in p.stderr


@pytest.mark.parametrize("target", ["full tmpfs", "/dev/full"])
def test_eval_into_a_full_disk_is_one_line(ws, tiny_disk, target):
    """``eval > file`` on a full disk: one line, exit 2, no traceback nor 'Exception ignored'
    at exit."""
    _, paths = ws
    if target == "/dev/full":
        out = Path("/dev/full")
    else:
        disk = tiny_disk("8k")
        (disk / "filler").write_bytes(b"x" * 8192)
        out = disk / "scores.txt"
    with open(out, "w") as f:
        p = _reljudge(["eval", paths["qrels"], paths["run"], "-q", "--judged"], stdout=f)
    assert p.returncode == 2
    assert_one_line_error(p.stderr, "cannot write the output: No space left on device")


BEYOND_64_BITS = "99999999999999999999999"


@pytest.mark.parametrize("form", ["qrels", "csv", "jsonl"])
def test_a_grade_beyond_64_bits_is_named_with_its_line(ws, capsys, form):
    """eval (qrels) and labels import (qrels, CSV, JSONL): a grade no int64 holds is one
    line naming file and line (it was an OverflowError's traceback)."""
    root, paths = ws
    text = {"qrels": f"q1 0 a 1\nq1 0 b {BEYOND_64_BITS}\n",
            "csv": f"qid,docid,grade\nq1,a,1\nq1,b,{BEYOND_64_BITS}\n",
            "jsonl": '{"qid": "q1", "docid": "a", "grade": 1}\n'
                     f'{{"qid": "q1", "docid": "b", "grade": {BEYOND_64_BITS}}}\n'}[form]
    path = root / f"big.{form}"
    path.write_text(text)
    line = 3 if form == "csv" else 2
    if form == "qrels":
        code, _, err = run_cli(["eval", str(path), paths["run"]], capsys)
        assert code == 2
        assert_one_line_error(err, f"big.{form}", line)
    code, _, err = run_cli(["labels", "import", str(path), "--store", paths["newstore"],
                            "--source-kind", "human"], capsys)
    assert code == 2
    assert_one_line_error(err, f"big.{form}", line)
    assert f"grade {BEYOND_64_BITS} is beyond 64 bits" in err
    assert not Path(paths["newstore"]).exists()


def test_read_qrels_names_a_grade_beyond_64_bits(tmp_path):
    from reljudge.errors import InputError
    from reljudge.io.trec import read_qrels

    (tmp_path / "q.qrels").write_text(f"q1 0 a 1\n# c\nq1 0 b -{BEYOND_64_BITS}\n")
    with pytest.raises(InputError, match=r"q\.qrels:3: grade -9+ is beyond 64 bits"):
        read_qrels(tmp_path / "q.qrels")


@pytest.mark.parametrize("cmd", ["compare", "audit", "estimate", "sample", "calibrate",
                                 "labels stats"])
def test_a_negative_seed_is_refused_by_the_parser(cmd, capsys):
    """numpy's generators take no negative seed: each --seed says so in one line (compare
    --seed -1 was a ValueError's traceback)."""
    with pytest.raises(SystemExit) as exit_:
        main([*cmd.split(), "--seed", "-1"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --seed: expected 0 or more, found -1" in err
    assert "Traceback" not in err


def test_compare_refuses_a_negative_seed():
    from reljudge.errors import ConfigError
    from reljudge.stats import compare

    with pytest.raises(ConfigError, match="seed must be 0 or more, not -1"):
        compare({"q": {"a": 1}}, {"r": {"q": {"a": 1.0}}}, "P@1", seed=-1)


def test_run_with_a_read_only_config_folder_is_one_line(ws, tiny_disk, capsys):
    """The pipeline's output folder cannot be made beside a config on a read-only disk:
    one line naming it (it was mkdir's traceback)."""
    root, _ = ws
    disk = tiny_disk("4m")
    for name in ("pipeline.toml", "q.qrels", "a.run", "b.run", "queries.tsv",
                 "passages.jsonl"):
        shutil.copy(root / name, disk / name)
    p = subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True)
    if p.returncode:
        pytest.skip("cannot remount the tmpfs read-only")
    code, _, err = run_cli(["run", str(disk / "pipeline.toml")], capsys)
    assert code == 2, err
    assert_one_line_error(err, f"cannot be written: folder {disk} is read-only")


def test_read_runs_of_one_path_says_to_give_a_list(tmp_path):
    """A str is a sequence of one-letter paths: read_runs("a.run") said '/: is a
    directory'."""
    from reljudge.errors import InputError
    from reljudge.io.trec import read_runs

    (tmp_path / "a.run").write_text("q1 Q0 d 1 1.0 t\n")
    for one in (str(tmp_path / "a.run"), tmp_path / "a.run"):
        with pytest.raises(InputError, match="read_runs takes a list of paths, found one "
                                             "path .*a.run'; use read_run"):
            read_runs(one)  # type: ignore[arg-type]
    assert read_runs([tmp_path / "a.run"])[0].name == "t"


@pytest.mark.parametrize("call", ["evaluate", "evaluate_many", "Qrels.from_dict"])
def test_an_in_memory_grade_beyond_64_bits_is_an_input_error(call):
    """Dict qrels too: an InputError, not numpy's OverflowError."""
    import reljudge
    from reljudge.errors import InputError

    qrels = {"q": {"a": 10 ** 23, "b": 1}}
    with pytest.raises(InputError, match="qrels: a grade is beyond 64 bits"):
        if call == "evaluate":
            reljudge.evaluate(qrels, {"q": {"b": 1.0}}, "P@1")
        elif call == "evaluate_many":
            reljudge.evaluate_many(qrels, {"r": {"q": {"b": 1.0}}}, "P@1")
        else:
            reljudge.Qrels.from_dict(qrels)


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
                                                    "--judge", p["judge"], "--out", o],
                                      "qrels", "is also an input of this command (--reference"),
    "probe --out the store": (lambda p, o: ["probe", "--queries", p["queries"], "--passages",
                                            p["passages"], "--qrels", p["qrels"], "--store",
                                            p["store"], "--out", o],
                              "store", "is the label store"),
    "probe --out the known grades": (lambda p, o: ["probe", "--queries", p["queries"],
                                                   "--passages", p["passages"], "--qrels",
                                                   p["qrels"], "--out", o],
                                     "qrels", "is also an input of this command (--qrels"),
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
