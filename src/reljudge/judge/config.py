"""The judge's settings, validated once: endpoint, model, decoding, limits, budget."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


def default_cache_dir() -> Path:
    """The answer cache folder: $RELJUDGE_CACHE_DIR, else the per-user cache folder."""
    if os.environ.get("RELJUDGE_CACHE_DIR"):
        return Path(os.environ["RELJUDGE_CACHE_DIR"])
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("reljudge")) / "calls"


class JudgeConfig(BaseModel):
    """Everything that decides which calls are made and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    base_url: str | None = None
    api_key: SecretStr | None = Field(default=None, repr=False)
    prompt: str = "umbrela"
    temperature: float = 0.0
    max_tokens: int | None = Field(None, ge=1)
    seed: int | None = None
    logprobs: bool = False
    samples: int = Field(1, ge=1)
    aggregate: Literal["majority", "mean", "median"] = "majority"
    concurrency: int = Field(16, ge=1)
    transport: Literal["auto", "aiohttp", "httpx"] = "auto"
    rpm: float | None = Field(None, gt=0)
    tpm: float | None = Field(None, gt=0)
    timeout: float = Field(60.0, gt=0)
    max_attempts: int = Field(6, ge=1)
    backoff: float = Field(1.0, ge=0)
    max_cost: float | None = Field(None, ge=0)
    cache_dir: Path | None = None
    price_in: float | None = Field(None, ge=0)
    price_out: float | None = Field(None, ge=0)
    retry_failed: bool = False

    @classmethod
    def from_env(cls, **values) -> JudgeConfig:
        """Fill model, base URL and key from OPENAI_MODEL / OPENAI_BASE_URL / OPENAI_API_KEY
        when not given (None values count as not given)."""
        given = {k: v for k, v in values.items() if v is not None}
        env = {"model": "OPENAI_MODEL", "base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY"}
        for key, var in env.items():
            if key not in given and os.environ.get(var):
                given[key] = os.environ[var]
        if "model" not in given:
            from reljudge.errors import ConfigError

            raise ConfigError("no model given: pass --model or set OPENAI_MODEL")
        from pydantic import ValidationError

        try:
            return cls(**given)
        except ValidationError as e:
            from reljudge.errors import ConfigError

            problems = "; ".join(f"--{'.'.join(map(str, x['loc'])).replace('_', '-')}: "
                                 f"{x['msg']}" for x in e.errors())
            raise ConfigError(f"invalid judge settings: {problems}") from None

    def resolved_cache_dir(self) -> Path:
        """Where answers are cached."""
        return self.cache_dir or default_cache_dir()
