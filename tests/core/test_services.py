"""The real-service fixtures start servers that accept connections on loopback."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest
from seamkit_services import PostgresServer, RedisServer, ServiceStartError, start_postgres, start_redis


def _redis_roundtrip(port: int, *parts: str) -> bytes:
    payload = f"*{len(parts)}\r\n".encode() + b"".join(f"${len(p)}\r\n{p}\r\n".encode() for p in parts)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(payload)
        return sock.recv(1024)


async def test_postgres_accepts_connections(postgres_server: PostgresServer, postgres_dsn: str) -> None:
    assert postgres_dsn == f"postgresql://seamkit@127.0.0.1:{postgres_server.port}/seamkit"
    async with await psycopg.AsyncConnection.connect(postgres_dsn, connect_timeout=5) as conn:
        cur = await conn.execute("SELECT current_database(), current_setting('fsync'), inet_server_addr()::text")
        assert await cur.fetchone() == ("seamkit", "off", "127.0.0.1/32")


def test_redis_accepts_connections(redis_server: RedisServer, redis_url: str) -> None:
    assert redis_url == f"redis://127.0.0.1:{redis_server.port}/0"
    assert _redis_roundtrip(redis_server.port, "SET", "k", "v") == b"+OK\r\n"
    assert _redis_roundtrip(redis_server.port, "GET", "k") == b"$1\r\nv\r\n"


def test_redis_stop_frees_the_port(tmp_path: Path) -> None:
    server = start_redis(tmp_path)
    assert server.is_running
    server.stop()
    server.stop()  # idempotent
    assert not server.is_running
    with pytest.raises(OSError):
        _redis_roundtrip(server.port, "PING")


def test_redis_start_failure_shows_the_log(tmp_path: Path) -> None:
    blocker = start_redis(tmp_path / "a")
    clash = RedisServer(tmp_path / "b", port=blocker.port, timeout=5)
    try:
        with pytest.raises(ServiceStartError, match="server log"):
            clash.start()
    finally:
        clash.stop()
        blocker.stop()


async def test_postgres_restart_keeps_port_and_data(tmp_path: Path) -> None:
    server = start_postgres(tmp_path)
    try:
        async with await psycopg.AsyncConnection.connect(server.dsn, autocommit=True) as conn:
            await conn.execute("CREATE TABLE kept (x int)")
        server.restart()
        async with await psycopg.AsyncConnection.connect(server.dsn, autocommit=True) as conn:
            cur = await conn.execute("SELECT count(*) FROM kept")
            assert await cur.fetchone() == (0,)
    finally:
        server.stop()
    assert not server.is_running
    with pytest.raises(psycopg.OperationalError):
        await psycopg.AsyncConnection.connect(server.dsn, connect_timeout=2)
