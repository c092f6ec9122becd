"""Why a judgment failed, as data: the failure kinds and the rules that follow from them.

A failed judgment is recorded with a kind (its own store column) and a detail text. Every
decision about a failure (retry it at once, ask it again on resume, stop the job) reads the kind,
never the wording of the detail.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from reljudge.labels import FailureKind

#: failures of the call itself: asked again on the next run (the endpoint may be back)
CALL_KINDS = frozenset({FailureKind.CONNECTION, FailureKind.TLS, FailureKind.TIMEOUT,
                        FailureKind.HTTP_STATUS, FailureKind.RATE_LIMITED, FailureKind.BUDGET,
                        FailureKind.EXPIRED, FailureKind.CANCELLED})
#: failures of the answer (the model spoke): asked again only with --retry-failed
ANSWER_KINDS = frozenset({FailureKind.REFUSED, FailureKind.UNPARSEABLE, FailureKind.TRUNCATED})
#: kinds that say the endpoint itself is unusable: they feed the circuit breaker at once
ENDPOINT_KINDS = frozenset({FailureKind.CONNECTION, FailureKind.TLS})

#: error codes of a request a content filter stopped (OpenAI, Azure OpenAI): a refusal, not a
#: failed call
CONTENT_FILTER_CODES = frozenset({"content_filter", "content_policy_violation",
                                  "ResponsibleAIPolicyViolation"})

#: HTTP statuses worth another attempt (OpenAI's own SDK retries the same ones)
RETRY_STATUSES = frozenset({408, 409, 429})
#: HTTP statuses that mean the job cannot work at all (bad key, no access, unknown model)
FATAL_STATUSES = frozenset({401, 403, 404})


class CallFailed(Exception):
    """A call that produced no usable answer.

    ``status``/``headers`` are set for HTTP error answers (the retry policy reads them),
    ``feature`` when the error names a request feature the endpoint rejects, ``fatal`` when
    the job cannot go on (auth, unknown model, TLS).
    """

    def __init__(self, kind: FailureKind, detail: str, *, url: str = "", attempts: int = 1,
                 status: int | None = None, headers: Mapping[str, str] | None = None,
                 feature: str | None = None, fatal: bool = False):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.url = url
        self.attempts = attempts
        self.status = status
        self.headers: Mapping[str, str] = headers or {}
        self.feature = feature
        self.fatal = fatal or kind is FailureKind.TLS or status in FATAL_STATUSES
        #: set by the retry policy: retryable, but attempts ran out
        self.gave_up = False

    @property
    def signature(self) -> tuple[Any, ...]:
        """What makes two failures 'the same error' for the circuit breaker."""
        return (self.kind, self.status, self.detail)

    def describe(self) -> str:
        """The recorded detail text: the cause, and the attempts when the policy gave up."""
        if self.gave_up:
            return (f"{self.detail} (gave up after {self.attempts} "
                    f"attempt{'s' if self.attempts != 1 else ''})")
        return self.detail


def status_kind(status: int, error: Any) -> FailureKind:
    """The kind of an HTTP error answer, online and in a batch error file alike: 429 is rate
    limiting, a content filter's 400 a refusal, any other status an HTTP failure. ``error``
    is the body's ``error`` object (or anything else, ignored)."""
    if status == 429:
        return FailureKind.RATE_LIMITED
    if status == 400 and isinstance(error, dict):
        inner = error.get("innererror")
        codes = {error.get("code"), inner.get("code") if isinstance(inner, dict) else None}
        if codes & CONTENT_FILTER_CODES:
            return FailureKind.REFUSED
    return FailureKind.HTTP_STATUS


def error_object(content: bytes | str | dict) -> Any:
    """The ``error`` object of an HTTP error body (bytes, text or parsed), else None."""
    body = content
    if isinstance(content, (bytes, str)):
        try:
            body = json.loads(content)
        except ValueError:
            return None
    return body.get("error") if isinstance(body, dict) else None


def asked_again(kind: str | None, retry_failed: bool) -> bool:
    """Whether a recorded failure is asked again by a new run (resume): a failure of the call
    always (a kind this reljudge does not know counts as an HTTP failure), any other (an
    answer's, or one recorded without a kind) only with ``retry_failed``. The store gave every
    failure recorded before kinds had a column its kind (schema version 9)."""
    if retry_failed:
        return True
    if kind is None:
        return False
    try:
        resolved = FailureKind(kind)
    except ValueError:
        resolved = FailureKind.HTTP_STATUS
    return resolved in CALL_KINDS
