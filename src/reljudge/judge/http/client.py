"""The one place that talks to an LLM: chat completions against any OpenAI-compatible URL.

The client is given an endpoint resolved once (``reljudge.judge.http.endpoints``: the
settings, else the OPENAI_* variables, else OpenAI) and reads neither again; each call is
one JSON POST carried by a transport (``reljudge.judge.http.transport``) and retried by the policy
in ``reljudge.judge.http.retry``. Every way a call can fail ends as a ``CallFailed`` with a kind
(``reljudge.judge.failures``): a pair whose attempts run out is a recorded failure, not a
dropped row.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reljudge.grades import SCALE
from reljudge.judge.failures import CallFailed, error_object, status_kind
from reljudge.judge.http.endpoints import Endpoint
from reljudge.judge.http.retry import RetryPolicy
from reljudge.judge.http.transport import open_transport, resolve_transport, ssl_context
from reljudge.labels import FailureKind

JSON_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "relevance_judgment",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"reason": {"type": "string"},
                           "grade": {"type": "integer", "enum": list(SCALE)}},
            "required": ["reason", "grade"],
            "additionalProperties": False,
        },
    },
}

@dataclass(frozen=True)
class Answer:
    """What the model said, and what it cost in tokens and time."""

    text: str | None
    finish_reason: str | None
    refusal: str | None
    tokens_in: int
    tokens_out: int
    latency: float
    #: [{"token": t, "top": {token: logprob}}]
    logprobs: list[dict] | None = None

    @property
    def cut_off(self) -> bool:
        """True when the answer stopped at the output token limit (finish_reason "length")."""
        return self.finish_reason == "length"

    def to_cache(self) -> dict:
        """A plain dict for the call cache."""
        return self.__dict__.copy()


# request features an endpoint may reject, as named in its error text -> the ladder they step
_FEATURE_NAMES = (("json_schema", "response_format"), ("response_format", "response_format"),
                  ("top_logprobs", "logprobs"), ("logprobs", "logprobs"),
                  ("max_completion_tokens", "token_limit"), ("max_tokens", "token_limit"),
                  ("seed", "seed"))
_FEATURE_RES = [(re.compile(rf"(?<![A-Za-z_]){name}(?![A-Za-z_])"), name, feature)
                for name, feature in _FEATURE_NAMES]


#: the answer tokens that state a grade
GRADE_TOKENS = {str(g): g for g in SCALE}


def rejected_feature(message: str, params: dict[str, Any]) -> str | None:
    """The request feature (response_format, logprobs, token_limit, seed) an error names,
    among those the request used; None when it names none."""
    sent = set(params)
    if isinstance(params.get("response_format"), dict):
        sent.add(params["response_format"].get("type", ""))
    for regex, name, feature in _FEATURE_RES:
        if name in sent and regex.search(message):
            return feature
    return None


def request_body(model: str, messages: list[dict], params: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of one chat completion request (online, or a Batch API line's body)."""
    return {"model": model, "messages": messages, **params}


def answer_from_response(resp: dict, latency: float = 0.0) -> Answer:
    """An Answer from a chat.completion body (raises CallFailed when it has none)."""
    return _answer(resp, latency)


