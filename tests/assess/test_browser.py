"""reljudge assess in a real headless Chromium against the real server: a person's session.

Screenshots go to $RELJUDGE_ARTIFACTS (default tests/artifacts/, which git ignores).
"""

from __future__ import annotations

import numpy as np
import pytest

from reljudge.labels import RETRACTED
from reljudge.store import LabelStore
from tests.browser import ARTIFACTS, Browser
from tests.helpers import PAIRS, assess_server, make_store

TEXT = "document.getElementById('{}').textContent"
SAVED = ("document.getElementById('status').dataset.state === 'saved' && "
         "document.getElementById('status').textContent.startsWith('Saved: pair {} graded {}')")


def grade_by_key(b: Browser, position: int, key: str) -> None:
    """Press a grade key on pair `position` (1-based) and wait until the page says saved.

    The page moves to the next pair while the previous grade is being saved and shows it once
    the pair's text has arrived, so the save can be reported first: wait for the pair."""
    b.wait_for(f"{TEXT.format('position')} === 'pair {position} of 10'")
    b.press(key)
    b.wait_for(SAVED.format(position, key))


def test_a_person_grades_undoes_reloads_and_finishes(browser, tmp_path):
    store_path = make_store(tmp_path / "labels.sqlite")
    b = browser
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator",
                       "alice") as (url, _, _):
        b.open(url)
        assert b.eval(TEXT.format("task")) == "sample s1"
        assert b.eval(TEXT.format("done")) == "0 / 10 graded"
        assert b.eval("document.querySelectorAll('#scale button').length") == 4
        assert "nothing to do with the query" in b.eval(TEXT.format("scale"))
        # the LLM's grade is hidden until asked for, and hidden again
        assert b.eval("document.getElementById('llm').hidden") is True
        assert "gave" not in b.eval(TEXT.format("llm"))
        b.press("l")
        assert b.wait_for(TEXT.format("llm")) == "LLM: gpt-judge gave 2"
        b.press("l")
        assert b.eval("document.getElementById('llm').hidden") is True

        grade_by_key(b, 1, "2")
        b.press("n")  # a note for pair 2, then back to the keys
        assert b.eval("document.activeElement.id") == "note"
        b.type_text("unsure: partly on topic")
        b.press("Escape")
        assert b.eval("document.activeElement.id") != "note"
        grade_by_key(b, 2, "1")

        # pair 3 holds HTML and a script: shown as text, nothing runs
        assert b.eval(TEXT.format("passage")).startswith("<script>window.__pwned = 1</script>")
        assert b.eval("document.querySelectorAll('#passage *').length") == 0
        assert b.eval(TEXT.format("query")) == "how do cats purr"
        assert b.eval("typeof window.__pwned") == "undefined"
        grade_by_key(b, 3, "3")
        grade_by_key(b, 4, "0")
        grade_by_key(b, 5, "1")
        grade_by_key(b, 6, "2")
        assert b.eval(TEXT.format("done")) == "6 / 10 graded"
        assert b.eval(TEXT.format("query-done")) == "this query: 2 / 3"

        b.press("u")  # takes back pair 6's grade and goes there
        b.wait_for("document.getElementById('status').dataset.state === 'undone'")
        assert b.eval(TEXT.format("status")).startswith("undone: pair 6 is ungraded again")
        assert b.eval(TEXT.format("position")) == "pair 6 of 10"
        assert b.eval(TEXT.format("done")) == "5 / 10 graded"

        for key, position in (("k", 5), ("ArrowLeft", 4), ("j", 5), ("ArrowRight", 6)):
            b.press(key)
            b.wait_for(f"{TEXT.format('position')} === 'pair {position} of 10'")
        b.press("ArrowLeft")
        b.press("ArrowLeft")
        b.press("ArrowLeft")
        b.press("ArrowLeft")
        b.wait_for(f"{TEXT.format('position')} === 'pair 2 of 10'")
        assert b.eval("document.getElementById('note').value") == "unsure: partly on topic"
        assert b.eval(TEXT.format("current")) == "· your grade: 1"

        b.reload()  # resumes at the first ungraded pair, with the store's progress
        assert b.eval(TEXT.format("position")) == "pair 6 of 10"
        assert b.eval(TEXT.format("done")) == "5 / 10 graded"
        assert b.eval(TEXT.format("current")) == "· not graded yet"
        shots = {w: b.screenshot(ARTIFACTS / f"assess-{w}px.png", w, h)
                 for w, h in ((1280, 900), (390, 844))}
        b.send("Emulation.clearDeviceMetricsOverride")

        for position, key in zip(range(6, 11), "30123", strict=True):
            grade_by_key(b, position, key)
        b.wait_for("!document.getElementById('finished').hidden")
        assert b.eval(TEXT.format("done")) == "10 / 10 graded"
        assert b.eval(TEXT.format("position")) == "pair 10 of 10"
        b.press("n")  # a note after the grade: Enter records the grade again, with the note
        b.type_text("second thoughts")
        b.press("Enter")
        b.wait_for(SAVED.format(10, "3 with a note"))
        assert b.errors() == [], [e['params'] for e in b.errors()]

    given = dict(zip(PAIRS, [2, 1, 3, 0, 1, 3, 0, 1, 2, 3], strict=True))
    with LabelStore(store_path) as store:
        merged = store.merge("human-only")
        assert {(lab.qid, lab.docid): lab.grade for lab in merged.labels} == given
        assert {lab.sources for lab in merged.labels} == {("alice",)}
        events = list(store.events(kind="human"))
    assert len(events) == 13  # 12 grades and one undo, in the order given
    assert [e.failure for e in events].count(RETRACTED) == 1
    assert events[6].failure == RETRACTED and events[6].docid == PAIRS[5][1]
    assert all(e.source_name == "alice" and e.meta["sample"] == "s1" for e in events)
    assert all(e.latency is not None and e.latency > 0 for e in events if e.ok)
    assert events[1].meta.get("note") == "unsure: partly on topic"
    assert events[-1].meta.get("note") == "second thoughts" and events[-1].grade == 3
    assert sum("note" in e.meta for e in events) == 2

    for width, png in shots.items():
        from PIL import Image

        with Image.open(png) as im:
            img = np.asarray(im.convert("RGB"))
        assert img.shape[1] == width
        colours = (img[..., 0].astype(np.uint32) << 16) | (img[..., 1].astype(np.uint32) << 8) \
            | img[..., 2]  # one number a colour: np.unique(axis=0) sorted rows, 5x slower
        assert len(np.unique(colours)) > 20


