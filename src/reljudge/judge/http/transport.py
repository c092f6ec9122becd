"""How a chat-completions request travels: one JSON POST, answered by (status, headers, body).

A transport only carries bytes; the client (``reljudge.judge.http.client``) decides the URL, the
headers and what an answer means. Two transports, one behaviour: ``aiohttp`` (the default: one
session, its pool as large as the concurrency; the SDK's own request path costs more CPU per
call than a busy job can spare, docs/endpoints.md) and ``httpx`` (the openai SDK's own HTTP
client class, for environments where aiohttp is unwelcome). Both use one SSL context and the
same proxy settings, and fail the same way: a ``CallFailed`` of kind ``connection`` (refused,
reset, closed mid-answer), ``tls`` (the detail says which) or ``timeout`` (the whole call).
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any, Protocol

from reljudge.errors import ConfigError
from reljudge.judge.failures import CallFailed
from reljudge.labels import FailureKind

try:
    # imported with the judge, not inside the first call (it takes a while)
    import aiohttp

    HAS_AIOHTTP = True
except ImportError:  # pragma: no cover - a core dependency; httpx still works without it
    HAS_AIOHTTP = False

TRANSPORTS = ("auto", "aiohttp", "httpx")


class Transport(Protocol):
    """Sends one request body; returns (status, headers, body) or raises CallFailed."""

    async def post(self, body: bytes) -> tuple[int, Any, bytes]: ...

    async def get(self, url: str, timeout: float) -> int: ...

    async def close(self) -> None: ...


def resolve_transport(name: str) -> str:
    """The transport to use: aiohttp when installed (``auto``), else httpx."""
    if name not in TRANSPORTS:
        raise ConfigError(f"transport must be one of {', '.join(TRANSPORTS)}, not {name!r}")
    if name != "auto":
        return name
    return "aiohttp" if HAS_AIOHTTP else "httpx"


def ssl_context(ca_bundle: str | Path | None = None, client_cert: str | Path | None = None,
                client_key: str | Path | None = None) -> ssl.SSLContext:
    """The one SSL context of a run: the system's trusted CAs (``SSL_CERT_FILE`` /
    ``SSL_CERT_DIR`` honoured), plus a CA bundle and a client certificate when given."""
    ctx = ssl.create_default_context()
    if ca_bundle:
        try:
            ctx.load_verify_locations(cafile=str(ca_bundle))
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"--ca-bundle {ca_bundle}: cannot load the certificates: "
                              f"{e}") from None
    if client_cert:
        try:
            ctx.load_cert_chain(str(client_cert), str(client_key) if client_key else None)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"--client-cert {client_cert}: cannot load the certificate "
                              f"and its key: {e}") from None
    return ctx


def open_transport(name: str, url: str, headers: dict[str, str], *, connections: int,
                   timeout: float, ssl_ctx: ssl.SSLContext | None = None) -> Transport:
    """A transport posting to ``url`` with ``headers``; ``timeout`` bounds each whole call;
    ``ssl_ctx`` (from ``ssl_context``) is used for HTTPS (None: the library default)."""
    name = resolve_transport(name)
    if name == "aiohttp":
        return AiohttpTransport(url, headers, connections=connections, timeout=timeout,
                                ssl_ctx=ssl_ctx)
    return HttpxTransport(url, headers, connections=connections, timeout=timeout,
                          ssl_ctx=ssl_ctx)


def env_proxy(url: str) -> str | None:
    """The proxy that HTTPS_PROXY / HTTP_PROXY / ALL_PROXY / NO_PROXY name for this URL.

    Looked up once per job: aiohttp's own ``trust_env`` looks it (and ~/.netrc) up in a worker
    thread on every request, two thread hops per call.
    """
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy and parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return proxy


def _tls_cause(raised: BaseException) -> ssl.SSLError | None:
    """The SSL error somewhere in an exception's chain, if any."""
    seen = 0
    exc: BaseException | None = raised
    while exc is not None and seen < 10:
        if isinstance(exc, ssl.SSLError):
            return exc
        if HAS_AIOHTTP and isinstance(exc, aiohttp.ClientSSLError):
            inner = getattr(exc, "os_error", None) or getattr(exc, "certificate_error", None)
            return inner if isinstance(inner, ssl.SSLError) else ssl.SSLError(str(exc))
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def connection_failure(url: str, exc: BaseException) -> CallFailed:
    """A CallFailed for an exception raised while sending: tls when SSL is the cause."""
    tls = _tls_cause(exc)
    if tls is not None:
        why = getattr(tls, "verify_message", None) or getattr(tls, "reason", None) or str(tls)
        return CallFailed(FailureKind.TLS, f"TLS error: {why}", url=url)
    cause = str(exc) or type(exc).__name__
    return CallFailed(FailureKind.CONNECTION, f"connection error: {cause}", url=url)


