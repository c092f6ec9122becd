"""The labelling progress bar in a notebook: one display output updated in place that ends on
the final counts; in a terminal, rich's live bar as before. The last test runs a real Jupyter
kernel (nbclient + ipykernel, in the `test` extra) against the local fake server. On a
terminal every bar draws on stderr: the CLI runs in a child process whose stderr is a pty and
whose stdout must hold the result alone."""

from __future__ import annotations

import json

import pytest

from reljudge.judge import JudgeConfig, label_pairs
from reljudge.judge import progress as progress_module
from reljudge.judge.progress import NotebookDisplay, Progress
from reljudge.tables import json_dumps
from reljudge.testing import FakeOpenAI, Reply

N = 40
QUERIES = {"q1": "what is the leave policy?"}
PASSAGES = {f"d{i}": {"text": f"passage {i}"} for i in range(N)}
PAIRS = [("q1", f"d{i}") for i in range(N)]


def grade_two(req):
    return Reply.text("final score: 2")


class Handle:
    """What IPython's display(..., display_id=True) returns: update() replaces the output."""

    def __init__(self, shown: list):
        self.shown = shown

    def update(self, data, raw=False):
        assert raw
        self.shown[-1] = data


class Cell:
    """A notebook cell's outputs, through the same display() signature as IPython's."""

    def __init__(self):
        self.outputs: list[dict] = []

    def display(self, data, raw=False, display_id=False):
        assert raw and display_id
        self.outputs.append(data)
        return Handle(self.outputs)


@pytest.fixture
def cell(monkeypatch):
    """Pretend to run in a notebook; the bar's outputs land in this cell."""
    c = Cell()
    monkeypatch.setattr(progress_module, "in_notebook", lambda: True)
    monkeypatch.setattr(progress_module, "NotebookDisplay",
                        lambda bar: NotebookDisplay(bar, display=c.display))
    return c


def test_in_a_notebook_the_bar_is_one_output_ending_on_the_final_counts(cell, tmp_path):
    with FakeOpenAI(grade_two) as s:
        cfg = JudgeConfig(model="fake-model", base_url=s.base_url, api_key="sk-test",
                          cache_dir=tmp_path / "cache", timeout=2.0, backoff=0.01)
        report = label_pairs(cfg, PAIRS, QUERIES, PASSAGES, progress=True)
    assert report.labelled == N
    assert len(cell.outputs) == 1  # updated in place, never appended
    final = cell.outputs[0]
    assert f"{N}/{N}" in final["text/plain"] and "0 failed" in final["text/plain"]
    assert final["text/html"].startswith("<pre") and f"{N}/{N}" in final["text/html"]
    assert "\x1b[" not in final["text/plain"] + final["text/html"]  # no terminal escapes


def test_notebook_updates_are_throttled_but_the_last_one_always_shows(cell):
    bar = Progress(1000, enabled=True)

    class Report:
        labelled = failed = 0
        cost = 0.0

    r = Report()
    with bar:
        for _ in range(1000):
            r.labelled += 1
            bar.advance(r)
    assert len(cell.outputs) == 1 and "1000/1000" in cell.outputs[0]["text/plain"]


def test_the_bar_says_how_many_calls_wait_for_a_retry_and_why_as_it_happens(monkeypatch,
                                                                            tmp_path):
    """Each pair's first attempt times out, the second answers: while the retries wait the
    bar says "retrying N (timeout)", and once they are answered it says nothing of them."""
    shown: list[str] = []
    cell = Cell()

    def display(data, raw=False, display_id=False):
        shown.append(data["text/plain"])
        handle = cell.display(data, raw, display_id)
        handle.update = lambda data, raw=False: shown.append(data["text/plain"])
        return handle

    monkeypatch.setattr(progress_module, "in_notebook", lambda: True)
    monkeypatch.setattr(progress_module, "NotebookDisplay",
                        lambda bar: NotebookDisplay(bar, display=display, interval=0))
    seen: set[str] = set()

    def slow_first(req):
        first = req.user_text not in seen
        seen.add(req.user_text)
        return Reply.text("final score: 2", delay=1.0 if first else 0)

    pairs = PAIRS[:3]
    with FakeOpenAI(slow_first) as s:
        cfg = JudgeConfig(model="fake-model", base_url=s.base_url, api_key="sk-test",
                          cache_dir=tmp_path / "cache", timeout=0.3, backoff=0.1,
                          concurrency=1)
        report = label_pairs(cfg, pairs, QUERIES, PASSAGES, progress=True)
    assert report.labelled == 3
    assert any("retrying 1 (timeout)" in text for text in shown), shown
    assert "retrying" not in shown[-1]


def test_retrying_text_counts_the_calls_by_the_kind_of_their_last_failure():
    assert progress_module.retrying_text([]) == ""
    assert progress_module.retrying_text(["timeout"] * 3) == "retrying 3 (timeout)"
    assert (progress_module.retrying_text(["timeout", "rate_limited", "timeout"])
            == "retrying 3 (2 timeout, 1 rate_limited)")


def test_outside_a_notebook_the_bar_is_rich_live_and_off_means_nothing(monkeypatch):
    monkeypatch.setattr(progress_module, "in_notebook", lambda: False)
    assert Progress(10, enabled=True).notebook is None
    assert Progress(10, enabled=True).bar is not None
    assert Progress(10, enabled=False).bar is None