def test_the_shared_page_works_with_its_token_and_not_without(browser, tmp_path):
    store_path = make_store(tmp_path / "labels.sqlite")
    b = browser
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "bob",
                       "--host", "127.0.0.1") as (url, _, lines):
        assert "?token=" in url and lines[-1].startswith("token: ")
        bare = url.split("?")[0]
        b.open(bare, ready="document.readyState === 'complete'")
        assert "forbidden" in b.eval("document.body.textContent")
        b.open(url)  # the token in the address; a cookie carries it to the API calls
        grade_by_key(b, 1, "3")
        b.open(bare)  # the cookie alone is enough afterwards
        assert b.eval(TEXT.format("done")) == "1 / 10 graded"
    with LabelStore(store_path) as store:
        assert [(e.source_name, e.grade) for e in store.events(kind="human")] == [("bob", 3)]


def test_a_grade_the_server_never_got_is_shown_as_not_saved(browser, tmp_path):
    store_path = make_store(tmp_path / "labels.sqlite")
    b = browser
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator",
                       "alice") as (url, proc, _):
        b.open(url)
        grade_by_key(b, 1, "2")
        proc.kill()
        proc.wait()
        b.press("3")
        b.wait_for("document.getElementById('status').dataset.state === 'error'")
        assert b.eval(TEXT.format("status")).startswith("NOT saved")
        assert b.eval(TEXT.format("hstatus")) == "NOT saved"
        assert b.eval(TEXT.format("done")) == "1 / 10 graded"
    with LabelStore(store_path) as store:
        assert [e.grade for e in store.events(kind="human")] == [2]


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_a_held_key_grades_one_pair_and_a_note_has_its_own_mode(browser, tmp_path, width,
                                                                 height):
    """Holding 0 (a keyDown and its auto-repeats) grades one pair, not four; n opens the note
    mode (shown), digits there are text, Enter leaves it keeping the note, and the next
    digit grades the pair with that note; the grade is in the store once the page says
    saved."""
    store_path = make_store(tmp_path / "labels.sqlite")
    b = browser
    b.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
           deviceScaleFactor=1, mobile=width < 500)
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator",
                       "alice") as (url, _, _):
        b.open(url)
        assert b.eval("document.getElementById('mode').dataset.mode") == "grading"
        b.hold("0", 3)
        # 'saved' means no request is pending: a repeat taken for a key would be on its way
        b.wait_for(SAVED.format(1, "0"))
        assert b.eval(TEXT.format("done")) == "1 / 10 graded"
        assert b.eval(TEXT.format("position")) == "pair 2 of 10"

        b.press("n")
        assert b.eval("document.getElementById('mode').dataset.mode") == "note"
        assert "writing a note" in b.eval(TEXT.format("mode"))
        b.type_text("unsure")
        b.press("2")  # in the note a digit is text
        assert b.eval("document.getElementById('note').value") == "unsure2"
        assert b.eval(TEXT.format("done")) == "1 / 10 graded"
        b.press("Enter")  # back to grading, the note kept for the grade to come
        assert b.eval("document.getElementById('mode').dataset.mode") == "grading"
        assert b.eval("document.getElementById('status').dataset.state") == "note"
        b.screenshot(ARTIFACTS / f"assess-note-kept-{width}px.png", width, height)
        b.press("1")
        b.wait_for(SAVED.format(2, "1 with a note"))
        with LabelStore(store_path) as store:  # stored when the page says so, server still up
            assert len(list(store.events(kind="human"))) == 2
        assert b.errors() == [], [e['params'] for e in b.errors()]
    with LabelStore(store_path) as store:
        events = list(store.events(kind="human"))
    assert [(e.grade, (e.meta or {}).get("note")) for e in events] == [(0, None),
                                                                     (1, "unsure2")]


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_a_passage_title_is_shown_as_the_judge_saw_it(browser, tmp_path, width, height):
    """The judge's prompt shows a passage's title ({title}); the page shows it too, above the
    passage, and the grade records the digest of query, passage and title."""
    from reljudge.labels import shown_digest

    store_path = make_store(tmp_path / "labels.sqlite")
    with LabelStore(store_path) as store:
        text = store.passage_texts(["d0"])["d0"]
        store.add_passages({"d0": {"text": text, "title": "Why cats purr"}})
        query = store.query_texts(["q1"])["q1"][0]
    b = browser
    b.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
           deviceScaleFactor=1, mobile=width < 500)
    with assess_server("--store", str(store_path), "--sample", "s1",
                       "--annotator", "alice") as (url, _, _):
        b.open(url)
        b.wait_for(f"{TEXT.format('passage-title')} === 'Why cats purr'")
        assert b.eval("document.getElementById('passage-title').hidden") is False
        b.screenshot(ARTIFACTS / f"assess-title-{width}px.png", width, height)
        grade_by_key(b, 1, "2")
        b.wait_for(f"{TEXT.format('position')} === 'pair 2 of 10'")
        assert b.eval("document.getElementById('passage-title').hidden") is True  # none
        assert b.errors() == [], [e['params'] for e in b.errors()]
    with LabelStore(store_path) as store:
        (event,) = store.events(kind="human")
    assert event.shown == shown_digest(query, text, "Why cats purr")


