"""The labeller against a local OpenAI-compatible server, driven by the real openai client.

Every scenario asserts the exact number of HTTP calls the server received.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading

import pytest

from reljudge.errors import LLMError
from reljudge.judge import JudgeConfig, Labeller, label_pairs
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI, Reply
from reljudge.testing.fake_openai import chat_reply, grade_logprobs
from tests.fork_support import python, run_python

QUERIES = {"q1": "what is the maternity leave policy?", "q2": "how do I claim expenses?"}
PASSAGES = {f"d{i}": {"text": f"passage number {i} about leave and expenses"} for i in range(6)}
PAIRS = [("q1", "d0"), ("q1", "d1"), ("q2", "d2")]
KEY = "sk-test-DO-NOT-LEAK-4242"


def config(server, tmp_path, **kw) -> JudgeConfig:
    values = dict(model="fake-model", base_url=server.base_url, api_key=KEY,
                  cache_dir=tmp_path / "cache", timeout=2.0, backoff=0.01, max_attempts=4)
    values.update(kw)
    return JudgeConfig(**values)


def run(server, tmp_path, pairs=PAIRS, sink=None, passages=PASSAGES, **kw):
    return label_pairs(config(server, tmp_path, **kw), pairs, QUERIES, passages, sink)


def script(*replies):
    """A handler that plays these replies in order, then answers 'final score: 1'."""
    queue = list(replies)
    lock = threading.Lock()

    def handler(req):
        with lock:
            return queue.pop(0) if queue else Reply.text("final score: 1")
    return handler


def test_free_text_answers_are_graded_with_one_call_each(tmp_path):
    with FakeOpenAI(lambda r: Reply.text("refers to 2 topics.\n##final score: 3")) as s:
        report = run(s, tmp_path)
    assert s.calls == 3 and report.calls == 3 and report.labelled == 3
    assert report.grades() == {p: 3 for p in PAIRS}


def test_json_prompt_sends_a_schema_with_grade_enum(tmp_path):
    with FakeOpenAI(lambda r: Reply.text('{"reason": "on topic", "grade": 2}')) as s:
        report = run(s, tmp_path, pairs=PAIRS[:1], prompt="json")
        body = s.requests[0].body
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["grade"]["enum"] == [0, 1, 2, 3]
    assert s.calls == 1 and report.grades() == {PAIRS[0]: 2}


def test_rerun_pays_nothing_and_identical_requests_are_sent_once(tmp_path):
    same = {"d0": {"text": "same words"}, "d1": {"text": "same words"}, "d2": {"text": "x"}}
    pairs = [("q1", "d0"), ("q1", "d1"), ("q2", "d2")]
    with FakeOpenAI(lambda r: Reply.text("final score: 2", delay=0.2)) as s:
        first = run(s, tmp_path, pairs=pairs, passages=same)
        assert s.calls == 2  # d0 and d1 render identically: one call in flight serves both
        second = run(s, tmp_path, pairs=pairs, passages=same)
        assert s.calls == 2
    assert first.labelled == 3 and second.calls == 0 and second.cached == 3


def test_unreadable_answer_is_re_asked_once_then_recorded_as_failure(tmp_path):
    with FakeOpenAI(script(Reply.text("It relates to 3 subtopics."),
                           Reply.text("final score: 2"))) as s:
        ok = run(s, tmp_path, pairs=PAIRS[:1])
    assert s.calls == 2 and ok.grades() == {PAIRS[0]: 2}
    assert "re-asked" in ok.events[0].raw
    with FakeOpenAI(lambda r: Reply.text("I cannot decide, maybe 2 or 3.")) as s:
        bad = run(s, tmp_path / "b", pairs=PAIRS[:1])
    assert s.calls == 2 and bad.failed == 1 and bad.labelled == 0
    e = bad.events[0]
    assert e.grade is None and "no final score marker" in e.failure
    assert "maybe 2 or 3" in e.raw


def test_429_with_retry_after_is_honoured(tmp_path):
    with FakeOpenAI(script(Reply.error(429, "slow down", {"retry-after": "0.5"}))) as s:
        report = run(s, tmp_path, pairs=PAIRS[:1])
        gap = s.requests[1].at - s.requests[0].at
    assert s.calls == 2 and report.labelled == 1
    assert gap >= 0.45


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_requests_carry_the_sdk_headers_and_the_key(tmp_path, transport):
    with FakeOpenAI(lambda r: Reply.text("final score: 1")) as s:
        run(s, tmp_path, pairs=PAIRS[:1], transport=transport)
    req = s.requests[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["user-agent"].startswith("AsyncOpenAI/Python")
    assert req.headers["content-type"] == "application/json"
    assert req.body["model"] == "fake-model" and req.body["temperature"] == 0


FAULTS = {"500": (Reply.error(500), "http_status", "HTTP 500: error"),
          "503": (Reply.error(503), "http_status", "HTTP 503: error"),
          "timeout": (Reply.text("final score: 3", delay=3.0), "timeout",
                      "timeout: no answer within 0.5 s"),
          "reset": (Reply(drop=True), "connection", "connection error: ")}
#: a timeout waits out 0.5 s per attempt: slow; the other faults are the fast set's
FAULT_PARAMS = [pytest.param(f, marks=pytest.mark.slow) if f == "timeout" else f for f in FAULTS]


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
@pytest.mark.parametrize("fault", FAULT_PARAMS)
def test_transient_faults_are_retried(tmp_path, fault, transport):
    with FakeOpenAI(script(FAULTS[fault][0], Reply.text("final score: 3"))) as s:
        # a timeout waits out 1 s, not the default 2 s; the answer that follows comes at once
        report = run(s, tmp_path, pairs=PAIRS[:1], transport=transport, timeout=1.0)
        assert s.calls == 2
    assert report.grades() == {PAIRS[0]: 3} and report.failed == 0


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
@pytest.mark.parametrize("fault", FAULT_PARAMS)
def test_both_transports_record_the_same_failure_reasons(tmp_path, fault, transport):
    reply, kind, reason = FAULTS[fault]
    with FakeOpenAI(lambda r: reply) as s:
        report = run(s, tmp_path, pairs=PAIRS[:1], max_attempts=2, transport=transport,
                     timeout=0.5)
    assert s.calls == 2 and report.failed == 1
    event = report.events[0]
    assert event.failure_kind == kind and event.failure.startswith(reason)
    assert event.failure.endswith("(gave up after 2 attempts)")
    assert report.failure_reasons == {kind: 1}


def test_exhausted_attempts_are_a_recorded_failure_not_a_dropped_row(tmp_path):
    with FakeOpenAI(lambda r: Reply.error(503, "overloaded")) as s:
        report = run(s, tmp_path, pairs=PAIRS[:1], max_attempts=3)
    assert s.calls == 3
    assert report.failed == 1
    assert report.events[0].failure == "HTTP 503: overloaded (gave up after 3 attempts)"


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
@pytest.mark.parametrize("status", [400, 422])
def test_client_errors_are_not_retried(tmp_path, status, transport):
    with FakeOpenAI(lambda r: Reply.error(status, "context too long")) as s:
        report = run(s, tmp_path, pairs=PAIRS[:1], transport=transport)
    assert s.calls == 1 and report.failed == 1
    assert report.events[0].failure == f"HTTP {status}: context too long"


def test_auth_error_stops_the_job_with_one_call(tmp_path):
    with FakeOpenAI(lambda r: Reply.error(401, "bad key")) as s, \
            pytest.raises(LLMError, match="HTTP 401"):
        run(s, tmp_path, concurrency=1)
    assert s.calls == 1


def test_content_filter_refusal_is_a_failure_without_retry(tmp_path):
    refusal = Reply(200, chat_reply(None, finish_reason="content_filter"))
    with FakeOpenAI(lambda r: refusal) as s:
        report = run(s, tmp_path, pairs=PAIRS[:1])
    assert s.calls == 1 and report.events[0].failure == "refused: content_filter"


def test_logprobs_give_grade_probabilities_and_expected_grade(tmp_path):
    text = "final score: 2"
    lp = grade_logprobs(text, {"2": 0.6, "3": 0.3, "1": 0.1})
    with FakeOpenAI(lambda r: Reply(200, chat_reply(text, logprobs=lp))) as s:
        report = run(s, tmp_path, pairs=PAIRS[:1], logprobs=True)
        assert s.requests[0].body["logprobs"] is True
    e = report.events[0]
    assert e.grade == 2 and e.probs == pytest.approx((0.0, 0.1, 0.6, 0.3))
    assert e.expected_grade == pytest.approx(0.1 + 1.2 + 0.9)


def test_repeats_are_separate_calls_and_aggregate_by_majority(tmp_path):
    answers = itertools.cycle(["final score: 1", "final score: 3", "final score: 3"])
    lock = threading.Lock()

    def handler(req):
        with lock:
            return Reply.text(next(answers))
    with FakeOpenAI(handler) as s:
        report = run(s, tmp_path, pairs=PAIRS[:1], repeats=3, concurrency=1)
    assert s.calls == 3 and sorted(e.repeat for e in report.events) == [0, 1, 2]
    assert report.grades() == {PAIRS[0]: 3}


def test_budget_stops_new_calls_and_a_rerun_continues(tmp_path):
    from reljudge.judge.budget import prompt_tokens_bound

    pairs = [("q1", f"d{i}") for i in range(6)]
    reply = Reply(200, chat_reply("final score: 2", prompt_tokens=50, completion_tokens=5))
    with FakeOpenAI(lambda r: reply) as s:
        store = LabelStore(tmp_path / "s.sqlite")
        labeller = Labeller(config(s, tmp_path))
        worst = prompt_tokens_bound(labeller.messages("q1", "d0", QUERIES, PASSAGES)) + 600
        # $1 per million tokens, each answer costs 55 tokens: 2 answers plus one worst case
        # fit, a third answer plus a worst case does not
        budget = (worst + 2 * 55 + 10) / 1e6
        first = run(s, tmp_path, pairs=pairs, sink=store, concurrency=1, max_cost=budget,
                    price_in=1.0, price_out=1.0)
        assert first.stop_reason == "budget" and s.calls == 3 and first.not_sent == 3
        assert first.cost == pytest.approx(3 * 55 / 1e6) and first.cost <= budget
        second = run(s, tmp_path, pairs=pairs, sink=store, concurrency=1, price_in=1.0,
                     price_out=1.0)
        assert s.calls == 6 and second.already_done == first.labelled
        assert len(store.judged_pairs()) == 6
        assert store.spend()[0][1:3] == (2, 6)  # two runs, six paid calls in the ledger
        store.close()


def test_failures_and_grades_reach_the_store_with_provenance(tmp_path):
    with FakeOpenAI(script(Reply.error(400, "nope"))) as s, \
            LabelStore(tmp_path / "s.sqlite") as store:
        run(s, tmp_path, sink=store, concurrency=1)
        events = list(store.events())
    assert len(events) == 3 and sum(e.grade is None for e in events) == 1
    judge = events[0].source_name
    assert judge.startswith("fake-model/umbrela@1#")
    assert events[0].meta["prompt_hash"] and events[0].meta["endpoint"] == s.base_url
    failed = [e for e in events if e.grade is None][0]
    assert failed.failure_kind == "http_status" and failed.failure == "HTTP 400: nope"


def test_the_api_key_is_never_written_anywhere(tmp_path):
    with FakeOpenAI(script(Reply.error(500), Reply.text("x"),
                           Reply.text("final score: 1"))) as s:
        with LabelStore(tmp_path / "s.sqlite") as store:
            report = run(s, tmp_path, sink=store)
        assert s.requests[0].headers.get("authorization") == f"Bearer {KEY}"
    blob = json.dumps(report.summary(), default=str) + repr(report.events)
    assert KEY not in blob and KEY not in repr(config(s, tmp_path))
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_missing_texts_are_reported_before_any_call(tmp_path):
    from reljudge.errors import InputError

    with FakeOpenAI() as s, pytest.raises(InputError, match="passage id"):
        run(s, tmp_path, pairs=[("q1", "nope")])
    assert s.calls == 0


def test_dry_run_counts_store_and_cache_hits(tmp_path):
    with FakeOpenAI() as s:
        cfg = config(s, tmp_path, price_in=1.0, price_out=2.0)
        run(s, tmp_path, pairs=PAIRS[:1])
        est = Labeller(cfg).quote(PAIRS, QUERIES, PASSAGES)
        assert s.calls == 1
    assert (est.items, est.cached, est.to_send) == (3, 1, 2)
    assert est.tokens_in > 0 and est.cost > 0


KILL_SCRIPT = """
import sys
from reljudge.judge import JudgeConfig, label_pairs
from reljudge.store import LabelStore
base_url, cache, db = sys.argv[1:4]
pairs = [("q1", f"d{i}") for i in range(60)]
passages = {f"d{i}": f"text {i}" for i in range(60)}
cfg = JudgeConfig(model="m", base_url=base_url, api_key="k", cache_dir=cache, concurrency=4)
label_pairs(cfg, pairs, {"q1": "query"}, passages, LabelStore(db))
"""


@pytest.mark.slow  # SIGKILL, then a rerun
def test_kill_9_mid_run_then_rerun_repeats_no_paid_call(tmp_path):
    with FakeOpenAI(lambda r: Reply.text("final score: 2", delay=0.05)) as s:
        args = [s.base_url, str(tmp_path / "cache"), str(tmp_path / "s.sqlite")]
        proc = python(KILL_SCRIPT, *args)
        s.wait_for_calls(20, 30)
        proc.kill()
        proc.wait()
        killed_at = s.calls
        assert 20 <= killed_at < 60, "the run finished before it could be killed"
        rerun = run_python(KILL_SCRIPT, *args, timeout=60)
        assert rerun.returncode == 0, rerun.stderr
        asked = [r.user_text for r in s.requests]
    answered_before_kill = killed_at - 4  # at most `concurrency` calls were cut off mid-flight
    assert len(asked) <= 60 + 4
    duplicates = len(asked) - len(set(asked))
    assert duplicates <= killed_at - answered_before_kill  # only calls killed in flight repeat
    with LabelStore(tmp_path / "s.sqlite") as store:
        assert len(store.judged_pairs()) == 60
        assert store.count() == 60  # no pair labelled twice


@pytest.mark.parametrize("body", ["this is not json", {"choices": []}, {"object": "error"}])
def test_malformed_response_bodies_are_recorded_failures(tmp_path, body):
    with FakeOpenAI(lambda r: Reply(200, body)) as s:
        report = run(s, tmp_path, pairs=PAIRS[:1], max_attempts=2)
    assert report.failed == 1 and report.labelled == 0
    assert report.events[0].grade is None and report.events[0].failure


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_http_proxy_from_the_environment_is_used(tmp_path, monkeypatch, transport):
    """HTTP_PROXY names the fake server: the request arrives there in proxy form."""
    for var in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(var, raising=False)
    with FakeOpenAI(lambda r: Reply.text("final score: 2")) as s:
        monkeypatch.setenv("HTTP_PROXY", s.base_url.rsplit("/v1", 1)[0])
        cfg = JudgeConfig(model="m", base_url="http://judge.example.invalid/v1", api_key=KEY,
                          cache_dir=tmp_path / "cache", transport=transport, max_attempts=1)
        report = label_pairs(cfg, PAIRS[:1], QUERIES, PASSAGES)
    assert report.grades() == {PAIRS[0]: 2}
    assert s.requests[0].path == "http://judge.example.invalid/v1/chat/completions"


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_no_proxy_bypasses_the_proxy(tmp_path, monkeypatch, transport):
    for var in ("ALL_PROXY", "all_proxy", "http_proxy", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with FakeOpenAI(lambda r: Reply.text("final score: 2")) as s:
        report = run(s, tmp_path, pairs=PAIRS[:1], transport=transport, max_attempts=1)
    assert report.grades() == {PAIRS[0]: 2} and s.requests[0].path == "/v1/chat/completions"


def test_a_single_allowed_attempt_is_not_retried(tmp_path):
    with FakeOpenAI(lambda r: Reply.error(503, "overloaded")) as s:
        report = run(s, tmp_path, pairs=PAIRS[:1], max_attempts=1)
    assert s.calls == 1
    assert report.events[0].failure == "HTTP 503: overloaded (gave up after 1 attempt)"


@pytest.mark.slow  # waits out 0.2 + 0.4 + 0.8 s (tests/judge/test_retry.py: the waits chosen)
def test_backoff_grows_between_attempts_without_retry_after(tmp_path):
    with FakeOpenAI(lambda r: Reply.error(500)) as s:
        run(s, tmp_path, pairs=PAIRS[:1], max_attempts=4, backoff=0.2)
    gaps = [b.at - a.at for a, b in zip(s.requests, s.requests[1:], strict=False)]
    assert len(gaps) == 3
    # exponential: at least 0.2 * 2**(k-1) (a busy machine only makes a gap longer; the
    # jitter's upper bound is the pure Wait.after's test)
    for k, gap in enumerate(gaps, 1):
        assert gap >= 0.2 * 2 ** (k - 1) - 0.05, (k, gaps)


def test_progress_bar_shows_every_item_though_it_redraws_at_most_20_times_a_second():
    from reljudge.judge.progress import Progress as _Progress
    from reljudge.judge.report import LabelReport

    report = LabelReport("j", pairs=500)
    bar = _Progress(500, enabled=True)
    with bar:
        for i in range(500):
            report.labelled += 1
            report.cost = i / 100
            bar.advance(report)
    task = bar.bar.tasks[0]
    assert task.completed == 500 and task.fields["spend"] == 4.99


def test_two_jobs_of_one_labeller_at_once_each_record_the_texts_it_was_shown(tmp_path):
    import asyncio

    from reljudge.labels import shown_digest

    texts = {which: {d: {"text": f"{which} text of {d}"} for d in PASSAGES}
             for which in ("first", "second")}
    with FakeOpenAI(lambda r: Reply.text("final score: 2", delay=0.2)) as s:
        lab = Labeller(config(s, tmp_path))

        async def both():
            return await asyncio.gather(*(lab.label(PAIRS, QUERIES, texts[w]) for w in texts))

        reports = asyncio.run(both())
    assert s.calls == 2 * len(PAIRS)
    for which, report in zip(texts, reports, strict=True):
        assert {(e.qid, e.docid): e.shown for e in report.events} == {
            (q, d): shown_digest(QUERIES[q], texts[which][d]["text"]) for q, d in PAIRS}


def test_a_labelling_job_sends_the_sdks_version_and_never_imports_the_sdk(tmp_path,
                                                                          monkeypatch):
    """The fast twin of the next test, in this process: with the SDK taken out of sys.modules
    (and the version's cache emptied), a job through aiohttp (the default) asks for no
    ``openai`` module, and its user agent still names the installed SDK's version."""
    import importlib.abc
    import importlib.metadata

    from reljudge.judge.http.endpoints import openai_version

    asked: list[str] = []

    class Watch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] == "openai":
                asked.append(name)
            return None  # the usual finders go on

    for name in [m for m in sys.modules if m.partition(".")[0] == "openai"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [Watch(), *sys.meta_path])
    openai_version.cache_clear()
    with FakeOpenAI(lambda r: Reply.text("final score: 1")) as s:
        report = run(s, tmp_path)
        agent = s.requests[0].headers["user-agent"]
    assert report.labelled == len(PAIRS) and asked == []
    assert agent.startswith(f"AsyncOpenAI/Python {importlib.metadata.version('openai')} "
                            "reljudge/")


