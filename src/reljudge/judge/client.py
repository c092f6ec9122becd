"""The one place that talks to an LLM: the openai async client against any compatible URL.

Retries are ours (the openai client's own are off, so every attempt is counted): on 429, 5xx,
timeouts and dropped connections, exponential backoff with jitter, honouring Retry-After; never
on 400/401/403/404 or a content-filter refusal. A pair whose attempts run out is a recorded
failure, not a dropped row.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import time
from dataclasses import dataclass
from typing import Any

import httpx2  # the openai SDK's HTTP library
import openai
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from reljudge.judge.transport import open_transport, resolve_transport, status_error

JSON_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "relevance_judgment",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"reason": {"type": "string"},
                           "grade": {"type": "integer", "enum": [0, 1, 2, 3]}},
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
    logprobs: list[dict] | None = None  # [{"token": t, "top": {token: logprob}}]

    def to_cache(self) -> dict:
        """A plain dict for the call cache."""
        return self.__dict__.copy()


class CallFailed(Exception):
    """A call that produced no usable answer; ``fatal`` stops the whole job (auth, model)."""

    def __init__(self, reason: str, *, fatal: bool = False, attempts: int = 1):
        super().__init__(reason)
        self.reason = reason
        self.fatal = fatal
        self.attempts = attempts


def is_transient(exc: BaseException) -> bool:
    """Worth another attempt: rate limits, server errors, timeouts, dropped connections."""
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500 or exc.status_code == 408
    return False


def retry_after(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait (Retry-After or retry-after-ms), if it did."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    headers = exc.response.headers
    if headers.get("retry-after-ms"):
        try:
            return float(headers["retry-after-ms"]) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time()) if when else None


class _Attempt:
    """The one field of tenacity's RetryCallState that its backoff strategies read."""

    def __init__(self, attempt_number: int):
        self.attempt_number = attempt_number


class _Wait:
    """Retry-After when the server gives one (capped), else exponential backoff with jitter.

    The first attempt runs outside tenacity (see ``ChatClient.complete``), so tenacity's
    attempt k is our attempt k + 1.
    """

    def __init__(self, initial: float, maximum: float):
        try:
            self.backoff = wait_exponential_jitter(multiplier=initial, max=maximum)
        except TypeError:  # tenacity before 9.1 names it `initial`
            self.backoff = wait_exponential_jitter(initial=initial, max=maximum)
        self.maximum = maximum

    def after(self, exc: BaseException | None, attempt: int) -> float:
        """Seconds to wait after our attempt number ``attempt`` failed with ``exc``."""
        asked = retry_after(exc)
        return min(asked, self.maximum) if asked is not None else self.backoff(_Attempt(attempt))

    def __call__(self, state) -> float:
        return self.after(state.outcome.exception() if state.outcome else None,
                          state.attempt_number + 1)


def describe(exc: BaseException) -> str:
    """A short failure reason for the record."""
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection error"
    if isinstance(exc, openai.APIStatusError):
        message = ""
        try:
            body = exc.body if isinstance(exc.body, dict) else {}
            message = str(body.get("message") or body.get("error", {}).get("message") or "")
        except AttributeError:
            message = ""
        return f"HTTP {exc.status_code}" + (f": {message[:200]}" if message else "")
    return f"{type(exc).__name__}: {exc}"


def _never(request: httpx2.Request) -> httpx2.Response:
    raise AssertionError("reljudge sends through its transport, not the SDK client")


_NOT_SENDING = httpx2.AsyncClient(transport=httpx2.MockTransport(_never), trust_env=False)


