"""The HTML report in a real headless Chromium (Debian's, over DevTools): no console errors,
no network requests besides the page itself, no horizontal page overflow at a desktop and a
phone width, and a full-page screenshot of each in the test artifacts.

Screenshots go to $RELJUDGE_ARTIFACTS (default tests/artifacts/, which git ignores).
"""

from __future__ import annotations

import base64
from pathlib import Path

from reljudge.cli import main
from tests.browser import ARTIFACTS, Browser

WIDTHS = (1280, 390)
LOADED = "document.readyState === 'complete'"
OPEN_ALL = "document.querySelectorAll('details').forEach(d => d.open = true), true"
GEOMETRY = ("({scroll: document.documentElement.scrollWidth, view: window.innerWidth, "
            "height: document.documentElement.scrollHeight})")


def at_width(b: Browser, width: int, height: int = 900) -> dict:
    """Emulate a screen ``width`` px wide (a phone below 600) and measure the page."""
    b.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
           deviceScaleFactor=1, mobile=width < 600)
    b.drawn()
    return b.eval(GEOMETRY)


def full_page_screenshot(b: Browser, path: Path, width: int) -> dict:
    """A PNG of the whole page at ``width``; returns the page's geometry at that width."""
    geometry = at_width(b, width)
    at_width(b, width, geometry["height"])
    data = b.send("Page.captureScreenshot", format="png")["data"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(data))
    return geometry


def requests(b: Browser) -> list[str]:
    """Every URL the page asked for since the Network domain was enabled."""
    return [e["params"]["request"]["url"] for e in b.events
            if e.get("method") == "Network.requestWillBeSent"]


DL23 = Path(__file__).resolve().parent.parent.parent / "examples" / "llmjudge-dl23"


def test_report_renders_at_desktop_and_phone_width_offline(labelled_example,  # noqa: F811
                                                            browser, tmp_path):
    """The hr-handbook pipeline: 2 runs, 44 audited pairs, conflicts with their texts."""
    out = tmp_path / "report.html"
    assert main(["report", "--pipeline", str(labelled_example / "pipeline.toml"),
                 "--out", str(out)]) == 0
    check_in_chromium(browser, out, "report")


def test_report_of_eight_runs_and_three_judges_renders(browser, tmp_path):
    """The TREC DL 2023 slice: 8 runs, 3 judges, about 4,400 audited pairs each."""
    out = tmp_path / "dl23.html"
    assert main(["report", str(DL23 / "human.qrels"), *sorted(map(str, DL23.glob("runs/*.run"))),
                 "-m", "nDCG@10", "-m", "P@10", "-m", "Judged@10",
                 "--reference", str(DL23 / "human.qrels"),
                 *[x for j in ("Olz-gpt4o", "RMITIR-llama70B", "h2oloo-fewself")
                   for x in ("--judge", str(DL23 / "judges" / f"{j}.txt"))],
                 "--clip", "--out", str(out)]) == 0
    check_in_chromium(browser, out, "report-dl23")


def check_in_chromium(b: Browser, out: Path, stem: str) -> None:
    """Open the report, check it at both widths (folded and unfolded), save screenshots."""
    b.send("Network.enable")
    url = out.as_uri()
    b.open(url, ready=LOADED)
    assert b.eval("document.querySelectorAll('svg').length") >= 4
    assert b.eval("document.getElementById('summary').innerText").startswith("Summary")
    for width in WIDTHS:
        closed = at_width(b, width)
        assert closed["scroll"] <= closed["view"], (width, closed)
    b.eval(OPEN_ALL)  # conflicts, per-query tables: wide content must scroll in its own box
    for width in WIDTHS:
        png = ARTIFACTS / f"{stem}-{width}px.png"
        geometry = full_page_screenshot(b, png, width)
        assert geometry["view"] == width
        assert geometry["scroll"] <= geometry["view"], (width, geometry)
        assert png.stat().st_size > 20_000  # a blank page compresses to almost nothing
    assert b.errors() == []
    assert requests(b) == [url]