@pytest.mark.slow  # a fresh interpreter (the fast twin above checks the same in this process)
def test_the_user_agent_names_the_installed_sdk_and_a_job_never_imports_it(tmp_path):
    """The header says the SDK's own version, read from its metadata: a labelling job that
    sends through aiohttp (the default) never pays the SDK's import (about 1.2 s of CPU)."""
    import openai

    from reljudge.judge.http.endpoints import openai_version

    assert openai_version() == openai.__version__
    code = ("import sys\nfrom reljudge.judge import JudgeConfig, label_pairs\n"
            "config = JudgeConfig(model='fake-model', base_url=sys.argv[1], api_key='k',"
            " cache_dir=sys.argv[2])\n"
            f"report = label_pairs(config, {PAIRS!r}, {QUERIES!r}, {PASSAGES!r})\n"
            "print(report.labelled, 'openai' in sys.modules)")
    with FakeOpenAI(lambda r: Reply.text("final score: 1")) as s:
        done = subprocess.run([sys.executable, "-c", code, s.base_url, str(tmp_path / "cache")],
                              capture_output=True, text=True, check=True)
        agent = s.requests[0].headers["user-agent"]
    assert done.stdout.split() == [str(len(PAIRS)), "False"]
    assert agent.startswith(f"AsyncOpenAI/Python {openai.__version__} reljudge/")