@pytest.mark.slow  # starts a Jupyter kernel
def test_in_a_real_jupyter_kernel_the_cell_shows_the_final_bar(tmp_path):
    import nbclient
    import nbformat
    with FakeOpenAI(grade_two) as s:
        code = (
            "from reljudge.judge import JudgeConfig, label_pairs\n"
            f"cfg = JudgeConfig(model='fake-model', base_url={s.base_url!r}, "
            f"api_key='sk-test', cache_dir={str(tmp_path / 'cache')!r}, timeout=2.0, "
            "backoff=0.01)\n"
            f"pairs = {PAIRS!r}\n"
            f"report = label_pairs(cfg, pairs, {QUERIES!r}, {PASSAGES!r}, progress=True)\n"
            "print('labelled', report.labelled)\n")
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
        nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    shown = [o for o in outputs if o["output_type"] == "display_data"]
    streams = [o for o in outputs if o["output_type"] == "stream"]
    assert len(shown) == 1, json.dumps(outputs)[:2000]  # one bar, no empty extra output
    assert f"{N}/{N}" in shown[0]["data"]["text/plain"]
    assert f"{N}/{N}" in shown[0]["data"]["text/html"]
    assert [(o["name"], o["text"]) for o in streams] == [("stdout", f"labelled {N}\n")]


def run_on_terminal(args: list[str]) -> tuple[int, str, str]:
    """``reljudge ARGS`` in a child process whose stderr is a terminal (a pty) and whose stdout
    is a pipe, as in ``reljudge ... --format json > out.json`` typed at a shell: (exit code,
    stdout, what the terminal showed). The child is a fork of a process that has imported
    reljudge (tests/fork_support.py): these tests are about where a run draws, not start-up."""
    import os
    import subprocess
    import threading

    from tests.fork_support import PIPE, reljudge

    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    shown = bytearray()

    def drain():
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            shown.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RELJUDGE_"))}
    env.update(TERM="xterm", COLUMNS="120")
    try:
        proc = reljudge(*args, stdout=PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env)
        try:
            out, _ = proc.communicate(timeout=120)
        finally:
            proc.kill()
    finally:
        os.close(slave)
    reader.join(10)
    os.close(master)
    return proc.wait(), out or "", shown.decode(errors="replace")


def write_label_inputs(tmp_path) -> list[str]:
    """Queries, passages and pairs files for `label`; the command line that reads them."""
    (tmp_path / "q.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"docid": d, "text": p["text"]}) + "\n"
                                              for d, p in PASSAGES.items()))
    (tmp_path / "pairs.txt").write_text("".join(f"{q} {d}\n" for q, d in PAIRS))
    return ["label", "--queries", str(tmp_path / "q.tsv"), "--passages",
            str(tmp_path / "p.jsonl"), "--pairs", str(tmp_path / "pairs.txt")]


def label_json_on_terminal(tmp_path, *extra: str) -> tuple[int, str, str]:
    """`label --format json` (plus ``extra``) on a pty against a local server: exit code,
    stdout, and what the terminal showed."""
    label = write_label_inputs(tmp_path)
    with FakeOpenAI(grade_two) as s:
        return run_on_terminal(
            [*label, "--model", "fake-model", "--base-url", s.base_url, "--api-key", "sk-test",
             "--cache-dir", str(tmp_path / "cache"), "--price-in", "0", "--price-out", "0",
             "--format", "json", *extra])


@pytest.mark.slow  # a process on a pseudo-terminal
def test_on_a_terminal_the_bar_draws_on_stderr_and_stdout_is_exactly_the_json(tmp_path):
    code, out, shown = label_json_on_terminal(tmp_path)
    assert code == 0, (out, shown)
    summary = json.loads(out)  # nothing but the result on stdout
    assert out == json_dumps(summary)  # exactly as `label --format json` writes it
    assert summary["labelled"] == N
    assert "labelling" in shown and f"{N}/{N}" in shown  # the bar was drawn, on the terminal


@pytest.mark.slow  # a process on a pseudo-terminal
def test_with_quiet_the_terminal_shows_no_bar(tmp_path):
    code, out, shown = label_json_on_terminal(tmp_path, "--quiet")
    assert code == 0 and json.loads(out)["labelled"] == N
    assert "labelling" not in shown, shown


@pytest.mark.slow  # a process on a pseudo-terminal
def test_batch_wait_on_a_terminal_draws_on_stderr_and_stdout_is_exactly_the_json(tmp_path):
    from reljudge.testing.fake_batch import FakeBatchAPI

    label = write_label_inputs(tmp_path)
    with FakeBatchAPI(grade_two) as batch:
        code, out, shown = run_on_terminal(
            [*label, "--store", str(tmp_path / "s.sqlite"), "--model", "gpt-4o-mini", "--base-url",
             "http://127.0.0.1:9/v1", "--batch-url", batch.base_url, "--api-key", "k",
             "--cache-dir", str(tmp_path / "cache"), "--batch", "--wait",
             "--poll-interval", "0.01", "--format", "json"])
    assert code == 0, (out, shown)
    summary = json.loads(out)
    assert out == json_dumps(summary) and summary["graded"] == N
    assert "batch requests" in shown and f"{N}/{N}" in shown