def test_on_a_phone_the_finished_panel_scrolls_into_view(browser, tmp_path):
    """At 390 px a person reads down the page and taps the grade buttons; when the last
    grade is in, the finished panel (summary, next commands, stop button), which sits above
    the pair, is scrolled into view below the sticky header."""
    store_path = make_store(tmp_path / "labels.sqlite")
    b = browser
    b.send("Emulation.setDeviceMetricsOverride", width=390, height=844, deviceScaleFactor=1,
           mobile=True)
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator",
                       "alice") as (url, _, _):
        b.open(url)
        for position in range(1, len(PAIRS) + 1):
            b.wait_for(f"{TEXT.format('position')} === 'pair {position} of 10'")
            b.eval("window.scrollTo(0, document.documentElement.scrollHeight)")  # read down
            b.eval("document.querySelector('#scale button[data-grade=\"1\"]').click()")
            b.wait_for(SAVED.format(position, 1))
        b.wait_for("!document.getElementById('finished').hidden && "
                   "document.getElementById('summary').dataset.filled === '1'")
        # smooth or not, the scroll has settled once the panel's place stops changing
        b.wait_for("(() => { const t = document.getElementById('finished')"
                   ".getBoundingClientRect().top; const same = t === window.__lastTop; "
                   "window.__lastTop = t; return same; })()")
        top = b.eval("document.getElementById('finished').getBoundingClientRect().top")
        header = b.eval("document.querySelector('header').getBoundingClientRect().bottom")
        assert header - 1 <= top < 844 / 3, (top, header)
        b.screenshot(ARTIFACTS / "assess-finished-in-view-390px.png", 390, 844)
        assert b.errors() == [], [e["params"] for e in b.errors()]
