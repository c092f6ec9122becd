"""Batch request lines and answer lines: the same keys, bodies and grades as the online path."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reljudge.judge import JudgeConfig, Labeller
from reljudge.judge.batch.files import answer_fields, build_lines, read_lines
from reljudge.judge.batch.job import new_intent, upload_name
from reljudge.judge.cache import RequestKeys, cache_key, replica_key
from reljudge.judge.http.client import Answer, request_body
from reljudge.labels import FailureKind

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
JSONABLE = st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                        lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)
MESSAGES = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user"]),
                                           "content": TEXT}), min_size=1, max_size=3)


@settings(max_examples=200)
@given(base_url=st.sampled_from(["http://127.0.0.1:8000/v1", "http://x/v1/", "https://é.org"]),
       model=TEXT, messages=MESSAGES, params=st.dictionaries(TEXT, JSONABLE, max_size=4),
       repeat=st.integers(0, 1000))
@pytest.mark.slow  # 200 hypothesis examples (the digest test below is fast)
def test_request_keys_equal_cache_key(base_url, model, messages, params, repeat):
    keys = RequestKeys(base_url, model, params)
    assert keys.key(keys.encode(messages), repeat) == cache_key(base_url, model, messages,
                                                                params, repeat)
    replicas = RequestKeys(base_url, model, params, replica=True)
    assert replicas.key(replicas.encode(messages), repeat) == replica_key(model, messages,
                                                                          params, repeat)


@settings(max_examples=200)
@given(base_url=st.sampled_from(["http://127.0.0.1:8000/v1", "http://x/v1/", "https://é.org"]),
       model=TEXT, messages=MESSAGES, params=st.dictionaries(TEXT, JSONABLE, max_size=4),
       repeat=st.integers(0, 1000))
def test_cache_keys_are_the_digest_of_the_sorted_json_of_the_request(base_url, model, messages,
                                                                      params, repeat):
    def digest(blob: dict) -> str:
        text = json.dumps(blob, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    assert cache_key(base_url, model, messages, params, repeat) == digest(
        {"base_url": base_url.rstrip("/"), "model": model, "messages": messages,
         "params": params, "sample": repeat})
    assert replica_key(model, messages, params, repeat) == digest(
        {"replicas_of": model, "messages": messages, "params": params, "sample": repeat})


def labeller(tmp_path, **kw) -> Labeller:
    return Labeller(JudgeConfig(model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1",
                                api_key="k", cache_dir=tmp_path / "cache", **kw))


@settings(max_examples=50, deadline=None)
@given(query=TEXT, text=TEXT, title=st.none() | TEXT, samples=st.integers(1, 3),
       prompt=st.sampled_from(["basic", "json", "umbrela"]), replicas=st.sampled_from([None, True]))
def test_a_batch_line_is_the_online_request_under_its_cache_key(tmp_path_factory, query, text,
                                                                title, samples, prompt, replicas):
    lab = labeller(tmp_path_factory.mktemp("c"), prompt=prompt, seed=7, logprobs=True,
                   replicas=replicas)
    passages = {"d": {"text": text, "title": title} if title is not None else text}
    items = [("q", "d", s) for s in range(samples)]
    lines = build_lines(lab, items, {"q": query}, passages)
    messages = lab.messages("q", "d", {"q": query}, passages)
    assert [x.items for x in lines] == [(it,) for it in items]
    for line, (_, _, s) in zip(lines, items, strict=True):
        assert line.data.endswith(b"\n") and line.data.count(b"\n") == 1
        obj = json.loads(line.data)
        assert obj["custom_id"] == line.custom_id == lab.request_key(messages, s)
        assert (obj["method"], obj["url"]) == ("POST", "/v1/chat/completions")
        assert obj["body"] == request_body("gpt-4o-mini", messages, lab.params())


def test_identical_requests_share_one_line(tmp_path):
    lab = labeller(tmp_path)
    passages = {"a": "same text", "b": "same text", "c": "other"}
    lines = build_lines(lab, [("q", "a", 0), ("q", "b", 0), ("q", "c", 0)], {"q": "x"},
                        passages)
    assert [x.items for x in lines] == [(("q", "a", 0), ("q", "b", 0)), (("q", "c", 0),)]


def test_the_upload_name_carries_the_content_hash_and_a_nonce():
    a, b = new_intent(b"lines\n"), new_intent(b"lines\n")
    assert a != b  # two stores uploading the same file never adopt each other's
    assert a[:16] == b[:16] == hashlib.sha256(b"lines\n").hexdigest()[:16]
    assert upload_name(a) == f"reljudge-batch-{a}.jsonl"


def answer(text, **kw) -> Answer:
    return Answer(text, kw.get("finish_reason", "stop"), kw.get("refusal"), 100, 10, 0.0,
                  kw.get("logprobs"))


def test_answer_fields_grade_refusal_and_unreadable():
    assert answer_fields(answer("reasoning\nfinal score: 2"), "text")["grade"] == 2
    refused = answer_fields(answer(None, refusal="no"), "text")
    assert (refused["grade"], refused["failure"], refused["failure_kind"]) == \
        (None, "refused: no", FailureKind.REFUSED.value)
    filtered = answer_fields(answer("final score: 3", finish_reason="content_filter"), "text")
    assert filtered["failure"] == "refused: content_filter"
    assert answer_fields(answer("I cannot decide."), "text") is None  # left to the re-ask


def test_read_lines_sorts_answers_from_failures_and_skips_strangers():
    ok = {"custom_id": "a", "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "final score: 1"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2}}}}
    bad = {"custom_id": "b", "response": {"status_code": 429, "body": {
        "error": {"message": "slow down"}}}, "error": None}
    malformed = {"custom_id": "c", "response": {"status_code": 200, "body": {"choices": []}}}
    stranger = {**ok, "custom_id": "z"}
    lines = [json.dumps(x) for x in (ok, bad, malformed, stranger, ok)] + [""]
    answers, failures = {}, {}
    added = read_lines(lines, {"a": 1, "b": 1, "c": 1}, True, answers, failures)
    assert [cid for cid, _ in added] == ["a"] and answers["a"].tokens_in == 5
    assert failures["b"] == (FailureKind.RATE_LIMITED, "HTTP 429: slow down")
    assert failures["c"][0] == FailureKind.UNPARSEABLE and set(failures) == {"b", "c"}
