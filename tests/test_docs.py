"""The docs cannot rot: every command in README.md and the examples' READMEs is executed.

Rules: every line of a ```bash block runs in order, from a scratch folder holding a copy of
``examples/`` (so paths read as they do from the repository root), with the LLM endpoint
pointed at the local scripted server; ```python blocks run there too. ``export NAME=VALUE``
sets a variable for the lines after it (``$NAME`` is expanded); a block that exports a
``postgresql://`` store runs against the PostgreSQL server the tests start, its URL in place
of the documented one. The two fresh-machine
commands are not re-installed here: the test command must be exactly what ``.ci/run`` runs,
and the install-and-demo command's ``reljudge demo`` runs like any other command.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reljudge.testing import FakeOpenAI
from tests.helpers import grader

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "examples").glob("*/README.md"))]
INSTALL = re.compile(r"^python3 -m venv \.venv && \. \.venv/bin/activate && pip install -e "
                     r"(\S+) && (.+)$")


def blocks(path: Path, lang: str) -> list[str]:
    """The contents of the fenced blocks of one language."""
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(), flags=re.S)


def commands(block: str) -> list[str]:
    """The block's commands, continuation lines joined, comments dropped."""
    text = block.replace("\\\n", " ")
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_readme_has_the_two_fresh_machine_commands_and_ci_runs_the_second():
    first, second = (INSTALL.match(c) for c in commands(blocks(ROOT / "README.md", "bash")[0])
                     + commands(blocks(ROOT / "README.md", "bash")[1]))
    assert first and first.group(2) == "reljudge demo"
    assert second and second.group(1) == "'.[test]'"
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands(blocks(ROOT / "README.md", "bash")[1])[0] in ci.splitlines()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A folder with a copy of the examples, like the repository root."""
    folder = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "examples", folder / "examples",
                    ignore=shutil.ignore_patterns("out"))
    return folder


def run_line(line: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """Run one documented command the way a shell would (env prefixes, globs)."""
    m = INSTALL.match(line)
    if m:
        line = m.group(2)
    words = [re.sub(r"\$(\w+)", lambda v: env[v.group(1)], w) for w in shlex.split(line)]
    env = dict(env)
    while words and re.match(r"^[A-Z_]+=", words[0]):
        key, value = words.pop(0).split("=", 1)
        if key not in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
            env[key] = value
    if words[:1] == ["python"] and words[1:3] == ["-m", "pytest"]:
        pytest.skip("the test suite does not run itself")
    assert words[0] == "reljudge", f"documented command is not a reljudge command: {line}"
    args = []
    for w in words[1:]:
        args += sorted(glob.glob(str(cwd / w))) if "*" in w else [w]
    args = [str(Path(a).relative_to(cwd)) if a.startswith(str(cwd)) else a for a in args]
    return subprocess.run([sys.executable, "-m", "reljudge", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def run_block(doc: Path, block: str, cwd: Path, env: dict, store_url: str | None = None) -> int:
    """Run one ```bash block's lines in order; how many ran. ``store_url``: the URL an
    exported ``postgresql://`` RELJUDGE_STORE stands for."""
    ran = 0
    for line in commands(block):
        if line.endswith("python -m pytest -q"):
            continue  # the test suite itself (checked against .ci/run above)
        if line.startswith("export "):
            key, value = shlex.split(line[len("export "):])[0].split("=", 1)
            env[key] = store_url if value.startswith("postgresql://") else value
            continue
        proc = run_line(line, cwd, env)
        assert proc.returncode == 0, f"{doc.name}: {line}\n{proc.stderr[-3000:]}"
        assert "Traceback" not in proc.stderr
        ran += 1
    return ran


def needs_postgresql(block: str) -> bool:
    return re.search(r"^export \w+='?postgresql://", block, flags=re.M) is not None


def llm_env(server, tmp_path: Path) -> dict:
    return {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test",
            "OPENAI_MODEL": "fake-judge", "RELJUDGE_CACHE_DIR": str(tmp_path / "cache")}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.slow  # every documented command, as subprocesses
def test_every_documented_command_runs(doc, scratch, tmp_path):
    with FakeOpenAI(grader) as server:
        env = llm_env(server, tmp_path)
        ran = 0
        for block in blocks(doc, "bash"):
            if not needs_postgresql(block):  # (test_the_team_section_runs_on_postgresql)
                ran += run_block(doc, block, scratch, env)
        for block in blocks(doc, "python"):
            proc = subprocess.run([sys.executable, "-c", block], cwd=scratch, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, f"{doc.name}: python block\n{proc.stderr[-3000:]}"
            ran += 1
    assert ran > 0


def test_the_team_section_runs_on_postgresql(pg_server, tmp_path):
    pytest.importorskip("psycopg")
    team = [b for b in blocks(ROOT / "README.md", "bash") if needs_postgresql(b)]
    assert len(team) == 1 and "Working as a team" in ROOT.joinpath("README.md").read_text()
    shutil.copytree(ROOT / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("out"))
    url = pg_server.database("docs") + "?schema=hr_handbook"
    with FakeOpenAI(grader) as server:
        env = llm_env(server, tmp_path)
        assert run_block(ROOT / "README.md", team[0], tmp_path, env, url) == 5
        assert env["RELJUDGE_STORE"] == url
        labelled = server.calls
        assert labelled > 0
        again = run_line(commands(team[0])[2], tmp_path, env)  # another machine, same job
        assert again.returncode == 0 and server.calls == labelled  # nothing sent twice
    from reljudge.store import LabelStore

    with LabelStore(url, create=False) as team_store, \
            LabelStore(tmp_path / "team-backup.sqlite", create=False) as backup:
        assert team_store.count() == backup.count() > 0
        assert {s.kind for s in team_store.sources()} == {"human", "llm"}
        assert {s.kind for s in backup.sources()} == {"human", "llm"}
        merged = team_store.merge("human-first").labels
    assert len((tmp_path / "team.qrels").read_text().splitlines()) == len(merged) > 0


@pytest.mark.slow  # the demo (also run by the README's commands)
def test_demo_runs_offline_and_prints_scores_and_audit(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    proc = subprocess.run([sys.executable, "-m", "reljudge", "demo", "--out",
                           str(tmp_path / "demo"), "--examples", str(ROOT / "examples")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "nDCG@10" in out and "bm25" in out and "trigram" in out
    assert "Olz-gpt4o" in out and "kappa" in out and "ensemble-majority" in out
    assert "no LLM endpoint configured" in out and "OPENAI_API_KEY" in out
    assert (tmp_path / "demo" / "llmjudge-dl23" / "audit.md").exists()


def test_demo_refuses_to_wipe_a_folder_it_did_not_make(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    proc = subprocess.run([sys.executable, "-m", "reljudge", "demo", "--out",
                           str(tmp_path / "mine")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "was not made by `reljudge demo`" in proc.stderr
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "precious"


def test_each_guarantee_names_tests_that_exist():
    """The README's guarantees name the test modules that hold them; each one must exist."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## What reljudge guarantees", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`(test_\w+)`", section)
    assert len(named) >= 7
    assert [n for n in named if not (ROOT / "tests" / f"{n}.py").exists()] == []
