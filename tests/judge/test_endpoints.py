"""One labelling job over several local scripted servers: dispatch, per-endpoint limits,
draining a dead endpoint, replicas sharing the cache, different models as different judges.

Every server is a real local HTTP server (reljudge.testing.FakeOpenAI); one is killed
mid-run the way a crashed server dies (connections refused, open ones dropped).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reljudge.cli import main
from reljudge.errors import ConfigError, LLMError
from reljudge.judge import JudgeConfig, Labeller, label_pairs
from reljudge.judge.cache import cache_key
from reljudge.store import LabelStore
from reljudge.testing import FakeOpenAI, Reply
from reljudge.testing import hash_grader as grader  # the grade follows from the prompt

N = 300
QUERIES = {f"q{i}": f"query number {i} about leave" for i in range(10)}
PASSAGES = {f"d{i}": f"passage {i} on leave and expenses" for i in range(N)}
PAIRS = [(f"q{i % 10}", f"d{i}") for i in range(N)]
FAST = dict(backoff=0.01, max_attempts=2, breaker_after=3, timeout=3.0)


def servers(k: int, delay: float = 0.01, handler=grader) -> list[FakeOpenAI]:
    return [FakeOpenAI(handler, delay=delay).start() for _ in range(k)]


def stop_all(fleet: list[FakeOpenAI]) -> None:
    for s in fleet:
        s.stop()


def holding(after: int):
    """The grader, holding each answer after the first ``after`` calls for 2 s: the calls in
    flight when the server is killed stay unanswered, however loaded the machine (at 10 ms
    an answer, a watcher starved of the CPU let all 30 be answered before the kill)."""
    lock, seen = threading.Lock(), [0]

    def handle(request):
        with lock:
            seen[0] += 1
            late = seen[0] > after
        reply = grader(request)
        return replace(reply, delay=2.0) if late else reply
    return handle


def kill_after(server: FakeOpenAI, calls: int) -> threading.Thread:
    """Kill the server once it has received this many calls."""
    def watch() -> None:
        server.wait_for_calls(calls, 30)
        server.kill()
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def config(tmp_path, fleet, **kw) -> JudgeConfig:
    values = dict(model="fake-model", api_key="k", cache_dir=tmp_path / "cache",
                  endpoints=[{"url": s.base_url, "concurrency": 4} for s in fleet], **FAST)
    values.update(kw)
    return JudgeConfig(**values)


def graded_once(store: LabelStore, n: int = N) -> list:
    events = list(store.events())
    keys = Counter((e.qid, e.docid, e.repeat) for e in events)
    assert len(events) == n and len(keys) == n and max(keys.values()) == 1
    assert all(e.grade is not None for e in events)
    return events


# -- the cache keys of one endpoint do not change ----------------------------------------------
def test_one_endpoint_cache_keys_are_the_keys_computed_before_several_endpoints_existed():
    # digests computed with the code before this module existed (commit 132d6cf): users'
    # caches stay valid
    assert cache_key("http://127.0.0.1:8000/v1", "m", [{"role": "user", "content": "q: x\np: y"}],
                     {"temperature": 0.0, "max_tokens": 600}, 0) == \
        "bc5b49755bdee0c45f7b4c144c6fa9d1fc9295ee429693bb621e98093bad3588"
    assert cache_key("https://api.openai.com/v1/", "gpt-4o-mini",
                     [{"role": "system", "content": "é"}, {"role": "user", "content": "u"}],
                     {"temperature": 0.0, "max_tokens": 300, "seed": 1}, 2) == \
        "efa7d4edcf71ba6d678a74923e6a1de48a06d0c915ce21690ec22c7e7667c5af"
    q, p = {"q1": "what is leave?"}, {"d0": {"text": "leave is time off"}}
    for extra, repeat, digest in (
            ({}, 0, "233d32dcd284228aa54df0f90eaacd6719b039e0268da42b28aaeebcf9a94d6e"),
            ({"prompt": "json", "seed": 3}, 1,
             "312ca0cf7c30eaa2e47b1cf4ae6faae71585971ca19351c5eb8f430af9503cd4")):
        lab = Labeller(JudgeConfig(model="fake-model", base_url="http://127.0.0.1:9/v1",
                                   api_key="k", cache_dir=Path("unused"), **extra))
        assert lab.request_key(lab.messages("q1", "d0", q, p), repeat) == digest


# -- dispatch and draining ---------------------------------------------------------------------
@pytest.mark.slow  # a killed server (also in the fleet property above)
def test_three_endpoints_one_killed_mid_run_every_pair_graded_once(tmp_path):
    fleet = servers(3)
    fleet[1].handler = holding(26)  # its 4 calls in flight at the 30th are held, then dropped
    try:
        kill_after(fleet[1], 30)
        with LabelStore(tmp_path / "s.sqlite") as store:
            report = label_pairs(config(tmp_path, fleet), PAIRS, QUERIES, PASSAGES, store)
            events = graded_once(store)
            spend = store.spend()
    finally:
        stop_all(fleet)
    assert report.labelled == N and report.failed == 0 and report.not_sent == 0
    assert report.calls == N and report.complete  # paid once each: no pair answered twice
    by_url = {e["endpoint"]: e for e in report.endpoints}
    dead, alive = by_url[fleet[1].base_url], [by_url[fleet[i].base_url] for i in (0, 2)]
    assert dead["drained"] and "connection" in dead["drained"]
    assert all(e["drained"] is None for e in alive)
    assert sum(e["pairs"] for e in report.endpoints) == N
    assert dead["pairs"] <= 26 < 30 <= fleet[1].calls  # what it was asked in flight went elsewhere
    assert any("drained" in w and fleet[1].base_url in w for w in report.warnings)
    answered = Counter(e.meta["answered_by"] for e in events)
    assert answered == Counter({e["endpoint"]: e["pairs"] for e in report.endpoints})
    assert spend[0][2] == N  # the spend ledger: one line per endpoint, N calls in all


def test_the_cli_drains_the_dead_endpoint_exits_0_and_says_so(tmp_path, capsys):
    fleet = servers(3)
    args = write_inputs(tmp_path)
    try:
        kill_after(fleet[2], 25)
        code = main(["label", *args, *sum((["--base-url", s.base_url] for s in fleet), []),
                     "--concurrency", "4", "--store", str(tmp_path / "s.sqlite")])
    finally:
        stop_all(fleet)
    out = capsys.readouterr().out
    assert code == 0
    with LabelStore(tmp_path / "s.sqlite") as store:
        graded_once(store)
    lines = [line for line in out.splitlines() if line.startswith("endpoint ")]
    assert len(lines) == 3
    assert sum("DRAINED (connection" in line for line in lines) == 1
    assert any(fleet[2].base_url in line and "DRAINED" in line for line in lines)
    assert sum(int(line.split("): ")[1].split(" pairs")[0]) for line in lines) == N


@pytest.mark.slow  # waits out the hung endpoint's timeout
def test_a_hung_endpoint_times_out_is_drained_and_its_pairs_go_elsewhere(tmp_path):
    seen = Counter()
    lock = threading.Lock()

    def hangs_after_20(req) -> Reply:
        with lock:
            seen["n"] += 1
            hung = seen["n"] > 20
        return Reply.text("##final score: 1", delay=5.0) if hung else grader(req)

    good, hung = FakeOpenAI(grader, delay=0.01).start(), FakeOpenAI(hangs_after_20).start()
    try:
        report = label_pairs(config(tmp_path, [hung, good], timeout=0.5), PAIRS[:120], QUERIES,
                             PASSAGES)
    finally:
        stop_all([good, hung])
    assert report.labelled == 120 and report.failed == 0 and report.complete
    drained = {e["endpoint"]: e["drained"] for e in report.endpoints}
    assert drained[good.base_url] is None and drained[hung.base_url].startswith("timeout")


def test_every_endpoint_down_mid_run_stops_as_one_endpoint_does(tmp_path, capsys):
    fleet = servers(2, delay=0.02)
    try:
        for s in fleet:
            kill_after(s, 20)
        code = main(["label", *write_inputs(tmp_path), "--base-url", fleet[0].base_url,
                     "--base-url", fleet[1].base_url, "--concurrency", "4",
                     "--store", str(tmp_path / "s.sqlite")])
    finally:
        stop_all(fleet)
    err = capsys.readouterr().err
    assert code == 2 and "stopped:" in err and "connection" in err
    with LabelStore(tmp_path / "s.sqlite") as store:
        graded = [e for e in store.events() if e.grade is not None]
    assert 0 < len(graded) < N  # what was answered is kept; a re-run goes on from there


def test_every_endpoint_unreachable_from_the_start_exits_2_naming_a_url(tmp_path, capsys):
    import socket

    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    urls = [f"http://127.0.0.1:{p}/v1" for p in ports]
    code = main(["label", *write_inputs(tmp_path), "--base-url", urls[0], "--base-url", urls[1]])
    err = capsys.readouterr().err
    assert code == 2
    assert any(u in err for u in urls) and "connection" in err
    assert err.rstrip().endswith("0 labels were saved before it stopped")


def test_all_endpoints_down_through_the_api_raises_llm_error(tmp_path):
    fleet = servers(2)
    for s in fleet:
        s.kill()
    with pytest.raises(LLMError, match="connection"):
        label_pairs(config(tmp_path, fleet), PAIRS[:20], QUERIES, PASSAGES)


def test_a_rejected_key_drains_that_endpoint_only(tmp_path):
    good = FakeOpenAI(grader).start()
    bad = FakeOpenAI(lambda r: Reply.error(401, "bad key")).start()
    try:
        report = label_pairs(config(tmp_path, [bad, good]), PAIRS[:40], QUERIES, PASSAGES)
    finally:
        stop_all([good, bad])
    assert report.labelled == 40 and bad.calls == 1  # its first call went alone, then drained
    drained = {e["endpoint"]: e["drained"] for e in report.endpoints}
    assert "HTTP 401" in drained[bad.base_url] and drained[good.base_url] is None


@pytest.mark.slow  # 150 delayed calls (the endpoints-file test checks the same limits)
def test_each_endpoint_keeps_its_own_concurrency(tmp_path):
    fleet = servers(3, delay=0.05)
    limits = [1, 3, 6]
    try:
        cfg = config(tmp_path, fleet, endpoints=[
            {"url": s.base_url, "concurrency": c} for s, c in zip(fleet, limits, strict=True)])
        report = label_pairs(cfg, PAIRS[:150], QUERIES, PASSAGES)
    finally:
        stop_all(fleet)
    assert report.labelled == 150
    assert [s.max_inflight for s in fleet] == limits
    pairs = [e["pairs"] for e in report.endpoints]
    assert pairs[0] < pairs[1] < pairs[2]  # more workers, more pairs


@pytest.mark.slow  # waits out a rate limit
def test_each_endpoint_keeps_its_own_rate_limit(tmp_path):
    """The limited endpoint sends at most its burst and its rate over the run: about 70 of
    the 300 pairs, where unlimited it takes about half of them (the 16 calls its workers hold
    at the end wait out 2 s, not the 16 s they would at 60 a minute)."""
    rpm = 480  # 8 a second
    fleet = servers(2, delay=0.01)
    try:
        cfg = config(tmp_path, fleet, endpoints=[{"url": fleet[0].base_url, "rpm": rpm},
                                                 {"url": fleet[1].base_url}])
        start = time.perf_counter()
        report = label_pairs(cfg, PAIRS, QUERIES, PASSAGES)
        took = time.perf_counter() - start
    finally:
        stop_all(fleet)
    assert report.labelled == N
    allowed = rpm / 60 * (5 + took) + 1  # a burst of 5 s of calls, then the rate
    assert fleet[0].calls <= allowed and fleet[1].calls >= N - allowed, (fleet[0].calls, took)


def test_an_endpoints_file_sets_each_endpoints_limits(tmp_path):
    fleet = servers(2, delay=0.05)
    path = tmp_path / "endpoints.toml"
    path.write_text("".join(f'[[endpoints]]\nurl = "{s.base_url}"\nconcurrency = {c}\n\n'
                            for s, c in zip(fleet, (2, 5), strict=True)))
    try:
        code = main(["label", *write_inputs(tmp_path, 120), "--endpoints", str(path)])
    finally:
        stop_all(fleet)
    assert code == 0 and [s.max_inflight for s in fleet] == [2, 5]


# -- cache and provenance ----------------------------------------------------------------------
def test_replicas_share_the_cache_so_another_replica_set_pays_nothing(tmp_path):
    first, second = servers(2), servers(2)
    try:
        a = label_pairs(config(tmp_path, first), PAIRS[:60], QUERIES, PASSAGES)
        b = label_pairs(config(tmp_path, second), PAIRS[:60], QUERIES, PASSAGES)
        one = label_pairs(config(tmp_path, [], base_url=second[0].base_url, endpoints=[],
                                 replicas=True), PAIRS[:60], QUERIES, PASSAGES)
    finally:
        stop_all(first + second)
    assert a.calls == 60 and sum(s.calls for s in first) == 60
    assert b.calls == 0 and b.cached == 60 and sum(s.calls for s in second) == 0
    assert one.calls == 0 and one.cached == 60  # one endpoint declared a replica: a hit too
    assert b.grades() == a.grades() == one.grades()
    assert {e.meta["answered_by"] for e in b.events} == {"cache"}
    assert {e.meta["cache_scope"] for e in a.events} == {"replicas"}
    assert {e.meta["answered_by"] for e in a.events} == {s.base_url for s in first}


def test_not_replicas_keep_one_cache_per_endpoint(tmp_path):
    first, second = servers(2), servers(2)
    try:
        label_pairs(config(tmp_path, first, replicas=False), PAIRS[:20], QUERIES, PASSAGES)
        b = label_pairs(config(tmp_path, second, replicas=False), PAIRS[:20], QUERIES, PASSAGES)
    finally:
        stop_all(first + second)
    assert b.calls == 20 and {e.meta["cache_scope"] for e in b.events} == {"endpoint"}


def test_different_models_are_different_judges_with_their_own_keys(tmp_path):
    fleet = servers(2)
    cfg = config(tmp_path, fleet, endpoints=[{"url": fleet[0].base_url, "model": "m-one"},
                                             {"url": fleet[1].base_url, "model": "m-two"}])
    lab = Labeller(cfg)
    msgs = lab.messages("q1", "d1", QUERIES, PASSAGES)
    try:
        with LabelStore(tmp_path / "s.sqlite") as store:
            asyncio.run(lab.label(PAIRS[:80], QUERIES, PASSAGES, store))
            events = graded_once(store, 80)
            again = label_pairs(cfg, PAIRS[:80], QUERIES, PASSAGES, store)
    finally:
        stop_all(fleet)
    label = lab.template.label  # umbrela@version#hash
    assert lab.judge_ids == [f"m-one/{label}", f"m-two/{label}"]
    assert lab.judge_id == f"m-one/{label}"
    assert {e.source_name for e in events} == set(lab.judge_ids)
    assert all(e.meta["model"] == e.source_name.split("/")[0] for e in events)
    assert {r.body["model"] for r in fleet[0].requests} == {"m-one"}
    assert {r.body["model"] for r in fleet[1].requests} == {"m-two"}
    keys = [lab.key(msgs, 0, spec=s) for s in lab.specs]
    assert keys[0] != keys[1]
    # each is the key one endpoint alone would use: a single-endpoint run's cache is reused
    single = Labeller(JudgeConfig(model="m-one", base_url=fleet[0].base_url, api_key="k",
                                  cache_dir=tmp_path / "cache"))
    assert single.request_key(msgs, 0) == keys[0]
    assert again.already_done == 80 and again.calls == 0  # settled by either judge


@pytest.mark.slow  # three fleets in turn
def test_grades_over_one_two_or_three_replicas_are_the_same(tmp_path):
    grades = []
    for k in (1, 2, 3):
        fleet = servers(k)
        try:
            cfg = config(tmp_path / str(k), fleet)
            grades.append(label_pairs(cfg, PAIRS[:90], QUERIES, PASSAGES).grades())
        finally:
            stop_all(fleet)
    assert grades[0] == grades[1] == grades[2] and len(grades[0]) == 90


# -- settings ----------------------------------------------------------------------------------
def write_inputs(tmp_path, n=N):
    (tmp_path / "q.tsv").write_text("".join(f"q{i}\tquery {i}\n" for i in range(10)))
    (tmp_path / "p.tsv").write_text("".join(f"d{i}\tpassage {i}\n" for i in range(n)))
    (tmp_path / "pairs.txt").write_text("".join(f"q{i % 10} d{i}\n" for i in range(n)))
    return ["--queries", str(tmp_path / "q.tsv"), "--passages", str(tmp_path / "p.tsv"),
            "--pairs", str(tmp_path / "pairs.txt"), "--model", "m", "--quiet",
            "--cache-dir", str(tmp_path / "cache"), "--backoff", "0.01", "--max-attempts", "2",
            "--breaker-after", "3", "--timeout", "3"]


@pytest.mark.parametrize("content, suffix, message", [
    ('[[endpoints]]\nurl = "http://127.0.0.1:1/v1"\napi_key = "sk-x"\n', ".toml",
     "a key does not belong in a file"),
    ("[[endpoints]\n", ".toml", "not valid TOML"),
    ('[{"url": "http://127.0.0.1:1/v1", "concurrency": 0}]', ".json", "endpoint 1: concurrency"),
    ('{"endpoints": []}', ".json", "non-empty list"),
    ('[[endpoints]]\nurl = "http://127.0.0.1:1/v1"\nspeed = 3\n', ".toml", "speed"),
])
def test_a_bad_endpoints_file_is_one_line_naming_the_file(tmp_path, capsys, content, suffix,
                                                         message):
    path = tmp_path / f"endpoints{suffix}"
    path.write_text(content)
    code = main(["label", *write_inputs(tmp_path, 3), "--endpoints", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and str(path) in err and message in err and "sk-x" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("extra, message", [
    (["--base-url", "http://127.0.0.1:1/v1", "--endpoints", "e.toml"], "not both"),
    (["--base-url", "http://127.0.0.1:1/v1", "--base-url", "http://127.0.0.1:2/v1",
      "--batch"], "--batch"),
    (["--base-url", "http://127.0.0.1:1/v1", "--base-url", "http://127.0.0.1:1/v1"],
     "given twice"),
])
def test_contradictory_endpoint_settings_exit_2(tmp_path, capsys, extra, message):
    code = main(["label", *write_inputs(tmp_path, 3), *extra])
    assert code == 2 and message in capsys.readouterr().err


def test_replicas_of_different_models_are_refused():
    with pytest.raises(ValueError, match="different models"):
        JudgeConfig(model="m", replicas=True, endpoints=[
            {"url": "http://127.0.0.1:1/v1"}, {"url": "http://127.0.0.1:2/v1", "model": "x"}])


def test_a_key_from_an_environment_variable_is_sent_and_never_written(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU1_KEY", "sk-gpu1-DO-NOT-LEAK")
    fleet = servers(2)
    try:
        cfg = config(tmp_path, fleet, endpoints=[
            {"url": fleet[0].base_url, "api_key_env": "GPU1_KEY"}, {"url": fleet[1].base_url}])
        with LabelStore(tmp_path / "s.sqlite") as store:
            label_pairs(cfg, PAIRS[:40], QUERIES, PASSAGES, store)
    finally:
        stop_all(fleet)
    assert {r.headers["authorization"] for r in fleet[0].requests} == \
        {"Bearer sk-gpu1-DO-NOT-LEAK"}
    assert {r.headers["authorization"] for r in fleet[1].requests} == {"Bearer k"}
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert b"sk-gpu1-DO-NOT-LEAK" not in f.read_bytes(), f


def test_a_pipeline_judge_section_takes_an_endpoints_list(tmp_path):
    from reljudge.pipeline.config import judge_config, load_config

    for name in ("q.tsv", "p.tsv", "r.run"):
        (tmp_path / name).write_text("x\n")
    text = ('[inputs]\nqueries = "q.tsv"\npassages = "p.tsv"\nruns = ["r.run"]\n'
            '[judge]\nmodel = "m"\nconcurrency = 3\n'
            '[[judge.endpoints]]\nurl = "http://127.0.0.1:1/v1"\nconcurrency = 8\n'
            '[[judge.endpoints]]\nurl = "http://127.0.0.1:2/v1"\nrpm = 600\n')
    (tmp_path / "p.toml").write_text(text)
    judge = judge_config(load_config(tmp_path / "p.toml"))
    specs = Labeller(judge).specs
    assert [(s.base_url, s.concurrency, s.rpm, s.replica) for s in specs] == [
        ("http://127.0.0.1:1/v1", 8, None, True), ("http://127.0.0.1:2/v1", 3, 600, True)]
    (tmp_path / "p.toml").write_text(text + 'api_key = "sk-in-file"\n')
    with pytest.raises(ConfigError, match="does not belong in the file"):
        load_config(tmp_path / "p.toml")


def test_the_json_summary_lists_each_endpoint(tmp_path, capsys):
    fleet = servers(2)
    try:
        code = main(["label", *write_inputs(tmp_path, 30), "--json",
                     *sum((["--base-url", s.base_url] for s in fleet), [])])
    finally:
        stop_all(fleet)
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and [e["endpoint"] for e in summary["endpoints"]] == \
        [s.base_url for s in fleet]
    assert sum(e["pairs"] for e in summary["endpoints"]) == 30


def test_a_dry_run_counts_answers_any_replica_gave_as_cached(tmp_path):
    first, second = servers(2), servers(3)
    try:
        label_pairs(config(tmp_path, first), PAIRS[:40], QUERIES, PASSAGES)
        est = Labeller(config(tmp_path, second)).quote(PAIRS[:50], QUERIES, PASSAGES)
    finally:
        stop_all(first + second)
    assert (est.cached, est.to_send) == (40, 10) and sum(s.calls for s in second) == 0


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(limits=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       kill_at=st.integers(5, 60), victim=st.integers(0, 2))
@pytest.mark.slow  # many fleets, each with a killed server
def test_any_fleet_with_any_endpoint_killed_grades_every_pair_once(tmp_path_factory, limits,
                                                                   kill_at, victim):
    tmp_path = tmp_path_factory.mktemp("fleet")
    fleet = servers(len(limits), delay=0.005)
    doomed = fleet[victim % len(fleet)] if len(fleet) > 1 else None
    try:
        if doomed is not None:
            kill_after(doomed, kill_at)
        cfg = config(tmp_path, fleet, endpoints=[
            {"url": s.base_url, "concurrency": c} for s, c in zip(fleet, limits, strict=True)])
        with LabelStore(tmp_path / "s.sqlite") as store:
            report = label_pairs(cfg, PAIRS[:120], QUERIES, PASSAGES, store)
            graded_once(store, 120)
    finally:
        stop_all(fleet)
    assert report.labelled == 120 and report.calls == 120
    assert all(s.max_inflight <= c for s, c in zip(fleet, limits, strict=True))
    up = [e for e in report.endpoints if e["endpoint"] != getattr(doomed, "base_url", None)]
    assert all(e["drained"] is None for e in up)


@pytest.mark.parametrize("with_store", [True, False])
def test_qrels_out_of_a_two_model_job_has_every_pair(tmp_path, with_store):
    fleet = servers(2)
    path = tmp_path / "endpoints.json"
    path.write_text(json.dumps([{"url": fleet[0].base_url, "model": "m-one"},
                                {"url": fleet[1].base_url, "model": "m-two"}]))
    store = ["--store", str(tmp_path / "s.sqlite")] if with_store else []
    try:
        code = main(["label", *write_inputs(tmp_path, 60), "--endpoints", str(path), *store,
                     "--qrels-out", str(tmp_path / "llm.qrels")])
    finally:
        stop_all(fleet)
    lines = (tmp_path / "llm.qrels").read_text().splitlines()
    assert code == 0 and fleet[0].calls > 0 and fleet[1].calls > 0
    assert sorted(line.split()[2] for line in lines) == sorted(f"d{i}" for i in range(60))


# -- one path: settings -> resolved endpoints -> client ----------------------------------------
ONE_PAIR = (PAIRS[:1], QUERIES, PASSAGES)


def test_the_environment_is_read_once_when_the_endpoints_are_resolved(tmp_path, monkeypatch):
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(var, raising=False)
    with FakeOpenAI(grader) as first, FakeOpenAI(grader) as second:
        monkeypatch.setenv("OPENAI_BASE_URL", first.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-first")
        monkeypatch.setenv("OPENAI_ORG_ID", "org-first")
        lab = Labeller(JudgeConfig(model="m", cache_dir=tmp_path / "cache", **FAST))
        # changed after resolving: the job goes on with what was resolved
        monkeypatch.setenv("OPENAI_BASE_URL", second.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-second")
        monkeypatch.setenv("OPENAI_ORG_ID", "org-second")
        report = asyncio.run(lab.label(PAIRS[:1], QUERIES, PASSAGES))
        assert report.labelled == 1 and second.calls == 0
        sent = first.requests[-1].headers
    assert sent["authorization"] == "Bearer sk-first"
    assert sent["openai-organization"] == "org-first"


def test_one_endpoint_and_a_list_of_one_send_the_same_requests(tmp_path):
    sent = []
    with FakeOpenAI(grader) as s:
        for i, where in enumerate(({"base_url": s.base_url}, {"endpoints": [{"url": s.base_url}]})):
            cfg = JudgeConfig(model="m", api_key="k", cache_dir=tmp_path / f"cache{i}",
                              **FAST, **where)
            asyncio.run(Labeller(cfg).label(PAIRS[:1], QUERIES, PASSAGES))
            sent.append(s.requests[-1])
    one, listed = sent
    assert one.path == listed.path and one.body == listed.body
    assert one.headers == listed.headers


@pytest.mark.parametrize(("settings", "named"), [
    ({"base_url": "localhost:8000"}, "base_url 'localhost:8000': expected an http(s) URL"),
    ({"base_url": "http://127.0.0.1:9/v1", "batch_url": "ftp://x/v1"},
     "batch_url 'ftp://x/v1': expected an http(s) URL"),
    ({"endpoints": [{"url": "http://127.0.0.1:1/v1"}, {"url": "gpu2:8000"}]},
     "endpoints[1].url 'gpu2:8000': expected an http(s) URL"),
    ({"base_url": "https://x.openai.azure.com/openai/deployments/gpt4o"},
     "base_url 'https://x.openai.azure.com/openai/deployments/gpt4o': an Azure deployment "
     "URL needs its API version"),
])
def test_a_bad_endpoint_url_from_python_names_the_setting_not_a_flag(tmp_path, settings, named):
    with pytest.raises(ConfigError) as got:
        label_pairs(JudgeConfig(model="m", cache_dir=tmp_path, **settings), *ONE_PAIR)
    assert named in str(got.value) and "--" not in str(got.value)


def test_a_bad_openai_base_url_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000")
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL 'localhost:8000': expected an "
                                          "http"):
        Labeller(JudgeConfig(model="m", cache_dir=tmp_path))


@pytest.mark.parametrize(("urls", "named"), [
    (["localhost:8000"], "--base-url 'localhost:8000': expected an http(s) URL"),
    (["http://127.0.0.1:1/v1", "gpu2:8000"], "--base-url 'gpu2:8000': expected an http(s) URL"),
])
def test_a_bad_endpoint_url_on_the_command_line_names_the_flag(tmp_path, capsys, urls, named):
    code = main(["label", *write_inputs(tmp_path, 3), *sum((["--base-url", u] for u in urls), [])])
    err = capsys.readouterr().err
    assert code == 2 and named in err and "base_url" not in err


def test_a_bad_url_in_an_endpoints_file_names_the_file(tmp_path, capsys):
    path = tmp_path / "endpoints.toml"
    path.write_text('[[endpoints]]\nurl = "gpu1:8000"\n')
    code = main(["label", *write_inputs(tmp_path, 3), "--endpoints", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and f"--endpoints {path}: endpoint 1: url 'gpu1:8000': expected" in err
