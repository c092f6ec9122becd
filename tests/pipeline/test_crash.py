"""A `reljudge run` killed (SIGKILL) at any instant after a config change leaves either the
previous complete output set with its own config, or a set every reader sees as incomplete
; a rerun then redoes what is stale and ends as an uninterrupted run."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reljudge.cli import main
from reljudge.testing import FakeOpenAI, Reply
from tests.helpers import EXAMPLE, grader

ARTEFACTS = ["config.toml", "pool.tsv", "qrels.txt", "qrels.provenance.jsonl", "scores.tsv",
             "scores.json", "audit.json", "audit.md"]

#: runs `reljudge ARGS` in a process that stops for good before (or after) the Nth write of
#: one output file, having first written the line "paused" to a pipe (file descriptor FD):
#: the test kills it there
PAUSING = """\
import os, sys, time
from pathlib import Path
import reljudge.io.files as files
import reljudge.io.trec, reljudge.pipeline.manifest, reljudge.pipeline.runner
import reljudge.pipeline.stages, reljudge.store.merge
from reljudge.cli import main

fd, when, name, nth = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
original, seen = files.atomic_write, []

def pausing(path, text, **kw):
    hit = Path(path).name == name and len(seen) + 1 == nth
    if Path(path).name == name:
        seen.append(path)
    if hit and when == "before":
        os.write(fd, b"paused\\n"); time.sleep(600)
    original(path, text, **kw)
    if hit and when == "after":
        os.write(fd, b"paused\\n"); time.sleep(600)

for module in list(sys.modules.values()):
    if getattr(module, "atomic_write", None) is original:
        module.atomic_write = pausing
sys.exit(main(sys.argv[5:]))
"""

slow = lambda req: Reply.text(grader(req).body["choices"][0]["message"]["content"],  # noqa
                              delay=0.03)


def judge_env(server: FakeOpenAI, cache: Path) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key",
            "OPENAI_MODEL": "fake-judge", "RELJUDGE_CACHE_DIR": str(cache)}


def in_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def set_depth(folder: Path, depth: int) -> Path:
    cfg = folder / "pipeline.toml"
    text = cfg.read_text()
    cfg.write_text(text.replace("depth = 10", f"depth = {depth}").replace(
        "depth = 3", f"depth = {depth}"))
    return cfg


def artefacts(out: Path) -> dict[str, str | None]:
    return {n: (out / n).read_text() if (out / n).exists() else None for n in ARTEFACTS}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """The example run to the end at depth 3 (the start of every case), and the same job run
    on, uninterrupted, at depth 10 (what every case must end as)."""
    root = tmp_path_factory.mktemp("crash")
    start, reference = root / "start", root / "reference"
    shutil.copytree(EXAMPLE, start, ignore=shutil.ignore_patterns("out"))
    # in this process: only the killed runs are about a process
    with FakeOpenAI(grader) as server, pytest.MonkeyPatch.context() as monkeypatch:
        in_env(monkeypatch, judge_env(server, root / "cache"))
        assert main(["run", str(set_depth(start, 3)), "--quiet"]) == 0
        shutil.copytree(start, reference)
        assert main(["run", str(set_depth(reference, 10)), "--quiet"]) == 0
    return start, reference


KILL_POINTS = [
    ("before the first write", ("before", "manifest.json", 1)),
    ("before the pool is written", ("before", "pool.tsv", 1)),
    ("while labelling", None),
    ("after the new qrels", ("after", "qrels.txt", 1)),
    ("after the scores, before the audit", ("before", "audit.json", 1)),
    ("after the audit, before the manifest says complete", ("after", "audit.md", 1)),
]


@pytest.mark.slow  # one SIGKILLed run, reports and a rerun per kill point
@pytest.mark.parametrize("point, pause", KILL_POINTS, ids=[p for p, _ in KILL_POINTS])
def test_sigkill_after_a_config_change_never_leaves_a_final_looking_mix(prepared, tmp_path,
                                                                        monkeypatch, capsys,
                                                                        point, pause):
    start, reference = prepared
    folder = tmp_path / "hr"
    shutil.copytree(start, folder)
    out = folder / "out"
    before = artefacts(out)
    cfg = set_depth(folder, 10)
    with FakeOpenAI(slow) as server:
        env = judge_env(server, tmp_path / "cache")
        spec = pause or ("never", "none", 0)
        said, tell = os.pipe()
        proc = subprocess.Popen([sys.executable, "-c", PAUSING, str(tell), spec[0], spec[1],
                                 str(spec[2]), "run", str(cfg), "--quiet"],
                                env={**os.environ, **env}, pass_fds=[tell],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(tell)
        with os.fdopen(said) as paused:  # a line once paused; the end if the process ended
            if pause:
                select.select([paused], [], [], 90)
            else:
                server.wait_for_calls(15, 90)
        assert proc.poll() is None, f"the run ended before {point}: {proc.stderr.read()}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if pause is None:
            assert server.calls < 100, "the label stage was not interrupted"

        # every reader: the report refuses, with or without --allow-partial (the readers and
        # the rerun run in this process: what the test is about is the killed one)
        in_env(monkeypatch, env)
        capsys.readouterr()
        page = tmp_path / "r.html"
        for extra in ([], ["--allow-partial"]):
            code = main(["report", "--pipeline", str(cfg), "--out", str(page), "--quiet",
                         *extra])
            told = capsys.readouterr()
            assert code == 3, f"{point}: {told.out}{told.err}"
            assert "run the pipeline again" in told.err and told.err.count("\n") == 1
            assert not page.exists()
        manifest = json.loads((out / "manifest.json").read_text())
        old = json.loads((start / "out" / "manifest.json").read_text())["config_digest"]
        new = json.loads((reference / "out" / "manifest.json").read_text())["config_digest"]
        if manifest["status"] == "finished":  # the previous set, whole, with its own config
            assert manifest["config_digest"] == old and artefacts(out) == before
        else:
            assert manifest["status"] == "in progress" and manifest["config_digest"] == new
        # scores.json says which config it rests on, and it is that config's
        scores = json.loads((out / "scores.json").read_text())
        assert scores["config_digest"] in (old, new)
        match = start if scores["config_digest"] == old else reference
        assert (out / "scores.json").read_text() == (match / "out" / "scores.json").read_text()

        # a rerun redoes what is stale and ends as the uninterrupted run
        assert main(["run", str(cfg), "--quiet"]) == 0, capsys.readouterr()
        assert artefacts(out) == artefacts(reference / "out")
        assert main(["report", "--pipeline", str(cfg), "--out", str(page), "--quiet"]) == 0
        assert page.exists()
