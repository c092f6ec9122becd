"""A scriptable local server for OpenAI's Files and Batch APIs, for tests and benchmarks.

Enough of the API for the ``openai`` SDK's ``files`` and ``batches``: upload, download and
listing of files, and batches that move through ``validating -> in_progress -> finalizing ->
completed`` one step per retrieve (or ``advance()``), with output and error files in OpenAI's
JSONL. Each request line goes to a handler as FakeOpenAI's requests do (``Request`` in,
``Reply`` out): a test scripts answers alike online and in batch. A :class:`BatchPlan` scripts
a batch's faults: expiry with some lines done, failed validation, never finishing.

    with FakeBatchAPI(lambda req: Reply.text("final score: 2")) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        f = client.files.create(file=("in.jsonl", data), purpose="batch")
        b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from reljudge.io.files import text_lines
from reljudge.testing.fake_openai import Reply, Request

STAGES = ("validating", "in_progress", "finalizing", "completed")

#: what a route answers: the HTTP status, a JSON payload or raw bytes, the content type
_Answer = tuple[int, dict[str, Any] | bytes, str]


@dataclass
class BatchPlan:
    """How one batch behaves; plans are used in the order batches are created."""

    #: retrieves that see each status before it moves on
    polls_per_stage: int = 1
    #: expire once this many lines are done (rest: batch_expired)
    expire_after: int | None = None
    #: fail in validation with this message
    fail_validation: str | None = None
    #: stay in_progress for ever
    never_finish: bool = False


@dataclass
class _Batch:
    data: dict[str, Any]
    plan: BatchPlan
    lines: list[dict]
    polls: int = 0


@dataclass
class FakeBatchAPI:
    """A threaded HTTP server for /v1/files and /v1/batches on 127.0.0.1 (a free port)."""

    handler: Callable[[Request], Reply] = field(
        default=lambda req: Reply.text("final score: 1"))
    plans: list[BatchPlan] = field(default_factory=list)
    #: per input file, as OpenAI
    max_requests: int = 50_000
    #: per uploaded file, as OpenAI
    max_bytes: int = 200 * 1024 * 1024

    def __post_init__(self) -> None:
        # id -> file object + "_content"
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, _Batch] = {}
        # (method, path) of every request
        self.log: list[tuple[str, str]] = []
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("content-length", 0)))

            def _send(self, status: int, payload: dict | bytes,
                      ctype: str = "application/json") -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str) -> None:
                body = self._body() if method == "POST" else b""
                with api._lock:
                    api.log.append((method, self.path))
                    path, _, query = self.path.partition("?")
                    status, payload, ctype = api._dispatch(
                        method, path.rstrip("/"), body, self.headers.get("content-type", ""),
                        dict(urllib.parse.parse_qsl(query)))
                self._send(status, payload, ctype)

            def do_GET(self) -> None:
                self._route("GET")

            def do_POST(self) -> None:
                self._route("POST")

            def do_DELETE(self) -> None:
                self._route("DELETE")

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self._server = Server(("127.0.0.1", 0), Handler)
        # stop() waits for serve_forever's next poll: 0.5 s by default, 20 ms here
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True)

    # -- the API ---------------------------------------------------------------------------

    def _dispatch(self, method: str, path: str, body: bytes, ctype: str,
                  query: dict[str, str] | None = None) -> _Answer:
        parts = path.split("/")[2:] if path.startswith("/v1/") else []
        json_ct = "application/json"
        query = query or {}
        if parts == ["files"] and method == "POST":
            return self._upload(body, ctype)
        # files: newest first, as OpenAI lists them
        if parts == ["files"] and method == "GET":
            data = [_public(f) for f in reversed(self.files.values())
                    if query.get("purpose") in (None, f["purpose"])]
            return 200, {"object": "list", "data": data, "has_more": False}, json_ct
        if len(parts) >= 2 and parts[0] == "files":
            f = self.files.get(parts[1])
            if f is None:
                return 404, _error(f"No such File object: {parts[1]}"), json_ct
            if len(parts) == 3 and parts[2] == "content" and method == "GET":
                return 200, f["_content"], "application/octet-stream"
            if len(parts) == 2 and method == "DELETE":
                del self.files[parts[1]]
                return 200, {"id": parts[1], "object": "file", "deleted": True}, json_ct
            return 200, _public(f), json_ct
        if parts == ["batches"] and method == "POST":
            return self._create(json.loads(body or b"{}"))
        if parts == ["batches"] and method == "GET":
            data = [b.data for b in self.batches.values()]
            return 200, {"object": "list", "data": data, "has_more": False}, json_ct
        if len(parts) >= 2 and parts[0] == "batches":
            batch = self.batches.get(parts[1])
            if batch is None:
                return 404, _error(f"No such Batch object: {parts[1]}"), json_ct
            if len(parts) == 3 and parts[2] == "cancel" and method == "POST":
                self._cancel(batch)
            elif method == "GET":
                self._poll(batch)
            return 200, batch.data, json_ct
        return 404, _error(f"no route {method} {path}"), json_ct

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids):06d}"

    def _store_file(self, content: bytes, filename: str, purpose: str) -> dict:
        fid = self._new_id("file")
        self.files[fid] = {"id": fid, "object": "file", "bytes": len(content),
                           "created_at": int(time.time()), "filename": filename,
                           "purpose": purpose, "status": "processed", "_content": content}
        return self.files[fid]

    def _upload(self, body: bytes, ctype: str) -> _Answer:
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"content-type: " + ctype.encode() + b"\r\n\r\n" + body)
        fields: dict[str, Any] = {}
        for part in msg.iter_parts() if msg.is_multipart() else ():
            name = part.get_param("name", header="content-disposition")
            # a part without a plain name is no field we read
            if isinstance(name, str):
                fields[name] = part
        if "file" not in fields or "purpose" not in fields:
            return 400, _error("expected multipart fields 'file' and 'purpose'"), \
                "application/json"
        content = fields["file"].get_payload(decode=True) or b""
        if len(content) > self.max_bytes:
            return 400, _error(f"file is {len(content)} bytes; the limit is {self.max_bytes}"), \
                "application/json"
        purpose = fields["purpose"].get_payload(decode=True).decode()
        name = fields["file"].get_filename() or "upload.jsonl"
        return 200, _public(self._store_file(content, name, purpose)), "application/json"

    def _create(self, req: dict) -> _Answer:
        f = self.files.get(req.get("input_file_id", ""))
        if f is None:
            return 404, _error(f"No such File object: {req.get('input_file_id')}"), \
                "application/json"
        bid = self._new_id("batch")
        now = int(time.time())
        data = {"id": bid, "object": "batch", "endpoint": req.get("endpoint"),
                "input_file_id": f["id"], "completion_window": req.get("completion_window"),
                "status": "validating", "created_at": now, "expires_at": now + 86400,
                "metadata": req.get("metadata"), "output_file_id": None, "error_file_id": None,
                "errors": None, "request_counts": {"total": 0, "completed": 0, "failed": 0}}
        plan = self.plans[len(self.batches)] if len(self.batches) < len(self.plans) \
            else BatchPlan()
        batch = _Batch(data, plan, [])
        problem = plan.fail_validation or self._parse_input(batch, f["_content"], data)
        if problem:
            data.update(status="failed", failed_at=now,
                        errors={"object": "list", "data": [problem if isinstance(problem, dict)
                                                           else {"code": "invalid_request",
                                                                 "message": problem}]})
        self.batches[bid] = batch
        return 200, data, "application/json"

    def _parse_input(self, batch: _Batch, content: bytes, data: dict) -> dict | None:
        seen: set[str] = set()
        lines = text_lines(content.decode("utf-8"))
        if len(lines) > self.max_requests:
            return {"code": "too_many_requests",
                    "message": f"{len(lines)} requests; the limit is {self.max_requests}"}
        for n, line in enumerate(lines, 1):
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                return {"code": "invalid_json_line", "message": "not JSON", "line": n}
            cid = item.get("custom_id")
            if not cid or cid in seen:
                return {"code": "duplicate_custom_id" if cid else "missing_required_parameter",
                        "message": f"custom_id {cid!r}", "line": n}
            if item.get("url") != data["endpoint"] or item.get("method") != "POST":
                return {"code": "mismatched_endpoint", "message": item.get("url"), "line": n}
            seen.add(cid)
            batch.lines.append(item)
        data["request_counts"]["total"] = len(batch.lines)
        return None

    def _poll(self, batch: _Batch) -> None:
        """A retrieve: the batch moves one stage on after ``polls_per_stage`` looks."""
        data = batch.data
        if data["status"] not in STAGES[:-1]:
            return
        batch.polls += 1
        if batch.polls < batch.plan.polls_per_stage:
            return
        batch.polls = 0
        self.advance(data["id"])

    def advance(self, batch_id: str) -> str:
        """Move a batch one status on (as time would); returns the new status."""
        with self._lock:
            batch = self.batches[batch_id]
            data, plan = batch.data, batch.plan
            now = int(time.time())
            if data["status"] == "validating":
                data.update(status="in_progress", in_progress_at=now)
            elif data["status"] == "in_progress" and not plan.never_finish:
                if plan.expire_after is not None:
                    self._finish(batch, batch.lines[:plan.expire_after],
                                 batch.lines[plan.expire_after:])
                    data.update(status="expired", expired_at=now)
                else:
                    data.update(status="finalizing", finalizing_at=now)
            elif data["status"] == "finalizing":
                self._finish(batch, batch.lines, [])
                data.update(status="completed", completed_at=now)
            return data["status"]

    def _finish(self, batch: _Batch, done: list[dict], expired: list[dict]) -> None:
        out: list[dict] = []
        err: list[dict] = []
        for item in done:
            req = Request(item["url"], {}, item["body"], time.time())
            reply = self.handler(req)
            body = reply.body if isinstance(reply.body, dict) else {"_raw": reply.body}
            line = {"id": self._new_id("batch_req"), "custom_id": item["custom_id"],
                    "response": {"status_code": reply.status, "request_id": self._new_id("req"),
                                 "body": body}, "error": None}
            (out if reply.status == 200 else err).append(line)
        for item in expired:
            err.append({"id": self._new_id("batch_req"), "custom_id": item["custom_id"],
                        "response": None, "error": {"code": "batch_expired", "message":
                                                    "This request could not be executed before "
                                                    "the completion window expired."}})
        counts = batch.data["request_counts"]
        counts.update(completed=len(out), failed=len(err))
        for key, lines in (("output_file_id", out), ("error_file_id", err)):
            if lines:
                content = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode()
                f = self._store_file(content, f"{batch.data['id']}_{key}.jsonl", "batch_output")
                batch.data[key] = f["id"]

    def _cancel(self, batch: _Batch) -> None:
        if batch.data["status"] in ("validating", "in_progress", "finalizing"):
            now = int(time.time())
            self._finish(batch, [], [])
            batch.data.update(status="cancelled", cancelling_at=now, cancelled_at=now)

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The URL to give the openai client (ends in /v1)."""
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def start(self) -> FakeBatchAPI:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeBatchAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _public(f: dict) -> dict:
    return {k: v for k, v in f.items() if not k.startswith("_")}


def _error(message: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}
