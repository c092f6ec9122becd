"""The scripted OpenAI-compatible server (reljudge.testing.fake_openai) itself: a test waits on
its count of requests, not on a clock."""

from __future__ import annotations

import threading
import time

from reljudge.testing import FakeOpenAI, Reply
from tests.helpers import Lazy

openai = Lazy("openai")


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


def test_a_client_gone_mid_request_prints_nothing_and_other_errors_still_print(capfd):
    import socket
    import struct

    with FakeOpenAI() as server:
        handled = threading.Event()
        handle_error = server._server.handle_error

        def recorded(request, address):
            handle_error(request, address)
            handled.set()

        server._server.handle_error = recorded  # type: ignore[method-assign]
        host, port = server.base_url.split("//")[1].split("/")[0].split(":")
        # headers promise a body, then the connection is reset (a killed client)
        gone = socket.create_connection((host, int(port)))
        gone.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: 100000\r\n\r\n{")
        gone.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        gone.close()
        assert handled.wait(30)
        try:
            raise ValueError("a real fault")
        except ValueError:
            handle_error(None, ("127.0.0.1", 1))
    err = capfd.readouterr().err
    assert "ConnectionResetError" not in err and "a real fault" in err
