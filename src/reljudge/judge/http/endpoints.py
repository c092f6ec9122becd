"""The endpoints of a job, resolved: one OpenAI-compatible server, or several at once.

A job's calls go to ``base_url`` (or OPENAI_BASE_URL, else OpenAI), or are spread over the
``endpoints`` given (``--base-url`` repeated, ``--endpoints FILE``), each with its own model,
key, concurrency and rate limits; ``reljudge.judge.dispatch`` sends a run's pairs to them.

Endpoints serving one model are replicas (unless ``replicas = false``): their answers are
cached under one key without the URL, so any replica's answer is a hit for all. Endpoints
serving different models are different judges (``model/prompt``), each with today's key.
One endpoint keeps today's key (URL included) unless ``replicas = true`` is said.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from reljudge.errors import ConfigError
from reljudge.judge.config import EndpointConfig, JudgeConfig, endpoint_from_env, environment

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

__all__ = ["Endpoint", "endpoints_from_file", "resolve_endpoints"]

OPENAI_URL = "https://api.openai.com/v1"
_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")


@dataclass(frozen=True)
class Endpoint:
    """One endpoint of a job, resolved once (URL and key: the settings, then the OPENAI_*
    variables, then OpenAI): where calls go, which model answers, its limits, its cache
    scope. ``EndpointConfig`` is an endpoint as the settings write it."""

    base_url: str  # without a trailing "/", query kept (Azure's api-version)
    api_key: str | None
    model: str
    concurrency: int = 16
    rpm: float | None = None
    tpm: float | None = None
    replica: bool = False  # cached without its URL, shared with the other replicas

    @classmethod
    def resolve(cls, base_url: str | None, api_key: str | None, model: str, *,
                concurrency: int = 16, rpm: float | None = None, tpm: float | None = None,
                replica: bool = False) -> Endpoint:
        """The endpoint the openai SDK would use for these settings and this environment."""
        env = endpoint_from_env()
        base = base_url or env.get("base_url") or OPENAI_URL
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--base-url {base!r}: expected an http(s) URL such as "
                              "http://localhost:8000/v1")
        path = parts.path.rstrip("/")
        if path.endswith("/chat/completions"):
            path = path[: -len("/chat/completions")]
        azure = parts.hostname.endswith(_AZURE_HOSTS)
        if azure and "/deployments/" in path and "api-version=" not in parts.query:
            raise ConfigError(f"--base-url {base}: an Azure deployment URL needs its API "
                              "version, e.g. ...?api-version=2024-10-21")
        return cls(urlunsplit((parts.scheme, parts.netloc, path, parts.query, "")),
                   api_key or env.get("api_key"), model, concurrency, rpm, tpm, replica)

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
        return self.host.endswith(_AZURE_HOSTS)

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
        import openai

        from reljudge.version import __version__

        h = {"Content-Type": "application/json", "Accept": "application/json",
             "User-Agent": f"AsyncOpenAI/Python {openai.__version__} reljudge/{__version__}"}
        if self.api_key:
            h["api-key" if self.azure else "Authorization"] = (
                self.api_key if self.azure else f"Bearer {self.api_key}")
        env = endpoint_from_env()
        for header, key in (("OpenAI-Organization", "organization"), ("OpenAI-Project", "project")):
            if key in env:
                h[header] = env[key]
        return h


def resolve_endpoints(config: JudgeConfig) -> list[Endpoint]:
    """The endpoints of a job: ``config.endpoints``, else the one ``base_url`` (or
    OPENAI_BASE_URL, else OpenAI) with the shared limits."""
    if not config.endpoints:
        key = config.api_key.get_secret_value() if config.api_key else None
        return [Endpoint.resolve(config.base_url, key, config.model,
                                 concurrency=config.concurrency, rpm=config.rpm,
                                 tpm=config.tpm, replica=bool(config.replicas))]
    models = {e.model or config.model for e in config.endpoints}
    replica = config.replicas if config.replicas is not None else len(models) == 1
    specs = []
    for e in config.endpoints:
        specs.append(Endpoint.resolve(e.url, _key(e, config), e.model or config.model,
                                      concurrency=e.concurrency or config.concurrency,
                                      rpm=e.rpm or config.rpm, tpm=e.tpm or config.tpm,
                                      replica=replica))
    seen: set[str] = set()
    for s in specs:
        if s.base_url in seen:
            raise ConfigError(f"endpoint {s.display} is given twice")
        seen.add(s.base_url)
    return specs


def _key(e: EndpointConfig, config: JudgeConfig) -> str | None:
    if e.api_key is not None:
        return e.api_key.get_secret_value()
    if e.api_key_env:
        value = environment(e.api_key_env).get(e.api_key_env)
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
            out.append(EndpointConfig.model_validate(row).model_dump(exclude_none=True))
        except ValidationError as e:
            problems = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'entry'}: {x['msg']}"
                                 for x in e.errors())
            raise ConfigError(f"--endpoints {path}: endpoint {i}: {problems}") from None
    return out
