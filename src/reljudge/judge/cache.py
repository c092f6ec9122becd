"""The answer cache: every paid answer kept on disk under the exact request, and identical
requests in flight sent once.

The key is the resolved endpoint (base URL after flags and ``OPENAI_BASE_URL``), the model,
the messages, the parameters actually sent (so the features an endpoint accepted are part of
it) and the repeat index. Endpoints declared replicas of one model (several endpoints, see
``reljudge.judge.http.endpoints``) share one key without the URL: any replica's answer serves all.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from reljudge.errors import CacheError

T = TypeVar("T")

# json.dumps(..., sort_keys=True, ensure_ascii=False), without building an encoder per call
_KEY_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False)


def cache_key(base_url: str, model: str, messages: list[dict], params: dict,
              repeat: int) -> str:
    """The cache key of one request."""
    keys = RequestKeys(base_url, model, params)
    return keys.key(keys.encode(messages), repeat)


def replica_key(model: str, messages: list[dict], params: dict, repeat: int) -> str:
    """The cache key of a request to any replica of one model (no endpoint URL in it)."""
    keys = RequestKeys("", model, params, replica=True)
    return keys.key(keys.encode(messages), repeat)


class RequestKeys:
    """The cache keys of requests to one endpoint, model and parameters (with
    ``replica=True``, to any replica of the model: no URL): the shared parts are encoded once,
    each prompt once for all its repeats.

    A key is the SHA-256 of ``json.dumps(blob, sort_keys=True, ensure_ascii=False)`` where blob
    is ``{"base_url" (no trailing "/"), "model", "messages", "params", "sample"}``, or for
    replicas ``{"replicas_of": model, "messages", "params", "sample"}`` (tested against it).
    """

    def __init__(self, base_url: str, model: str, params: dict, *, replica: bool = False):
        # the blob written out, its keys in sorted order
        if replica:
            self._head = '{"messages": '
            self._tail = ', "params": ' + _KEY_JSON.encode(params) + ', "replicas_of": ' + \
                _KEY_JSON.encode(model) + ', "sample": '
        else:
            self._head = '{"base_url": ' + _KEY_JSON.encode(base_url.rstrip("/")) + \
                ', "messages": '
            self._tail = ', "model": ' + _KEY_JSON.encode(model) + ', "params": ' + \
                _KEY_JSON.encode(params) + ', "sample": '

    @staticmethod
    def encode(messages: list[dict]) -> str:
        """The messages as the key (and a batch request line) encodes them."""
        return _KEY_JSON.encode(messages)

    def key(self, encoded_messages: str, repeat: int) -> str:
        """The cache key of these (encoded) messages at this repeat index."""
        blob = f"{self._head}{encoded_messages}{self._tail}{int(repeat)}}}"
        return hashlib.sha256(blob.encode()).hexdigest()


class AnswerCache:
    """A diskcache of answers, plus the futures of identical requests in flight."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.inflight: dict[str, asyncio.Future] = {}
        self._cache: Any = None  # a diskcache.Cache (an untyped library)
        #: the writer thread during a job
        self._io: ThreadPoolExecutor | None = None
        #: jobs between start and close
        self._jobs = 0

    def store(self) -> Any:
        """The diskcache (opened on first use)."""
        if self._cache is None:
            import diskcache

            def open_cache() -> Any:
                self.folder.mkdir(parents=True, exist_ok=True)
                # paid answers are never evicted nor expire, and no eviction bookkeeping (nor
                # the look for expired keys diskcache makes on every set) is paid for per call
                return diskcache.Cache(str(self.folder), eviction_policy="none", cull_limit=0)

            self._cache = self._guarded("opened", open_cache)
        return self._cache

    def _guarded(self, what: str, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)``; a failure of the disk (full, read-only) as one CacheError."""
        import sqlite3

        try:
            return call(*args)
        except (OSError, sqlite3.Error) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise CacheError(f"the answer cache {self.folder} cannot be {what} ({why}); free "
                             "some space or give another --cache-dir") from None

    def get(self, key: str) -> dict | None:
        """The cached answer of a request, if any."""
        return self.store().get(key)

    def __contains__(self, key: str) -> bool:
        return key in self.store()

    def start(self) -> None:
        """Open the writer thread for a job (one thread for the jobs running at once)."""
        self._jobs += 1
        if self._io is None:
            self._io = ThreadPoolExecutor(1, thread_name_prefix="reljudge-cache")

    async def put(self, key: str, value: dict[str, Any]) -> None:
        """Cache a paid answer. SQLite's work runs on the run's cache thread (it releases the
        GIL), so the event loop keeps serving the other calls meanwhile."""
        await asyncio.get_running_loop().run_in_executor(
            self._io, self._guarded, "written", self.store().set, key, value)

    async def close(self) -> None:
        """A job is done: the last one running closes the cache (from its writer thread too)
        and stops that thread."""
        self._jobs = max(0, self._jobs - 1)
        if self._jobs:
            return
        if self._cache is not None:
            if self._io is not None:
                await asyncio.get_running_loop().run_in_executor(self._io, self._cache.close)
            self._cache.close()
            self._cache = None
        if self._io is not None:
            self._io.shutdown()
            self._io = None
