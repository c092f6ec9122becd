"""A refused command writes nothing: every check of ``label`` runs before its first write, so a
refusal (exit 2) leaves the store byte-identical; a passage with an empty text is refused like
a missing one; ``--store`` naming a folder, or a file in a folder that is not there, is one
line naming it (a store never creates folders)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from reljudge.cli import main
from reljudge.errors import StoreError
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI, Reply

N = 4


def answer(req) -> Reply:
    return Reply.text("reasoning\n##final score: 2")


def write_inputs(tmp_path: Path, passages: str | None = None) -> list[str]:
    """The files of a label run over N pairs (``passages``: the passages file's text)."""
    (tmp_path / "q.tsv").write_text("q0\tquery 0\nq1\tquery 1\n")
    (tmp_path / "p.tsv").write_text(passages if passages is not None else "".join(
        f"d{i}\tpassage {i}\n" for i in range(N)))
    (tmp_path / "pairs.txt").write_text("".join(f"q{i % 2} d{i}\n" for i in range(N)))
    return ["label", "--queries", str(tmp_path / "q.tsv"), "--passages", str(tmp_path / "p.tsv"),
            "--pairs", str(tmp_path / "pairs.txt"), "--model", "m", "--quiet",
            "--cache-dir", str(tmp_path / "cache"), "--store", str(tmp_path / "s.sqlite"),
            "--max-attempts", "1"]


def store_bytes(tmp_path: Path) -> str:
    """A digest of the store's file and its companions (-wal, -shm), byte for byte."""
    h = hashlib.sha256()
    for p in sorted(tmp_path.glob("s.sqlite*")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def one_error(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("reljudge: error: "), err
    return lines[0]


REFUSED = {  # passages file text -> what the one line says
    "a passage without text": ("".join(f"d{i}\tpassage {i}\n" for i in range(N - 1)),
                               "1 passage id(s) without text (e.g. ['d3'])"),
    "a passage with an empty text": ("".join(f"d{i}\tpassage {i}\n" for i in range(N - 1))
                                     + "d3\t\n", "1 passage id(s) with an empty text "
                                                 "(e.g. ['d3'])"),
    "a blank passage in JSONL": ("".join(f'{{"docid": "d{i}", "text": "{"passage " * (i > 0)}'
                                         f'{i if i else " "}"}}\n' for i in range(N))
                                 .replace('"d0", "text": " "', '"d0", "text": "  "'),
                                 "1 passage id(s) with an empty text (e.g. ['d0'])"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_refused_label_run_leaves_the_store_byte_identical(tmp_path, capsys, case):
    text, needle = REFUSED[case]
    with FakeOpenAI(answer) as server:
        assert main([*write_inputs(tmp_path), "--base-url", server.base_url]) == 0
        before, calls = store_bytes(tmp_path), server.calls
        argv = write_inputs(tmp_path, text)
        if case == "a blank passage in JSONL":
            jsonl = tmp_path / "p.jsonl"
            jsonl.write_text(text)
            argv[argv.index("--passages") + 1] = str(jsonl)
        capsys.readouterr()
        code = main([*argv, "--base-url", server.base_url])
        assert server.calls == calls  # nothing was sent
    line = one_error(capsys.readouterr().err)
    assert code == 2 and needle in line and "--passages" in line and "p." in line, line
    assert store_bytes(tmp_path) == before


def test_stale_fail_refuses_before_it_replaces_the_edited_text(tmp_path, capsys):
    with FakeOpenAI(answer) as server:
        assert main([*write_inputs(tmp_path), "--base-url", server.base_url]) == 0
        before, calls = store_bytes(tmp_path), server.calls
        edited = "".join(f"d{i}\tpassage {i}{' revised' if i == 1 else ''}\n" for i in range(N))
        capsys.readouterr()
        code = main([*write_inputs(tmp_path, edited), "--base-url", server.base_url,
                     "--stale", "fail"])
        assert server.calls == calls
    line = one_error(capsys.readouterr().err)
    assert code == 2 and "(e.g. q1 d1)" in line
    assert store_bytes(tmp_path) == before
    with LabelStore(tmp_path / "s.sqlite", create=False) as s:
        assert s.passage_texts(["d1"]) == {"d1": "passage 1"}
        assert s.text_history("passage", "d1") == []


def test_an_unenforceable_budget_is_refused_before_the_texts_are_written(tmp_path, capsys):
    with FakeOpenAI(answer) as server:
        assert main([*write_inputs(tmp_path), "--base-url", server.base_url]) == 0
        before = store_bytes(tmp_path)
        edited = "".join(f"d{i}\tpassage {i} revised\n" for i in range(N))
        capsys.readouterr()
        code = main([*write_inputs(tmp_path, edited), "--base-url", server.base_url,
                     "--max-total-cost", "1"])
    line = one_error(capsys.readouterr().err)
    assert code == 2 and "no price is known for model 'm'" in line
    assert store_bytes(tmp_path) == before


def test_a_refused_first_run_leaves_no_store(tmp_path, capsys):
    argv = write_inputs(tmp_path, "d0\tpassage 0\n")
    assert main([*argv, "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "3 passage id(s) without text" in one_error(capsys.readouterr().err)
    assert not list(tmp_path.glob("s.sqlite*"))


def test_the_library_refuses_an_empty_passage_text_too():
    from reljudge.errors import InputError
    from reljudge.judge.planning import check_inputs

    with pytest.raises(InputError, match=r"2 passage id\(s\) with an empty text \(e.g. "
                                         r"\['a', 'b'\]\)"):
        check_inputs([("q", "a"), ("q", "b"), ("q", "c")], {"q": "query"},
                     {"a": "", "b": {"text": " \n", "title": "T"}, "c": "fine"})
    with pytest.raises(InputError, match=r"1 query id\(s\) with an empty text"):
        check_inputs([("q", "c")], {"q": " "}, {"c": "fine"})


# --- --store naming a folder, or a file in a missing folder ----------------------------------

STORE_WRITERS = {
    "label": lambda tmp, s: [*write_inputs(tmp)[:-4], "--store", s, "--dry-run"],
    "labels import": lambda tmp, s: ["labels", "import", str(write_qrels(tmp)), "--store", s,
                                     "--source-kind", "human"],
    "labels stats": lambda tmp, s: ["labels", "stats", "--store", s],
}


def write_qrels(tmp_path: Path) -> Path:
    (tmp_path / "h.qrels").write_text("q0 0 d0 2\nq1 0 d1 0\n")
    return tmp_path / "h.qrels"


@pytest.mark.parametrize("cmd", list(STORE_WRITERS))
def test_store_a_folder_is_one_line_naming_a_file_to_give(tmp_path, capsys, cmd):
    folder = tmp_path / "stores"
    folder.mkdir()
    assert main(STORE_WRITERS[cmd](tmp_path, str(folder))) == 2
    line = one_error(capsys.readouterr().err)
    assert f"--store {folder} is a folder; give a file path such as " \
           f"{folder / 'labels.sqlite'}" in line
    assert list(folder.iterdir()) == []


def test_labels_copy_into_a_folder_is_one_line(tmp_path, capsys):
    assert main(["labels", "import", str(write_qrels(tmp_path)), "--store",
                 str(tmp_path / "s.sqlite"), "--source-kind", "human"]) == 0
    (tmp_path / "backup").mkdir()
    capsys.readouterr()
    assert main(["labels", "copy", str(tmp_path / "s.sqlite"), str(tmp_path / "backup")]) == 2
    line = one_error(capsys.readouterr().err)
    assert f"DST {tmp_path / 'backup'} is a folder; give a file path such as " \
           f"{tmp_path / 'backup' / 'labels.sqlite'}" in line
    assert list((tmp_path / "backup").iterdir()) == []


@pytest.mark.parametrize("cmd", ["label", "labels import"])
def test_a_store_in_a_missing_folder_is_refused_not_made(tmp_path, capsys, cmd):
    store = tmp_path / "nodir" / "x.sqlite"
    assert main(STORE_WRITERS[cmd](tmp_path, str(store))) == 2
    line = one_error(capsys.readouterr().err)
    assert f"--store {store} is in a folder that does not exist ({tmp_path / 'nodir'}); " \
           "create it first" in line
    assert not (tmp_path / "nodir").exists()


def test_label_store_never_creates_folders(tmp_path):
    with pytest.raises(StoreError, match=r"x.sqlite is in a folder that does not exist "
                                         r"\(\S+nodir\); create it first"):
        LabelStore(tmp_path / "nodir" / "x.sqlite")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(StoreError, match=r"stores is a folder; give a file path such as "):
        (tmp_path / "stores").mkdir()
        LabelStore(tmp_path / "stores")
