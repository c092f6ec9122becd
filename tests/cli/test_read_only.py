"""Read-only places: an output in a folder that cannot be written, or below a file, is one line
naming the path and why, exit 2, nothing written; a read-only store is read by every command
that only reads (no -wal or -shm file made beside it), and refused in one line by a command
that writes.

Root ignores file modes, so as root the commands run in a user namespace of their own
(``unshare --user``), where they are an ordinary user for these files; without one the tests
that need a read-only folder are skipped, saying so."""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from reljudge.cli import main
from tests.session_support import CommandSession

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "hr-handbook"


@functools.cache
def unprivileged() -> tuple[str, ...]:
    """The prefix that runs a command without root's power to write read-only files: none
    for an ordinary user, ``unshare --user`` for root (skips when neither is possible)."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("unshare") and subprocess.run(["unshare", "--user", "true"],
                                                  capture_output=True).returncode == 0:
        return ("unshare", "--user")
    pytest.skip("running as root, which ignores file modes, and no user namespace "
                "(unshare --user) to run the commands as an ordinary user")


def command_env(cwd: Path) -> dict[str, str]:
    """The environment the commands run in: no endpoint, no store, a cache of their own."""
    env = {**os.environ, "RELJUDGE_CACHE_DIR": str(cwd / "cache")}
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "RELJUDGE_STORE"):
        env.pop(var, None)
    return env


def reljudge(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """``reljudge ARGV`` in its own process, as an ordinary user."""
    return subprocess.run([*unprivileged(), sys.executable, "-m", "reljudge", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=command_env(cwd))


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """One process of an ordinary user that runs the commands given to it in turn (what is
    tested is the files' modes, not the process: one command of each kind below still runs in
    a process of its own)."""
    with CommandSession(tmp_path_factory.mktemp("user") / "stderr", unprivileged()) as session:
        yield lambda *argv, cwd: session.reljudge(*argv, cwd=cwd, env=command_env(cwd))


def files(root: Path) -> dict[str, bytes | None]:
    """Every file and folder under root, with its bytes."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def one_line(p: subprocess.CompletedProcess, *needles: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("reljudge: error: "), p.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture
def world(tmp_path):
    """``in/``: the hr-handbook inputs and a store of its human labels and of a lenient
    judge's; ``ro/``: a folder nobody may write; ``w/``: one to write in."""
    inp = tmp_path / "in"
    inp.mkdir()
    for name in ("human.qrels", "queries.tsv", "passages.jsonl"):
        shutil.copy(EXAMPLE / name, inp / name)
    shutil.copy(EXAMPLE / "runs" / "bm25.run", inp / "bm25.run")
    judge = [line.split() for line in (inp / "human.qrels").read_text().splitlines()]
    (inp / "judge.qrels").write_text("".join(f"{q} 0 {d} {min(3, int(g) + 1)}\n"
                                             for q, _, d, g in judge))
    store = inp / "s.sqlite"
    assert main(["labels", "import", str(inp / "human.qrels"), "--store", str(store),
                 "--source-kind", "human", "--json"]) == 0
    assert main(["labels", "import", str(inp / "judge.qrels"), "--store", str(store),
                 "--source-kind", "llm", "--source-name", "judge", "--json"]) == 0
    (tmp_path / "ro").mkdir()
    (tmp_path / "w").mkdir()
    yield tmp_path
    for p in (tmp_path / "ro", tmp_path / "in"):  # pytest must be able to remove them
        p.chmod(0o755)


def read_only(path: Path) -> None:
    path.chmod(stat.S_IMODE(path.stat().st_mode) & 0o555)


# --- outputs --------------------------------------------------------------------------------

OUTPUTS = {
    "report --out": ["report", "in/human.qrels", "in/bm25.run", "--out", "ro/r.html"],
    "labels merge --out": ["labels", "merge", "--store", "in/s.sqlite", "--out", "ro/m.qrels"],
    "labels export --out": ["labels", "export", "--store", "in/s.sqlite", "--kind", "human",
                            "--out", "ro/h.qrels"],
    "pool --out": ["pool", "in/bm25.run", "--out", "ro/pairs.txt"],
    "demo --out-dir": ["demo", "--out-dir", "ro/demo", "--quiet"],
    "label --cache-dir": ["label", "--queries", "in/queries.tsv", "--passages",
                          "in/passages.jsonl", "in/bm25.run", "--model", "m", "--base-url",
                          "http://127.0.0.1:9/v1", "--cache-dir", "ro/cache", "--dry-run"],
}


@pytest.mark.slow  # an ordinary user's process
@pytest.mark.parametrize("cmd", list(OUTPUTS))
def test_an_output_in_a_read_only_folder_is_one_line_and_nothing_written(world, user, cmd):
    read_only(world / "ro")
    before = files(world)
    p = (reljudge if cmd == "report --out" else user)(*OUTPUTS[cmd], cwd=world)
    one_line(p, "ro/", "cannot be written: folder ro is read-only")
    assert files(world) == before


