"""The judge's settings, validated once: endpoint, model, decoding, limits, budget."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from reljudge.errors import ConfigError
from reljudge.judge.cost import BATCH_DISCOUNT

#: the environment variables an endpoint setting falls back to (the openai SDK's names)
ENV_VARS = {"model": "OPENAI_MODEL", "base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY",
            "organization": "OPENAI_ORG_ID", "project": "OPENAI_PROJECT_ID"}
#: proxy variables: a proxy URL starting https: means TLS may be spoken (the HTTP libraries
#: read and use them themselves)
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
              "all_proxy")
#: every environment variable the library reads, and what for
ENVIRONMENT = {**{var: f"JudgeConfig.{key} when not given" for key, var in ENV_VARS.items()},
               "RELJUDGE_CACHE_DIR": "the answer cache folder when cache_dir is not given",
               **{var: "whether the client prepares TLS" for var in PROXY_VARS}}


def environment(*named: str) -> dict[str, str]:
    """The environment as the library sees it: the variables of ``ENVIRONMENT`` (OPENAI_MODEL,
    OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_ORG_ID, OPENAI_PROJECT_ID, RELJUDGE_CACHE_DIR, the
    proxy variables) and the ``named`` ones (an endpoint's ``api_key_env``), those set and not
    empty. The one place the library reads environment variables."""
    return {var: os.environ[var] for var in (*ENVIRONMENT, *named) if os.environ.get(var)}


def default_cache_dir() -> Path:
    """The answer cache folder: $RELJUDGE_CACHE_DIR, else the per-user cache folder."""
    folder = environment().get("RELJUDGE_CACHE_DIR")
    if folder:
        return Path(folder)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("reljudge")) / "calls"


#: the hosts of Azure OpenAI (the key goes in an ``api-key`` header, a deployment URL needs its
#: API version)
AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")


def url_problem(url: str) -> str | None:
    """What is wrong with an endpoint URL (not http(s), no host, an Azure deployment without
    its API version), or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "expected an http(s) URL such as http://localhost:8000/v1"
    if (parts.hostname.endswith(AZURE_HOSTS) and "/deployments/" in parts.path
            and "api-version=" not in parts.query):
        return "an Azure deployment URL needs its API version, e.g. ...?api-version=2024-10-21"
    return None


def endpoint_from_env() -> dict[str, str]:
    """The endpoint settings the OPENAI_* variables give (those set and not empty): model,
    base_url, api_key, organization, project."""
    env = environment()
    return {key: env[var] for key, var in ENV_VARS.items() if var in env}


class TwoWays(ValueError):
    """A settings error worded for the command line (flags) and for Python (field names)."""

    def __init__(self, flags: str, fields: str):
        super().__init__(flags)
        self.flags, self.fields = flags, fields


class InvalidSettings(ConfigError, ValueError):
    """JudgeConfig's settings do not validate: each problem named as a keyword argument
    (``max_cost``), or as a flag (``--max-cost``) for the command line. A ValueError too, as
    pydantic's ValidationError was, so that callers catching that keep working."""

    def __init__(self, validation: ValidationError, *, flags: bool):
        self.validation = validation
        super().__init__(f"invalid judge settings: {_problems(validation, flags)}")


def _problems(e: ValidationError, flags: bool) -> str:
    """The problems of a failed validation, "; "-joined, each after its setting's name."""
    out = []
    for x in e.errors():
        where = ".".join(map(str, x["loc"]))
        name = f"--{where.replace('_', '-')}" if flags else where
        said = x.get("ctx", {}).get("error")
        msg = ((said.flags if flags else said.fields) if isinstance(said, TwoWays)
               else x["msg"].removeprefix("Value error, "))
        out.append((f"{name}: " if where else "") + msg)
    return "; ".join(out)


class EndpointConfig(BaseModel):
    """One of several endpoints a job is spread over (``endpoints``, ``--endpoints FILE``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    url: str = Field(description="base URL, e.g. http://gpu1:8000/v1")
    api_key: SecretStr | None = Field(None, repr=False, description="its API key (default: "
                                      "--api-key / OPENAI_API_KEY)")
    api_key_env: str | None = Field(None, description="name of an environment variable that "
                                    "holds its API key (keeps the key out of the file)")
    model: str | None = Field(None, description="model name it serves (default: --model)")
    concurrency: int | None = Field(None, ge=1, description="calls in flight here (default: "
                                    "--concurrency)")
    rpm: float | None = Field(None, gt=0, description="requests per minute here (default: "
                              "--rpm)")
    tpm: float | None = Field(None, gt=0, description="tokens per minute here (default: "
                              "--tpm)")


#: the largest output token limit accepted (no model answers more)
MAX_OUTPUT_TOKENS = 1_000_000


class JudgeConfig(BaseModel):
    """Everything that decides which calls are made and how."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str = Field(description="model name (or OPENAI_MODEL)")
    base_url: str | None = Field(None, description="endpoint URL (or OPENAI_BASE_URL); "
                                 "default OpenAI")
    api_key: SecretStr | None = Field(default=None, repr=False,
                                      description="API key (or OPENAI_API_KEY); local servers "
                                      "need none")
    prompt: str = Field("umbrela", description="umbrela (default), basic, json, guarded, "
                        "guarded-json, or a template .toml file")
    temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature, 0 to 2 "
                               "(default 0)")
    max_tokens: int | None = Field(None, ge=1, le=MAX_OUTPUT_TOKENS,
                                   description="output token limit per answer "
                                   "(default 600, 300 for --prompt json)")
    token_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        "max_tokens", description="the request field that carries the output limit "
        "(reasoning models want max_completion_tokens; switched once automatically when the "
        "endpoint names it)")
    seed: int | None = Field(None, description="sampling seed, where the endpoint supports it")
    logprobs: bool = Field(False, description="ask for logprobs; store P(grade) and the "
                           "expected grade")
    repeats: int = Field(1, ge=1, description="ask N times per pair")
    aggregate: Literal["majority", "mean", "median"] = Field(
        "majority", description="how repeats combine (majority: ties go to the lower grade)")
    concurrency: int = Field(16, ge=1, description="calls in flight (default 16)")
    transport: Literal["auto", "aiohttp", "httpx"] = Field(
        "auto", description="HTTP library: aiohttp (auto: the default, fastest at high "
        "concurrency) or the openai SDK's own httpx client")
    rpm: float | None = Field(None, gt=0, description="requests per minute limit")
    tpm: float | None = Field(None, gt=0, description="tokens per minute limit")
    timeout: float = Field(60.0, gt=0, description="seconds per call, the whole call "
                           "(default 60)")
    max_attempts: int = Field(6, ge=1, description="attempts per call (default 6)")
    backoff: float = Field(1.0, ge=0, description="seconds before the first retry, doubling "
                           "with each one, plus up to half as much jitter (default 1)")
    breaker_after: int = Field(5, ge=0, description="stop the job (exit 2) when this many "
                               "calls in a row (attempts, before the first answer) fail with "
                               "a connection/TLS error or the same error (0: never; "
                               "default 5)")
    max_cost: float | None = Field(None, ge=0, description="USD cap for this job: a call starts "
                                   "only if its worst-case cost fits")
    max_total_cost: float | None = Field(None, ge=0, description="USD cap on everything the "
                                         "store's spend ledger records, this job included "
                                         "(needs --store)")
    price_in: float | None = Field(None, ge=0, description="USD per million input tokens")
    price_out: float | None = Field(None, ge=0, description="USD per million output tokens")
    cache_dir: Path | None = Field(None, description="answer cache folder (default: the user "
                                   "cache dir)")
    ca_bundle: Path | None = Field(None, description="extra CA certificates (PEM) to trust, "
                                   "besides the system's")
    client_cert: Path | None = Field(None, description="client certificate (PEM) for mutual "
                                     "TLS")
    client_key: Path | None = Field(None, description="the client certificate's key (PEM), if "
                                    "not in --client-cert")
    retry_failed: bool = Field(False, description="ask again for pairs whose earlier answer "
                               "failed (unreadable or refused); failed calls (connection, "
                               "timeout, HTTP errors) are always asked again")
    batch: bool = Field(False, description="label through the Batch API (half price, answers "
                        "within 24 h): submit, then run the same command again to collect")
    batch_url: str | None = Field(None, description="Files/Batch API URL (default: --base-url; "
                                  "answers are cached under --base-url's keys either way)")
    batch_fallback: Literal["none", "online"] = Field(
        "none", description="pairs an expired or failed batch did not answer: re-batch them on "
        "the next run (none, the default) or send them online at once (online)")
    batch_discount: float = Field(BATCH_DISCOUNT, ge=0, le=1, description="batch price as a "
                                  "fraction of the online price, 0 to 1 (default 0.5)")
    batch_requests: int = Field(50_000, ge=1, description="requests per batch file "
                                "(default 50000, OpenAI's limit)")
    batch_bytes: int = Field(190 * 1024 * 1024, ge=1024, description="bytes per batch file "
                             "(default 190 MiB, under OpenAI's 200 MB)")
    batch_tokens: int = Field(2_000_000, ge=1, description="estimated tokens per batch file: "
                              "each request's prompt bound plus its output limit (default "
                              "2000000, OpenAI's tier-1 enqueued-token limit for gpt-4o-mini; "
                              "a file over the provider's limit fails as a whole)")
    stale: Literal["relabel", "keep", "fail"] = Field(
        "relabel", description="pairs labelled before on query or passage texts that have "
        "changed since: ask them again (relabel, the default), keep the old labels (keep), or "
        "stop with an error naming one (fail)")
    claim_lease: float = Field(60.0, ge=0, description="with a label store: seconds a "
                               "process holds the pairs it claimed before another process "
                               "sharing the store may take them over (renewed while it "
                               "works; default 60; 0: no claims)")
    poll_interval: float = Field(30.0, gt=0, description="seconds between batch status polls "
                                 "with --wait (default 30)")
    endpoints: list[EndpointConfig] = Field(
        default_factory=list, description="several endpoints at once, each a url and "
        "optional api_key_env, model, concurrency, rpm, tpm: on the command line a TOML or "
        "JSON file of [[endpoints]] tables (--base-url repeated: the same with the shared "
        "limits)")
    replicas: bool | None = Field(None, description="the endpoints serve one model (default: "
                                  "yes when their models are equal): answers are cached "
                                  "without the endpoint's URL, so any replica's answer serves "
                                  "all (--no-replicas: one cache per endpoint)")

    def __init__(self, **values: Any) -> None:
        """Validate the settings; a ConfigError names each bad one as a keyword argument."""
        try:
            super().__init__(**values)
        except ValidationError as e:
            raise InvalidSettings(e, flags=False) from None

    @model_validator(mode="after")
    def _one_way_to_name_endpoints(self) -> JudgeConfig:
        if self.endpoints and self.base_url is not None:
            raise TwoWays("give the endpoint once: --base-url, or several endpoints "
                          "(--base-url repeated or --endpoints), not both",
                          "give the endpoint once: base_url, or several endpoints "
                          "(endpoints), not both")
        if self.batch and self.endpoints:
            raise TwoWays("--batch sends to one Batch API: give its endpoint with "
                          "--base-url, not several endpoints",
                          "batch=True sends to one Batch API: give its endpoint with "
                          "base_url, not several endpoints")
        if self.replicas and len({e.model or self.model for e in self.endpoints}) > 1:
            raise ValueError("replicas = true, but the endpoints serve different models")
        return self

    @model_validator(mode="after")
    def _urls(self) -> JudgeConfig:
        urls = [("--base-url", "base_url", self.base_url),
                ("--batch-url", "batch_url", self.batch_url),
                *(("--base-url", f"endpoints[{i}].url", e.url)
                  for i, e in enumerate(self.endpoints))]
        for flag, field, url in urls:
            problem = url_problem(url) if url is not None else None
            if problem:
                raise TwoWays(f"{flag} {url!r}: {problem}", f"{field} {url!r}: {problem}")
        return self

    @classmethod
    def from_env(cls, **values: Any) -> JudgeConfig:
        """The settings given (None values count as not given), the model from OPENAI_MODEL
        when not given, errors naming flags; the endpoint's URL and key fall back to
        OPENAI_BASE_URL / OPENAI_API_KEY when it is resolved (``resolve_endpoints``)."""
        given = {k: v for k, v in values.items() if v is not None}
        if "model" not in given and "model" in (env := endpoint_from_env()):
            given["model"] = env["model"]
        if "model" not in given:
            raise ConfigError("no model given: pass --model or set OPENAI_MODEL")
        try:
            return cls(**given)
        except InvalidSettings as e:
            # the command line's flags are named as flags
            raise InvalidSettings(e.validation, flags=True) from None

    def resolved_cache_dir(self) -> Path:
        """Where answers are cached."""
        return self.cache_dir or default_cache_dir()
