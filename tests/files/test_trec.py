"""TREC qrels and run files: strict parsing with path:line errors, round trips."""

from __future__ import annotations

import pytest

from reljudge import InputError, Qrels, Run
from reljudge.cli import main
from reljudge.io.trec import read_qrels, read_run, write_qrels, write_run
from tests.helpers import write

pytestmark = pytest.mark.usefixtures("both_readers")  # every test: both readers


def test_qrels_round_trip(tmp_path):
    q = Qrels.from_dict({"q1": {"d1": 3, "d2": 0}, "q2": {"d9": -1}})
    write_qrels(q, tmp_path / "x.qrels")
    assert read_qrels(tmp_path / "x.qrels") == q


def test_run_round_trip_orders_by_score_then_docid_descending(tmp_path):
    r = Run.from_dict({"q1": {"a": 1.0, "b": 1.0, "c": 2.5}}, name="sys")
    write_run(r, tmp_path / "x.run")
    lines = (tmp_path / "x.run").read_text().splitlines()
    assert [ln.split()[2] for ln in lines] == ["c", "b", "a"]
    assert read_run(tmp_path / "x.run").to_dict() == r.to_dict()
    assert read_run(tmp_path / "x.run").name == "sys"


def test_blank_lines_are_skipped(tmp_path):
    p = write(tmp_path, "a.qrels", "q1 0 d1 1\n\n   \nq1 0 d2 2\n")
    assert read_qrels(p).to_dict() == {"q1": {"d1": 1, "d2": 2}}


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", 2, "found 3 field(s)"),
        ("q1 0 d1 1\nq1 0 d2 high\n", 2, "expected an integer grade, found 'high'"),
        ("q1 0 d1 1\nq1 0 d2 1.5\n", 2, "expected an integer grade, found '1.5'"),
        ("q1 0 d1 1\nq1 0 d2 1\nq1 0 d1 2\n", 3, "duplicate judgment"),
    ],
)
def test_bad_qrels_name_file_and_line(tmp_path, text, line, needle):
    p = write(tmp_path, "bad.qrels", text)
    with pytest.raises(InputError) as e:
        read_qrels(p)
    assert str(e.value).startswith(f"{p}:{line}: ")
    assert needle in str(e.value)


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 x t\n", 2, "expected a numeric score, found 'x'"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 two 1.0 t\n", 2, "expected an integer rank"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0\n", 2, "found 5 field(s)"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n", 2, "duplicate document 'd1'"),
        ("q1 Q0 d1 1 nan t\n", 1, "expected a numeric score"),
    ],
)
def test_bad_runs_name_file_and_line(tmp_path, text, line, needle):
    p = write(tmp_path, "bad.run", text)
    with pytest.raises(InputError) as e:
        read_run(p)
    assert str(e.value).startswith(f"{p}:{line}: ")
    assert needle in str(e.value)


def test_fast_path_catches_compensating_field_counts(tmp_path):
    # a 5-field line followed by a 7-field line has the right token total for the fast path
    text = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0\nq1 Q0 d3 3 0.5 t extra\n"
    p = write(tmp_path, "bad.run", text)
    with pytest.raises(InputError, match=r":2: expected 'QID Q0 DOCID RANK SCORE TAG'"):
        read_run(p)


def test_missing_file_and_non_utf8(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_qrels(tmp_path / "nope.qrels")
    p = tmp_path / "latin1.qrels"
    p.write_bytes(b"q1 0 d1 1\nq1 0 d\xe9 1\n")
    with pytest.raises(InputError, match=r"latin1.qrels:2: not valid UTF-8"):
        read_qrels(p)


def test_cli_without_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "reljudge" in capsys.readouterr().out


def test_chunked_fast_path_equals_line_by_line_parse(tmp_path, monkeypatch):
    import reljudge.io.trec as trec

    lines = [f"q{i % 7} Q0 d{i} {i} {i / 3!r} tag\n" for i in range(500)]
    p = write(tmp_path, "big.run", "".join(lines))
    whole = read_run(p)
    monkeypatch.setattr(trec, "_CHUNK", 97)  # many chunks, boundaries inside lines
    chunked = read_run(p)
    assert chunked.to_dict() == whole.to_dict() and chunked.name == "tag"
    bad = lines[:321] + ["q1 Q0 dx 1 oops tag\n"] + lines[321:]
    p2 = write(tmp_path, "bad.run", "".join(bad))
    with pytest.raises(InputError, match=r"bad.run:322: expected a numeric score"):
        read_run(p2)


def test_run_groups_put_split_queries_together_in_file_order():
    r = Run.from_arrays(["q1", "q2", "q1"], ["a", "b", "c"], [1.0, 2.0, 3.0])
    qids, bounds, docid, _ = r.groups()
    assert qids == ["q1", "q2"] and bounds.tolist() == [0, 2, 3]
    assert docid.tolist() == ["a", "c", "b"]
