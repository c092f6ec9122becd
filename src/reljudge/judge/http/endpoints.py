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
from typing import TYPE_CHECKING, Any

from reljudge.errors import ConfigError
from reljudge.judge.config import EndpointConfig, JudgeConfig, environment

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib

__all__ = ["EndpointSpec", "endpoints_from_file", "resolve_endpoints"]

if TYPE_CHECKING:  # pragma: no cover
    from reljudge.judge.http.client import Endpoint


@dataclass(frozen=True)
class EndpointSpec:
    """One endpoint of a job, resolved: where, which model, its limits, its cache scope."""

    endpoint: Endpoint
    model: str
    concurrency: int
    rpm: float | None
    tpm: float | None
    replica: bool  # cached without its URL, shared with the other replicas

    @property
    def display(self) -> str:
        """The base URL without credentials or query."""
        return self.endpoint.display


def resolve_endpoints(config: JudgeConfig) -> list[EndpointSpec]:
    """The endpoints of a job: ``config.endpoints``, else the one ``base_url`` (or
    OPENAI_BASE_URL, else OpenAI) with the shared limits."""
    from reljudge.judge.http.client import Endpoint  # the HTTP side: imported when a job is built

    if not config.endpoints:
        key = config.api_key.get_secret_value() if config.api_key else None
        return [EndpointSpec(Endpoint.resolve(config.base_url, key), config.model,
                             config.concurrency, config.rpm, config.tpm,
                             replica=bool(config.replicas))]
    models = {e.model or config.model for e in config.endpoints}
    replica = config.replicas if config.replicas is not None else len(models) == 1
    specs = []
    for e in config.endpoints:
        specs.append(EndpointSpec(Endpoint.resolve(e.url, _key(e, config)),
                                  e.model or config.model, e.concurrency or config.concurrency,
                                  e.rpm or config.rpm, e.tpm or config.tpm, replica=replica))
    seen: set[str] = set()
    for s in specs:
        if s.endpoint.base_url in seen:
            raise ConfigError(f"endpoint {s.display} is given twice")
        seen.add(s.endpoint.base_url)
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