def error_message(content: bytes) -> str:
    """The message of an HTTP error body (OpenAI's shape, FastAPI's, or the plain text)."""
    text = content.decode("utf-8", "replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text[:300]
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or error
    else:
        message = error
    return (message if isinstance(message, str) else json.dumps(message))[:300]


class ChatClient:
    """Chat completions with our retry policy; knows nothing of grades or caches."""

    def __init__(self, endpoint: Endpoint, *, timeout: float = 60.0, max_attempts: int = 6,
                 backoff: float = 1.0, max_backoff: float = 60.0, transport: str = "auto",
                 ca_bundle: str | Path | None = None, client_cert: str | Path | None = None,
                 client_key: str | Path | None = None):
        """Calls to this endpoint (resolved: its URL, key, model, headers and concurrency are
        used as they are), with the transport and TLS settings given."""
        self.endpoint = endpoint
        self.model = endpoint.model
        self.timeout = timeout
        self.policy = RetryPolicy(max_attempts, backoff, max_backoff)
        self.url = endpoint.url("chat/completions")
        self.transport = resolve_transport(transport)
        # loading the system's CAs takes ~40 ms: only when TLS may be spoken
        tls = (self.url.startswith("https:") or ca_bundle or client_cert
               or endpoint.proxy_tls)
        self._post = open_transport(self.transport, self.url, endpoint.headers(),
                                    connections=endpoint.concurrency, timeout=timeout,
                                    ssl_ctx=ssl_context(ca_bundle, client_cert, client_key)
                                    if tls else None)

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self._post.close()

    async def preflight(self) -> None:
        """Before the first paid call: the endpoint answers and accepts the key.

        A GET of the models list costs nothing; any answer but 401/403 will do (some servers
        have no such route). Raises a fatal CallFailed otherwise.
        """
        if self.endpoint.needs_key and not self.endpoint.api_key:
            raise CallFailed(FailureKind.HTTP_STATUS, f"{self.endpoint.display} needs an API "
                             "key: pass --api-key or set OPENAI_API_KEY", fatal=True,
                             url=self.url)
        url = self.endpoint.url("models")
        try:
            status = await self._post.get(url, min(self.timeout, 10.0))
        except CallFailed as e:
            e.fatal = True
            raise
        if status in (401, 403):
            raise CallFailed(FailureKind.HTTP_STATUS, f"HTTP {status} from {url}: the key was "
                             "rejected", status=status, url=url)

    async def complete(self, messages: list[dict], params: dict[str, Any],
                       give_up: Callable[[CallFailed], bool] | None = None,
                       halted: Callable[[], bool] | None = None,
                       on_retry: Callable[[CallFailed], None] | None = None) -> Answer:
        """One answer, retried by policy (``give_up`` hears of each failed attempt and may
        end the retries; ``halted()`` ends them at once; ``on_retry`` hears of each retry);
        raises CallFailed when none can be had."""
        return await self.policy.run(lambda: self._once(messages, params), give_up, halted,
                                     on_retry)

    async def _once(self, messages: list[dict], params: dict[str, Any]) -> Answer:
        start = time.perf_counter()
        body = json.dumps(request_body(self.model, messages, params)).encode()
        status, headers, content = await self._post.post(body)
        latency = time.perf_counter() - start
        if status >= 400:
            raise self._status_failure(status, headers, content, params)
        try:
            # read as plain data: the SDK's typed models would cost more CPU than the rest of
            # our work per judgment
            resp = json.loads(content)
        except ValueError as e:  # a 200 whose body is not JSON
            raise CallFailed(FailureKind.UNPARSEABLE, f"malformed response: not JSON ({e})",
                             url=self.url) from None
        return _answer(resp, latency)

    def _status_failure(self, status: int, headers: Any, content: bytes,
                        params: dict[str, Any]) -> CallFailed:
        message = error_message(content)
        kind = status_kind(status, error_object(content))
        feature = None if status in (401, 403, 429) else rejected_feature(message, params)
        return CallFailed(kind, f"HTTP {status}" + (f": {message}" if message else ""),
                          url=self.url, status=status, headers=headers, feature=feature)


def _answer(resp: dict, latency: float) -> Answer:
    """An Answer from the JSON of a chat.completion (read as plain data: building the SDK's
    typed models for every answer would cost more CPU than the rest of our work)."""
    try:
        choice = resp["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        raise CallFailed(FailureKind.UNPARSEABLE,
                         f"malformed response: {str(resp)[:200]}") from None
    usage = resp.get("usage") or {}
    logprobs = None
    content = (choice.get("logprobs") or {}).get("content")
    if content:
        logprobs = [{"token": t["token"],
                     "top": {x["token"]: x["logprob"] for x in (t.get("top_logprobs") or [])}
                     or {t["token"]: t["logprob"]}} for t in content]
    return Answer(message.get("content"), choice.get("finish_reason"), message.get("refusal"),
                  int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                  latency, logprobs)


def refusal_failure(answer: Answer) -> str | None:
    """The failure text of an answer the model refused (or a content filter cut), else None."""
    if answer.finish_reason == "content_filter" or answer.refusal:
        return f"refused: {answer.refusal or 'content_filter'}"
    return None


def grade_fields(logprobs: list[dict] | None, grade: int) -> dict[str, Any]:
    """An event's ``probs`` (P(grade) for each grade of the scale, or None) and ``expected_grade`` for this grade."""
    probs = grade_probabilities(logprobs, grade)
    return {"probs": probs,
            "expected_grade": sum(g * p for g, p in enumerate(probs)) if probs else None}


def grade_probabilities(logprobs: list[dict] | None, grade: int) -> tuple[float, ...] | None:
    """P(grade) for each grade of the scale from the top logprobs at the last token that states the grade."""
    if not logprobs:
        return None
    for tok in reversed(logprobs):
        if tok["token"].strip() == str(grade):
            mass = {g: 0.0 for g in SCALE}
            for t, lp in tok["top"].items():
                t = t.strip()
                if t in GRADE_TOKENS:
                    mass[GRADE_TOKENS[t]] += math.exp(lp)
            total = sum(mass.values())
            if total <= 0:
                return None
            return tuple(mass[g] / total for g in SCALE)
    return None
