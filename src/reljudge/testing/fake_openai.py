"""A scriptable OpenAI-compatible chat-completions server for tests and benchmarks.

It listens on 127.0.0.1 (a free port), records every request, and answers each with whatever
the handler returns: a chat answer (text, JSON, logprobs), an HTTP error with headers (429 with
Retry-After, 500, 400...), a delay (to trip client timeouts), or a dropped connection.

    with FakeOpenAI(lambda req: Reply.text("final score: 2")) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def chat_reply(text: str | None, *, finish_reason: str = "stop", prompt_tokens: int = 100,
               completion_tokens: int = 10, logprobs: list[dict] | None = None,
               refusal: str | None = None, model: str = "fake-model") -> dict:
    """The JSON body of a chat.completion answer."""
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish_reason,
                              "message": {"role": "assistant", "content": text,
                                          "refusal": refusal}}
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs, "refusal": None}
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [choice],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def grade_logprobs(text: str, probs: dict[str, float]) -> list[dict]:
    """Per-token logprobs for ``text`` whose last character is a grade with these probabilities."""
    import math

    head, last = text[:-1], text[-1]
    tokens = [{"token": head, "logprob": 0.0, "bytes": None, "top_logprobs": []}] if head else []
    top = [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in probs.items()]
    tokens.append({"token": last, "logprob": math.log(probs.get(last, 1e-9)), "bytes": None,
                   "top_logprobs": top})
    return tokens


@dataclass
class Reply:
    """What the server does with one request."""

    status: int = 200
    body: dict | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    #: seconds to wait before answering
    delay: float = 0.0
    #: close the connection without answering
    drop: bool = False

    @classmethod
    def text(cls, text: str, **kw: Any) -> Reply:
        """A 200 answer with this assistant text."""
        delay = kw.pop("delay", 0.0)
        return cls(200, chat_reply(text, **kw), delay=delay)

    @classmethod
    def error(cls, status: int, message: str = "error", headers: dict | None = None,
              code: str | None = None) -> Reply:
        """An HTTP error in OpenAI's error shape."""
        return cls(status, {"error": {"message": message, "type": "fake", "code": code}},
                   headers or {})


#: request features a server may reject, and how a request shows it uses them
FEATURES = {
    "json_schema": lambda b: (b.get("response_format") or {}).get("type") == "json_schema",
    "json_object": lambda b: (b.get("response_format") or {}).get("type") == "json_object",
    "logprobs": lambda b: "logprobs" in b or "top_logprobs" in b,
    "seed": lambda b: "seed" in b,
    "max_tokens": lambda b: "max_tokens" in b,
    "max_completion_tokens": lambda b: "max_completion_tokens" in b,
}


def rejecting(features: set[str] | list[str], handler: Callable | None = None, *,
              status: int = 500) -> Callable:
    """A handler that rejects requests using any of ``features`` (see FEATURES) the way
    llama-cpp-python's server rejects ``response_format: json_schema``: an HTTP ``status``
    whose body is a validation error naming the field; other requests go to ``handler``."""
    handler = handler or (lambda req: Reply.text("final score: 1"))
    unknown = set(features) - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown features {sorted(unknown)}; known: {sorted(FEATURES)}")

    def reject(req: Request) -> Reply:
        for name in features:
            if FEATURES[name](req.body):
                field = {"json_schema": "response_format", "json_object": "response_format",
                         "logprobs": "top_logprobs" if "top_logprobs" in req.body
                         else "logprobs"}.get(name, name)
                detail = (f"1 validation error for CreateChatCompletionRequest\n{field}\n  "
                          f"Input should be a valid value, {name} is not supported")
                return Reply.error(status, detail, code="invalid_request")
        return handler(req)
    return reject


@dataclass
class Request:
    """One request the server received."""

    path: str
    #: header names lower-cased
    headers: dict[str, str]
    body: dict
    at: float

    @property
    def user_text(self) -> str:
        """The content of the last user message."""
        users = [m for m in self.body.get("messages", []) if m.get("role") == "user"]
        return users[-1]["content"] if users else ""


