"""Batch API labelling: the real openai SDK against FakeBatchAPI on 127.0.0.1, real SQLite."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reljudge.cli import main
from reljudge.errors import ConfigError
from reljudge.judge import JudgeConfig, Labeller, label_pairs
from reljudge.judge.batch.job import BatchJob, build_lines, split_files
from reljudge.judge.parse import REPAIR
from reljudge.store import LabelStore
from reljudge.store.batches import BatchLog
from reljudge.testing import FakeOpenAI, Reply
from reljudge.testing.fake_batch import BatchPlan, FakeBatchAPI
from reljudge.testing.fake_openai import grade_logprobs
from tests.fork_support import PIPE, reljudge, run_python

QUERIES = {"q1": "what is the maternity leave policy?", "q2": "how do I claim expenses?"}
PASSAGES = {f"d{i}": {"text": f"passage number {i} about leave"} for i in range(8)}
PAIRS = [(q, f"d{i}") for q in QUERIES for i in range(4)]  # 8 pairs


def by_passage(req) -> Reply:
    """Grade = (passage number + query length) mod 4: each pair has its own answer."""
    text = " ".join(m["content"] for m in req.body["messages"])  # a re-ask repeats the prompt
    n = int(re.search(r"passage number (\d+)", text).group(1))
    q = 1 if "expenses" in text else 0
    return Reply.text(f"reasoning...\n##final score: {(n + q) % 4}")


def config(tmp_path, online_url, batch_url=None, **kw) -> JudgeConfig:
    values = dict(model="gpt-4o-mini", base_url=online_url, batch_url=batch_url, api_key="k",
                  cache_dir=tmp_path / "cache", timeout=5.0, backoff=0.01, max_attempts=2,
                  batch=True, poll_interval=0.01)
    values.update(kw)
    return JudgeConfig(**values)


def run_batch(cfg, store, pairs=PAIRS, wait=True):
    job = BatchJob(Labeller(cfg), store)
    return asyncio.run(job.run(pairs, QUERIES, PASSAGES, wait=wait))


def uploaded_custom_ids(server) -> Counter:
    """custom_ids across every batch input file the server holds."""
    ids: Counter = Counter()
    for f in server.files.values():
        if f["purpose"] == "batch":
            ids.update(json.loads(x)["custom_id"] for x in f["_content"].decode().splitlines())
    return ids


def grades(store, judge) -> dict:
    return {(e.qid, e.docid): e.grade for e in store.events(source=judge) if e.grade is not None}


def test_two_paths_one_answer_batch_grades_and_keys_equal_online(tmp_path):
    with FakeOpenAI(by_passage) as online:
        online_cfg = config(tmp_path / "a", online.base_url, batch=False)
        with LabelStore(tmp_path / "online.sqlite") as s1:
            label_pairs(online_cfg, PAIRS, QUERIES, PASSAGES, s1)
            online_grades = grades(s1, Labeller(online_cfg).judge_id)
        with FakeBatchAPI(by_passage) as batch, LabelStore(tmp_path / "b.sqlite") as s2:
            cfg = config(tmp_path / "b", online.base_url, batch.base_url)
            result = run_batch(cfg, s2)
            batch_grades = grades(s2, Labeller(cfg).judge_id)
            ids = uploaded_custom_ids(batch)
        assert online.calls == len(PAIRS)  # the batch run sent nothing online
    assert result.complete and result.graded == len(PAIRS) and not result.open
    assert batch_grades == online_grades and len(set(batch_grades.values())) == 4
    # custom_id is the online answer cache key: both caches hold the same keys
    import diskcache
    with diskcache.Cache(str(tmp_path / "a" / "cache")) as a:
        assert set(ids) == set(a.iterkeys())
    assert all(n == 1 for n in ids.values())
    assert Labeller(cfg).judge_id == Labeller(online_cfg).judge_id


def test_submit_then_collect_on_the_next_run_and_nothing_is_resubmitted(tmp_path):
    with FakeBatchAPI(by_passage) as batch, LabelStore(tmp_path / "s.sqlite") as store:
        cfg = config(tmp_path, "http://127.0.0.1:9/v1", batch.base_url)
        first = run_batch(cfg, store, wait=False)
        assert first.submitted_requests == len(PAIRS) and len(first.open) == 1
        assert not first.complete and first.graded == 0
        rec = BatchLog(store).batches()[0]
        assert rec.provider_id and rec.input_file_id and rec.total == len(PAIRS)
        assert BatchLog(store).get(rec.id) == rec
        for _ in range(5):
            last = run_batch(cfg, store, wait=False)
            if not last.open:
                break
        assert last.complete and last.submitted_requests == 0
        assert sum(uploaded_custom_ids(batch).values()) == len(PAIRS)
        assert store.count() == len(PAIRS)
        # the ledger holds the batch spend at half the online price
        spent = store.total_spend()
        online_price = (last.tokens_in * 0.15 + last.tokens_out * 0.60) / 1e6  # gpt-4o-mini
        assert spent > 0 and last.tokens_in > 0
        assert spent == pytest.approx(last.cost) == pytest.approx(online_price * 0.5)


def test_files_are_split_within_request_and_byte_limits(tmp_path):
    cfg = config(tmp_path, "http://127.0.0.1:9/v1")
    lab = Labeller(cfg)
    items = [(q, d, 0) for q, d in PAIRS]
    lines = build_lines(lab, items, QUERIES, PASSAGES)
    assert [x.custom_id for x in lines] == [
        lab.request_key(lab.messages(q, d, QUERIES, PASSAGES), s) for q, d, s in items]
    groups = list(split_files(lines, 3, 10**9))
    assert [len(g) for g in groups] == [3, 3, 2]
    size = len(lines[0].data) * 2 + 1
    groups = list(split_files(lines, 100, size))
    assert all(sum(len(x.data) for x in g) <= size for g in groups)
    assert sum(len(g) for g in groups) == len(lines)


def test_expired_batch_half_done_rebatches_only_the_other_half(tmp_path):
    plans = [BatchPlan(expire_after=4)]
    with FakeBatchAPI(by_passage, plans=plans) as batch, \
            LabelStore(tmp_path / "s.sqlite") as store:
        cfg = config(tmp_path, "http://127.0.0.1:9/v1", batch.base_url)
        first = run_batch(cfg, store)
        assert first.graded == 4 and first.batch_failures == {"expired": 4}
        assert not first.complete
        second = run_batch(cfg, store)
        assert second.complete and second.submitted_requests == 4
        ids = uploaded_custom_ids(batch)
    assert sum(ids.values()) == len(PAIRS) + 4  # 4 lines were sent twice: the expired ones
    files = sorted((f for f in batch.files.values() if f["purpose"] == "batch"),
                   key=lambda f: f["id"])
    first_ids = [json.loads(x)["custom_id"] for x in files[0]["_content"].decode().splitlines()]
    second_ids = [json.loads(x)["custom_id"] for x in files[1]["_content"].decode().splitlines()]
    assert second_ids == first_ids[4:]


def test_batch_fallback_online_sends_the_expired_lines_online(tmp_path):
    with FakeOpenAI(by_passage) as online, \
            FakeBatchAPI(by_passage, plans=[BatchPlan(expire_after=5)]) as batch, \
            LabelStore(tmp_path / "s.sqlite") as store:
        cfg = config(tmp_path, online.base_url, batch.base_url, batch_fallback="online")
        result = run_batch(cfg, store)
        assert online.calls == 3
        assert result.complete and result.submitted_batches == 1
        assert sum(uploaded_custom_ids(batch).values()) == len(PAIRS)
        assert len(grades(store, Labeller(cfg).judge_id)) == len(PAIRS)


def test_max_cost_is_reserved_per_file_and_stops_before_submitting(tmp_path):
    with FakeBatchAPI(by_passage) as batch, LabelStore(tmp_path / "s.sqlite") as store:
        cfg = config(tmp_path, "http://127.0.0.1:9/v1", batch.base_url, batch_requests=4,
                     max_cost=1e-9)
        result = run_batch(cfg, store)
        assert result.stop_reason == "budget" and result.submitted_batches == 0
        assert not batch.files and not BatchLog(store).batches()


def write_inputs(tmp_path):
    (tmp_path / "q.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"docid": d, "text": p["text"]}) + "\n"
                                              for d, p in PASSAGES.items()))
    (tmp_path / "pairs.txt").write_text("".join(f"{q} {d}\n" for q, d in PAIRS))


def cli_args(tmp_path, batch, *extra):
    return ["label", "--queries", str(tmp_path / "q.tsv"), "--passages",
            str(tmp_path / "p.jsonl"), "--pairs", str(tmp_path / "pairs.txt"), "--store",
            str(tmp_path / "s.sqlite"), "--model", "gpt-4o-mini", "--base-url",
            "http://127.0.0.1:9/v1", "--batch-url", batch.base_url, "--api-key", "k",
            "--cache-dir", str(tmp_path / "cache"), "--batch", "--quiet", "--poll-interval",
            "0.01", *extra]


def test_cli_exits_5_while_batches_run_then_0(tmp_path, capsys):
    write_inputs(tmp_path)
    with FakeBatchAPI(by_passage) as batch:
        assert main(cli_args(tmp_path, batch)) == 5
        assert "still running" in capsys.readouterr().out
        assert main(cli_args(tmp_path, batch, "--wait")) == 0
    with LabelStore(tmp_path / "s.sqlite") as store:
        assert store.count() == len(PAIRS)


#: the CLI's ``label --batch --wait --batch-requests 3`` of cli_args, through the library, with
#: a step callback that kills this very process (as kill -9 would) at the step named
KILL_SCRIPT = """
import asyncio, os, signal, sys
from reljudge.io import read_pairs, read_passages, read_queries
from reljudge.judge import JudgeConfig, Labeller
from reljudge.judge.batch.job import BatchJob
from reljudge.store import LabelStore
folder, batch_url, step = sys.argv[1:4]
def die_at(name):
    if name == step:
        os.kill(os.getpid(), signal.SIGKILL)
