"""The labeller against unhealthy endpoints: failure kinds, fail-fast, breaker, exit codes,
TLS, budget as a cap, resolved endpoints, capability fall-back, proxies.

Every scenario runs the real transports against a real local server (reljudge.testing).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import threading

import pytest

from reljudge.cli import main
from reljudge.errors import ConfigError, LLMError
from reljudge.judge import JudgeConfig, Labeller, label_pairs
from reljudge.judge.failures import CallFailed
from reljudge.judge.http.breaker import CircuitBreaker
from reljudge.labels import FailureKind
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI, Reply, chat_reply
from reljudge.testing.fake_openai import rejecting

QUERIES = {"q1": "what is the maternity leave policy?", "q2": "how do I claim expenses?"}
PASSAGES = {f"d{i}": {"text": f"passage number {i} about leave and expenses"}
            for i in range(40)}
PAIRS = [("q1", "d0"), ("q1", "d1"), ("q2", "d2")]
KEY = "sk-test-key"


def config(base_url, tmp_path, **kw) -> JudgeConfig:
    values = dict(model="fake-model", base_url=base_url, api_key=KEY,
                  cache_dir=tmp_path / "cache", timeout=2.0, backoff=0.01, max_attempts=4)
    values.update(kw)
    return JudgeConfig(**values)


def run(base_url, tmp_path, pairs=PAIRS, sink=None, **kw):
    return label_pairs(config(base_url, tmp_path, **kw), pairs, QUERIES, PASSAGES, sink)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: nothing listens there


def write_inputs(tmp_path, n=3):
    (tmp_path / "q.tsv").write_text("q1\tmaternity leave\n")
    (tmp_path / "p.tsv").write_text("".join(f"d{i}\tpassage {i}\n" for i in range(n)))
    (tmp_path / "pairs.txt").write_text("".join(f"q1 d{i}\n" for i in range(n)))
    return ["--queries", str(tmp_path / "q.tsv"), "--passages", str(tmp_path / "p.tsv"),
            "--pairs", str(tmp_path / "pairs.txt"), "--model", "m", "--quiet",
            "--cache-dir", str(tmp_path / "cache"), "--backoff", "0.01"]


# -- fail fast -----------------------------------------------------------------------------
def test_closed_port_exits_2_before_any_pair_naming_the_url(tmp_path, capsys):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    code = main(["label", *write_inputs(tmp_path, 50), "--base-url", url])
    err = capsys.readouterr().err
    assert code == 2
    assert url in err and "connection" in err
    assert err.rstrip().endswith("0 labels were saved before it stopped")  # no pair was sent


def test_no_key_for_openai_is_refused_before_any_request(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code = main(["label", *write_inputs(tmp_path)])
    assert code == 2
    assert "needs an API key" in capsys.readouterr().err


def test_a_rejected_key_stops_the_job_after_one_call(tmp_path):
    with FakeOpenAI(lambda r: Reply.error(401, "bad key")) as s:
        with pytest.raises(LLMError, match="HTTP 401"):
            run(s.base_url, tmp_path)
        # the pre-flight GET passes on this server (it answers any GET); the first call goes
        # alone and its 401 is fatal: one call, no retries, though 16 workers were ready
        assert s.calls == 1 and len(s.gets) == 1


def test_always_500_stops_via_the_breaker_with_the_cause(tmp_path, capsys):
    with FakeOpenAI(lambda r: Reply.error(500, "model crashed")) as s:
        code = main(["label", *write_inputs(tmp_path, 30), "--base-url", s.base_url,
                     "--max-attempts", "2", "--breaker-after", "3", "--concurrency", "1"])
        calls = s.calls
    err = capsys.readouterr().err
    assert code == 2 and "model crashed" in err and s.base_url in err
    assert calls == 3  # before any answer every attempt counts: three identical, stop


def test_after_a_first_answer_the_breaker_counts_calls_not_attempts(tmp_path, capsys):
    answered = threading.Event()

    def handler(req):
        if answered.is_set():
            return Reply.error(500, "model crashed")
        answered.set()
        return Reply.text("final score: 1")

    with FakeOpenAI(handler) as s:
        code = main(["label", *write_inputs(tmp_path, 30), "--base-url", s.base_url,
                     "--max-attempts", "2", "--breaker-after", "3", "--concurrency", "1"])
        calls = s.calls
    assert code == 2 and "model crashed" in capsys.readouterr().err
    assert calls == 1 + 3 * 2  # one answer, then three calls of two attempts each


def test_breaker_counts_identical_errors_and_endpoint_failures_only():
    def fail(kind, detail="x", status=None):
        return CallFailed(kind, detail, status=status)

    b = CircuitBreaker(3)
    assert not b.failure(fail(FailureKind.HTTP_STATUS, "a", 400))
    assert not b.failure(fail(FailureKind.HTTP_STATUS, "b", 400))  # different: streak 1
    assert not b.failure(fail(FailureKind.HTTP_STATUS, "b", 400))
    assert b.failure(fail(FailureKind.HTTP_STATUS, "b", 400))
    b = CircuitBreaker(3)
    assert not b.failure(fail(FailureKind.CONNECTION, "refused"))
    assert not b.failure(fail(FailureKind.TLS, "bad cert"))
    b.success()
    assert not b.failure(fail(FailureKind.CONNECTION, "refused"))
    assert not b.failure(fail(FailureKind.CONNECTION, "reset"))
    assert b.failure(fail(FailureKind.CONNECTION, "refused again"))


# -- exit codes and summaries ----------------------------------------------------------------
def test_finished_with_failures_exits_4_and_lists_kinds_with_an_example(tmp_path, capsys):
    def handler(req):
        if "passage 1" in req.user_text:
            return Reply.error(400, "context too long")
        if "passage 2" in req.user_text:
            return Reply(200, chat_reply(None, finish_reason="content_filter"))
        return Reply.text("final score: 2")

    with FakeOpenAI(handler) as s:
        code = main(["label", *write_inputs(tmp_path, 4), "--base-url", s.base_url])
    out = capsys.readouterr().out
    assert code == 4
    assert "1  http_status  e.g. q1 d1: HTTP 400: context too long" in out
    assert "1  refused  e.g. q1 d2: refused: content_filter" in out


def test_every_pair_graded_exits_0(tmp_path):
    with FakeOpenAI(lambda r: Reply.text("final score: 2")) as s:
        assert main(["label", *write_inputs(tmp_path), "--base-url", s.base_url]) == 0


# -- TLS -------------------------------------------------------------------------------------
def certificate(folder, name: str, *subject: str) -> tuple:
    """A self-signed certificate and its key (PEM files in ``folder``): openssl req ``subject``."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    cert, key = folder / f"{name}.pem", folder / f"{name}-key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    *subject, "-keyout", str(key), "-out", str(cert)], check=True,
                   capture_output=True)
    return cert, key


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory):
    """The server's certificate for 127.0.0.1 and its key (one per module: tests only read
    them)."""
    return certificate(tmp_path_factory.mktemp("tls"), "cert", "-subj", "/CN=127.0.0.1",
                       "-addext", "subjectAltName=IP:127.0.0.1")


