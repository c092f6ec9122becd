"""A real PostgreSQL server for tests: Debian's binaries, a temporary data directory (a copy
of one cluster initdb made, kept in the temporary folder), a free port on 127.0.0.1, stopped
at the end. A test helper, not a test.

``initdb`` refuses to run as root, so as root the server runs as the unprivileged system user
``postgres`` (Debian's package creates it); otherwise as the user running the tests. Trust
authentication on 127.0.0.1 only; fsync off (a test server). Where no server can be started
(no binaries, no such user), the test skips with one line saying why, or fails under CI=true
(tests.helpers.unavailable).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from tests.helpers import unavailable

USER = "reljudge"  # the database superuser initdb creates


def bin_dir() -> Path | None:
    """The newest /usr/lib/postgresql/*/bin with initdb, else the one on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One running server; ``url`` reaches its ``postgres`` database as the superuser."""

    def __init__(self, durable: bool = False) -> None:
        """``durable``: fsync on and full page writes, commits not waited on
        (``synchronous_commit=off``), the durability of a SQLite store in WAL mode with
        ``synchronous=NORMAL``: for benchmarks. Otherwise fsync is off (a test server)."""
        bins = bin_dir()
        if bins is None:
            unavailable("no PostgreSQL server binaries (apt-get install postgresql)")
        self.bins = bins
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                import pwd

                pwd.getpwnam("postgres")
            except KeyError:
                unavailable("running as root and there is no 'postgres' system user to run "
                            "PostgreSQL as (initdb refuses root)")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.dir = Path(tempfile.mkdtemp(prefix="reljudge-pg-"))
        if self.as_user:
            shutil.chown(self.dir, "postgres")
        self.data = self.dir / "data"
        self.port = _free_port()
        self._run("cp", "-a", str(self._cluster()), str(self.data), tool_dir=Path("/bin"))
        durability = ("-c fsync=on -c full_page_writes=on" if durable
                      else "-c fsync=off -c full_page_writes=off")
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 {durability} "
                   "-c synchronous_commit=off -c max_connections=100")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.dir / "log"),
                  "-w", "-t", "60", "start")
        self.url = f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    def _cluster(self) -> Path:
        """An empty database cluster as initdb makes it, made once per machine, user and
        PostgreSQL binaries and copied for each server: initdb takes one and a half seconds
        of CPU, the copy a few hundredths. Made beside and renamed into place, so that a
        cluster found there is whole; one found without its control file is made again."""
        initdb = self.bins / "initdb"
        key = f"{os.geteuid()}-{initdb.stat().st_mtime_ns}-{str(self.bins).replace('/', '_')}"
        cluster = Path(tempfile.gettempdir()) / f"reljudge-pg-cluster-{key}"
        if (cluster / "global" / "pg_control").exists():
            return cluster
        making = Path(tempfile.mkdtemp(prefix="reljudge-pg-initdb-"))
        try:
            if self.as_user:
                shutil.chown(making, "postgres")
            self._run("initdb", "-D", str(making / "data"), "-A", "trust", "-U", USER,
                      "--no-sync", "-E", "UTF8", "--locale", "C")
            if cluster.exists() and not (cluster / "global" / "pg_control").exists():
                shutil.rmtree(cluster, ignore_errors=True)  # a broken one
            with contextlib.suppress(OSError):  # another process made it meanwhile
                (making / "data").rename(cluster)
        finally:
            shutil.rmtree(making, ignore_errors=True)
        return cluster

    def _run(self, tool: str, *args: str, tool_dir: Path | None = None) -> None:
        try:
            subprocess.run([*self.as_user, str((tool_dir or self.bins) / tool), *args],
                           check=True, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as e:
            detail = getattr(e, "stderr", "") or str(e)
            self.cleanup()
            unavailable(f"cannot start a PostgreSQL server: {tool}: {detail.strip()[:200]}")

    def database(self, name: str) -> str:
        """A new empty database; its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def stop(self) -> None:
        """Stop the server and remove its files."""
        if self.data.exists():
            subprocess.run([*self.as_user, str(self.bins / "pg_ctl"), "-D", str(self.data),
                            "-m", "immediate", "-w", "stop"], capture_output=True, timeout=60)
        self.cleanup()

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
