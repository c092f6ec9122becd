"""Messages that name what was expected and where, and leave nothing behind."""

from __future__ import annotations

import pytest

from reljudge import InputError
from reljudge.cli import main
from reljudge.io import read_pairs


@pytest.mark.parametrize(("argv", "want"), [
    (["eval", "q", "r", "--foo"],
     "reljudge: error: eval: unrecognized arguments: --foo (see reljudge eval --help)\n"),
    (["labels", "merge", "--store", "s", "--foo", "x"],
     "reljudge: error: labels merge: unrecognized arguments: --foo x "
     "(see reljudge labels merge --help)\n"),
    (["--foo"], "reljudge: error: unrecognized arguments: --foo (see reljudge --help)\n"),
    (["eval"], "reljudge: error: eval: the following arguments are required: qrels, RUN "
               "(see reljudge eval --help)\n"),
])
def test_an_argument_error_names_the_command_used_and_its_help(argv, want, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and capsys.readouterr().err == want


@pytest.mark.parametrize("line", ["hr01 chunk_01 extra stuff", "hr01 chunk_01 extra",
                                  "q 0 d grade"])
def test_a_pairs_line_that_is_no_known_form_names_the_forms_and_the_line(tmp_path, line):
    p = tmp_path / "pairs.txt"
    p.write_text("hr01 chunk_00\n" + line + "\n")
    with pytest.raises(InputError, match=r"pairs\.txt:2: expected 'QID DOCID', 'QID 0 DOCID' "
                                         r"or 'QID 0 DOCID GRADE'"):
        read_pairs(p)


def test_pairs_in_qrels_and_run_like_forms_still_read(tmp_path):
    p = tmp_path / "pairs.txt"
    p.write_text("q1 0 d1 2\nq1 Q0 d2\nq2 d3\nq2 1 d4 -1\n")
    assert read_pairs(p) == [("q1", "d1"), ("q1", "d2"), ("q2", "d3"), ("q2", "d4")]