@pytest.fixture(scope="module")
def client_certificate(tmp_path_factory):
    """A client's certificate and its key (one per module: tests only read them)."""
    return certificate(tmp_path_factory.mktemp("tls"), "client", "-subj", "/CN=judge-client")


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_self_signed_https_is_fatal_with_detail_after_one_attempt(tmp_path, self_signed,
                                                                   transport):
    from reljudge.judge.http.client import ChatClient
    from reljudge.judge.http.endpoints import Endpoint

    cert, key = self_signed
    with FakeOpenAI(certfile=str(cert), keyfile=str(key)) as s:
        with pytest.raises(LLMError, match="tls: TLS error: .*certificate") as e:
            run(s.base_url, tmp_path, transport=transport)
        assert s.base_url in str(e.value) and s.calls == 0

        async def one_call():
            client = ChatClient(Endpoint.resolve(s.base_url, KEY, "m"), max_attempts=4,
                                backoff=0.01, transport=transport)
            try:
                await client.complete([{"role": "user", "content": "hi"}], {})
            finally:
                await client.close()

        with pytest.raises(CallFailed) as failed:
            asyncio.run(one_call())
        assert failed.value.kind is FailureKind.TLS and failed.value.attempts == 1
        assert failed.value.fatal


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
@pytest.mark.slow  # makes a CA and a certificate (the self-signed refusal stays fast)
def test_ca_bundle_makes_a_self_signed_endpoint_trusted(tmp_path, self_signed, transport):
    cert, key = self_signed
    with FakeOpenAI(lambda r: Reply.text("final score: 3"), certfile=str(cert),
                    keyfile=str(key)) as s:
        report = run(s.base_url, tmp_path, transport=transport, ca_bundle=cert)
    assert report.grades() == {p: 3 for p in PAIRS}


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
@pytest.mark.slow  # makes a CA, a server and a client certificate
def test_client_certificate_for_mutual_tls(tmp_path, self_signed, client_certificate,
                                           transport):
    cert, key = self_signed
    ccert, ckey = client_certificate
    with FakeOpenAI(lambda r: Reply.text("final score: 1"), certfile=str(cert),
                    keyfile=str(key), client_ca=str(ccert)) as s:
        report = run(s.base_url, tmp_path, transport=transport, ca_bundle=cert,
                     client_cert=ccert, client_key=ckey)
        assert report.labelled == 3
        with pytest.raises(LLMError, match="stopped: https://127.0.0.1"):
            run(s.base_url, tmp_path / "other", transport=transport, ca_bundle=cert)
        assert s.calls == 3


