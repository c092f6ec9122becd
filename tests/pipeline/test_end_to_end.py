"""The hr-handbook pipeline end to end against the local scripted OpenAI-compatible server."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from reljudge.cli import main
from reljudge.errors import ConfigError
from reljudge.pipeline import load_config
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI, Reply
from tests.helpers import EXAMPLE, grader

ARTEFACTS = ["qrels.txt", "qrels.provenance.jsonl", "scores.tsv", "scores.json", "audit.json",
             "audit.md", "pool.tsv"]
LATER = ["qrels.txt", "qrels.provenance.jsonl", "scores.tsv", "scores.json", "audit.json",
         "audit.md"]


@pytest.fixture
def example(tmp_path, monkeypatch):
    """A copy of the hr-handbook example with its own cache folder."""
    dest = tmp_path / "hr"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("out"))
    monkeypatch.setenv("RELJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    return dest


def env_for(server, tmp_path) -> dict:
    return {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key",
            "OPENAI_MODEL": "fake-judge", "RELJUDGE_CACHE_DIR": str(tmp_path / "cache")}


def read_artefacts(out: Path) -> dict[str, str]:
    return {name: (out / name).read_text() for name in ARTEFACTS}


@dataclass
class Finished:
    """The example run once to the end, uninterrupted, against a scripted judge that stays up
    for the module: tests read ``folder`` (never write it: a test that runs again copies it)."""

    folder: Path
    server: FakeOpenAI
    env: dict[str, str]
    calls: int
    printed: str
    artefacts: dict[str, str]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("finished")
    folder = root / "hr"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("out"))
    with FakeOpenAI(grader) as server:
        env = env_for(server, root)
        printed = io.StringIO()
        with pytest.MonkeyPatch.context() as monkeypatch, contextlib.redirect_stdout(printed):
            for k, v in env.items():  # for this run only: the module's other tests set theirs
                monkeypatch.setenv(k, v)
            assert main(["run", str(folder / "pipeline.toml"), "--quiet"]) == 0
        yield Finished(folder, server, env, server.calls, printed.getvalue(),
                       read_artefacts(folder / "out"))


def test_pipeline_end_to_end_then_a_rerun_is_free_and_identical(finished, tmp_path,
                                                                monkeypatch):
    first, first_calls, printed = finished.artefacts, finished.calls, finished.printed
    again = tmp_path / "hr"  # the rerun in a copy: the finished folder stays as it was
    shutil.copytree(finished.folder, again)
    for k, v in finished.env.items():
        monkeypatch.setenv(k, v)
    assert main(["run", str(again / "pipeline.toml"), "--quiet"]) == 0
    assert finished.server.calls == first_calls  # zero new LLM calls
    assert read_artefacts(again / "out") == first
    out = finished.folder / "out"
    assert read_artefacts(out) == first
    pool_pairs = len(first["pool.tsv"].splitlines()) - 1
    assert first_calls == pool_pairs  # every pooled pair graded once, human-labelled included
    assert "[audit] ran" in printed and "Kendall tau" in printed
    with LabelStore(out / "labels.sqlite") as store:
        llm = [s for s in store.sources() if s.kind == "llm"]
        assert len(llm) == 1 and llm[0].events == pool_pairs
    provenance = first["qrels.provenance.jsonl"]
    assert '"decided_by": "human"' in provenance and '"decided_by": "llm"' in provenance


@pytest.mark.parametrize("given, missing", [
    ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, "but no model"),
    ({"base_url_in_file": "http://127.0.0.1:9/v1"}, "but no model"),
    ({"OPENAI_MODEL": "gpt-4o-mini"}, "but no endpoint"),
])
def test_a_half_configured_judge_is_exit_2_before_any_work(example, monkeypatch, capsys,
                                                           given, missing):
    """A base URL without a model (or a model without an endpoint) skipped labelling and
    scored the pool from the human labels, exit 0 and 'complete'."""
    for var in ("OPENAI_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    cfg = example / "pipeline.toml"
    for var, value in given.items():
        if var == "base_url_in_file":
            cfg.write_text(cfg.read_text().replace("[judge]\n", f'[judge]\nbase_url = "{value}"\n'))
        else:
            monkeypatch.setenv(var, value)
    assert main(["run", str(cfg), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert missing in err and err.count("\n") == 1
    assert not (example / "out").exists()  # nothing written


def test_an_api_key_alone_names_no_endpoint_and_scores_from_the_human_labels(
        example, monkeypatch):
    for var in ("OPENAI_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")
    assert main(["run", str(example / "pipeline.toml"), "--quiet"]) == 0


def test_skipped_labelling_is_recorded_as_skipped_with_the_pairs_left_without_a_label(
        example, tmp_path, monkeypatch, capsys):
    """No judge configured: labelling is skipped, exit 0 (nothing was asked for), and the
    manifest, scores.json, scores.tsv, the run's lines and the report say so, with how many
    pooled pairs have no label; never "complete"."""
    for var in ("OPENAI_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    cfg, out = str(example / "pipeline.toml"), example / "out"
    assert main(["run", cfg, "--quiet"]) == 0
    printed = capsys.readouterr().out
    pooled = {tuple(line.split("\t")[:2])
              for line in (out / "pool.tsv").read_text().splitlines()[1:]}
    labelled = {tuple(line.split()[::2][:2]) for line in (out / "qrels.txt").read_text()
                .splitlines()}
    lacking = len(pooled - labelled)
    assert 0 < lacking < len(pooled)
    said = f"{lacking} of {len(pooled)} pooled pairs have no label; scored as not relevant"
    assert said in printed and "[label] skipped: no judge configured (set a model" in printed
    for record in (json.loads((out / "manifest.json").read_text()),
                   json.loads((out / "scores.json").read_text())):
        assert record["complete"] is False
        labelling = record["labelling"]
        assert labelling["skipped"].startswith("no judge configured")
        assert (labelling["pooled"], labelling["without_label"]) == (len(pooled), lacking)
    head = (out / "scores.tsv").read_text().splitlines()[0]
    assert head.startswith("# SKIPPED: labelling was skipped") and said in head
    page = tmp_path / "r.html"
    assert main(["report", "--pipeline", cfg, "--out", str(page), "--quiet"]) == 0
    html = page.read_text()
    assert "SKIPPED: labelling was skipped" in html and said in html
    assert "Best run on" in html  # the human labels are whole: the runs are ranked on them


def test_report_refuses_outputs_of_other_inputs_until_the_pipeline_runs_again(
        example, tmp_path, monkeypatch, capsys):
    """The outputs say which config and inputs they are of: a report of them after an input
    changed exits 3, one line, no page; a rerun makes them this pipeline's."""
    for var in ("OPENAI_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    cfg, page = str(example / "pipeline.toml"), tmp_path / "r.html"
    assert main(["run", cfg, "--quiet"]) == 0
    human = example / "human.qrels"
    human.write_text(human.read_text().replace("hr01 0 chunk_01 3", "hr01 0 chunk_01 0"))
    capsys.readouterr()
    assert main(["report", "--pipeline", cfg, "--out", str(page), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "of another config or other inputs" in err and err.count("\n") == 1
    assert not page.exists()
    assert main(["run", cfg, "--quiet"]) == 0
    assert main(["report", "--pipeline", cfg, "--out", str(page), "--quiet"]) == 0


@pytest.mark.slow  # a second incomplete pipeline (the allow-partial test stays fast)
def test_a_pipeline_whose_labelling_leaves_pairs_ungraded_exits_4(example, tmp_path,
                                                                 monkeypatch, capsys):
    def refuses_some(req):
        if "sabbatical" in req.user_text.lower():  # one passage gets a 400, the rest a grade
            return Reply.error(400, "context too long")
        return grader(req)

    with FakeOpenAI(refuses_some) as server:
        for k, v in env_for(server, tmp_path).items():
            monkeypatch.setenv(k, v)
        code = main(["run", str(example / "pipeline.toml"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 4, out
    assert "http_status" in out  # the summary names the failures by kind


def test_changing_one_setting_recomputes_only_what_depends_on_it(example, tmp_path, monkeypatch,
                                                                 capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    cfg = example / "pipeline.toml"
    assert main(["run", str(cfg)]) == 0
    capsys.readouterr()
    cfg.write_text(cfg.read_text().replace('"RR", "Judged@10"', '"RR", "AP", "Judged@10"'))
    assert main(["run", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "human-first/majority: 48 final labels {'human': 48} (up to date)" in out
    assert "[eval] scored" in out and "AP" in out


def test_bad_config_names_the_file_and_setting(tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text('[inputs]\nqueries = "q.tsv"\npassages = "p.jsonl"\nruns = []\n[pool]\ndepth = 0\n')
    with pytest.raises(ConfigError) as e:
        load_config(bad)
    assert str(bad) in str(e.value) and "[inputs.runs]" in str(e.value)
    assert "[pool.depth]" in str(e.value)
    bad.write_text("[inputs\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


@pytest.mark.slow  # SIGKILL, then a rerun
def test_sigkill_during_labelling_then_rerun_matches_an_uninterrupted_run(example, tmp_path,
                                                                          monkeypatch, finished):
    slow = lambda req: Reply.text(grader(req).body["choices"][0]["message"]["content"],  # noqa
                                  delay=0.05)
    with FakeOpenAI(slow) as server:
        env = env_for(server, tmp_path)
        cmd = [sys.executable, "-m", "reljudge", "run", str(example / "pipeline.toml"), "--quiet"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        server.wait_for_calls(40, 60)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert 40 <= server.calls < 150, "the label stage was not interrupted"
        # the rerun in this process: the killed run is the process this test is about
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        assert main(["run", str(example / "pipeline.toml"), "--quiet"]) == 0
    with LabelStore(example / "out" / "labels.sqlite") as store:
        llm = [s for s in store.sources() if s.kind == "llm"][0]
        pairs = len((example / "out" / "pool.tsv").read_text().splitlines()) - 1
        assert llm.events == pairs  # no pair labelled twice
    assert read_artefacts(example / "out") == finished.artefacts  # the uninterrupted run's


@pytest.mark.slow  # a batch job inside a pipeline (test_judge_batch.py is fast)
def test_batch_true_in_the_judge_section_waits_for_batches_then_scores_as_online(
        example, tmp_path, monkeypatch, capsys, finished):
    from reljudge.testing.fake_batch import FakeBatchAPI

    twin = example  # a fresh copy; the online run is the module's finished one
    online, server = dict(finished.artefacts), finished.server  # a copy: scores.json is popped
    online_calls = server.calls
    with FakeBatchAPI(grader) as batch:
        for k, v in finished.env.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("RELJUDGE_CACHE_DIR", str(tmp_path / "cache-batch"))
        cfg = twin / "pipeline.toml"
        cfg.write_text(cfg.read_text().replace(
            "[judge]\n", f'[judge]\nbatch = true\nbatch_url = "{batch.base_url}"\n'
            "poll_interval = 0.01\n", 1))
        codes = [main(["run", str(cfg), "--quiet"])]
        assert not (twin / "out" / "scores.tsv").exists()  # no scores from a part of the labels
        codes += [main(["run", str(cfg), "--quiet"]) for _ in range(3)]
        assert server.calls == online_calls  # nothing went online
    assert codes[-1] == 0 and set(codes[:-1]) == {5}
    assert "batches are still running" in capsys.readouterr().out
    batched = read_artefacts(twin / "out")
    digests = [json.loads(a.pop("scores.json"))["config_digest"] for a in (batched, online)]
    assert batched == online and digests[0] != digests[1]  # the configs differ: batch = true
    assert (json.loads((twin / "out" / "scores.json").read_text()) | {"config_digest": 0}
            == json.loads((finished.folder / "out" / "scores.json").read_text())
            | {"config_digest": 0})


@pytest.mark.slow  # an online job, then a batch job
def test_batches_still_running_after_a_config_change_leave_no_earlier_scores(
        example, tmp_path, monkeypatch, capsys):
    """While batches run, merge, eval and audit wait, and the outputs of the earlier labels
    are removed: none passes for this config's, partial or final."""
    from reljudge.testing.fake_batch import FakeBatchAPI

    cfg, out = example / "pipeline.toml", example / "out"
    cfg.write_text(cfg.read_text().replace("depth = 10", "depth = 3"))
    with FakeOpenAI(grader) as server, FakeBatchAPI(grader) as batch:
        for k, v in env_for(server, tmp_path).items():
            monkeypatch.setenv(k, v)
        assert main(["run", str(cfg), "--quiet"]) == 0
        cfg.write_text(cfg.read_text().replace("depth = 3", "depth = 10").replace(
            "[judge]\n", f'[judge]\nbatch = true\nbatch_url = "{batch.base_url}"\n'
            "poll_interval = 0.01\n", 1))
        assert main(["run", str(cfg), "--quiet"]) == 5
    assert "batches are still running" in capsys.readouterr().out
    assert not [name for name in LATER if (out / name).exists()]
    page = tmp_path / "r.html"
    assert main(["report", "--pipeline", str(cfg), "--out", str(page), "--quiet",
                 "--allow-partial"]) != 0 and not page.exists()


def test_a_pipeline_over_two_models_audits_each_judge_and_the_report_shows_both(
        example, tmp_path, monkeypatch, capsys):
    """Endpoints serving two models label as two judges: the audit stage compares each with
    the human labels, and ``report --pipeline`` shows the judges the pipeline audited."""
    with FakeOpenAI(grader) as one, FakeOpenAI(grader) as two:
        for k, v in env_for(one, tmp_path).items():
            monkeypatch.setenv(k, v)
        monkeypatch.delenv("OPENAI_BASE_URL")
        cfg = example / "pipeline.toml"
        cfg.write_text(cfg.read_text() + (
            f'\n[[judge.endpoints]]\nurl = "{one.base_url}"\nmodel = "judge-a"\n'
            f'[[judge.endpoints]]\nurl = "{two.base_url}"\nmodel = "judge-b"\n'))
        assert main(["run", str(cfg), "--quiet"]) == 0
    printed = capsys.readouterr().out
    audit = json.loads((example / "out" / "audit.json").read_text())
    names = [j["name"] for j in audit["judges"]]
    assert len(names) == 2 and {n.split("/")[0] for n in names} == {"judge-a", "judge-b"}
    assert all(f"[audit] ran: {n}: " in printed for n in names)
    assert all(n in (example / "out" / "audit.md").read_text() for n in names)
    page = tmp_path / "report.html"
    assert main(["report", "--pipeline", str(cfg), "--out", str(page), "--quiet"]) == 0
    html = page.read_text()
    assert all(n in html for n in names)


def test_the_pipeline_scores_json_is_what_reljudge_eval_prints(finished, capsys):
    """Two paths, one answer: scores.json and ``reljudge eval --format json`` come from one
    builder, so the same qrels, runs and measures give the same record."""
    out = finished.folder / "out"
    config = load_config(finished.folder / "pipeline.toml")
    argv = ["eval", str(out / "qrels.txt"), *(str(config.path(r)) for r in config.inputs.runs),
            "--per-query", "--format", "json"]
    for m in config.eval.measures:
        argv += ["-m", m]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    stored = json.loads((out / "scores.json").read_text())
    assert stored.pop("complete") is True and stored.pop("labelling")["without_grade"] == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert stored.pop("config_digest") == manifest["config_digest"]
    assert printed == stored  # what the pipeline adds is what its qrels rest on, nothing else
    assert set(printed) >= {"measures", "all_queries", "conventions", "rule", "warnings", "runs"}


def test_incomplete_labelling_stops_before_scoring_unless_allow_partial_marks_it(
        example, tmp_path, monkeypatch, capsys):
    def refuses_some(req):
        if "sabbatical" in req.user_text.lower():
            return Reply.error(400, "context too long")
        return grader(req)

    cfg, out = str(example / "pipeline.toml"), example / "out"
    with FakeOpenAI(refuses_some) as server:
        for k, v in env_for(server, tmp_path).items():
            monkeypatch.setenv(k, v)
        assert main(["run", cfg, "--quiet"]) == 4
        printed = capsys.readouterr().out
        assert "not run: labelling is incomplete" in printed
        assert not any((out / name).exists() for name in LATER)
        labelling = json.loads((out / "manifest.json").read_text())["labelling"]
        assert labelling["complete"] is False and labelling["without_grade"] > 0
        assert labelling["failures"] == {"http_status": labelling["without_grade"]}

        assert main(["run", cfg, "--quiet", "--allow-partial"]) == 4  # still incomplete
        capsys.readouterr()
        scores = json.loads((out / "scores.json").read_text())
        assert scores["complete"] is False and scores["labelling"]["without_grade"] > 0
        assert (out / "scores.tsv").read_text().startswith("# PARTIAL: labelling is incomplete")
        assert json.loads((out / "audit.json").read_text())["complete"] is False
        assert "PARTIAL" in (out / "audit.md").read_text()

        html = tmp_path / "r.html"
        assert main(["report", "--pipeline", cfg, "--out", str(html), "--quiet"]) == 3
        assert "labelling is incomplete" in capsys.readouterr().err and not html.exists()
        assert main(["report", "--pipeline", cfg, "--out", str(html), "--quiet",
                     "--allow-partial"]) == 0
        page = html.read_text()
        assert "PARTIAL: labelling is incomplete" in page and "No best run is named" in page
        assert "Best run on" not in page
    with FakeOpenAI(grader) as server:  # the endpoint is back: the run completes the job
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["run", cfg, "--quiet"]) == 0
        assert server.calls == labelling["without_grade"]  # only the missing ones
    scores = json.loads((out / "scores.json").read_text())
    assert scores["complete"] is True and scores["labelling"]["without_grade"] == 0
    assert not (out / "scores.tsv").read_text().startswith("#")
    assert main(["report", "--pipeline", cfg, "--out", str(html), "--quiet"]) == 0
    assert "Best run on" in html.read_text() and "PARTIAL" not in html.read_text()


@pytest.mark.slow  # a SIGINTed process, then a rerun
def test_ctrl_c_in_labelling_leaves_no_score_that_looks_final_and_a_rerun_completes(
        example, tmp_path, monkeypatch, capsys):
    slow = lambda req: Reply.text(grader(req).body["choices"][0]["message"]["content"],  # noqa
                                  delay=0.05)
    cfg = example / "pipeline.toml"
    out = example / "out"
    cfg.write_text(cfg.read_text().replace("depth = 10", "depth = 3"))
    with FakeOpenAI(slow) as server:
        env = env_for(server, tmp_path)
        # the runs before and after in this process: the interrupted one is the process this
        # test is about
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        argv = ["run", str(cfg), "--quiet"]
        assert main(argv) == 0
        assert (out / "scores.json").exists()  # a complete job at depth 3
        cfg.write_text(cfg.read_text().replace("depth = 3", "depth = 10"))
        start = server.calls
        proc = subprocess.Popen([sys.executable, "-m", "reljudge", *argv], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        server.wait_for_calls(start + 20, 60)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 3, stdout + stderr
        assert "not run: labelling is incomplete" in stdout
        assert "removed the earlier" in stdout
        assert not any((out / name).exists() for name in LATER)  # the depth-3 scores are gone
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["complete"] is False
        assert manifest["labelling"]["stopped"] == "interrupted"
        capsys.readouterr()
        assert main(argv) == 0, capsys.readouterr()
    assert json.loads((out / "scores.json").read_text())["complete"] is True
