"""The endpoints of a job, resolved: one OpenAI-compatible server, or several at once.

A job's calls go to ``base_url`` (or OPENAI_BASE_URL, else OpenAI), or are spread over the
``endpoints`` given (``--base-url`` repeated, ``--endpoints FILE``), each with its own model,
key, concurrency and rate limits; ``reljudge.judge.dispatch`` sends a job's pairs to them.
``resolve_endpoints`` reads the settings and the environment once; the clients
(``reljudge.judge.http.client``, the Batch API's) are given the resolved ``Endpoint``.
Endpoints serving one model are replicas unless said otherwise: one cache key without the URL
serves them all (docs/endpoints.md, "Many endpoints at once").
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from reljudge.errors import ConfigError
from reljudge.judge.config import (
    AZURE_HOSTS,
    ENV_VARS,
    PROXY_VARS,
    EndpointConfig,
    JudgeConfig,
    environment,
    url_problem,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

__all__ = ["Endpoint", "batch_endpoint", "endpoints_from_file", "resolve_endpoints"]

OPENAI_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class Endpoint:
    """One endpoint of a job, resolved once by ``resolve_endpoints`` (URL and key: the
    settings, then the OPENAI_* variables, then OpenAI): where calls go, which model answers,
    the headers it gets, its limits, its cache scope. Nothing downstream reads the settings or
    the environment again. ``EndpointConfig`` is an endpoint as the settings write it."""

    #: without a trailing "/", query kept (Azure's api-version)
    base_url: str
    api_key: str | None = field(repr=False)
    model: str
    concurrency: int = 16
    rpm: float | None = None
    tpm: float | None = None
    #: cached without its URL, shared with the other replicas
    replica: bool = False
    organization: str | None = None  # OPENAI_ORG_ID
    project: str | None = None  # OPENAI_PROJECT_ID
    #: a proxy variable names an https: proxy: TLS may be spoken
    proxy_tls: bool = False

    @classmethod
    def resolve(cls, base_url: str | None, api_key: str | None, model: str, *,
                concurrency: int = 16, rpm: float | None = None, tpm: float | None = None,
                replica: bool = False, env: Mapping[str, str] | None = None,
                name: str = "base_url") -> Endpoint:
        """The endpoint the openai SDK would use for these settings and ``env`` (the
        environment as ``environment()`` gives it; default: none). A bad URL is a
        ConfigError naming it as ``name`` (or as OPENAI_BASE_URL when it came from there)."""
        env = env or {}
        if not base_url and env.get(ENV_VARS["base_url"]):
            base_url, name = env[ENV_VARS["base_url"]], ENV_VARS["base_url"]
        base = base_url or OPENAI_URL
        problem = url_problem(base)
        if problem:
            raise ConfigError(f"{name} {base!r}: {problem}")
        parts = urlsplit(base)
        path = parts.path.rstrip("/")
        if path.endswith("/chat/completions"):
            path = path[: -len("/chat/completions")]
        return cls(urlunsplit((parts.scheme, parts.netloc, path, parts.query, "")),
                   api_key or env.get(ENV_VARS["api_key"]), model, concurrency, rpm, tpm,
                   replica, env.get(ENV_VARS["organization"]), env.get(ENV_VARS["project"]),
                   any(env.get(v, "").startswith("https:") for v in PROXY_VARS))

    @property
    def host(self) -> str:
        """The host name (never credentials or path)."""
        return urlsplit(self.base_url).hostname or "?"

    @property
    def display(self) -> str:
        """The base URL for messages and provenance: credentials and query removed."""
        p = urlsplit(self.base_url)
        netloc = p.hostname + (f":{p.port}" if p.port else "") if p.hostname else p.netloc
        return urlunsplit((p.scheme, netloc, p.path, "", ""))

    @property
    def local(self) -> bool:
        """A server on this machine (loopback): it answers as many calls at once as it has
        slots, often fewer than the concurrency."""
        import ipaddress

        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def azure(self) -> bool:
        """Azure OpenAI: the key goes in an ``api-key`` header."""
        return self.host.endswith(AZURE_HOSTS)

    @property
    def needs_key(self) -> bool:
        """Hosted endpoints that answer nothing without a key (local servers need none)."""
        return self.host == "api.openai.com" or self.azure

    def url(self, route: str) -> str:
        """The URL of an API route (``chat/completions``, ``models``), query kept."""
        p = urlsplit(self.base_url)
        return urlunsplit((p.scheme, p.netloc, f"{p.path}/{route}", p.query, ""))

    def headers(self) -> dict[str, str]:
        """The request headers: JSON, a user agent, the key, OPENAI_ORG_ID / _PROJECT_ID."""
        from reljudge.version import __version__

        h = {"Content-Type": "application/json", "Accept": "application/json",
             "User-Agent": f"AsyncOpenAI/Python {openai_version()} reljudge/{__version__}"}
        if self.api_key:
            h["api-key" if self.azure else "Authorization"] = (
                self.api_key if self.azure else f"Bearer {self.api_key}")
        for header, value in (("OpenAI-Organization", self.organization),
                              ("OpenAI-Project", self.project)):
            if value:
                h[header] = value
        return h


def resolve_endpoints(config: JudgeConfig) -> list[Endpoint]:
    """The endpoints of a job: ``config.endpoints``, else the one ``base_url`` (or
    OPENAI_BASE_URL, else OpenAI) with the shared limits. The one place a job's endpoints
    read the environment."""
    env = environment(*(e.api_key_env for e in config.endpoints if e.api_key_env))
    if not config.endpoints:
        key = config.api_key.get_secret_value() if config.api_key else None
        return [Endpoint.resolve(config.base_url, key, config.model,
                                 concurrency=config.concurrency, rpm=config.rpm,
                                 tpm=config.tpm, replica=bool(config.replicas), env=env)]
    models = {e.model or config.model for e in config.endpoints}
    replica = config.replicas if config.replicas is not None else len(models) == 1
    specs = []
    for i, e in enumerate(config.endpoints):
        specs.append(Endpoint.resolve(e.url, _key(e, config, env), e.model or config.model,
                                      concurrency=e.concurrency or config.concurrency,
                                      rpm=e.rpm or config.rpm, tpm=e.tpm or config.tpm,
                                      replica=replica, env=env, name=f"endpoints[{i}].url"))
    seen: set[str] = set()
    for s in specs:
        if s.base_url in seen:
            raise ConfigError(f"endpoint {s.display} is given twice")
        seen.add(s.base_url)
    return specs


def batch_endpoint(config: JudgeConfig, endpoint: Endpoint) -> Endpoint:
    """Where the Files/Batch API is: ``batch_url`` with the endpoint's key and model, else the
    (resolved) endpoint itself."""
    if config.batch_url is None:
        return endpoint
    url = Endpoint.resolve(config.batch_url, None, endpoint.model, name="batch_url").base_url
    return replace(endpoint, base_url=url)


def _key(e: EndpointConfig, config: JudgeConfig, env: Mapping[str, str]) -> str | None:
    if e.api_key is not None:
        return e.api_key.get_secret_value()
    if e.api_key_env:
        value = env.get(e.api_key_env)
        if not value:
            raise ConfigError(f"endpoint {e.url}: api_key_env names {e.api_key_env}, which is "
                              "not set")
        return value
    return config.api_key.get_secret_value() if config.api_key else None


def endpoints_from_file(path: str | Path) -> list[dict[str, Any]]:
    """The ``[[endpoints]]`` tables of a TOML file, or the list (or ``{"endpoints": [...]}``)
    of a JSON file; each checked against EndpointConfig, errors naming the file."""
    from pydantic import ValidationError

    from reljudge.io.files import read_text

    path = Path(path)
    try:
        text = read_text(path)
    except OSError as e:
        raise ConfigError(f"--endpoints {path}: cannot read it ({e.strerror or e})") from None
    try:
        if path.suffix.lower() == ".json":
            data: Any = json.loads(text)
        else:
            data = tomllib.loads(text)
    except ValueError as e:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise ConfigError(f"--endpoints {path}: not valid {kind}: {e}") from None
    rows = data.get("endpoints") if isinstance(data, dict) else data
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"--endpoints {path}: expected a non-empty list of endpoints "
                          "([[endpoints]] tables in TOML, a JSON list of objects)")
    out = []
    for i, row in enumerate(rows, 1):
        if isinstance(row, dict) and "api_key" in row:
            raise ConfigError(f"--endpoints {path}: endpoint {i}: a key does not belong in a "
                              "file: name the environment variable that holds it "
                              "(api_key_env = \"VAR\")")
        try:
            endpoint = EndpointConfig.model_validate(row)
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'entry'}: {x['msg']}"
                                 for x in e.errors())
            raise ConfigError(f"--endpoints {path}: endpoint {i}: {problems}") from None
        problem = url_problem(endpoint.url)
        if problem:
            raise ConfigError(f"--endpoints {path}: endpoint {i}: url {endpoint.url!r}: "
                              f"{problem}")
        out.append(endpoint.model_dump(exclude_none=True))
    return out


@functools.cache
def openai_version() -> str:
    """The installed openai SDK's version, read from its package metadata: importing the SDK
    to ask it builds its pydantic models, about 1.2 s of CPU a labelling process spends for
    nothing when the default transport (aiohttp) sends the calls."""
    import importlib.metadata

    try:
        return importlib.metadata.version("openai")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a copy without metadata
        import openai

        return openai.__version__
