"""The labelling progress bar in a notebook: one display output updated in place that ends on
the final counts; in a terminal, rich's live bar as before. The last test runs a real Jupyter
kernel (nbclient + ipykernel, in the `test` extra) against the local fake server."""

from __future__ import annotations

import json

import pytest

from reljudge.judge import JudgeConfig, label_pairs
from reljudge.judge import progress as progress_module
from reljudge.judge.progress import NotebookDisplay, Progress
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


def test_outside_a_notebook_the_bar_is_rich_live_and_off_means_nothing(monkeypatch):
    monkeypatch.setattr(progress_module, "in_notebook", lambda: False)
    assert Progress(10, enabled=True).notebook is None
    assert Progress(10, enabled=True).bar is not None
    assert Progress(10, enabled=False).bar is None


def test_in_a_real_jupyter_kernel_the_cell_shows_the_final_bar(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
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
