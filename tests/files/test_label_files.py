"""Label files: one reader for any format (``reljudge.io.label_files``) and one naming rule for
a set of them, shared by audit, calibrate, report and ``labels import``."""

from __future__ import annotations

import gzip
import json

import pytest

import reljudge
from reljudge.cli import main
from reljudge.errors import ConfigError, InputError
from reljudge.io.label_files import label_names, read_judge, read_judges
from reljudge.store import LabelStore


def write(path, grades, nq=3):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"q{i % nq} 0 d{i} {g}\n" for i, g in enumerate(grades)))
    return path


def test_label_names_keep_stems_and_add_the_fewest_folders_that_tell_clashes_apart():
    assert label_names(["j/a.qrels", "j/b.txt.gz", "c.csv"]) == ["a", "b", "c"]
    assert label_names(["a/x.qrels", "b/x.qrels.gz", "y.qrels"]) == ["a/x", "b/x", "y"]
    assert label_names(["r/a/x.qrels", "s/a/x.qrels", "b/x.qrels"]) == \
        ["r/a/x", "s/a/x", "b/x"]
    assert label_names(["/abs/a/x.qrels", "/abs/b/x.qrels"]) == ["a/x", "b/x"]
    # one folder, one stem, two formats: only the paths tell them apart
    assert label_names(["d/x.txt", "d/x.qrels"]) == ["d/x.txt", "d/x.qrels"]
    assert label_names(["irds:msmarco-passage/dev"]) == ["msmarco-passage/dev"]


def test_a_label_file_given_twice_is_a_config_error():
    with pytest.raises(ConfigError, match=r"a/x.qrels: given twice"):
        label_names(["a/x.qrels", "./a/x.qrels"])


def test_read_judges_keeps_every_file_of_a_shared_stem(tmp_path):
    a = write(tmp_path / "a" / "x.qrels", [0, 1, 2, 3])
    b = write(tmp_path / "b" / "x.qrels", [3, 3, 9, 3])
    judges, clipped = read_judges([a, b], clip=True)
    assert list(judges) == ["a/x", "b/x"] and clipped == {"a/x": 0, "b/x": 1}
    assert judges["a/x"].to_dict() == {"q0": {"d0": 0, "d3": 3}, "q1": {"d1": 1},
                                       "q2": {"d2": 2}}
    assert judges["b/x"].to_dict()["q2"] == {"d2": 3}


def test_bad_label_files_still_name_file_and_line(tmp_path):
    bad = write(tmp_path / "b" / "x.qrels", [0, 4])
    good = write(tmp_path / "a" / "x.qrels", [0, 1])
    with pytest.raises(InputError, match=r"b/x\.qrels:2: grade 4 is outside"):
        read_judges([good, bad])
    csv = tmp_path / "c.csv"
    csv.write_text("qid,docid,grade\nq1,d1,2\nq1,d2,two\n")
    with pytest.raises(InputError, match=r"c\.csv:3: expected an integer grade"):
        read_judge(csv)
    jsonl = tmp_path / "j.jsonl.gz"
    jsonl.write_bytes(gzip.compress(b'{"qid": "q1", "docid": "d1", "grade": 1}\n'
                                    b'{"qid": "q1", "docid": "d1", "grade": 2}\n'))
    with pytest.raises(InputError, match=r"j\.jsonl\.gz:2: duplicate label .* \(first on line 1\)"):
        read_judge(jsonl)


def test_the_front_door_reads_a_label_file_of_any_format(tmp_path):
    qrels = write(tmp_path / "h.qrels", [0, 1, 2])
    csv = tmp_path / "h.csv"
    csv.write_text("query_id,doc_id,relevance\nq0,d0,0\nq1,d1,1\nq2,d2,2\n")
    (a, _), (b, _) = reljudge.read_judge(qrels), reljudge.read_judge(csv)
    assert a.to_dict() == b.to_dict() == reljudge.read_qrels(qrels).to_dict()


def test_audit_of_two_judges_sharing_a_stem_prints_both(tmp_path, capsys):
    ref = write(tmp_path / "human.qrels", [0, 1, 2, 3, 0, 1])
    a = write(tmp_path / "a" / "x.qrels", [0, 1, 2, 3, 0, 1])
    b = write(tmp_path / "b" / "x.qrels", [3, 3, 3, 3, 3, 3])
    assert main(["audit", "--reference", str(ref), "--judge", str(a), "--judge", str(b),
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(j["name"], j["items"]["stats"]["exact"]) for j in data["judges"]] == \
        [("a/x", 1.0), ("b/x", pytest.approx(1 / 6))]
    assert main(["audit", "--reference", str(ref), "--judge", str(a), "--judge", str(b)]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [r.split()[0] for r in rows[2:4]] == ["a/x", "b/x"]


def test_calibrate_and_audit_name_the_same_files_alike(tmp_path, capsys):
    grades = [0, 1, 2, 3, 0, 1, 2, 3, 1, 2, 0, 0] * 4
    ref = write(tmp_path / "human.qrels", grades, nq=6)
    files = [write(tmp_path / d / "x.qrels", [min(g + k, 3) for g in grades], nq=6)
             for k, d in enumerate(("a", "b", "c"))]
    judges = [x for f in files for x in ("--judge", str(f))]
    assert main(["audit", "--reference", str(ref), *judges, "--no-ensembles", "--json"]) == 0
    audited = [j["name"] for j in json.loads(capsys.readouterr().out)["judges"]]
    assert main(["calibrate", "--reference", str(ref), *judges, "--panel", "p", "--folds",
                 "0", "--json"]) == 0
    fitted = json.loads(capsys.readouterr().out)["fitted_on"]["judge_sources"]
    assert audited == fitted == ["a/x", "b/x", "c/x"]


def test_labels_import_names_sources_by_the_same_rule(tmp_path, capsys):
    a = write(tmp_path / "a" / "x.qrels", [0, 1, 2])
    b = write(tmp_path / "b" / "x.qrels", [3, 2, 1])
    db = str(tmp_path / "labels.sqlite")
    assert main(["labels", "import", "--store", db, "--source-kind", "llm", str(a), str(b),
                 str(a), "--format", "json"]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["skipped"]) for r in reports] == \
        [("a/x", False), ("b/x", False), ("a/x", True)]
    with LabelStore(db, create=False, readonly=True) as store:
        assert store.qrels("b/x").to_dict() == {"q0": {"d0": 3}, "q1": {"d1": 2},
                                                "q2": {"d2": 1}}


def test_report_names_judges_sharing_a_stem_by_the_same_rule(tmp_path, capsys):
    grades = [0, 1, 2, 3, 0, 1]
    ref = write(tmp_path / "human.qrels", grades)
    a = write(tmp_path / "a" / "x.qrels", grades)
    b = write(tmp_path / "b" / "x.qrels", [3] * 6)
    run = tmp_path / "r.run"
    run.write_text("".join(f"q{i % 3} Q0 d{i} {i + 1} {10 - i} sys\n" for i in range(6)))
    out = tmp_path / "page.html"
    assert main(["report", str(ref), str(run), "--reference", str(ref), "--judge", str(a),
                 "--judge", str(b), "--out", str(out), "--quiet"]) == 0
    page = out.read_text()
    assert "<td>a/x</td>" in page and "<td>b/x</td>" in page  # not the paths given
