"""Processes forked from one warm Python process, for the tests about a running ``reljudge``
process rather than its start-up: a labelling process killed with SIGKILL or stopped with
Ctrl-C mid-run, one drawing on a terminal, an ``assess`` server a test talks to, stops or
kills. Each is a real process of its own (its own pid, memory and descriptors; killed, it
loses whatever it had not written), but it starts as a copy of a process that has already
imported reljudge's command-line, labelling and grading-server modules and the openai SDK: it
costs its work, not a fresh interpreter's start-up and imports (1 to 2 s of CPU for `label`,
the SDK's import for `label --batch`, about 1 s for `assess`). The tests about start-up itself
(Ctrl-C while importing, what a fresh process imports, the URL ``assess`` prints as it
starts) start their process on their own.

Note for a CPU census: a child's CPU is reaped by the warm process, so it shows in the test
process's RUSAGE_CHILDREN only once the warm process ends (at the test process's exit); per
test, read the warm process's /proc/PID/stat (``_warm.proc.pid``).

The warm process (one per test process, started at the first use) runs one thread of its
own, so a fork of it is sound. A child gets the test's environment, folder and standard
streams (pipes, /dev/null, a terminal or the test's own; line-buffered when the environment
sets ``PYTHONUNBUFFERED``, as python's are), and the Ctrl-C handling of a ``python`` started
from a terminal; it runs ``python -c CODE ARGS`` or ``reljudge ARGS``. Its exit code (-N for
a signal N) comes back from the warm process, which reaps it.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO

#: what a labelling run imports (library or command line, online or batch: the openai SDK, on a
#: SQLite or PostgreSQL store) and what ``reljudge assess`` serves with
PRELOAD = ["reljudge.cli", "reljudge.cli.label_cmd", "reljudge.cli.batch_cmd", "reljudge.io",
           "reljudge.judge", "reljudge.judge.labeller", "reljudge.judge.batch.job",
           "reljudge.judge.http.client", "reljudge.judge.http.transport", "reljudge.store",
           "reljudge.store.postgres", "aiohttp", "diskcache", "openai", "openai.resources.files",
           "openai.resources.batches", "httpcore2", "h11", "anyio.streams.tls", "truststore",
           "encodings.idna", "importlib.resources.readers", "psycopg", "reljudge.cli.assess_cmd",
           "reljudge.assess.app", "reljudge.assess.server", "reljudge.assess.task",
           "reljudge.assess.team", "reljudge.assess.adjudicate", "reljudge.judge.prompts",
           "uvicorn", "uvicorn.config", "uvicorn.server", "uvicorn.main", "uvicorn.lifespan.off",
           "uvicorn.loops.auto", "uvicorn.loops.asyncio", "uvicorn.protocols.http.auto",
           "uvicorn.protocols.http.h11_impl", "uvicorn.protocols.websockets.auto",
           "starlette.applications", "starlette.responses", "starlette.routing"]

#: the warm process: imports PRELOAD, then forks a child for each request (JSON, with the
#: child's stdin, stdout and stderr descriptors attached) and says ["started", pid], then
#: ["ended", pid, exit code] once it has reaped it
SERVE = r"""
import importlib, json, os, select, signal, socket, sys, traceback
signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C at the test's terminal is the test's
for name in json.loads(sys.argv[2]):
    try:
        importlib.import_module(name)
    except ImportError:
        pass
from reljudge.cli import build_parser
build_parser()  # imports every command's module
link = socket.socket(fileno=int(sys.argv[1]))
children = {}  # pidfd: pid


