"""io.files.atomic_write: whole files only, the umask's mode, never an empty result over work."""

from __future__ import annotations

import os

import pytest

from reljudge.errors import InputError
from reljudge.io.files import atomic_write


@pytest.fixture
def umask():
    """Set a umask for one test and put the old one back."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_gets_the_mode_of_a_plain_open(tmp_path, umask, mask, mode):
    umask(mask)
    atomic_write(tmp_path / "new.txt", "x\n")
    with open(tmp_path / "plain.txt", "w") as f:
        f.write("x\n")
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == mode
    assert (tmp_path / "plain.txt").stat().st_mode & 0o777 == mode


def test_an_existing_file_keeps_its_mode(tmp_path, umask):
    umask(0o077)
    path = tmp_path / "shared.txt"
    path.write_text("old\n")
    path.chmod(0o644)
    atomic_write(path, "new\n")
    assert path.read_text() == "new\n" and path.stat().st_mode & 0o777 == 0o644


def test_empty_text_never_replaces_a_non_empty_file_unless_allowed(tmp_path):
    path = tmp_path / "final.qrels"
    path.write_text("q 0 d 1\n")
    with pytest.raises(InputError, match="final.qrels: refusing to replace"):
        atomic_write(path, "")
    assert path.read_text() == "q 0 d 1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["final.qrels"]  # no temporary left
    atomic_write(path, "", allow_empty=True)
    assert path.read_text() == ""
    atomic_write(tmp_path / "fresh.txt", "")  # nothing to lose: allowed
    atomic_write(path, "")  # an empty file replaced by an empty result: nothing lost
    assert (tmp_path / "fresh.txt").read_text() == ""


def test_a_directory_is_refused_and_left_alone(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(InputError, match="out: is a directory"):
        atomic_write(tmp_path / "out", "x")
    assert list((tmp_path / "out").iterdir()) == []
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