def timeout_failure(url: str, timeout: float) -> CallFailed:
    """A CallFailed for a call that took longer than ``timeout`` seconds."""
    return CallFailed(FailureKind.TIMEOUT, f"timeout: no answer within {timeout:g} s", url=url)


class AiohttpTransport:
    """Posts through one aiohttp session (opened inside the running event loop)."""

    def __init__(self, url: str, headers: dict[str, str], *, connections: int, timeout: float,
                 ssl_ctx: ssl.SSLContext | None):
        self.url, self.headers = url, headers
        self.connections, self.timeout, self.ssl = connections, timeout, ssl_ctx
        self._session: aiohttp.ClientSession | None = None
        self._proxy = env_proxy(url)
        if self._proxy and not self._proxy.startswith(("http://", "https://")):
            raise ConfigError(f"proxy {self._proxy}: the aiohttp transport reaches endpoints "
                              "through HTTP(S) proxies only; use --transport httpx (with "
                              "httpx's socks support installed) or an HTTP proxy")

    def _open(self) -> aiohttp.ClientSession:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self.connections,
                                           ssl=self.ssl if self.ssl is not None else True),
            timeout=aiohttp.ClientTimeout(total=self.timeout))
        return self._session

    async def post(self, body: bytes) -> tuple[int, Any, bytes]:
        session = self._session or self._open()
        try:
            async with session.post(self.url, data=body, headers=self.headers,
                                    proxy=self._proxy) as r:
                return r.status, r.headers, await r.read()
        except asyncio.TimeoutError:  # also aiohttp's ServerTimeoutError
            raise timeout_failure(self.url, self.timeout) from None
        except (aiohttp.ClientError, OSError) as e:  # refused, reset, closed mid-answer, TLS
            raise connection_failure(self.url, e) from None

    async def get(self, url: str, timeout: float) -> int:
        """The status of a GET (the pre-flight check); raises CallFailed like post."""
        session = self._session or self._open()
        try:
            async with session.get(url, headers=self.headers, proxy=self._proxy,
                                   timeout=aiohttp.ClientTimeout(total=timeout)) as r:
                await r.read()
                return r.status
        except asyncio.TimeoutError:
            raise timeout_failure(url, timeout) from None
        except (aiohttp.ClientError, OSError) as e:
            raise connection_failure(url, e) from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class HttpxTransport:
    """Posts through the openai SDK's own httpx client class."""

    def __init__(self, url: str, headers: dict[str, str], *, connections: int, timeout: float,
                 ssl_ctx: ssl.SSLContext | None):
        import httpx2  # the openai SDK's HTTP library
        import openai

        self._httpx = httpx2
        self.url, self.headers, self.timeout = url, headers, timeout
        limits = httpx2.Limits(max_connections=connections,
                               max_keepalive_connections=connections)
        self._client = openai.DefaultAsyncHttpxClient(
            limits=limits, timeout=timeout, verify=ssl_ctx or True)  # True: httpx's default

    async def post(self, body: bytes) -> tuple[int, Any, bytes]:
        try:
            # httpx bounds each read and write; the whole call is bounded here
            r = await asyncio.wait_for(self._client.post(self.url, content=body,
                                                         headers=self.headers), self.timeout)
        except (asyncio.TimeoutError, self._httpx.TimeoutException):
            raise timeout_failure(self.url, self.timeout) from None
        except (self._httpx.TransportError, OSError) as e:  # refused, reset, TLS...
            raise connection_failure(self.url, e) from None
        return r.status_code, r.headers, r.content

    async def get(self, url: str, timeout: float) -> int:
        """The status of a GET (the pre-flight check); raises CallFailed like post."""
        try:
            r = await asyncio.wait_for(self._client.get(url, headers=self.headers), timeout)
        except (asyncio.TimeoutError, self._httpx.TimeoutException):
            raise timeout_failure(url, timeout) from None
        except (self._httpx.TransportError, OSError) as e:
            raise connection_failure(url, e) from None
        return r.status_code

    async def close(self) -> None:
        await self._client.aclose()
