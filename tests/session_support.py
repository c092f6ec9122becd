"""One Python process that runs many ``reljudge`` commands or Python snippets in turn, for tests
about what the commands do (files, permissions, outputs), not about their process: each command
costs its work, not a fresh interpreter's start-up and imports. The tests about the process
itself (start-up, signals, exit through a shell, a real pipe) start ``reljudge`` on their own.

The test sends one request a line on the process's stdin (JSON: the folder to run in, the
whole environment, and ``argv`` for ``reljudge.cli.main`` or ``code`` to ``exec`` in a
fresh namespace) and reads one reply a line, so it checks the files between two commands as it
would between two processes."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

#: the process: runs each request with sys.stdout and sys.stderr captured, replies on the
#: descriptor that was stdout (descriptor 1 goes to stderr, so that nothing a command or a
#: child of it writes there can break a reply)
SERVE = r"""
import contextlib, io, json, os, sys, traceback
replies = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
for request in sys.stdin:
    request = json.loads(request)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if "argv" in request:
                from reljudge.cli import main
                code = main(request["argv"])
            else:
                exec(compile(request["code"], "<block>", "exec"), {"__name__": "__main__"})
                code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
            if not isinstance(e.code, (int, type(None))):
                print(e.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
    replies.write(json.dumps([code, out.getvalue(), err.getvalue()]) + "\n")
    replies.flush()
"""


#: seconds a command or a snippet may take (as subprocess.run's timeout did)
TIMEOUT = 300


class CommandSession:
    """A Python process (after ``prefix``, e.g. ``unshare --user``) that runs the commands
    and snippets it is given one after another; a context manager that ends it."""

    def __init__(self, log: Path, prefix: tuple[str, ...] = (), env: dict | None = None) -> None:
        self.log = log
        with open(log, "w") as stderr:
            self.proc = subprocess.Popen([*prefix, sys.executable, "-c", SERVE],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=stderr, text=True, env=env)

    def _ask(self, request: dict, argv: list[str]) -> subprocess.CompletedProcess:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        if not select.select([self.proc.stdout], [], [], TIMEOUT)[0]:
            self.proc.kill()
            raise AssertionError(f"no reply in {TIMEOUT} s to {argv}")
        reply = self.proc.stdout.readline()
        assert reply, f"the command session ended: {self.log.read_text()[-3000:]}"
        code, out, err = json.loads(reply)
        return subprocess.CompletedProcess(argv, code, out, err)

    def reljudge(self, *argv: str, cwd: Path,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """``reljudge ARGV`` run from ``cwd`` in the environment ``env`` (by default this
        process's); its exit code, stdout and stderr."""
        return self._ask({"cwd": str(cwd), "env": dict(os.environ if env is None else env),
                          "argv": list(argv)}, ["reljudge", *argv])

    def python(self, code: str, cwd: Path,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """``code`` run as a script from ``cwd`` in the environment ``env`` (a namespace of
        its own); exit 1 and the traceback on stderr when it raises."""
        return self._ask({"cwd": str(cwd), "env": dict(os.environ if env is None else env),
                          "code": code}, ["python", "-c", code])

    def close(self) -> None:
        """End the process (its stdin closes; it exits when its last request is done)."""
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)

    def __enter__(self) -> CommandSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

