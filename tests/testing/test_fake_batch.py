"""The local Batch API server, driven by the real openai SDK's files and batches resources."""

from __future__ import annotations

import json

import pytest

from reljudge.testing.fake_batch import BatchPlan, FakeBatchAPI
from reljudge.testing.fake_openai import Reply
from tests.helpers import Lazy

openai = Lazy("openai")


def request_lines(n: int, url: str = "/v1/chat/completions") -> bytes:
    """n chat-completion request lines in OpenAI's batch input format."""
    lines = [{"custom_id": f"k{i}", "method": "POST", "url": url,
              "body": {"model": "m", "messages": [{"role": "user", "content": f"pair {i}"}]}}
             for i in range(n)]
    return "".join(json.dumps(x) + "\n" for x in lines).encode()


def grade_by_pair(req) -> Reply:
    """Answers 'final score: i mod 4'; pair 3 gets a 400."""
    i = int(req.body["messages"][-1]["content"].split()[-1])
    return Reply.error(400, "bad pair") if i == 3 else Reply.text(f"final score: {i % 4}")


def submit(client, data: bytes):
    f = client.files.create(file=("in.jsonl", data), purpose="batch")
    return client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                 completion_window="24h")


def run_to_end(client, batch_id: str, limit: int = 10):
    statuses = []
    for _ in range(limit):
        b = client.batches.retrieve(batch_id)
        statuses.append(b.status)
        if b.status in ("completed", "expired", "failed", "cancelled"):
            return b, statuses
    return b, statuses


def jsonl(client, file_id: str) -> list[dict]:
    return [json.loads(x) for x in client.files.content(file_id).text.splitlines()]


@pytest.fixture
def server():
    with FakeBatchAPI(grade_by_pair) as s:
        yield s


def client_for(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def test_a_batch_walks_the_statuses_and_answers_every_line(server):
    client = client_for(server)
    created = submit(client, request_lines(6))
    assert created.status == "validating" and created.request_counts.total == 6
    final, statuses = run_to_end(client, created.id)
    assert statuses == ["in_progress", "finalizing", "completed"]
    assert (final.request_counts.completed, final.request_counts.failed) == (5, 1)
    out = {x["custom_id"]: x for x in jsonl(client, final.output_file_id)}
    assert sorted(out) == ["k0", "k1", "k2", "k4", "k5"]
    assert out["k2"]["response"]["body"]["choices"][0]["message"]["content"] == "final score: 2"
    (err,) = jsonl(client, final.error_file_id)
    assert err["custom_id"] == "k3" and err["response"]["status_code"] == 400


def test_an_expired_batch_answers_some_lines_and_marks_the_rest_expired():
    with FakeBatchAPI(grade_by_pair, plans=[BatchPlan(expire_after=2)]) as server:
        client = client_for(server)
        final, statuses = run_to_end(client, submit(client, request_lines(5)).id)
    assert statuses[-1] == "expired"
    # lines 0 and 1 done; 2, 3, 4 expired
    assert final.request_counts.completed == 2 and final.request_counts.failed == 3


def test_expired_error_lines_carry_the_batch_expired_code():
    with FakeBatchAPI(grade_by_pair, plans=[BatchPlan(expire_after=1)]) as server:
        client = client_for(server)
        final, _ = run_to_end(client, submit(client, request_lines(3)).id)
        errors = jsonl(client, final.error_file_id)
    assert [e["custom_id"] for e in errors] == ["k1", "k2"]
    assert {e["error"]["code"] for e in errors} == {"batch_expired"}


def test_a_batch_that_never_finishes_stays_in_progress():
    with FakeBatchAPI(plans=[BatchPlan(never_finish=True)]) as server:
        client = client_for(server)
        b = submit(client, request_lines(2))
        _, statuses = run_to_end(client, b.id, limit=5)
        cancelled = client.batches.cancel(b.id)
    assert statuses == ["in_progress"] * 5
    assert cancelled.status == "cancelled"


def test_validation_failures_name_the_problem_line():
    bad = request_lines(2) + b'{"custom_id": "k0", "method": "POST", ' \
                              b'"url": "/v1/chat/completions", "body": {}}\n'
    with FakeBatchAPI() as server:
        client = client_for(server)
        b = submit(client, bad)
    assert b.status == "failed"
    assert b.errors.data[0].code == "duplicate_custom_id" and b.errors.data[0].line == 3


def test_plans_apply_in_creation_order_and_polls_per_stage_slow_a_batch():
    plans = [BatchPlan(polls_per_stage=2), BatchPlan(fail_validation="no")]
    with FakeBatchAPI(plans=plans) as server:
        client = client_for(server)
        first, second = submit(client, request_lines(1)), submit(client, request_lines(1))
        _, statuses = run_to_end(client, first.id)
    assert statuses == ["validating", "in_progress", "in_progress", "finalizing",
                        "finalizing", "completed"]
    assert second.status == "failed" and second.errors.data[0].message == "no"


def test_limits_refuse_oversized_inputs():
    with FakeBatchAPI(max_requests=3, max_bytes=10_000) as server:
        client = client_for(server)
        assert submit(client, request_lines(4)).errors.data[0].code == "too_many_requests"
        with pytest.raises(openai.BadRequestError, match="limit is 10000"):
            client.files.create(file=("big.jsonl", b"x" * 10_001), purpose="batch")


def test_unknown_ids_are_404(server):
    client = client_for(server)
    with pytest.raises(openai.NotFoundError):
        client.batches.retrieve("batch-nope")
    with pytest.raises(openai.NotFoundError):
        client.files.content("file-nope")


def test_files_list_by_purpose_newest_first_and_batches_list_with_metadata(server):
    client = client_for(server)
    first = client.files.create(file=("a.jsonl", request_lines(2)), purpose="batch")
    client.files.create(file=("notes.txt", b"x"), purpose="assistants")
    second = client.files.create(file=("b.jsonl", request_lines(3)), purpose="batch")
    listed = list(client.files.list(purpose="batch"))
    assert [(f.id, f.filename) for f in listed] == [(second.id, "b.jsonl"), (first.id, "a.jsonl")]
    assert len(list(client.files.list())) == 3
    b = client.batches.create(input_file_id=first.id, endpoint="/v1/chat/completions",
                              completion_window="24h", metadata={"reljudge_intent": "abc"})
    assert [(x.id, x.metadata) for x in client.batches.list()] == \
        [(b.id, {"reljudge_intent": "abc"})]