def child(request, fds):
    link.close()
    for pidfd in children:
        os.close(pidfd)
    for number, fd in enumerate(fds):
        os.dup2(fd, number)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    # the streams as a fresh interpreter opens them (stderr line-buffered)
    sys.stdin = sys.__stdin__ = open(0, closefd=False)
    buffering = 1 if request["env"].get("PYTHONUNBUFFERED") else -1
    sys.stdout = sys.__stdout__ = open(1, "w", buffering=buffering, closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, errors="backslashreplace",
                                       closefd=False)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    code = 0
    try:
        if request["code"] is not None:
            sys.argv = ["-c", *request["args"]]
            exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})
        else:
            from reljudge.cli import main
            sys.argv = ["reljudge", *request["args"]]
            code = main(request["args"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        if not isinstance(e.code, (int, type(None))):
            print(e.code, file=sys.stderr)
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT  # as python does: it ends by the signal
    except BaseException:
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


while True:
    ready = select.select([link, *children], [], [])[0]
    for r in ready:
        if r is link:
            message, fds, _, _ = socket.recv_fds(link, 1 << 20, 3)
            if not message:
                sys.exit(0)
            pid = os.fork()
            if pid == 0:
                child(json.loads(message), fds)
            for fd in fds:
                os.close(fd)
            children[os.pidfd_open(pid)] = pid
            link.send(json.dumps(["started", pid]).encode())
        else:
            pid = children.pop(r)
            os.close(r)
            status = os.waitpid(pid, 0)[1]
            link.send(json.dumps(["ended", pid, os.waitstatus_to_exitcode(status)]).encode())
"""

PIPE, DEVNULL = subprocess.PIPE, subprocess.DEVNULL


class _Warm:
    """This test process's link to the warm process (started at the first use)."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen([sys.executable, "-c", SERVE, str(theirs.fileno()),
                                      json.dumps(PRELOAD)], pass_fds=[theirs.fileno()])
        theirs.close()
        self.link = ours
        self.lock = threading.Lock()
        self.ended: dict[int, int] = {}
        atexit.register(self.close)

    def start(self, request: dict, fds: list[int]) -> int:
        """Fork a child for this request; its pid."""
        with self.lock:
            socket.send_fds(self.link, [json.dumps(request).encode()], fds)
            while True:
                said = self._next(None)
                if said is not None and said[0] == "started":
                    return said[1]

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        """The child's exit code once it has ended (waiting up to ``timeout`` s), else None."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.lock:
            while pid not in self.ended:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if self._next(left) is None and left is not None and left <= 0:
                    return None
            return self.ended[pid]

    def _next(self, timeout: float | None) -> list | None:
        if not select.select([self.link], [], [], timeout)[0]:
            return None
        message = self.link.recv(4096)
        assert message, "the warm process ended"
        said = json.loads(message)
        if said[0] == "ended":
            self.ended[said[1]] = said[2]
        return said

    def close(self) -> None:
        self.link.close()
        self.proc.wait(10)


_warm: _Warm | None = None


class Forked:
    """A forked child running ``python -c code *args`` (``code``) or ``reljudge *args``, with
    the part of subprocess.Popen's interface the tests use (text streams only). ``stdin``,
    ``stdout``, ``stderr``: PIPE, DEVNULL, a descriptor, or None for this process's own;
    ``env``: its environment (this process's by default); ``cwd``: its folder (this
    process's by default)."""

    def __init__(self, args: Sequence[str], *, code: str | None = None,
                 stdin: int | None = None, stdout: int | None = None,
                 stderr: int | None = None, env: dict[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None) -> None:
        global _warm
        if _warm is None:
            _warm = _Warm()
        self.args = list(args)
        ours: list[IO[str] | None] = []
        theirs: list[int] = []
        close: list[int] = []
        for number, how in enumerate((stdin, stdout, stderr)):
            mine = None
            if how == PIPE:
                r, w = os.pipe()
                fd, keep = (r, w) if number == 0 else (w, r)
                mine = open(keep, "w" if number == 0 else "r")  # noqa: SIM115
                close.append(fd)
            elif how == DEVNULL:
                fd = os.open(os.devnull, os.O_RDWR)
                close.append(fd)
            else:
                fd = number if how is None else how
            ours.append(mine)
            theirs.append(fd)
        self.stdin, self.stdout, self.stderr = ours
        request = {"cwd": str(cwd or os.getcwd()), "env": dict(os.environ if env is None else env),
                   "code": code, "args": self.args}
        try:
            self.pid = _warm.start(request, theirs)
        finally:
            for fd in close:
                os.close(fd)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit code if it has ended, else None."""
        return self._ended(0)

    def _ended(self, timeout: float | None) -> int | None:
        if self.returncode is None:
            assert _warm is not None
            self.returncode = _warm.exit_code(self.pid, timeout)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait until it ends; its exit code (-N for a signal N)."""
        code = self._ended(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def send_signal(self, sig: int) -> None:
        """Send it this signal (unless it has been reaped)."""
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        """SIGKILL it."""
        self.send_signal(signal.SIGKILL)

    def communicate(self, timeout: float | None = None) -> tuple[str | None, str | None]:
        """Close its stdin, read its stdout and stderr to the end and wait until it ends."""
        if self.stdin is not None:
            self.stdin.close()
        read: dict[int, str] = {}

        def drain(i: int, f: IO[str]) -> None:
            read[i] = f.read()

        readers = [threading.Thread(target=drain, args=(i, f), daemon=True)
                   for i, f in enumerate((self.stdout, self.stderr)) if f is not None]
        for t in readers:
            t.start()
        self.wait(timeout)
        for t in readers:
            t.join(timeout)
        for f in (self.stdout, self.stderr):
            if f is not None:
                f.close()
        return read.get(0), read.get(1)


def python(code: str, *args: str, stdin: int | None = None, stdout: int | None = None,
           stderr: int | None = None) -> Forked:
    """``python -c code *args`` as a forked child."""
    return Forked(args, code=code, stdin=stdin, stdout=stdout, stderr=stderr)


def reljudge(*args: str, stdin: int | None = None, stdout: int | None = None,
             stderr: int | None = None, env: dict[str, str] | None = None,
             cwd: str | os.PathLike[str] | None = None) -> Forked:
    """``reljudge *args`` (``python -m reljudge``) as a forked child."""
    return Forked(args, stdin=stdin, stdout=stdout, stderr=stderr, env=env, cwd=cwd)


def run_python(code: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run([python, "-c", code, *args], capture_output=True, text=True)``, forked."""
    proc = python(code, *args, stdout=PIPE, stderr=PIPE)
    try:
        out, err = proc.communicate(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return subprocess.CompletedProcess([code, *args], proc.wait(), out, err)
