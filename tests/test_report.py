"""The HTML report: self-contained, and it renders in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from reljudge.cli import main
from reljudge.testing import FakeOpenAI
from tests.test_pipeline import EXAMPLE, grader  # the same scripted judge as the pipeline test


@pytest.fixture
def labelled_example(tmp_path, monkeypatch):
    """The hr-handbook pipeline run against the scripted local server."""
    dest = tmp_path / "hr"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("out"))
    monkeypatch.setenv("RELJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAI(grader) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_MODEL", "fake-judge")
        assert main(["run", str(dest / "pipeline.toml"), "--quiet"]) == 0
    return dest


def test_report_of_the_hr_handbook_is_self_contained(labelled_example, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", "--pipeline", str(labelled_example / "pipeline.toml"),
                 "--out", str(out)]) == 0
    page = out.read_text()
    for section in ("Run scores", "Comparison with the baseline", "Per-query differences",
                    "Can the judge be trusted?", "Labels: sources, coverage and cost"):
        assert section in page
    assert page.count("<svg") >= 4  # scores, per-query, confusion, scatter
    assert "system ranking: Kendall tau" in page
    # nothing is fetched from the network when the file is opened
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page)
    assert "@import" not in page and "url(http" not in page


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_report_renders_in_headless_chromium(labelled_example, tmp_path):
    from matplotlib.image import imread

    out = tmp_path / "report.html"
    assert main(["report", "--pipeline", str(labelled_example / "pipeline.toml"),
                 "--out", str(out)]) == 0
    png = tmp_path / "report.png"
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}",
         "--window-size=1200,2400", out.as_uri()], capture_output=True, text=True, timeout=120)
    assert png.exists(), proc.stderr[-2000:]
    img = imread(png)
    gray = img[..., :3].mean(axis=2)
    assert (gray < 0.9).mean() > 0.02  # a blank page is all white
    assert len(np.unique((img[..., :3] * 255).astype(int).reshape(-1, 3), axis=0)) > 50