cfg = JudgeConfig(model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1", batch_url=batch_url,
                  api_key="k", cache_dir=f"{folder}/cache", batch=True, batch_requests=3,
                  poll_interval=0.01)
queries = read_queries(f"{folder}/q.tsv")
pairs = read_pairs(f"{folder}/pairs.txt")
passages = read_passages(f"{folder}/p.jsonl", {d for _, d in pairs})
with LabelStore(f"{folder}/s.sqlite") as store:
    store.add_queries(queries)
    store.add_passages(passages)
    asyncio.run(BatchJob(Labeller(cfg), store, on_step=die_at).run(pairs, queries, passages,
                                                                    wait=True))
"""


@pytest.mark.parametrize("step", ["recorded", "uploading", "uploaded", "creating", "created",
                                  "collecting"])
@pytest.mark.slow  # kill -9 at each step, then a rerun
def test_kill_9_then_rerun_submits_no_pair_twice(tmp_path, step):
    write_inputs(tmp_path)
    with FakeBatchAPI(by_passage) as batch:
        killed = run_python(KILL_SCRIPT, str(tmp_path), batch.base_url, step, timeout=120)
        assert killed.returncode == -9, killed.stderr
        # the rerun in this process: what it finds in the store is the point, not its process
        assert main(cli_args(tmp_path, batch, "--wait", "--batch-requests", "3")) == 0
        ids = uploaded_custom_ids(batch)
        created = len(batch.batches)
    assert len(ids) == len(PAIRS) and all(n == 1 for n in ids.values())
    assert created == 3  # 8 requests in files of 3: one batch per file, none created twice
    with LabelStore(tmp_path / "s.sqlite") as store:
        assert store.count() == len(PAIRS)  # every answer stored once
        assert len({(e.qid, e.docid) for e in store.events()}) == len(PAIRS)


def test_dry_run_quote_is_at_the_batch_price(tmp_path):
    online = Labeller(config(tmp_path, "http://127.0.0.1:9/v1", batch=False))
    batch = Labeller(config(tmp_path, "http://127.0.0.1:9/v1", batch_discount=0.25))
    a = online.quote(PAIRS, QUERIES, PASSAGES)
    b = batch.quote(PAIRS, QUERIES, PASSAGES)
    assert a.cost > 0 and b.cost == pytest.approx(a.cost * 0.25)
    assert (a.to_send, a.tokens_in) == (b.to_send, b.tokens_in)


def test_batch_status_collect_cancel_commands_over_the_store(tmp_path, capsys):
    write_inputs(tmp_path)
    store = str(tmp_path / "s.sqlite")
    plans = [BatchPlan(), BatchPlan(never_finish=True)]
    with FakeBatchAPI(by_passage, plans=plans) as batch:
        assert main(cli_args(tmp_path, batch, "--batch-requests", "5")) == 5
        capsys.readouterr()
        assert main(["batch", "status", "--store", store, "--api-key", "k", "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        assert [r["status"] for r in rows] == ["in_progress", "in_progress"]
        assert [r["requests"] for r in rows] == [5, 3] and not any(
            r["collected"] == "yes" for r in rows)
        collect = ["batch", "collect", "--store", store, "--api-key", "k"]
        assert main(collect) == 5  # first: finalizing, second: running
        assert main(collect) == 5  # first collected; the second still runs
        with LabelStore(store) as s:
            assert s.count() == 5
        assert main(["batch", "cancel", "--store", store, "--api-key", "k"]) == 0
        assert main(collect) == 4  # cancelled: its 3 pairs have no grade
        with LabelStore(store) as s:
            kinds = Counter(e.failure_kind for e in s.events() if e.grade is None)
            assert kinds == {"cancelled": 3}  # their own kind
        capsys.readouterr()
        assert main(cli_args(tmp_path, batch, "--wait")) == 0  # the 3 re-batched, collected
        assert "requests submitted" in capsys.readouterr().out
        ids = uploaded_custom_ids(batch)
    assert sum(ids.values()) == len(PAIRS) + 3 and len(ids) == len(PAIRS)
    with LabelStore(store) as s:
        assert len(grades(s, s.sources()[0].name)) == len(PAIRS)


def test_error_lines_are_failures_by_kind_and_are_sent_again(tmp_path):
    def flaky(req):
        text = req.body["messages"][-1]["content"]
        if "passage number 1 " in text and "expenses" not in text:
            return Reply.error(400, "bad request line")
        if "passage number 2 " in text and "expenses" not in text:
            return Reply.error(429, "slow down")
        return by_passage(req)

    with FakeBatchAPI(flaky) as batch, LabelStore(tmp_path / "s.sqlite") as store:
        cfg = config(tmp_path, "http://127.0.0.1:9/v1", batch.base_url)
        first = run_batch(cfg, store)
        assert first.batch_failures == {"http_status": 1, "rate_limited": 1}
        assert first.graded == len(PAIRS) - 2 and first.without_grade == 2
        failed = {(e.qid, e.docid): (e.failure_kind, e.failure) for e in store.events()
                  if e.grade is None}
        assert failed == {("q1", "d1"): ("http_status", "HTTP 400: bad request line"),
                          ("q1", "d2"): ("rate_limited", "HTTP 429: slow down")}
        second = run_batch(cfg, store)
        assert second.submitted_requests == 2  # failed calls are asked again, in a batch


def test_an_unreadable_batch_answer_is_re_asked_once_as_online(tmp_path):
    def unreadable_d3(req):
        if "passage number 3 " in req.body["messages"][1]["content"] and \
                "expenses" not in req.body["messages"][1]["content"]:
            return Reply.text("I cannot decide.")
        return by_passage(req)

    with FakeOpenAI(by_passage) as online, FakeBatchAPI(unreadable_d3) as batch, \
            LabelStore(tmp_path / "s.sqlite") as store:
        cfg = config(tmp_path, online.base_url, batch.base_url)
        result = run_batch(cfg, store)
        assert online.calls == 1  # the one repair message, as the online path sends it
        assert online.requests[0].body["messages"][-2]["content"] == "I cannot decide."
        assert result.complete
        e = next(e for e in store.events() if e.docid == "d3" and e.qid == "q1")
        assert e.grade == 3 and "--- re-asked ---" in e.raw


def test_wait_shows_one_bar_of_the_providers_counts(tmp_path):
    from reljudge.judge.progress import BatchProgress

    plans = [BatchPlan(expire_after=3), BatchPlan(polls_per_stage=3)]
    with FakeBatchAPI(by_passage, plans=plans) as batch, \
            LabelStore(tmp_path / "s.sqlite") as store:
        cfg = config(tmp_path, "http://127.0.0.1:9/v1", batch.base_url, batch_requests=4)
        job = BatchJob(Labeller(cfg), store)
        result = asyncio.run(job.run(PAIRS, QUERIES, PASSAGES, wait=True, progress=True))
        assert result.graded == len(PAIRS) - 1 and not result.open
        records = BatchLog(store).batches()
        with BatchProgress(True) as bar:
            bar.update(records)
            task = bar.bar.tasks[0]
            assert (task.total, task.completed) == (8, 8)
            assert task.fields["status"] == "1 completed, 1 expired"


def test_batch_without_a_store_is_one_line_error_exit_2(tmp_path, capsys):
    write_inputs(tmp_path)
    with FakeBatchAPI(by_passage) as batch:
        args = cli_args(tmp_path, batch)
        i = args.index("--store")
        assert main(args[:i] + args[i + 2:]) == 2
        assert not batch.files
    err = capsys.readouterr().err
    assert "--batch records its batches in a label store: pass --store" in err
    assert "Traceback" not in err


# -- two paths, one answer: the bulk collection stores the online path's events ----------------

FIRST = st.one_of(
    st.sampled_from(["final score: 0", "reasoning...\n##final score: 3", "score: 2", "1",
                     '{"reason": "r", "grade": 2}', "final score: 7", "score: 1.5",
                     "I cannot decide.", "", "grade: 2 ... final score: 1"]).map(
        lambda t: {"text": t}),
    st.just({"text": None, "refusal": "I will not grade this"}),
    st.just({"text": "final score: 2", "finish_reason": "content_filter"}),
    st.sampled_from(['{"reason": "The passage', "score: 2 and", "final score: 1 and"]).map(
        lambda t: {"text": t, "finish_reason": "length"}),  # cut at max_tokens
    st.sampled_from(["2", "3"]).map(lambda g: {"text": f"final score: {g}", "logprobs":
                                               grade_logprobs(f"final score: {g}",
                                                              {"2": 0.6, "3": 0.3, "1": 0.1})}))
REPAIRED = st.sampled_from(["final score: 1", "still no idea", "final score: 9"])
SCRIPT: dict[tuple[int, int], tuple[dict, str]] = {}


def scripted(req) -> Reply:
    """The scripted answer of a pair (by passage number and query), or its repair answer."""
    text = req.body["messages"][1]["content"]
    n = int(re.search(r"passage number (\d+)", text).group(1))
    first, repaired = SCRIPT[(n, 1 if "expenses" in text else 0)]
    if req.body["messages"][-1]["content"] == REPAIR["text"]:
        return Reply.text(repaired)
    return Reply.text(first["text"], **{k: v for k, v in first.items() if k != "text"})


@pytest.fixture(scope="module")
def servers():
    with FakeOpenAI(scripted) as online, FakeBatchAPI(scripted) as batch:
        yield online, batch


def comparable(store) -> list[dict]:
    """Every stored event but its cost and latency (the online call is paid and timed; the
    batch answer is paid in the batch's spend row), in pair order."""
    rows = [{name: getattr(e, name) for name in e.__slots__
             if name not in ("cost", "latency", "created_at")} for e in store.events()]
    return sorted(rows, key=lambda r: (r["qid"], r["docid"], r["repeat"]))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=st.lists(st.tuples(FIRST, REPAIRED), min_size=8, max_size=8))
