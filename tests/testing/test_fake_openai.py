"""The scripted OpenAI-compatible server (reljudge.testing.fake_openai) itself: a test waits on
its count of requests, not on a clock."""

from __future__ import annotations

import threading
import time

import openai

from reljudge.testing import FakeOpenAI, Reply


def test_wait_for_calls_returns_once_the_calls_arrived_and_false_on_timeout():
    with FakeOpenAI(lambda req: Reply.text("final score: 1")) as server:
        assert server.wait_for_calls(1, 0.05) is False  # none came

        def ask(n: int) -> None:
            client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
            for _ in range(n):
                client.chat.completions.create(model="m", messages=[
                    {"role": "user", "content": "hi"}])

        thread = threading.Thread(target=ask, args=(3,))
        start = time.monotonic()
        thread.start()
        assert server.wait_for_calls(3, 60) is True
        assert server.calls >= 3 and time.monotonic() - start < 30
        thread.join()
        assert server.wait_for_calls(3, 0) is True  # already there: no wait
        assert server.wait_for_calls(4, 0.05) is False
