"""trec_eval 10's inputs: comment lines and text after a run's tag are skipped as trec_eval
skips them, or refused with ``strict`` (``eval --strict``), naming the line. Every test runs
on the Python reader and on the Arrow fast path."""

from __future__ import annotations

import random

import pytest

from reljudge import InputError
from reljudge.cli import main
from reljudge.io.trec import read_qrels, read_run
from tests.helpers import write

QRELS = "q1 0 d1 1\nq1 0 CR#93E-1860 2\nq2 0 d1 0\nq2 0 d3 3\n"
RUN = ("q1 Q0 d1 1 2.5 sys\nq1 Q0 CR#93E-1860 2 1.5 sys\nq2 Q0 d3 1 0.5 sys\n"
       "q2 Q0 d1 2 0.25 sys\n")


pytestmark = pytest.mark.usefixtures("both_readers")  # every test: both readers


def test_qrels_comment_lines_are_skipped_and_a_hash_inside_an_id_is_data(tmp_path):
    clean = read_qrels(write(tmp_path, "clean.qrels", QRELS))
    assert "CR#93E-1860" in clean.to_dict()["q1"]
    # "# x y 1" has a qrels line's four fields: still a comment, on every path
    commented = "# comment here\n" + QRELS.replace("q2 0 d1 0\n", "# x y 1\nq2 0 d1 0\n")
    assert read_qrels(write(tmp_path, "c.qrels", commented)) == clean
    # a comment shaped exactly like a data line, and nothing else irregular: the fast paths
    # must not take it for a query "#q0"
    shaped = QRELS.replace("q2 0 d1 0\n", "#q0 0 d0 1\nq2 0 d1 0\n")
    assert read_qrels(write(tmp_path, "s.qrels", shaped)) == clean


def test_a_run_comment_shaped_like_a_run_line_is_a_comment(tmp_path):
    clean = read_run(write(tmp_path, "clean.run", RUN)).to_dict()
    shaped = "#q0 Q0 d0 1 1.0 sys\n" + RUN
    assert read_run(write(tmp_path, "s.run", shaped)).to_dict() == clean


def test_run_comments_and_text_after_the_tag_are_skipped(tmp_path):
    clean = read_run(write(tmp_path, "clean.run", RUN))
    lines = RUN.splitlines(keepends=True)
    messy = ("# a b c d e\n" + lines[0].replace("sys\n", "sys more junk at\n") + "   # indented\n"
             + "".join(lines[1:3]) + lines[3].replace("sys\n", "sys\tend of line\n"))
    got = read_run(write(tmp_path, "messy.run", messy))
    assert got.to_dict() == clean.to_dict() and got.name == clean.name == "sys"


def test_strict_reading_refuses_comments_and_trailing_text_naming_the_line(tmp_path):
    p = write(tmp_path, "c.qrels", QRELS + "# the end\n")
    with pytest.raises(InputError, match=r"c\.qrels:5: a comment line .*'# the end'"):
        read_qrels(p, strict=True)
    lines = RUN.splitlines(keepends=True)
    r = write(tmp_path, "t.run", "".join(lines[:2]) + lines[2].replace("sys", "sys extra"))
    with pytest.raises(InputError, match=r"t\.run:3: expected .* found 7 fields .*after the tag"):
        read_run(r, strict=True)
    r2 = write(tmp_path, "c.run", "  # note\n" + RUN)
    with pytest.raises(InputError, match=r"c\.run:1: a comment line"):
        read_run(r2, strict=True)


def test_a_file_of_comments_only_is_an_error_not_an_empty_evaluation(tmp_path):
    with pytest.raises(InputError, match=r"x\.qrels: no data lines, only comments"):
        read_qrels(write(tmp_path, "x.qrels", "# one\n# two\n"))


def test_error_line_numbers_count_comment_lines(tmp_path):
    text = "# header\nq1 0 d1 1\n# again\nq1 0 d1 2\n"
    with pytest.raises(InputError, match=r"d\.qrels:4: duplicate judgment .*first on line 2"):
        read_qrels(write(tmp_path, "d.qrels", text))


def test_random_comments_and_tails_never_change_what_is_read(tmp_path):
    """Two readings, one answer: any scattering of comment lines (and run tails) reads as the
    clean file, on both paths."""
    rng = random.Random(7)
    qrels_lines = [f"q{q} 0 d{d} {rng.randint(0, 3)}\n" for q in range(5) for d in range(20)]
    run_lines = [f"q{q} Q0 d{d} {d + 1} {rng.random():.6f} tag\n" for q in range(5)
                 for d in range(20)]
    clean_q = read_qrels(write(tmp_path, "c.qrels", "".join(qrels_lines)))
    clean_r = read_run(write(tmp_path, "c.run", "".join(run_lines))).to_dict()
    for trial in range(20):
        q_out, r_out = [], []
        for line in qrels_lines:
            if rng.random() < 0.2:
                q_out.append(rng.choice(["#\n", "# a b 3\n", "#q0 0 d0 1\n"]))
            q_out.append(line)
        for line in run_lines:
            if rng.random() < 0.2:
                r_out.append(rng.choice(["#\n", " # q0 Q0 d0 1 1.0 tag\n", "\t#x\n"]))
            r_out.append(line if rng.random() < 0.8 else line.replace("tag\n", "tag tail 1\n"))
        assert read_qrels(write(tmp_path, f"{trial}.qrels", "".join(q_out))) == clean_q
        assert read_run(write(tmp_path, f"{trial}.run", "".join(r_out))).to_dict() == clean_r


def test_eval_reads_what_trec_eval_reads_and_strict_exits_2(tmp_path, capsys):
    q = write(tmp_path, "c.qrels", "# judged by NIST\n" + QRELS)
    r = write(tmp_path, "r.run", RUN.replace("sys\n", "sys junk\n"))
    assert main(["eval", str(q), str(r), "-m", "P@2", "--format", "json"]) == 0
    capsys.readouterr()
    assert main(["eval", "--strict", str(q), str(r), "-m", "P@2"]) == 2
    assert "c.qrels:1: a comment line" in capsys.readouterr().err