@pytest.mark.parametrize(("argv", "needle"), [
    (["demo", "--out-dir", "in/bm25.run", "--quiet"], "in/bm25.run: is a file, expected a folder"),
    (["report", "in/human.qrels", "in/bm25.run", "--out", "in/bm25.run/r.html"],
     "in/bm25.run/r.html: cannot be written: in/bm25.run is a file, expected a folder"),
    (["pool", "in/bm25.run", "--out", "in/bm25.run/sub/p.txt"],
     "in/bm25.run/sub/p.txt: cannot be written: in/bm25.run is a file, expected a folder"),
])
def test_an_output_below_a_file_is_one_line(world, capsys, monkeypatch, argv, needle):
    monkeypatch.chdir(world)
    before = files(world)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"reljudge: error: {needle}"]
    assert files(world) == before


def test_a_write_that_fails_is_one_line_not_a_traceback(tmp_path):
    from reljudge.errors import InputError
    from reljudge.io.files import atomic_write

    name = tmp_path / ("x" * 300)  # longer than a file name may be: the write itself fails
    with pytest.raises(InputError, match=r"x: cannot be written \(File name too long\)"):
        atomic_write(name, "text")
    assert list(tmp_path.iterdir()) == []


# --- a read-only store ------------------------------------------------------------------------

READERS = {
    "labels stats": ["labels", "stats", "--store", "ro/s.sqlite"],
    "labels sources": ["labels", "sources", "--store", "ro/s.sqlite"],
    "labels conflicts": ["labels", "conflicts", "--store", "ro/s.sqlite", "--limit", "3"],
    "labels export": ["labels", "export", "--store", "ro/s.sqlite", "--kind", "llm", "--out",
                      "w/llm.qrels"],
    "labels merge": ["labels", "merge", "--store", "ro/s.sqlite", "--out", "w/m.qrels"],
    "audit --store": ["audit", "--store", "ro/s.sqlite", "--human-source", "human",
                      "--judge-source", "judge"],
    "pool --store": ["pool", "in/bm25.run", "--store", "ro/s.sqlite", "--depth", "3"],
    "report --store": ["report", "in/human.qrels", "in/bm25.run", "--store", "ro/s.sqlite",
                       "--out", "w/r.html"],
    "label --dry-run": ["label", "--queries", "in/queries.tsv", "--passages",
                        "in/passages.jsonl", "in/bm25.run", "--model", "m", "--base-url",
                        "http://127.0.0.1:9/v1", "--store", "ro/s.sqlite", "--cache-dir",
                        "in/cache", "--dry-run"],
}
WRITERS = {
    "labels import": ["labels", "import", "in/judge.qrels", "--store", "ro/s.sqlite",
                      "--source-kind", "llm", "--source-name", "again"],
    "label": ["label", "--queries", "in/queries.tsv", "--passages", "in/passages.jsonl",
              "in/bm25.run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--store",
              "ro/s.sqlite", "--cache-dir", "w/cache"],
    "labels upgrade": ["labels", "upgrade", "--store", "ro/s.sqlite"],
}


@pytest.mark.slow  # an ordinary user's processes
@pytest.mark.parametrize("folder", ["read-only folder", "writable folder"])
def test_a_read_only_store_is_read_by_readers_and_refused_by_writers(world, user, folder,
                                                                   capsys, monkeypatch):
    monkeypatch.chdir(world)
    want = {}
    for cmd, argv in READERS.items():  # the same commands on the writable store: the answers
        assert main([a.replace("ro/s.sqlite", "in/s.sqlite") for a in argv]) == 0, cmd
        want[cmd] = capsys.readouterr().out, _written(world)
    shutil.copy(world / "in" / "s.sqlite", world / "ro" / "s.sqlite")
    read_only(world / "ro" / "s.sqlite")
    if folder == "read-only folder":
        read_only(world / "ro")
    store_files = files(world / "ro")
    for cmd, argv in READERS.items():  # the first reader and writer in a process of its own
        got = (reljudge if cmd == "labels stats" else user)(*argv, cwd=world)
        assert got.returncode == 0, (cmd, got.stderr)
        assert (got.stdout.replace("ro/s.sqlite", "in/s.sqlite"), _written(world)) == want[cmd]
        assert files(world / "ro") == store_files, cmd  # no -wal, no -shm, nothing changed
    for cmd, argv in WRITERS.items():
        one_line((reljudge if cmd == "labels import" else user)(*argv, cwd=world),
                 "store ro/s.sqlite is read-only")
        assert files(world / "ro") == store_files, cmd


def _written(world: Path) -> dict[str, bytes | None]:
    """What the commands wrote to ``w/`` (emptied for the next), the report's minute aside."""
    out = {k: v if v is None else re.sub(rb"\d{4}-\d\d-\d\d \d\d:\d\d", b"TIME", v)
           for k, v in files(world / "w").items()}
    for p in (world / "w").iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    return out
