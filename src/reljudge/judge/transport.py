"""How a chat-completions request travels: one JSON POST, answered by (status, headers, body).

The openai SDK decides where and how to call (base URL and ``OPENAI_*`` settings, headers,
auth) and what a failure is (its exception classes); a transport only carries the bytes:

- ``aiohttp`` (the default): one ``aiohttp`` session with a pool as large as the concurrency.
  At 128 concurrent calls the SDK's own request path (option models, httpx request and
  response objects) cost 1-2.5 ms of CPU per call and capped a labelling run at 55-75 % of
  the endpoint's capacity; this path costs a fraction of that (``bench/labeller.py``).
- ``httpx``: the SDK's own HTTP client class (``openai.DefaultAsyncHttpxClient``), for
  environments where aiohttp is unwelcome.

Both raise the SDK's exceptions: ``APITimeoutError`` when the whole call exceeds the timeout,
``APIConnectionError`` for refused, reset or dropped connections, ``APIStatusError``
subclasses (``RateLimitError``, ``InternalServerError``...) for HTTP errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, Protocol

import httpx2  # the openai SDK's HTTP library
import openai

from reljudge.errors import ConfigError

try:  # imported with the judge, not inside the first call (it takes a while)
    import aiohttp
except ImportError:  # pragma: no cover - a core dependency; httpx still works without it
    aiohttp = None

TRANSPORTS = ("auto", "aiohttp", "httpx")

_STATUS_ERRORS = {400: openai.BadRequestError, 401: openai.AuthenticationError,
                  403: openai.PermissionDeniedError, 404: openai.NotFoundError,
                  409: openai.ConflictError, 422: openai.UnprocessableEntityError,
                  429: openai.RateLimitError}


class Transport(Protocol):
    """Sends one request body; returns (status, headers, body) or raises an SDK error."""

    async def post(self, body: bytes) -> tuple[int, Any, bytes]: ...

    async def close(self) -> None: ...


def resolve_transport(name: str) -> str:
    """The transport to use: aiohttp when installed (``auto``), else httpx."""
    if name not in TRANSPORTS:
        raise ConfigError(f"transport must be one of {', '.join(TRANSPORTS)}, not {name!r}")
    if name != "auto":
        return name
    return "httpx" if aiohttp is None else "aiohttp"


def open_transport(name: str, url: str, headers: dict[str, str], *, connections: int,
                   timeout: float) -> Transport:
    """A transport posting to ``url`` with ``headers``; ``timeout`` bounds each whole call."""
    name = resolve_transport(name)
    if name == "aiohttp":
        return AiohttpTransport(url, headers, connections=connections, timeout=timeout)
    return HttpxTransport(url, headers, connections=connections, timeout=timeout)


def status_error(url: str, status: int, headers: Any, content: bytes) -> openai.APIStatusError:
    """The SDK's exception for an HTTP error answer (same classes and body as the SDK's own)."""
    response = httpx2.Response(status, headers=list(headers.items()), content=content,
                               request=httpx2.Request("POST", url))
    body: Any = response.text.strip() or None
    with contextlib.suppress(ValueError):  # not JSON: keep the text
        body = json.loads(body) if body else None
    error = body.get("error", body) if isinstance(body, dict) else body
    message = error.get("message") if isinstance(error, dict) else None
    cls = _STATUS_ERRORS.get(status) or (openai.InternalServerError if status >= 500
                                         else openai.APIStatusError)
    return cls(f"Error code: {status}" + (f" - {message}" if message else ""),
               response=response, body=error)


def _timeout(url: str) -> openai.APITimeoutError:
    return openai.APITimeoutError(request=httpx2.Request("POST", url))


def _connection(url: str, exc: BaseException) -> openai.APIConnectionError:
    return openai.APIConnectionError(message=f"Connection error: {type(exc).__name__}",
                                     request=httpx2.Request("POST", url))


def env_proxy(url: str) -> str | None:
    """The proxy that HTTP(S)_PROXY / NO_PROXY name for this URL, as httpx would use.

    Looked up once per run: aiohttp's own ``trust_env`` looks it (and ~/.netrc) up in a worker
    thread on every request, two thread hops per call.
    """
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return proxy


class AiohttpTransport:
    """Posts through one aiohttp session (opened inside the running event loop)."""

    def __init__(self, url: str, headers: dict[str, str], *, connections: int, timeout: float):
        self.url, self.headers = url, headers
        self.connections, self.timeout = connections, timeout
        self._session = None
        self._proxy: str | None = None

    def _open(self):
        self._proxy = env_proxy(self.url)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self.connections),
            timeout=aiohttp.ClientTimeout(total=self.timeout))
        return self._session

    async def post(self, body: bytes) -> tuple[int, Any, bytes]:
        session = self._session or self._open()
        try:
            async with session.post(self.url, data=body, headers=self.headers,
                                    proxy=self._proxy) as r:
                return r.status, r.headers, await r.read()
        except asyncio.TimeoutError:  # also aiohttp's ServerTimeoutError
            raise _timeout(self.url) from None
        except (aiohttp.ClientError, OSError) as e:  # refused, reset, closed mid-answer
            raise _connection(self.url, e) from e

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class HttpxTransport:
    """Posts through the SDK's own httpx client class."""

    def __init__(self, url: str, headers: dict[str, str], *, connections: int, timeout: float):
        self.url, self.headers, self.timeout = url, headers, timeout
        limits = httpx2.Limits(max_connections=connections,
                               max_keepalive_connections=connections)
        self._client = openai.DefaultAsyncHttpxClient(limits=limits, timeout=timeout)

    async def post(self, body: bytes) -> tuple[int, Any, bytes]:
        try:  # httpx bounds each read and write; the whole call is bounded here
            r = await asyncio.wait_for(self._client.post(self.url, content=body,
                                                         headers=self.headers), self.timeout)
        except (asyncio.TimeoutError, httpx2.TimeoutException):
            raise _timeout(self.url) from None
        except httpx2.TransportError as e:  # refused, reset, closed mid-answer
            raise _connection(self.url, e) from e
        return r.status_code, r.headers, r.content

    async def close(self) -> None:
        await self._client.aclose()
