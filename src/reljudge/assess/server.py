"""Run the grading app with uvicorn on a socket bound before the address is announced."""

from __future__ import annotations

import ipaddress
import secrets
import socket
from collections.abc import Callable

from reljudge.assess.task import AssessTask
from reljudge.errors import ConfigError

DEFAULT_HOST = "127.0.0.1"


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost'."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    """A fresh random token for a shared server."""
    return secrets.token_urlsafe(18)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, host: str, token: str | None) -> str:
    """The address to open in a browser."""
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def serve(task: AssessTask, *, host: str = DEFAULT_HOST, port: int = 0,
          token: str | None = None, announce: Callable[[str], None] | None = None) -> None:
    """Serve the task until interrupted; ``announce`` gets the URL once the socket listens
    (the CLI prints it; by default it is logged at WARNING, so that it shows)."""
    import logging

    import uvicorn

    from reljudge.assess.app import create_app

    sock = bind(host, port)
    (announce or logging.getLogger(__name__).warning)(url_of(sock, host, token))
    config = uvicorn.Config(create_app(task, token=token), log_level="warning",
                            access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