# -- retry policy ------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["soon", "", "-5", "nan", "Wed, 99 Foo 2015 07:28:00 GMT"])
def test_a_garbage_retry_after_is_ignored_and_the_pair_graded(tmp_path, value):
    replies = [Reply.error(429, "slow down", {"retry-after": value})]
    lock = threading.Lock()

    def handler(req):
        with lock:
            return replies.pop(0) if replies else Reply.text("final score: 2")

    with FakeOpenAI(handler) as s:
        report = run(s.base_url, tmp_path, pairs=PAIRS[:1])
        assert s.calls == 2
    assert report.grades() == {PAIRS[0]: 2}


@pytest.mark.parametrize(("status", "should", "calls"),
                         [(503, "false", 1), (400, "true", 2), (500, None, 2)])
def test_x_should_retry_is_honoured(tmp_path, status, should, calls):
    headers = {"x-should-retry": should} if should else {}
    replies = [Reply.error(status, "hmm", headers)]
    lock = threading.Lock()

    def handler(req):
        with lock:
            return replies.pop(0) if replies else Reply.text("final score: 2")

    with FakeOpenAI(handler) as s:
        run(s.base_url, tmp_path, pairs=PAIRS[:1])
        assert s.calls == calls


# -- resume by kind --------------------------------------------------------------------------
def test_resume_decides_by_kind_and_stats_show_only_current_failures(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    state = {"down": True}

    def handler(req):
        if "number 0" in str(req.body["messages"]):
            return Reply.text("I cannot say")  # unparseable, also when re-asked
        if state["down"] and "number 1" in req.user_text:
            return Reply.error(503, "overloaded")
        return Reply.text("final score: 1")

    with FakeOpenAI(handler) as s, LabelStore(db) as store:
        store.add_queries(QUERIES)
        store.add_passages(PASSAGES)
        first = run(s.base_url, tmp_path, sink=store, max_attempts=1)
        assert first.failure_reasons == {"unparseable": 1, "http_status": 1}
        state["down"] = False
        before = s.calls
        second = run(s.base_url, tmp_path, sink=store)
        assert s.calls == before + 1  # only the failed call is asked again
        assert second.labelled == 1 and second.already_done == 2
        assert second.already_failed == 1 and not second.complete  # d0 has no grade yet
        assert [(k, d) for *_, k, d in store.current_failures()][0][0] == "unparseable"
    assert main(["labels", "stats", "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert "current failures (pairs whose latest judgment failed): 1" in out
    assert "1  unparseable  e.g. q1 d0" in out
    assert "failed judgments in the history (later answered ones included): 2" in out
    assert "spend per judge" in out


# -- budget -----------------------------------------------------------------------------------
def test_budget_at_concurrency_16_is_never_exceeded(tmp_path):
    from reljudge.judge.budget import prompt_tokens_bound

    pairs = [("q1", f"d{i}") for i in range(40)]
    reply = Reply(200, chat_reply("final score: 2", prompt_tokens=300, completion_tokens=40),
                  delay=0.05)
    with FakeOpenAI(lambda r: reply) as s:
        cfg = config(s.base_url, tmp_path, concurrency=16, price_in=1.0, price_out=1.0,
                     max_cost=0.0, max_tokens=100)
        worst = (prompt_tokens_bound(Labeller(cfg).messages("q1", "d0", QUERIES, PASSAGES))
                 + 100) / 1e6
        budget = 5 * worst
        report = run(s.base_url, tmp_path, pairs=pairs, concurrency=16, price_in=1.0,
                     price_out=1.0, max_cost=budget, max_tokens=100)
        assert s.calls == report.calls
    assert report.cost <= budget and report.stop_reason == "budget"
    assert report.calls >= 5  # released reservations let more calls start than 5
    assert report.calls * 340 / 1e6 == pytest.approx(report.cost)


def test_unknown_price_with_a_budget_is_refused_up_front(tmp_path):
    with FakeOpenAI() as s:
        with pytest.raises(ConfigError, match="no price is known"):
            run(s.base_url, tmp_path, max_cost=1.0)
        assert s.calls == 0 and not s.gets
        report = run(s.base_url, tmp_path, max_cost=1.0, price_in=0.0, price_out=0.0)
    assert report.labelled == 3


def test_max_total_cost_caps_spend_across_runs(tmp_path):
    reply = Reply(200, chat_reply("final score: 2", prompt_tokens=1000, completion_tokens=0))
    pairs = [("q1", f"d{i}") for i in range(10)]
    with FakeOpenAI(lambda r: reply) as s, LabelStore(tmp_path / "s.sqlite") as store:
        kw = dict(sink=store, concurrency=1, price_in=1.0, price_out=0.0, max_tokens=10)
        run(s.base_url, tmp_path, pairs=pairs[:3], **kw)
        assert store.total_spend() == pytest.approx(0.003)
        # 3 paid before; the cap leaves room for 2 more answers of $0.001 plus a worst case
        report = run(s.base_url, tmp_path, pairs=pairs, max_total_cost=0.0054, **kw)
        assert report.stop_reason == "budget" and report.calls == 2
        assert store.total_spend() <= 0.0054
        with pytest.raises(ConfigError, match="--store"):
            run(s.base_url, tmp_path, pairs=pairs, max_total_cost=1.0, price_in=1.0)


# -- the resolved endpoint ---------------------------------------------------------------------
def test_two_endpoints_switched_by_environment_share_no_cache(tmp_path, monkeypatch):
    with FakeOpenAI(lambda r: Reply.text("final score: 1")) as a, \
            FakeOpenAI(lambda r: Reply.text("final score: 3")) as b:
        monkeypatch.setenv("OPENAI_BASE_URL", a.base_url)
        first = run(None, tmp_path)
        monkeypatch.setenv("OPENAI_BASE_URL", b.base_url)
        second = run(None, tmp_path)
        assert a.calls == 3 and b.calls == 3
    assert set(first.grades().values()) == {1} and set(second.grades().values()) == {3}
    assert second.events[0].meta["endpoint"] == b.base_url and second.cached == 0


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_all_proxy_is_honoured(tmp_path, monkeypatch, transport):
    for var in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "HTTPS_PROXY",
                "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    with FakeOpenAI(lambda r: Reply.text("final score: 2")) as proxy:
        monkeypatch.setenv("ALL_PROXY", proxy.base_url.rsplit("/v1", 1)[0])
        report = run("http://judge.example.invalid/v1", tmp_path, pairs=PAIRS[:1],
                     transport=transport)
    assert report.grades() == {PAIRS[0]: 2}
    assert proxy.requests[0].path == "http://judge.example.invalid/v1/chat/completions"


def test_azure_query_is_kept_and_the_key_sent_as_api_key(tmp_path):
    from reljudge.judge.http.endpoints import Endpoint

    e = Endpoint.resolve("https://x.openai.azure.com/openai/deployments/gpt4o?api-version=2024-10-21",
                         "k", "m")
    assert e.url("chat/completions") == ("https://x.openai.azure.com/openai/deployments/"
                                         "gpt4o/chat/completions?api-version=2024-10-21")
    assert e.headers()["api-key"] == "k" and "Authorization" not in e.headers()
    with pytest.raises(ConfigError, match="api-version"):
        Endpoint.resolve("https://x.openai.azure.com/openai/deployments/gpt4o", "k", "m")
    with FakeOpenAI(lambda r: Reply.text("final score: 2")) as s:
        run(s.base_url + "?api-version=7", tmp_path, pairs=PAIRS[:1])
        assert s.requests[0].path == "/v1/chat/completions?api-version=7"


# -- capability fall-back -----------------------------------------------------------------------
JSON_ANSWER = '{"reason": "on topic", "grade": 2}'


@pytest.mark.parametrize(("rejected", "prompt", "extra", "sent_after"), [
    (["json_schema"], "json", {}, {"response_format": {"type": "json_object"}}),
    (["json_schema", "json_object"], "json", {}, {"response_format": None}),
    (["logprobs"], "umbrela", {"logprobs": True}, {"logprobs": None, "top_logprobs": None}),
    (["seed"], "umbrela", {"seed": 7}, {"seed": None}),
    (["max_tokens"], "umbrela", {}, {"max_tokens": None, "max_completion_tokens": 600}),
    (["max_completion_tokens"], "umbrela", {"token_field": "max_completion_tokens"},
     {"max_completion_tokens": None, "max_tokens": 600}),
])
def test_each_rejected_feature_falls_back_once_and_is_recorded(tmp_path, rejected, prompt,
                                                                extra, sent_after):
    answer = JSON_ANSWER if prompt == "json" else "final score: 2"
    with FakeOpenAI(rejecting(rejected, lambda r: Reply.text(answer))) as s:
        report = run(s.base_url, tmp_path, prompt=prompt, concurrency=1, **extra)
        bodies = [r.body for r in s.requests]
    assert report.labelled == 3 and report.failed == 0
    assert len(bodies) == 3 + len(rejected)  # one rejected call per step, then 3 answers
    for name, value in sent_after.items():
        assert bodies[-1].get(name) == value or (value is None and name not in bodies[-1])
    assert report.events[-1].meta["params"] == {k: v for k, v in bodies[-1].items()
                                               if k not in ("model", "messages")}
    assert len(report.warnings) == len(rejected)


def test_fallback_is_part_of_the_cache_key(tmp_path):
    with FakeOpenAI(rejecting(["seed"])) as s:
        run(s.base_url, tmp_path, seed=7)
    with FakeOpenAI() as s:  # accepts seed: its answers are not the seedless ones cached
        report = run(s.base_url, tmp_path, seed=7)
        assert s.calls == 3 and report.cached == 0


def test_a_rejection_with_no_step_left_fails_and_trips_the_breaker(tmp_path):
    with FakeOpenAI(rejecting(["max_tokens", "max_completion_tokens"])) as s:
        with pytest.raises(LLMError, match="max_completion_tokens"):
            run(s.base_url, tmp_path, pairs=[("q1", f"d{i}") for i in range(20)],
                concurrency=1, breaker_after=3)
        assert s.calls == 1 + 3  # one switch, then three identical failures


# -- one source of truth -------------------------------------------------------------------------
def test_every_judge_setting_is_a_label_flag_and_a_pipeline_key():
    import argparse

    from reljudge.cli import label_cmd
    from reljudge.pipeline.config import JUDGE_NOT_IN_FILE, JudgeSection

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    label_cmd.register(sub)
    flags = {a.dest for a in sub.choices["label"]._actions}
    fields = set(JudgeConfig.model_fields)
    assert fields <= flags
    assert set(JudgeSection.model_fields) == (fields - set(JUDGE_NOT_IN_FILE)) | {"enabled"}
    for name in fields - set(JUDGE_NOT_IN_FILE) - {"model"}:
        assert JudgeSection.model_fields[name].default == JudgeConfig.model_fields[name].default
    args = parser.parse_args(["label", "--queries", "q", "--passages", "p", "--pairs", "x",
                              "--model", "m", "--rpm", "60", "--breaker-after", "2",
                              "--token-field", "max_completion_tokens"])
    cfg = label_cmd.config_from_args(args)
    assert (cfg.rpm, cfg.breaker_after, cfg.token_field) == (60, 2, "max_completion_tokens")
    assert cfg.timeout == JudgeConfig.model_fields["timeout"].default


# -- an answer cut off at the token limit ---------------------------------------------------
CUT_JSON = '{"reason": "The passage describes the leave policy in detail, and it goes on to'


def test_a_json_answer_cut_at_max_tokens_is_truncated_kept_and_not_re_asked(tmp_path, capsys):
    """A JSON answer cut open at max_tokens is a failure of kind truncated with the limit in
    its detail and the raw text kept, sent once (a re-ask under the same limit and schema
    would be cut too), shown by kind in the report and in ``labels stats``, left alone by a
    re-run, and answered by --retry-failed with a larger limit."""
    db = tmp_path / "s.sqlite"

    def handler(req):
        if "number 0" in req.user_text and req.body["max_tokens"] <= 64:
            return Reply.text(CUT_JSON, finish_reason="length", completion_tokens=64)
        return Reply.text(JSON_ANSWER)

    with FakeOpenAI(handler) as s, LabelStore(db) as store:
        report = run(s.base_url, tmp_path, sink=store, prompt="json", max_tokens=64)
        assert s.calls == 3  # one call per pair: the cut answer was not re-asked
        assert all(r.body["response_format"]["type"] == "json_schema" for r in s.requests)
        (cut,) = [e for e in report.events if e.grade is None]
        assert (cut.docid, cut.failure_kind, cut.raw) == ("d0", FailureKind.TRUNCATED, CUT_JSON)
        assert cut.failure.startswith("truncated: the answer was cut off at max_tokens=64 "
                                      "before it gave a grade (raise --max-tokens")
        assert report.failure_reasons == {"truncated": 1} and report.labelled == 2
        assert report.calls == 3 and report.tokens_out == 64 + 2 * 10
        assert report.notes()[1].startswith("       1  truncated  e.g. q1 d0: truncated: the "
                                            "answer was cut off at max_tokens=64")
        assert [(d, k) for _, d, _, _, k, _ in store.current_failures()] == [("d0", "truncated")]

        again = run(s.base_url, tmp_path, sink=store, prompt="json", max_tokens=64)
        assert s.calls == 3 and again.already_failed == 1  # an answer's failure: not asked again
        assert main(["labels", "stats", "--store", str(db)]) == 0
        out = capsys.readouterr().out
        assert "current failures (pairs whose latest judgment failed): 1" in out
        assert "1  truncated  e.g. q1 d0" in out

        more = run(s.base_url, tmp_path, sink=store, prompt="json", max_tokens=256,
                   retry_failed=True)
        assert s.calls == 3 + 1 and more.labelled == 1  # only d0, with the new limit
        assert store.current_failures() == []


def test_a_text_answer_cut_after_its_final_line_keeps_its_grade_and_one_cut_before_does_not(
        tmp_path):
    cut = {"number 0": "On topic.\nfinal score: 2\nMoreover, the passage",
           "number 1": "Topicality score: 3. Trust score: 2. Overall, the passage"}

    def handler(req):
        for key, text in cut.items():
            if key in req.user_text:
                return Reply.text(text, finish_reason="length")
        return Reply.text("final score: 1")

    with FakeOpenAI(handler) as s:
        report = run(s.base_url, tmp_path)
        assert s.calls == 3
    got = {e.docid: (e.grade, e.failure_kind, e.raw) for e in report.events}
    assert got == {"d0": (2, None, cut["number 0"]),
                   "d1": (None, FailureKind.TRUNCATED, cut["number 1"]),
                   "d2": (1, None, "final score: 1")}


def test_an_unreadable_json_answer_is_re_asked_for_the_json_form_under_its_schema(tmp_path):
    from reljudge.judge.parse import REPAIR

    def handler(req):
        if req.body["messages"][-1]["content"] == REPAIR["json"]:
            return Reply.text(JSON_ANSWER)
        return Reply.text('{"reason": "very relevant", "grade": 7}')  # out of scale

    with FakeOpenAI(handler) as s:
        report = run(s.base_url, tmp_path, pairs=PAIRS[:1], prompt="json")
        assert s.calls == 2 and report.calls == 2
        repair = s.requests[1].body
    assert repair["response_format"]["type"] == "json_schema"
    assert '"grade": N' in repair["messages"][-1]["content"]
    assert "final score" not in repair["messages"][-1]["content"]
    assert [(e.grade, e.failure_kind) for e in report.events] == [(2, None)]


def test_a_re_ask_cut_at_max_tokens_is_recorded_as_truncated(tmp_path):
    def handler(req):
        if len(req.body["messages"]) > 2:  # the re-ask: it rambles to the limit
            return Reply.text("Let me explain the passage once more", finish_reason="length")
        return Reply.text("no idea")

    with FakeOpenAI(handler) as s:
        report = run(s.base_url, tmp_path, pairs=PAIRS[:1], max_tokens=32)
        assert s.calls == 2
    (e,) = report.events
    assert (e.grade, e.failure_kind) == (None, FailureKind.TRUNCATED)
    assert e.failure.startswith("unparseable: no final score marker (re-asked once: "
                                "truncated: the answer was cut off at max_tokens=32")
    assert e.raw == "no idea\n--- re-asked ---\nLet me explain the passage once more"


def test_failures_recorded_before_kinds_had_a_column_resume_by_the_kind_the_upgrade_gave(
        tmp_path, monkeypatch):
    from reljudge.labels import LabelEvent
    from tests.helpers import store_at_version

    with FakeOpenAI(lambda r: Reply.text("final score: 2")) as s:
        judge = Labeller(config(s.base_url, tmp_path)).judge_id
        old = [("d0", "gave up after 6 attempts: connection error"),
               ("d1", "no final score marker (re-asked once: no final score marker)"),
               ("d2", "refused: content_filter")]
        store_at_version(tmp_path / "s.sqlite", 8, [  # a kind column, left empty until 9
            LabelEvent("q1", d, None, "llm", judge, failure=why) for d, why in old],
            monkeypatch)
        with LabelStore(tmp_path / "s.sqlite") as store:
            report = run(s.base_url, tmp_path, pairs=[("q1", d) for d, _ in old], sink=store)
            assert s.calls == 1 and report.labelled == 1 and report.already_done == 2
            kinds = [k for *_, k, _ in store.current_failures()]
    assert kinds == ["unparseable", "refused"]  # still unanswered, their kinds in the store


def test_a_rejected_feature_costs_one_call_even_with_16_workers_waiting(tmp_path):
    pairs = [("q1", f"d{i}") for i in range(8)]
    with FakeOpenAI(rejecting(["json_schema"], lambda r: Reply.text(JSON_ANSWER))) as s:
        report = run(s.base_url, tmp_path, pairs=pairs, prompt="json", concurrency=16)
        assert s.calls == 8 + 1 and report.labelled == 8


def test_a_rerun_with_only_old_unreadable_answers_left_still_exits_4(tmp_path, capsys):
    def handler(req):
        if "passage 1" in str(req.body["messages"]):
            return Reply.text("no idea")
        return Reply.text("final score: 2")

    args = [*write_inputs(tmp_path), "--store", str(tmp_path / "s.sqlite")]
    with FakeOpenAI(handler) as s:
        assert main(["label", *args, "--base-url", s.base_url]) == 4
        calls = s.calls
        assert main(["label", *args, "--base-url", s.base_url]) == 4
        assert s.calls == calls  # nothing asked again without --retry-failed
    assert "1 pair(s) whose earlier answer failed" in capsys.readouterr().out


@pytest.mark.parametrize("with_store", [True, False], ids=["store", "cache-only"])
def test_retry_failed_asks_refused_and_unreadable_answers_again_past_the_cache(
        tmp_path, capsys, with_store):
    """A refused and an unreadable answer are cached like any answer; --retry-failed sends
    them again (the server answers now), never their cached failure."""
    first_round = {"passage 1": 1, "passage 2": 2}  # a refusal; an unreadable answer re-asked

    def handler(req):
        text = str(req.body["messages"])
        for key in first_round:
            if key in text and first_round[key] > 0:
                first_round[key] -= 1
                return (Reply.text("I cannot help with that.", finish_reason="content_filter")
                        if key == "passage 1" else Reply.text("no idea"))
        return Reply.text("final score: 3")

    args = [*write_inputs(tmp_path, 8), "--format", "json"]
    if with_store:
        args += ["--store", str(tmp_path / "s.sqlite")]
    with FakeOpenAI(handler) as s:
        assert main(["label", *args, "--base-url", s.base_url]) == 4
        capsys.readouterr()
        before = s.calls
        assert main(["label", *args, "--base-url", s.base_url, "--retry-failed"]) == 0
        asked = [str(r.body["messages"]) for r in s.requests[before:]]
    out = capsys.readouterr().out
    assert sum("passage 1" in m for m in asked) == 1  # asked again, answered
    assert sum("passage 2" in m for m in asked) == 1
    assert '"failed": 0' in out
    if with_store:
        with LabelStore(tmp_path / "s.sqlite") as store:
            assert store.current_failures() == []
            assert {d: g for _, d, g in store.qrels(store.sources()[0].name)}["d1"] == 3


def test_an_unreadable_ca_bundle_or_client_cert_is_a_clear_config_error(tmp_path):
    from reljudge.judge.http.transport import ssl_context

    bad = tmp_path / "nope.pem"
    bad.write_text("not a certificate")
    with pytest.raises(ConfigError, match="--ca-bundle .*nope.pem"):
        ssl_context(ca_bundle=bad)
    with pytest.raises(ConfigError, match="--client-cert .*nope.pem"):
        ssl_context(client_cert=bad)
