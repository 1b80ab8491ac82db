"""Real PostgreSQL and Redis servers for tests: loopback only, a free port, a throwaway data dir.

- :func:`start_postgres` starts a PostgreSQL cluster (``initdb`` + ``pg_ctl``) and returns a
  :class:`PostgresServer` whose ``dsn`` is ``postgresql://seamkit@127.0.0.1:<port>/seamkit``
  (trust authentication on 127.0.0.1 only, so any password in a DSN is accepted and ignored).
- :func:`start_redis` starts ``redis-server`` and returns a :class:`RedisServer` whose ``url`` is
  ``redis://127.0.0.1:<port>/0`` (no persistence).

Both wait until the server accepts connections (``timeout`` seconds) and raise
:class:`ServiceStartError` with the tail of the server log otherwise. ``stop()`` is idempotent and
also registered with :mod:`atexit`. The binaries come from the Debian packages ``postgresql`` and
``redis-server`` (``scripts/_services.sh`` installs them).

PostgreSQL refuses to run as root: when this process is root, ``initdb``/``pg_ctl`` run as the
``postgres`` system user through ``runuser`` and the data directory lives in a fresh directory
under the system temp dir owned by that user (a pytest ``tmp_path`` is not readable by it).
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = [
    "PostgresServer",
    "RedisServer",
    "ServiceStartError",
    "find_postgres_bin",
    "free_port",
    "start_postgres",
    "start_redis",
]

_LOOPBACK = "127.0.0.1"


class ServiceStartError(RuntimeError):
    """A test service could not be found, started or stopped; the message says why (with its log)."""


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def find_postgres_bin(name: str) -> str:
    """Path of the PostgreSQL server program ``name`` (``initdb``, ``pg_ctl``...), newest version first.

    Raises ServiceStartError when PostgreSQL is not installed.
    """
    candidates = glob.glob(f"/usr/lib/postgresql/*/bin/{name}")

    def version(path: str) -> tuple[int, ...]:
        part = Path(path).parent.parent.name
        return tuple(int(x) for x in part.split(".") if x.isdigit())

    candidates.sort(key=version, reverse=True)
    if candidates:
        return candidates[0]
    found = shutil.which(name)
    if found:
        return found
    raise ServiceStartError(
        f"PostgreSQL program {name!r} not found (looked in /usr/lib/postgresql/*/bin and PATH); "
        "install it with `bash scripts/_services.sh` (apt-get install postgresql)"
    )


def _log_tail(path: Path, limit: int = 4000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(no log: {exc})"
    return text[-limit:] if text else "(log is empty)"


def _port_accepts(port: int) -> bool:
    try:
        with socket.create_connection((_LOOPBACK, port), timeout=0.5):
            return True
    except OSError:
        return False


class PostgresServer:
    """A running throwaway PostgreSQL server on 127.0.0.1.

    Attributes: ``host``, ``port``, ``user``, ``database``, ``dsn``, ``datadir``, ``log_path``.
    ``stop()`` (fast shutdown, removes the data dir when this object created it), ``restart()``
    (same port and data, for testing reconnection), ``is_running``.
    """

    def __init__(self, workdir: Path, *, port: int | None = None, timeout: float = 60.0) -> None:
        self.host = _LOOPBACK
        self.port = port if port is not None else free_port()
        self.user = "seamkit"
        self.database = "seamkit"
        self.timeout = timeout
        self._as_root = hasattr(os, "geteuid") and os.geteuid() == 0
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        if self._as_root:
            # the postgres user cannot enter root's 0700 temp dirs (pytest's tmp_path)
            base = Path(tempfile.mkdtemp(prefix=f"seamkit-pg-{self.port}-"))
            shutil.chown(base, user="postgres", group="postgres")
        else:
            base = Path(tempfile.mkdtemp(prefix=f"pg-{self.port}-", dir=workdir))
        self._base = base
        self.datadir = base / "data"
        self.log_path = base / "postgres.log"
        self._running = False
        self._removed = False

    @property
    def dsn(self) -> str:
        """``postgresql://seamkit@127.0.0.1:<port>/seamkit``."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.database}"

    @property
    def is_running(self) -> bool:
        return self._running

    def _cmd(self, *args: str) -> list[str]:
        if self._as_root:
            return ["runuser", "-u", "postgres", "--", *args]
        return list(args)

    def _run(self, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                self._cmd(*args), capture_output=True, text=True, timeout=timeout or self.timeout, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ServiceStartError(f"PostgreSQL command {args[0]} failed: {exc}") from exc

    def init(self) -> None:
        """Create the cluster (``initdb``, trust auth) and write a loopback-only test configuration."""
        result = self._run(
            find_postgres_bin("initdb"), "-D", str(self.datadir), "-U", self.user, "--auth=trust",
            "-E", "UTF8", "--locale=C", "--no-sync",
        )
        if result.returncode != 0:
            raise ServiceStartError(f"initdb failed (exit {result.returncode}):\n{result.stdout}\n{result.stderr}")
        settings = {
            "listen_addresses": f"'{self.host}'",
            "port": str(self.port),
            "unix_socket_directories": "''",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "300",
            "shared_buffers": "32MB",
            "log_min_messages": "warning",
        }
        conf = "".join(f"{key} = {value}\n" for key, value in settings.items())
        with open(self.datadir / "postgresql.conf", "a", encoding="utf-8") as fh:
            fh.write("\n# seamkit test server\n" + conf)

    def start(self) -> None:
        """Start the server and wait until it accepts connections; ServiceStartError with its log if not."""
        if self._running:
            return
        result = self._run(
            find_postgres_bin("pg_ctl"), "start", "-D", str(self.datadir), "-l", str(self.log_path),
            "-w", "-t", str(int(self.timeout)),
        )
        if result.returncode != 0:
            raise ServiceStartError(
                f"PostgreSQL did not start on {self.host}:{self.port} (pg_ctl exit {result.returncode}): "
                f"{result.stderr.strip()}\n--- server log ---\n{_log_tail(self.log_path)}"
            )
        self._running = True
        deadline = time.monotonic() + self.timeout
        isready = find_postgres_bin("pg_isready")
        while True:
            check = self._run(isready, "-h", self.host, "-p", str(self.port), "-U", self.user, "-q", timeout=10)
            if check.returncode == 0:
                return
            if time.monotonic() > deadline:
                self.stop()
                raise ServiceStartError(
                    f"PostgreSQL on {self.host}:{self.port} did not accept connections within {self.timeout}s"
                    f"\n--- server log ---\n{_log_tail(self.log_path)}"
                )
            time.sleep(0.05)

    def create_database(self) -> None:
        """Create ``self.database`` (the cluster only has ``postgres`` and templates)."""
        result = self._run(
            find_postgres_bin("createdb"), "-h", self.host, "-p", str(self.port), "-U", self.user, self.database
        )
        if result.returncode != 0 and "already exists" not in result.stderr:
            raise ServiceStartError(f"createdb failed: {result.stderr.strip()}")

    def stop(self, *, remove: bool = True) -> None:
        """Fast shutdown (``pg_ctl stop -m fast``); with ``remove`` the data dir is deleted too. Idempotent."""
        if self._running:
            self._running = False
            result = self._run(find_postgres_bin("pg_ctl"), "stop", "-D", str(self.datadir), "-m", "fast", "-w")
            if result.returncode != 0 and _port_accepts(self.port):
                self._run(find_postgres_bin("pg_ctl"), "stop", "-D", str(self.datadir), "-m", "immediate", "-w")
        if remove and not self._removed:
            self._removed = True
            shutil.rmtree(self._base, ignore_errors=True)

    def restart(self) -> None:
        """Stop (fast: open connections are cut) and start again on the same port and data dir."""
        self.stop(remove=False)
        self.start()

    def __repr__(self) -> str:
        state = "running" if self._running else "stopped"
        return f"PostgresServer({self.dsn!r}, {state})"


def start_postgres(workdir: str | os.PathLike[str], *, timeout: float = 60.0) -> PostgresServer:
    """Start a throwaway PostgreSQL server on 127.0.0.1 and a free port; returns it running.

    ``workdir``: a directory for the data dir (when not root). Raises ServiceStartError with the
    server log when it does not come up within ``timeout`` seconds.
    """
    server = PostgresServer(Path(workdir), timeout=timeout)
    atexit.register(server.stop)
    try:
        server.init()
        server.start()
        server.create_database()
    except BaseException:
        server.stop()
        raise
    return server


class RedisServer:
    """A running throwaway ``redis-server`` on 127.0.0.1 without persistence.

    Attributes: ``host``, ``port``, ``url`` (``redis://127.0.0.1:<port>/0``), ``log_path``.
    ``stop()`` sends ``SHUTDOWN NOSAVE`` (kills it after 10 s); idempotent.
    """

    def __init__(self, workdir: Path, *, port: int | None = None, timeout: float = 30.0) -> None:
        self.host = _LOOPBACK
        self.port = port if port is not None else free_port()
        self.timeout = timeout
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix=f"redis-{self.port}-", dir=workdir))
        self.log_path = self.dir / "redis.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    @property
    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _command(self, *parts: str, timeout: float = 2.0) -> bytes:
        payload = f"*{len(parts)}\r\n".encode() + b"".join(
            f"${len(p.encode())}\r\n".encode() + p.encode() + b"\r\n" for p in parts
        )
        with socket.create_connection((self.host, self.port), timeout=timeout) as sock:
            sock.sendall(payload)
            try:
                return sock.recv(1024)
            except OSError:
                return b""

    def start(self) -> None:
        """Start ``redis-server`` and wait until it answers; ServiceStartError with its log if not."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServiceStartError(
                "redis-server not found on PATH; install it with `bash scripts/_services.sh` "
                "(apt-get install redis-server)"
            )
        args = [
            binary, "--port", str(self.port), "--bind", self.host, "--protected-mode", "yes",
            "--save", "", "--appendonly", "no", "--dir", str(self.dir), "--daemonize", "no",
            "--logfile", str(self.log_path), "--unixsocket", "", "--databases", "16",
        ]
        try:
            self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.STDOUT)
        except OSError as exc:
            raise ServiceStartError(f"could not run redis-server: {exc}") from exc
        deadline = time.monotonic() + self.timeout
        while True:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                raise ServiceStartError(
                    f"redis-server exited with {code} before accepting connections on {self.host}:{self.port}"
                    f"\n--- server log ---\n{_log_tail(self.log_path)}"
                )
            try:
                # our server answers with our dir (another one may already hold the port)
                if str(self.dir).encode() in self._command("CONFIG", "GET", "dir"):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise ServiceStartError(
                    f"redis-server on {self.host}:{self.port} did not answer within {self.timeout}s"
                    f"\n--- server log ---\n{_log_tail(self.log_path)}"
                )
            time.sleep(0.02)

    def stop(self) -> None:
        """``SHUTDOWN NOSAVE``, then wait (kill after 10 s) and remove the directory. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            try:
                self._command("SHUTDOWN", "NOSAVE")
            except OSError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"RedisServer({self.url!r}, {state})"


def start_redis(workdir: str | os.PathLike[str], *, timeout: float = 30.0) -> RedisServer:
    """Start a throwaway ``redis-server`` on 127.0.0.1 and a free port; returns it running.

    Raises ServiceStartError with the server log when it does not answer within ``timeout`` seconds.
    """
    server = RedisServer(Path(workdir), timeout=timeout)
    atexit.register(server.stop)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return server
