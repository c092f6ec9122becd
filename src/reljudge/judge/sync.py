"""Run the labeller's coroutines from synchronous code, also inside a running event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """The coroutine's result: ``asyncio.run`` when no loop runs in this thread; inside a
    running loop (Jupyter, IPython) the coroutine runs on a fresh loop in a worker thread
    while this thread waits, so no loop is nested or patched (no nest_asyncio)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1, thread_name_prefix="reljudge-label") as pool:
        return pool.submit(asyncio.run, coro).result()