class ChatClient:
    """Chat completions with our retry policy; knows nothing of grades or caches.

    The openai SDK supplies the endpoint (base URL, ``OPENAI_*`` settings), the headers and
    auth, and the exception classes; each call is one prepared JSON POST sent by a
    ``transport`` (see ``reljudge.judge.transport`` for why not the SDK's request path).
    """

    def __init__(self, *, base_url: str | None, api_key: str | None, model: str,
                 timeout: float = 60.0, max_attempts: int = 6, backoff: float = 1.0,
                 max_backoff: float = 60.0, connections: int = 16, transport: str = "auto"):
        self.model = model
        self.max_attempts = max_attempts
        self._wait = _Wait(backoff, max_backoff)
        # the SDK resolves the endpoint and headers; its own HTTP client never sends (so none
        # is built: that costs a tenth of a second per run)
        sdk = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                 max_retries=0, http_client=_NOT_SENDING)
        base = sdk.base_url  # always ends in "/"
        self.url = str(base.copy_with(raw_path=base.raw_path + b"chat/completions"))
        headers = {k: v for k, v in {**sdk.default_headers, **sdk.auth_headers}.items()
                   if isinstance(v, str)}  # the SDK marks headers it leaves out with Omit
        self.transport = resolve_transport(transport)
        self._post = open_transport(self.transport, self.url, headers, connections=connections,
                                    timeout=timeout)

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self._post.close()

    async def complete(self, messages: list[dict], params: dict[str, Any]) -> Answer:
        """One answer, retried by policy; raises CallFailed when none can be had."""
        try:  # the first attempt without retry machinery: most calls need no other
            return await self._once(messages, params)
        except openai.APIError as e:
            if not is_transient(e) or self.max_attempts == 1:
                raise _failure(e, 1) from None
            await asyncio.sleep(self._wait.after(e, 1))
        attempts = 1
        try:
            async for attempt in AsyncRetrying(
                    retry=retry_if_exception(is_transient), wait=self._wait,
                    stop=stop_after_attempt(self.max_attempts - 1), reraise=True):
                with attempt:
                    attempts += 1
                    return await self._once(messages, params)
        except openai.APIError as e:
            raise _failure(e, attempts) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _once(self, messages: list[dict], params: dict[str, Any]) -> Answer:
        start = time.perf_counter()
        body = json.dumps({"model": self.model, "messages": messages, **params}).encode()
        status, headers, content = await self._post.post(body)
        latency = time.perf_counter() - start
        if status >= 400:
            raise status_error(self.url, status, headers, content)
        try:
            # read as plain data: the SDK's typed models would cost more CPU than the rest of
            # our work per judgment
            resp = json.loads(content)
        except ValueError as e:  # a 200 whose body is not JSON
            raise CallFailed(f"malformed response: not JSON ({e})") from None
        return _answer(resp, latency)


def _failure(exc: openai.APIError, attempts: int) -> CallFailed:
    """The recorded failure of a call; auth, permission and unknown-model errors stop the job."""
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError,
                        openai.NotFoundError)):
        return CallFailed(describe(exc), fatal=True, attempts=attempts)
    reason = describe(exc)
    if is_transient(exc):
        reason = f"gave up after {attempts} attempt{'s' if attempts > 1 else ''}: {reason}"
    return CallFailed(reason, attempts=attempts)


def _answer(resp: dict, latency: float) -> Answer:
    """An Answer from the JSON of a chat.completion (read as plain data: building the SDK's
    typed models for every answer would cost more CPU than the rest of our work)."""
    try:
        choice = resp["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        raise CallFailed(f"malformed response: {str(resp)[:200]}") from None
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

def grade_probabilities(logprobs: list[dict] | None, grade: int) -> tuple[float, ...] | None:
    """P(grade = 0..3) from the top logprobs at the last token that states the grade."""
    if not logprobs:
        return None
    for tok in reversed(logprobs):
        if tok["token"].strip() == str(grade):
            mass = {g: 0.0 for g in range(4)}
            for t, lp in tok["top"].items():
                t = t.strip()
                if t in ("0", "1", "2", "3"):
                    mass[int(t)] += math.exp(lp)
            total = sum(mass.values())
            if total <= 0:
                return None
            return tuple(mass[g] / total for g in range(4))
    return None
