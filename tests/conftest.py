"""Session fixtures for real services: PostgreSQL and Redis on loopback, started on first use.

``postgres_server`` / ``postgres_dsn`` and ``redis_server`` / ``redis_url`` start a throwaway
server once per test session (only when a test asks for one) and stop it at the end. A missing
binary fails the test with a clear message (run ``bash scripts/_services.sh``); it never skips.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from seamkit_services import PostgresServer, RedisServer, ServiceStartError, start_postgres, start_redis


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    try:
        server = start_postgres(tmp_path_factory.mktemp("postgres"))
    except ServiceStartError as exc:
        pytest.fail(f"could not start the test PostgreSQL server: {exc}", pytrace=False)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_dsn(postgres_server: PostgresServer) -> str:
    return postgres_server.dsn


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    try:
        server = start_redis(tmp_path_factory.mktemp("redis"))
    except ServiceStartError as exc:
        pytest.fail(f"could not start the test Redis server: {exc}", pytrace=False)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url
