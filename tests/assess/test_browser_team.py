"""reljudge assess in headless Chromium at a laptop's and a phone's width: a failed save keeps
its pair and is sent again, a query at a time, the end (summary, next command, stop button),
the LAN address, a foreign page's write refused, and a team: two annotators with overlap,
their agreement checked against scikit-learn and krippendorff, then an adjudication pass
whose merged qrels hold the adjudicated grades.

Screenshots go to $RELJUDGE_ARTIFACTS (default tests/artifacts/, which git ignores).
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time

import numpy as np
import pytest

from reljudge.assess.task import ordered
from reljudge.assess.team import split
from reljudge.cli import main
from reljudge.labels import LabelEvent
from reljudge.store import LabelStore
from tests.browser import ARTIFACTS, Browser
from tests.helpers import PAIRS, assess_server, make_store

TEXT = "document.getElementById('{}').textContent"
WIDTHS = [(1280, 900), (390, 844)]
STATE = "document.getElementById('status').dataset.state"


def at_width(b: Browser, width: int, height: int) -> None:
    b.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
           deviceScaleFactor=1, mobile=width < 500)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shown(b: Browser) -> tuple[int, tuple[str, str]]:
    """(1-based position, (qid, docid)) of the pair on screen, once its text is there."""
    b.wait_for("document.body.dataset.ready === '1' && "
               "!document.getElementById('pair').hidden")
    position = int(b.eval(TEXT.format("position")).split()[1])
    return position, (b.eval(TEXT.format("qid")), b.eval(TEXT.format("docid")))


#: the page's timers of a second or more (its only one is the retry of a failed grade, every
#: RETRY_MS), held for the test to fire: the test moves the clock on once the server is back
#: instead of waiting out the 3 s (one that fired on its own meanwhile is not fired again)
HELD_RETRY = (
    "window.__pending = new Map(); window.__scheduled = 0; "
    "const later = window.setTimeout, cancel = window.clearTimeout; "
    "window.setTimeout = (f, ms, ...args) => { if (!(ms >= 1000)) return later(f, ms, ...args); "
    "window.__scheduled += 1; "
    "const id = later(() => { window.__pending.delete(id); f(...args); }, ms); "
    "window.__pending.set(id, () => f(...args)); return id; }; "
    "window.clearTimeout = id => { window.__pending.delete(id); cancel(id); };")
#: fire the held timers now; how many the page had scheduled
FIRE_RETRY = ("[...window.__pending].forEach(([id, fire]) => { window.clearTimeout(id); fire(); }),"
              " window.__scheduled")


def grade_shown(b: Browser, key: str) -> tuple[str, str]:
    """Press a grade key on the pair on screen, wait until it is saved; returns the pair."""
    position, pair = shown(b)
    b.press(key)
    b.wait_for(f"{STATE} === 'saved' && {TEXT.format('status')}"
               f".startsWith('Saved: pair {position} graded {key}')")
    return pair


@pytest.mark.parametrize("width, height", WIDTHS)
def test_a_failed_save_keeps_its_pair_on_screen_and_is_sent_again(browser, tmp_path, width,
                                                                  height):
    store_path = make_store(tmp_path / "labels.sqlite")
    b = browser
    at_width(b, width, height)
    port = free_port()
    args = ("--store", str(store_path), "--sample", "s1", "--annotator", "alice")
    b.send("Page.addScriptToEvaluateOnNewDocument", source=HELD_RETRY)
    with assess_server(*args, port=port) as (url, proc, _):
        b.open(url)
        grade_shown(b, "2")
        proc.kill()  # the server is gone: the next grade cannot be stored
        proc.wait()
        assert shown(b)[0] == 2
        b.press("3")
        b.wait_for(f"{STATE} === 'error'")  # the failed request is done: no move is pending
        assert shown(b)[0] == 2  # still on the pair whose grade is not stored
        assert b.eval(TEXT.format("current")) == "· not graded yet"
        assert "stays on screen" in b.eval(TEXT.format("status"))
        assert b.eval(TEXT.format("hstatus")) == "NOT saved"
        b.screenshot(ARTIFACTS / f"assess-not-saved-{width}px.png", width, height)
        at_width(b, width, height)
    with assess_server(*args, port=port) as (_, proc, _):  # back: the page sends it again
        assert b.eval(FIRE_RETRY) >= 1  # the retry's time has come (a page without one fails)
        try:
            b.wait_for(f"{STATE} === 'saved' && "
                       f"{TEXT.format('status')}.startsWith('Saved: pair 2 graded 3')",
                       timeout=30)
        except AssertionError:
            raise AssertionError((b.eval(TEXT.format("status")), proc.poll(),
                                  b.errors()[-3:])) from None
        assert shown(b)[0] == 3
        # the browser logs the dead server's refused or reset connections (a kill during a
        # request resets it, a kill while a response is written cuts it short, a kept-alive
        # socket of the killed server is found closed), and nothing else
        assert b.errors() == [] or all(any(t in json.dumps(e) for t in (
            "Failed to fetch", "ERR_CONNECTION_REFUSED", "ERR_CONNECTION_RESET",
            "ERR_CONTENT_LENGTH_MISMATCH", "ERR_EMPTY_RESPONSE", "ERR_SOCKET_NOT_CONNECTED"))
            for e in b.errors()), \
            b.errors()
    with LabelStore(store_path) as store:
        assert [(e.docid, e.grade) for e in store.events(kind="human")] == [("d0", 2), ("d1", 3)]


@pytest.mark.parametrize("width, height", WIDTHS)
def test_a_query_at_a_time_then_the_summary_its_commands_and_the_stop_button(browser, tmp_path,
                                                                            width, height):
    store_path = make_store(tmp_path / "labels.sqlite")
    b = browser
    at_width(b, width, height)
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "alice",
                       "--order", "query") as (url, proc, _):
        b.open(url)
        seen = []
        for k in range(len(PAIRS)):
            pair = shown(b)[1]
            if pair == ("q1", "d0"):
                b.press("l")  # look at the judge's grade (2) before grading this one
                b.wait_for(f"{TEXT.format('llm')} === 'LLM: gpt-judge gave 2'")
            seen.append(grade_shown(b, "2" if pair == ("q1", "d0") else str(k % 4)))
            if pair == ("q1", "d0"):
                b.press("l")  # and hide it again
        assert seen == ordered(PAIRS, "query", "{'sample': 's1'} alice")
        qids = [q for q, _ in seen]
        assert len([q for i, q in enumerate(qids) if i == 0 or q != qids[i - 1]]) == 3
        b.wait_for("!document.getElementById('finished').hidden && "
                   "document.getElementById('summary').dataset.filled === '1'")
        summary = b.eval(TEXT.format("summary"))
        assert "10 of 10 pairs" in summary and "time per pair" in summary
        assert "agreement with gpt-judge" in summary and "before grading 1 of them" in summary
        commands = b.eval("[...document.querySelectorAll('#summary code')]"
                          ".map(c => c.textContent)")
        assert f"reljudge estimate --store {store_path} --sample s1 --judge gpt-judge " \
               "RUN [RUN ...] -m nDCG@10" in commands  # a pair sample: the ratio estimator
        keys_hint = b.eval("getComputedStyle(document.querySelector('#finished .keys-only'))"
                           ".display")
        assert keys_hint == ("none" if width < 600 else "inline")  # a phone: buttons only
        assert b.eval("getComputedStyle(document.getElementById('stop')).display") != "none"
        b.screenshot(ARTIFACTS / f"assess-finished-{width}px.png", width, height)
        at_width(b, width, height)
        b.eval("document.getElementById('stop').click()")
        b.wait_for(f"{TEXT.format('finished-head')}.startsWith('The server has stopped')")
        assert proc.wait(30) == 0  # every pair graded: everything asked for was done
        assert b.errors() == [], [e['params'] for e in b.errors()]
    with LabelStore(store_path) as store:
        events = list(store.events(kind="human"))
    assert [(e.qid, e.docid) for e in events] == seen
    assert [e.meta.get("llm_shown", False) for e in events].count(True) == 1


@pytest.mark.parametrize("width, height", WIDTHS)
def test_on_a_lan_the_printed_address_opens_the_page(browser, tmp_path, width, height):
    from reljudge.assess.server import lan_addresses

    if not lan_addresses():
        pytest.skip("this machine has no LAN address")
    store_path = make_store(tmp_path / "labels.sqlite")
    b = browser
    at_width(b, width, height)
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "carol",
                       "--host", "0.0.0.0") as (url, _, lines):
        opened = [x.split()[1] for x in lines if x.startswith("open ")]
        assert "0.0.0.0" not in " ".join(opened)
        host = url.split("//")[1].split(":")[0]
        assert host in lan_addresses()
        b.open(url)  # the address a colleague types, token and all
        grade_shown(b, "1")
        b.screenshot(ARTIFACTS / f"assess-lan-{width}px.png", width, height)
        assert b.errors() == [], [e['params'] for e in b.errors()]
    with LabelStore(store_path) as store:
        assert [(e.source_name, e.grade) for e in store.events(kind="human")] == [("carol", 1)]


class _Foreign(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = b"<!doctype html><title>another site</title><p>another site</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("width, height", WIDTHS)
def test_a_write_from_a_page_of_another_origin_is_refused(browser, tmp_path, width, height):
    store_path = make_store(tmp_path / "labels.sqlite")
    foreign = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Foreign)
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    b = browser
    at_width(b, width, height)
    b.send("Network.enable")
    try:
        with assess_server("--store", str(store_path), "--sample", "s1",
                           "--annotator", "alice") as (url, _, _):
            b.open(f"http://localhost:{foreign.server_address[1]}/",
                   ready="document.readyState === 'complete'")
            # a simple request (no preflight): the browser sends it, naming its Origin
            b.eval(f"fetch('{url}api/grade', {{method: 'POST', mode: 'no-cors', "
                   "body: JSON.stringify({index: 0, grade: 3}), "
                   "headers: {'Content-Type': 'text/plain'}}).catch(() => null)")
            statuses = _statuses(b, "api/grade")
            deadline = time.monotonic() + 10
            while not statuses and time.monotonic() < deadline:
                time.sleep(0.05)
                b.eval("1")
                statuses = _statuses(b, "api/grade")
            assert statuses == [403]
            b.open(url)  # the page itself writes as before
            grade_shown(b, "1")
    finally:
        foreign.shutdown()
    with LabelStore(store_path) as store:
        assert [(e.docid, e.grade) for e in store.events(kind="human")] == [("d0", 1)]


def _statuses(b: Browser, path: str) -> list[int]:
    return [e["params"]["response"]["status"] for e in b.events
            if e.get("method") == "Network.responseReceived"
            and e["params"]["response"]["url"].endswith(path)]


# -- a team, then adjudication --------------------------------------------------------------
ALICE = dict(zip(PAIRS, [2, 1, 0, 3, 1, 2, 0, 1, 3, 1], strict=True))
BOB = {p: (g + 1) % 4 if k % 2 else g for k, (p, g) in enumerate(ALICE.items())}
SETTLED = {p: 2 for p in PAIRS}  # what the adjudicator decides wherever asked


@pytest.mark.parametrize("width, height", WIDTHS)
def test_a_team_with_overlap_then_agreement_then_adjudication(browser, tmp_path, width, height):
    import krippendorff
    from sklearn.metrics import cohen_kappa_score
    store_path = make_store(tmp_path / "labels.sqlite")
    b = browser
    at_width(b, width, height)
    team = ("--team", "alice,bob", "--overlap", "0.6")
    graded = {}
    for name, grades in (("alice", ALICE), ("bob", BOB)):
        with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", name,
                           *team) as (url, proc, _):
            b.open(url)
            n = int(b.eval(TEXT.format("done")).split("/")[1].split()[0])
            graded[name] = [grade_shown(b, str(grades[shown(b)[1]])) for _ in range(n)]
            b.wait_for("document.getElementById('summary').dataset.filled === '1'")
            assert "shared with your team" in b.eval(TEXT.format("summary"))
            b.eval("document.getElementById('stop').click()")
            assert proc.wait(30) == 0
    shared, own = split(PAIRS, ["alice", "bob"], 0.6, "sample:s1")
    assert set(graded["alice"]) == shared | set(own["alice"])
    assert set(graded["bob"]) == shared | set(own["bob"])
    both = sorted(shared)

    # agreement as labels stats reports it, against the reference implementations
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["labels", "stats", "--store", str(store_path), "--format", "json"]) == 0
    report = json.loads(buf.getvalue())["annotators"]
    (pair,) = report["between"]
    x, y = [ALICE[p] for p in both], [BOB[p] for p in both]
    assert pair["pairs"] == len(both) == 6
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(x, y), abs=1e-12)
    assert pair["kappa_linear"] == pytest.approx(cohen_kappa_score(x, y, weights="linear"),
                                                 abs=1e-12)
    assert pair["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(x, y, weights="quadratic"), abs=1e-12)
    data = np.array([[ALICE[p] if p in graded["alice"] else np.nan for p in PAIRS],
                     [BOB[p] if p in graded["bob"] else np.nan for p in PAIRS]])
    assert report["alpha"]["alpha_ordinal"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal",
                           value_domain=[0, 1, 2, 3]), abs=1e-12)

    # adjudication: the disagreements, both grades on screen, a grade for each
    disputed = [p for p in both if ALICE[p] != BOB[p]]
    assert disputed
    reasoning = "The passage names the query's topic but does not answer it. Grade: 1"
    with LabelStore(store_path) as store:
        store.add_events([LabelEvent(*disputed[0], 1, "llm", "gpt-judge", raw=reasoning)])
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "dan",
                       "--adjudicate") as (url, proc, _):
        b.open(url)
        assert b.eval(TEXT.format("done")) == f"0 / {len(disputed)} graded"
        for _ in range(len(disputed)):
            pair = shown(b)[1]
            box = b.eval(TEXT.format("settle"))
            assert f"alice (human) gave {ALICE[pair]}" in box
            assert f"bob (human) gave {BOB[pair]}" in box
            if pair == disputed[0]:  # the judge's grade and its reasoning, as text
                assert "gpt-judge (llm) gave 1" in box
                assert b.eval("document.querySelector('#settle .reasoning').textContent") \
                    == reasoning
            if pair == disputed[0]:
                b.screenshot(ARTIFACTS / f"assess-adjudicate-{width}px.png", width, height)
                at_width(b, width, height)
            grade_shown(b, str(SETTLED[pair]))
        b.eval("document.getElementById('stop').click()")
        assert proc.wait(30) == 0
        assert b.errors() == [], [e['params'] for e in b.errors()]
    qrels = tmp_path / "final.qrels"
    assert main(["labels", "merge", "--store", str(store_path), "--policy",
                 "adjudicated-first", "--out", str(qrels)]) == 0
    final = {(q, d): int(g) for q, _, d, g in (line.split() for line in qrels.read_text().splitlines())}
    for p in PAIRS:
        if p in disputed:
            assert final[p] == SETTLED[p]
        else:  # one grade, or two that agree
            assert final[p] == (ALICE[p] if p in graded["alice"] else BOB[p])


@pytest.mark.parametrize("width, height", WIDTHS)
def test_keys_typed_ahead_grade_the_next_pairs_in_order_one_key_per_pair(browser, tmp_path,
                                                                        width, height):
    """A fast assessor does not wait for the page: three grade keys pressed back to back
    grade pairs 1, 2 and 3 (each stored before the page moves on, the later keys played on
    the pairs that follow), and nothing else."""
    store_path = make_store(tmp_path / "labels.sqlite")
    b = browser
    at_width(b, width, height)
    with assess_server("--store", str(store_path), "--sample", "s1",
                       "--annotator", "alice") as (url, _, _):
        b.open(url)
        for key in "302":
            b.press(key)
        # 'saved': no request pending, so no typed key is left to replay (a replay sends one)
        b.wait_for(f"{TEXT.format('done')} === '3 / 10 graded' && {STATE} === 'saved'")
        assert shown(b)[0] == 4 and b.eval(TEXT.format("done")) == "3 / 10 graded"
        assert b.errors() == [], [e['params'] for e in b.errors()]
    with LabelStore(store_path) as store:
        assert [(e.docid, e.grade) for e in store.events(kind="human")] == [
            ("d0", 3), ("d1", 0), ("evil", 2)]
