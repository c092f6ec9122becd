"""The two files of a Batch API job: request lines out, answer lines in.

Request lines are the online path's requests (messages, parameters, body) with the answer
cache key as ``custom_id``; each prompt is rendered and encoded once, for its key and its line
and all its repeats. Answer lines are read with the online path's rules: the answer of a 200
line is graded as the online labeller grades a cached answer (``answer_fields``; a refusal is a
failure of kind ``refused``, an unreadable answer is left to the labeller's one re-ask), and
every other line is a failure with its kind (``line_failure``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from reljudge.errors import ConfigError
from reljudge.judge.budget import prompt_tokens_bound
from reljudge.judge.cache import RequestKeys
from reljudge.judge.failures import CallFailed, error_object, status_kind
from reljudge.judge.http.client import Answer, answer_from_response, grade_fields, refusal_failure
from reljudge.judge.labeller import Labeller
from reljudge.judge.parse import parse_answer
from reljudge.labels import FailureKind

ENDPOINT: Final = "/v1/chat/completions"

Item = tuple[str, str, int]

_JSON = json.JSONEncoder(ensure_ascii=False)


@dataclass(frozen=True)
class BatchLine:
    """One request line of a batch input file and the items it answers."""

    custom_id: str
    #: the JSONL line, newline included
    data: bytes
    items: tuple[Item, ...]
    #: the most this request can cost at the batch price
    worst_case: float
    #: the most tokens it can enqueue: the prompt's bound plus the output limit
    tokens: int = 0


def build_lines(labeller: Labeller, items: Sequence[Item], queries: Mapping[str, str],
                passages: Mapping[str, Any], discount: float = 0.5) -> list[BatchLine]:
    """The batch request lines of these items (identical requests once, in item order), with
    the online path's messages, parameters, body and cache key."""
    params = labeller.params()
    model = labeller.config.model
    out_limit = params.get("max_tokens") or params.get("max_completion_tokens") or 0
    price = labeller.price.scaled(discount)
    # the online path's key
    keys = RequestKeys(labeller.endpoint.base_url, model, params,
                       replica=labeller.specs[0].replica)
    # the body is {"model", "messages", **params} (client.request_body), keys in that order
    head = f', "method": "POST", "url": "{ENDPOINT}", "body": {{"model": {_JSON.encode(model)}' \
           ', "messages": '
    tail = "".join(f", {_JSON.encode(k)}: {_JSON.encode(v)}" for k, v in params.items()) + "}}\n"
    # (qid, docid) -> encoded messages, worst-case cost, most tokens
    prompts: dict[tuple[str, str], tuple[str, float, int]] = {}
    by_key: dict[str, list[Item]] = {}
    data: dict[str, tuple[bytes, float, int]] = {}
    for item in items:
        pair = item[:2]
        prompt = prompts.get(pair)
        if prompt is None:
            messages = labeller.messages(item[0], item[1], queries, passages)
            bound = prompt_tokens_bound(messages)
            prompt = prompts[pair] = (RequestKeys.encode(messages), price.cost(bound, out_limit),
                                      bound + out_limit)
        key = keys.key(prompt[0], item[2])
        if key in by_key:
            by_key[key].append(item)
            continue
        by_key[key] = [item]
        data[key] = (f'{{"custom_id": "{key}"{head}{prompt[0]}{tail}'.encode(), prompt[1],
                     prompt[2])
    return [BatchLine(k, data[k][0], tuple(v), data[k][1], data[k][2]) for k, v in by_key.items()]


def split_files(lines: Sequence[BatchLine], max_requests: int, max_bytes: int,
                max_tokens: int | None = None) -> Iterator[list[BatchLine]]:
    """Consecutive groups of lines, each within the request, byte and (estimated) token limits
    of one file."""
    group: list[BatchLine] = []
    size = tokens = 0
    for line in lines:
        if len(line.data) > max_bytes:
            raise ConfigError(f"one batch request is {len(line.data)} bytes, more than "
                              f"--batch-bytes {max_bytes}")
        if max_tokens is not None and line.tokens > max_tokens:
            raise ConfigError(f"one batch request may enqueue {line.tokens} tokens, more than "
                              f"--batch-tokens {max_tokens}")
        if group and (len(group) >= max_requests or size + len(line.data) > max_bytes
                      or (max_tokens is not None and tokens + line.tokens > max_tokens)):
            yield group
            group, size, tokens = [], 0, 0
        group.append(line)
        size += len(line.data)
        tokens += line.tokens
    if group:
        yield group


def line_failure(line: dict) -> tuple[FailureKind, str]:
    """The failure kind and detail of a batch error-file line."""
    error = line.get("error") or {}
    resp = line.get("response") or {}
    if error.get("code") == "batch_expired":
        return FailureKind.EXPIRED, "batch expired before this request ran"
    if error.get("code") == "batch_cancelled":
        return FailureKind.CANCELLED, "batch cancelled before this request ran"
    status = resp.get("status_code")
    if status:
        err = error_object(resp.get("body") or {})
        message = err.get("message") if isinstance(err, dict) else None
        return status_kind(status, err), f"HTTP {status}" + (f": {message}" if message else "")
    return FailureKind.HTTP_STATUS, f"batch error {error.get('code')}: {error.get('message')}"


def read_lines(lines: Iterable[str], wanted: Mapping[str, Any], is_output: bool,
               answers: dict[str, Answer], failures: dict[str, tuple[FailureKind, str]]
               ) -> list[tuple[str, Answer]]:
    """The answers (into ``answers``) and failed lines (into ``failures``) of lines of a
    downloaded output or error file, by custom_id; lines of other ids, and repeats, are
    skipped. Returns the answers these lines added."""
    added = []
    for raw in lines:
        if not raw.strip():
            continue
        line = json.loads(raw)
        cid = line.get("custom_id")
        if cid not in wanted or cid in answers or cid in failures:
            continue
        resp = line.get("response") or {}
        if not (is_output and resp.get("status_code") == 200):
            failures[cid] = line_failure(line)
            continue
        try:
            answers[cid] = answer = answer_from_response(resp.get("body") or {})
        except CallFailed as e:
            failures[cid] = (e.kind, e.describe())
            continue
        added.append((cid, answer))
    return added


def answer_fields(answer: Answer, output: str) -> dict[str, Any] | None:
    """The event fields the online labeller records for this answer taken from the cache (a
    grade, or a refusal), or None when it cannot be read (or was cut off before its grade) and
    the labeller must decide (re-ask, or record the cut)."""
    common = dict(raw=answer.text, tokens_in=answer.tokens_in, tokens_out=answer.tokens_out,
                  cost=0.0, latency=answer.latency)
    refused = refusal_failure(answer)
    if refused is not None:
        return dict(grade=None, failure=refused, failure_kind=FailureKind.REFUSED.value,
                    **common)
    parsed = parse_answer(answer.text, output, answer.cut_off)
    if parsed.grade is None:
        return None
    return dict(grade=parsed.grade, **grade_fields(answer.logprobs, parsed.grade), **common)