@pytest.mark.slow  # a full online and batch job (the fast set keeps batch grades and keys equal online)
def test_two_paths_one_answer_online_and_batch_store_identical_events(servers, tmp_path_factory,
                                                                     script):
    online, batch = servers
    SCRIPT.clear()
    SCRIPT.update({(i % 4, i // 4): x for i, x in enumerate(script)})  # PAIRS order
    tmp = tmp_path_factory.mktemp("paths")
    online_cfg = config(tmp / "a", online.base_url, batch=False)
    with LabelStore(tmp / "online.sqlite") as s1:
        label_pairs(online_cfg, PAIRS, QUERIES, PASSAGES, s1)
        by_online = comparable(s1)
    calls = online.calls
    with LabelStore(tmp / "batch.sqlite") as s2:
        result = run_batch(config(tmp / "b", online.base_url, batch.base_url), s2)
        by_batch = comparable(s2)
    unreadable = sum(1 for e in by_online if "\n--- re-asked ---\n" in (e["raw"] or ""))
    assert online.calls - calls == unreadable  # the batch path re-asked those, online, once
    assert result.collected_answers == len(PAIRS) and not result.open
    assert by_batch == by_online


# -- batch collect over the store alone: titled passages -----------------------------------------

def unreadable_q1_d3(req) -> Reply:
    """by_passage, except that q1/d3's first answer cannot be read (its re-ask can)."""
    text = req.body["messages"][1]["content"]
    if "passage number 3 " in text and "expenses" not in text and \
            req.body["messages"][-1]["content"] != REPAIR["text"]:
        return Reply.text("I cannot decide.")
    return by_passage(req)


def submit_titled(tmp_path, online, batch) -> str:
    """label --batch over passages with titles (submit only); returns the store path."""
    write_inputs(tmp_path)
    (tmp_path / "p.jsonl").write_text("".join(
        json.dumps({"docid": d, "text": p["text"], "title": f"Leave policy {d}"}) + "\n"
        for d, p in PASSAGES.items()))
    args = cli_args(tmp_path, batch)
    args[args.index("--base-url") + 1] = online.base_url
    assert main(args) == 5
    return str(tmp_path / "s.sqlite")


def test_batch_collect_grades_titled_passages_and_re_asks_with_the_title(tmp_path, capsys):
    with FakeOpenAI(unreadable_q1_d3) as online, FakeBatchAPI(unreadable_q1_d3) as batch:
        store = submit_titled(tmp_path, online, batch)
        assert main(["batch", "collect", "--store", store, "--api-key", "k", "--wait"]) == 0
        assert online.calls == 1  # the one re-ask, of the prompt the batch line carried
        assert "Title: Leave policy d3" in online.requests[0].body["messages"][1]["content"]
    with LabelStore(store) as s:
        got = grades(s, s.sources()[0].name)
        assert len(got) == len(PAIRS) and got[("q1", "d3")] == 3
        assert s.count() == len(PAIRS)


def test_batch_collect_never_re_asks_a_prompt_the_store_cannot_rebuild(tmp_path, capsys):
    with FakeOpenAI(unreadable_q1_d3) as online, FakeBatchAPI(unreadable_q1_d3) as batch:
        store = submit_titled(tmp_path, online, batch)
        with LabelStore(store) as s:  # as a store written before titles were kept
            s.conn.execute("UPDATE passages SET title = NULL")
        capsys.readouterr()
        assert main(["batch", "collect", "--store", store, "--api-key", "k", "--wait"]) == 4
        assert online.calls == 0  # a different prompt would have been sent and paid for
        assert "1 item(s) not re-asked" in capsys.readouterr().err
        with LabelStore(store) as s:
            assert len(grades(s, s.sources()[0].name)) == len(PAIRS) - 1
        # the original inputs finish it: the cached batch answer, then its one re-ask
        args = cli_args(tmp_path, batch, "--wait")
        args[args.index("--base-url") + 1] = online.base_url
        assert main(args) == 0
        assert online.calls == 1 and sum(uploaded_custom_ids(batch).values()) == len(PAIRS)


def polls_of(batch: FakeBatchAPI) -> int:
    """How many times the server was asked for a batch's status."""
    return sum(1 for m, path in batch.log if m == "GET" and "/batches/" in path)


@pytest.mark.parametrize("command", ["label", "batch collect"])
@pytest.mark.slow  # a SIGINTed process
def test_ctrl_c_while_waiting_for_batches_exits_3_promptly_with_the_batches_recorded(tmp_path,
                                                                                     command):
    """``--wait`` polls a batch that never finishes; one SIGINT stops the wait at once (it
    was ignored: the poll loop slept without ever yielding to asyncio's Ctrl-C handling)."""
    import signal
    import time

    write_inputs(tmp_path)
    with FakeBatchAPI(by_passage, plans=[BatchPlan(never_finish=True)]) as batch:
        argv = cli_args(tmp_path, batch, "--wait", "--poll-interval", "0.2")
        if command == "batch collect":  # submit first, then wait in `reljudge batch collect`
            assert main(cli_args(tmp_path, batch)) == 5
            argv = ["batch", "collect", "--store", str(tmp_path / "s.sqlite"), "--api-key", "k",
                    "--wait", "--quiet"]
        polls = polls_of(batch)
        # a forked `reljudge` that handles SIGINT as one started from a terminal does
        proc = reljudge(*argv, stdout=PIPE, stderr=PIPE)
        deadline = time.monotonic() + 30
        while polls_of(batch) < polls + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        at_signal = polls_of(batch)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("the SIGINT was ignored: still polling after 60 s") from None
        after = polls_of(batch) - at_signal
    assert proc.returncode == 3, err
    assert "interrupted" in err and "Traceback" not in err
    assert after <= 1, after  # the wait stopped: at most the poll already on its way
    with LabelStore(tmp_path / "s.sqlite") as store:
        open_batches = BatchLog(store).batches(open_only=True)
    assert len(open_batches) == 1 and open_batches[0].provider_id is not None


@pytest.mark.slow  # a kill -9ed process
def test_batch_status_after_a_kill_between_upload_and_creation_submits_nothing(tmp_path,
                                                                               capsys):
    """A status command never submits paid work: the uploaded file of a run killed before it
    created the batch stays uncreated until collect (or label --batch) submits it."""
    write_inputs(tmp_path)
    store = str(tmp_path / "s.sqlite")
    with FakeBatchAPI(by_passage) as batch:
        killed = run_python(KILL_SCRIPT, str(tmp_path), batch.base_url, "uploaded", timeout=120)
        assert killed.returncode == -9, killed.stderr
        assert main(["batch", "status", "--store", store, "--api-key", "k"]) == 0
        assert len(batch.batches) == 0  # status created nothing
        err = capsys.readouterr().err
        assert "is uploaded but no batch was created for it" in err
        with LabelStore(store) as s:
            assert [r.provider_id for r in BatchLog(s).batches()] == [None]
        assert main(["batch", "collect", "--store", store, "--api-key", "k", "--quiet"]) == 5
        assert len(batch.batches) == 1  # collect is what submits it


def test_cancelled_lines_and_content_filter_refusals_get_their_own_kinds(tmp_path):
    from reljudge.judge.batch.files import line_failure

    assert line_failure({"custom_id": "x", "response": None, "error": {
        "code": "batch_cancelled", "message": "cancelled"}})[0] == "cancelled"
    filtered = {"status_code": 400, "body": {"error": {
        "code": "content_filter", "message": "The response was filtered"}}}
    assert line_failure({"custom_id": "x", "response": filtered, "error": None}) == (
        "refused", "HTTP 400: The response was filtered")
    azure = {"status_code": 400, "body": {"error": {
        "code": "invalid_request", "message": "policy", "innererror": {
            "code": "ResponsibleAIPolicyViolation"}}}}
    assert line_failure({"custom_id": "x", "response": azure, "error": None})[0] == "refused"
    plain = {"status_code": 400, "body": {"error": {"code": None, "message": "bad"}}}
    assert line_failure({"custom_id": "x", "response": plain, "error": None})[0] == "http_status"


def test_a_content_filter_400_is_refused_online_and_in_a_batch_alike(tmp_path):
    """Two paths, one answer: the same filtered request is a refusal online and in a batch."""
    def filtering(req):
        text = req.body["messages"][-1]["content"]
        if "passage number 1 " in text and "expenses" not in text:
            return Reply.error(400, "The response was filtered", code="content_filter")
        return by_passage(req)

    with FakeOpenAI(filtering) as online, LabelStore(tmp_path / "o.sqlite") as s1:
        label_pairs(config(tmp_path / "a", online.base_url, batch=False), PAIRS, QUERIES,
                    PASSAGES, s1)
        on = {(e.qid, e.docid): (e.failure_kind, e.failure) for e in s1.events()
              if e.grade is None}
    with FakeBatchAPI(filtering) as batch, LabelStore(tmp_path / "b.sqlite") as s2:
        run_batch(config(tmp_path / "b", "http://127.0.0.1:9/v1", batch.base_url), s2)
        off = {(e.qid, e.docid): (e.failure_kind, e.failure) for e in s2.events()
               if e.grade is None}
    assert on == off == {("q1", "d1"): ("refused", "HTTP 400: The response was filtered")}


def test_a_failed_batch_says_why_and_files_split_by_estimated_tokens(tmp_path, capsys):
    write_inputs(tmp_path)
    reason = {"code": "token_limit_exceeded", "message": "Enqueued token limit reached"}
    with FakeBatchAPI(by_passage, plans=[BatchPlan(fail_validation=reason)]) as batch:
        assert main(cli_args(tmp_path, batch, "--wait")) == 4
        err = capsys.readouterr().err
        assert "failed: token_limit_exceeded: Enqueued token limit reached" in err
        with LabelStore(tmp_path / "s.sqlite") as store:
            details = {e.failure for e in store.events() if e.grade is None}
        assert details == {"batch failed before this request ran: token_limit_exceeded: "
                           "Enqueued token limit reached"}
    cfg = config(tmp_path, "http://127.0.0.1:9/v1")
    lines = build_lines(Labeller(cfg), [(q, d, 0) for q, d in PAIRS], QUERIES, PASSAGES)
    per_line = max(x.tokens for x in lines)
    params = Labeller(cfg).params()
    out_limit = params.get("max_tokens") or params.get("max_completion_tokens") or 0
    assert per_line > out_limit > 0  # the prompt's bound plus the output limit
    groups = list(split_files(lines, 100, 10**9, 2 * per_line))
    assert [len(g) for g in groups] == [2, 2, 2, 2]
    assert all(sum(x.tokens for x in g) <= 2 * per_line for g in groups)
    with pytest.raises(ConfigError, match="more than --batch-tokens"):
        list(split_files(lines, 100, 10**9, per_line - 1))
