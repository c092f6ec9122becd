"""Run the grading app with uvicorn on a socket bound before the address is announced."""

from __future__ import annotations

import contextlib
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


WILDCARDS = ("0.0.0.0", "::", "")


def lan_addresses() -> list[str]:
    """This machine's IPv4 addresses other than loopback: those its name resolves to, and
    the one it would reach the network from (a UDP socket's route: nothing is sent)."""
    found: set[str] = set()
    with contextlib.suppress(OSError):
        found.update(str(i[4][0]) for i in socket.getaddrinfo(socket.gethostname(), None,
                                                        socket.AF_INET))
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("10.255.255.255", 1))
        found.add(probe.getsockname()[0])
    return sorted(a for a in found if a not in WILDCARDS and not ipaddress.ip_address(a).is_loopback)


def urls_of(sock: socket.socket, host: str, token: str | None) -> list[str]:
    """The addresses to open in a browser: for a wildcard host (0.0.0.0, ::) one per LAN
    address of this machine (its name when none is found), never the wildcard itself."""
    port = sock.getsockname()[1]
    names = (lan_addresses() or [socket.gethostname()]) if host in WILDCARDS else [host]
    return [f"http://{f'[{n}]' if ':' in n else n}:{port}/" + (f"?token={token}" if token else "")
            for n in names]


def serve(task: AssessTask, *, host: str = DEFAULT_HOST, port: int = 0,
          token: str | None = None,
          announce: Callable[[list[str]], None] | None = None) -> None:
    """Serve the task until interrupted or stopped from the page; ``announce`` gets the URLs
    once the server answers (the CLI prints them; by default they are logged at WARNING, so
    that they show)."""
    import logging

    import uvicorn

    from reljudge.assess.app import create_app

    sock = bind(host, port)
    urls = urls_of(sock, host, token)

    def say(urls: list[str]) -> None:
        if announce is None:
            logging.getLogger(__name__).warning("open %s", " or ".join(urls))
        else:
            announce(urls)

    class Server(uvicorn.Server):
        """Announces the address once serving, with uvicorn's Ctrl-C handling in place: a
        Ctrl-C between an earlier announcement and that could land in a garbage collector
        callback, where Python ignores the KeyboardInterrupt, and the server ran on."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if not self.should_exit:
                say(urls)

    running: list[uvicorn.Server] = []

    def stop() -> None:
        """The finished page's button: end after answering this request."""
        running[0].should_exit = True

    config = uvicorn.Config(create_app(task, token=token, on_stop=stop), log_level="warning",
                            access_log=False, lifespan="off")
    running.append(Server(config))
    running[0].run(sockets=[sock])