class _Handler(BaseHTTPRequestHandler):
    """One connection to a FakeOpenAI: GETs answer the call count, POSTs go to its handler."""

    protocol_version = "HTTP/1.1"
    # no 40 ms delayed-ACK stall between header and body
    disable_nagle_algorithm = True

    @property
    def fake(self) -> FakeOpenAI:
        """The FakeOpenAI this connection belongs to."""
        assert isinstance(self.server, _Server)
        return self.server.fake

    # keep test output clean
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        fake = self.fake
        if fake.dead:
            self._drop()
            return
        with fake._lock:
            fake.gets.append(self.path)
        self._send(200, json.dumps({"calls": fake.calls}).encode(), {})

    def do_POST(self) -> None:
        fake = self.fake
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_raw": raw.decode(errors="replace")}
        req = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                      time.time())
        if fake.dead:
            self._drop()
            return
        with fake._lock:
            fake.requests.append(req)
            fake.inflight += 1
            fake.max_inflight = max(fake.max_inflight, fake.inflight)
            fake._arrived.notify_all()
        try:
            self._answer(req)
        finally:
            with fake._lock:
                fake.inflight -= 1

    def _answer(self, req: Request) -> None:
        fake = self.fake
        if not self.path.split("?")[0].rstrip("/").endswith("/chat/completions"):
            reply = Reply.error(404, f"no route {self.path}")
        else:
            reply = fake.handler(req)
        wait = reply.delay or fake.delay
        if wait:
            time.sleep(wait)
        if reply.drop or fake.dead:
            self._drop()
            return
        data = (reply.body if isinstance(reply.body, str) else json.dumps(reply.body)).encode()
        # the client gave up: no one to answer
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._send(reply.status, data, reply.headers)

    def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            import socket

            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _Server(ThreadingHTTPServer):
    """The HTTP server of one FakeOpenAI."""

    daemon_threads = True
    request_queue_size = 512

    def __init__(self, fake: FakeOpenAI):
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-request (killed, or timed out and closed) is what the
        tests make happen: not worth a traceback on stderr, where it would land in whatever
        the test is capturing at that moment; any other error is printed as usual."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeOpenAI:
    """A threaded HTTP server speaking enough of the OpenAI chat-completions API."""

    def __init__(self, handler: Callable[[Request], Reply] | None = None, *, delay: float = 0.0,
                 certfile: str | None = None, keyfile: str | None = None,
                 client_ca: str | None = None):
        """``certfile``/``keyfile`` (PEM): serve HTTPS with that certificate; ``client_ca``:
        and require a client certificate signed by it (mutual TLS)."""
        self.scheme = "https" if certfile else "http"
        self.handler = handler or (lambda req: Reply.text("final score: 1"))
        self.delay = delay
        self.requests: list[Request] = []
        # paths of GET requests (the labeller's pre-flight check)
        self.gets: list[str] = []
        # POSTs being answered
        self.inflight = 0
        # the most POSTs it was answering at once
        self.max_inflight = 0
        # killed: refuses connections, drops every request
        self.dead = False
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # notified at each request
        self._server = _Server(self)
        if certfile:
            import ssl

            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certfile, keyfile)
            if client_ca:
                ctx.verify_mode = ssl.CERT_REQUIRED
                ctx.load_verify_locations(client_ca)
            self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
        # stop() waits for serve_forever's next poll: 0.5 s by default, 20 ms here
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True)
        self._stopped = False

    @property
    def base_url(self) -> str:
        """The URL to give the openai client (ends in /v1)."""
        return f"{self.scheme}://127.0.0.1:{self._server.server_port}/v1"

    @property
    def calls(self) -> int:
        """Number of requests received so far."""
        with self._lock:
            return len(self.requests)

    def wait_for_calls(self, n: int, timeout: float) -> bool:
        """Block until ``n`` requests have arrived (True) or ``timeout`` seconds pass (False)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= n, timeout)

    def start(self) -> FakeOpenAI:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        if not self._stopped:
            self._stopped = True
            self._server.shutdown()
            self._server.server_close()

    def kill(self) -> None:
        """Die as a crashed server does: refuse new connections, and drop every request on
        the open ones (answers being prepared included) without a reply."""
        self.dead = True
        self.stop()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """Serve 'final score: N' answers from a separate process (for benchmarks).

    python -m reljudge.testing.fake_openai --delay 0.2 --answer "final score: 2"
    Prints the base URL on its first line; GET /stats answers {"calls": n}.
    """
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--answer", default="final score: 2")
    args = p.parse_args()
    server = FakeOpenAI(lambda req: Reply.text(args.answer), delay=args.delay).start()
    print(server.base_url, flush=True)
    try:
        server._thread.join()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
