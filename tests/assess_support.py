"""`reljudge assess` servers as real processes without an interpreter's start-up each: one
warm Python process a test worker (the zygote), which has imported the CLI, the grading app
and uvicorn, forks a child per server that runs ``reljudge.cli.main(argv)`` and exits with
its code. Each child is a process of its own: it can be killed, sent Ctrl-C, and its exit
code is that of the command; only its start-up is shared. The tests about the start-up
itself start ``python -m reljudge assess`` (tests/helpers.py's assess_server, ``fresh``).

A request is one message on the zygote's control socket: JSON (argv, folder, environment)
with two descriptors, a socket the zygote answers on (the child's pid, later its exit code)
and the write end of the pipe that becomes the child's stdout."""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

#: the zygote: a single thread (fork-safe), woken by a request or by SIGCHLD
ZYGOTE = r"""
import contextlib, importlib, json, os, select, signal, socket, sys, traceback

import reljudge.cli, reljudge.cli.assess_cmd, reljudge.assess.app, reljudge.assess.server
import reljudge.assess.task, reljudge.assess.team, reljudge.assess.adjudicate, reljudge.store
import reljudge.io, reljudge.judge.prompts, uvicorn, starlette.applications
reljudge.cli.build_parser()
# what uvicorn imports when it starts, as far as this version has it
for name in ("uvicorn.lifespan.off", "uvicorn.loops.auto", "uvicorn.loops.asyncio",
             "uvicorn.protocols.http.auto", "uvicorn.protocols.http.h11_impl",
             "uvicorn.protocols.http.httptools_impl", "uvicorn.protocols.websockets.auto"):
    with contextlib.suppress(ImportError):
        importlib.import_module(name)

control = socket.socket(fileno=int(sys.argv[1]))
wake_r, wake_w = os.pipe()
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *_: None)
answer = {}  # pid -> the socket its exit code goes to


def child(request, stdout):
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.close(wake_r)
    os.close(wake_w)
    control.close()
    for conn in answer.values():
        conn.close()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(stdout, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    os.close(stdout)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    code = 1
    try:
        code = reljudge.cli.main(request["argv"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


while True:
    ready = select.select([control, wake_r, sys.stdin], [], [])[0]
    if sys.stdin in ready:  # the test worker is gone
        break
    if wake_r in ready:
        os.read(wake_r, 512)
        while answer:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = answer.pop(pid)
            conn.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
            conn.close()
    if control in ready:
        msg, fds, _, _ = socket.recv_fds(control, 1 << 17, 2)
        if not msg:
            break
        conn, stdout = socket.socket(fileno=fds[0]), fds[1]
        pid = os.fork()
        if pid == 0:
            child(json.loads(msg), stdout)
        os.close(stdout)
        answer[pid] = conn
        conn.sendall(b"%d\n" % pid)
"""


class Zygote:
    """The warm process of this test worker; started on first use, ended at exit."""

    _one: Zygote | None = None

    def __init__(self) -> None:
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.proc = subprocess.Popen([sys.executable, "-c", ZYGOTE, str(theirs.fileno())],
                                     stdin=subprocess.PIPE, pass_fds=[theirs.fileno()])
        theirs.close()
        atexit.register(self.close)

    @classmethod
    def get(cls) -> Zygote:
        """This worker's zygote, started if it is not running."""
        if cls._one is None or cls._one.proc.poll() is not None:
            cls._one = cls()
        return cls._one

    def close(self) -> None:
        """End the zygote (its stdin closes: it leaves its loop)."""
        if self.proc.poll() is None:
            assert self.proc.stdin
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.control.close()


class Forked:
    """A forked ``reljudge`` command, with the parts of subprocess.Popen the tests use."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        zygote = Zygote.get()
        self._answer, theirs = socket.socketpair()
        read, write = os.pipe()
        request = json.dumps({"argv": argv, "cwd": str(cwd), "env": dict(os.environ)})
        try:
            socket.send_fds(zygote.control, [request.encode()], [theirs.fileno(), write])
        finally:
            theirs.close()
            os.close(write)
        self.stdout = open(read, encoding="utf-8")  # noqa: SIM115
        self._got = b""
        self.pid = int(self._line(60.0))
        self.returncode: int | None = None

    def _line(self, timeout: float | None) -> bytes:
        """The next line the zygote sends about this child; b'' when none came in time."""
        while b"\n" not in self._got:
            if not select.select([self._answer], [], [], timeout)[0]:
                return b""
            chunk = self._answer.recv(64)
            if not chunk:
                raise RuntimeError("the assess zygote ended")
            self._got += chunk
        line, self._got = self._got.split(b"\n", 1)
        return line

    def poll(self) -> int | None:
        """The exit code, or None while the child runs."""
        if self.returncode is None:
            line = self._line(0.0)
            if line:
                self.returncode = int(line)
                self._answer.close()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait until the child has exited (subprocess.TimeoutExpired after ``timeout``)."""
        if self.returncode is None:
            line = self._line(timeout)
            if not line:
                raise subprocess.TimeoutExpired(["reljudge", "assess"], timeout or 0)
            self.returncode = int(line)
            self._answer.close()
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to the child unless it has exited."""
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        """SIGKILL the child."""
        self.send_signal(signal.SIGKILL)

