"""Connection failures of the ``postgres`` store: malformed DSNs are refused by the config without
echoing them, an unreachable server fails fast with the cause, and psycopg_pool's log records never
show the DSN (nor reach stderr through the last-resort handler)."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr, ValidationError
from seamkit._durability.records import CheckpointRecord
from seamkit.errors import StoreUnavailable
from seamkit.values import Scope
from seamkit_postgres.config import PostgresConfig
from seamkit_postgres.store import PostgresStore
from seamkit_services import free_port, start_postgres

S = Scope("pg-connect")
PASSWORD = "s3cr%zzPw-Secret"  # a raw "%": not valid percent-encoding in a URL
ENCODED = PASSWORD.replace("%", "%25")  # the same password, correctly percent-encoded


def _store(dsn: str, **kw: object) -> PostgresStore:
    return PostgresStore(PostgresConfig.model_validate({"dsn": dsn, "schema": "seamkit", **kw}))


def _unvalidated(dsn: str, connect_timeout: float = 10.0) -> PostgresStore:
    """A store whose DSN skipped validation (as from ``model_construct``): the runtime path."""
    config = PostgresConfig.model_construct(
        dsn=SecretStr(dsn), db_schema="seamkit", min_size=1, max_size=4, connect_timeout=connect_timeout
    )
    return PostgresStore(config)


# --- malformed DSNs are refused by the config ------------------------------------------------


@pytest.mark.parametrize(
    ("dsn", "reason"),
    [
        (f"postgresql://u:{PASSWORD}@127.0.0.1:1/x", 'invalid percent-encoded token: "***"'),
        (f"host=127.0.0.1 password={PASSWORD} bogus=1", 'invalid connection option "bogus"'),
        (f"postgresql://u:{ENCODED}@h/x?bogus=1", 'invalid URI query parameter: "bogus"'),
        (f"host=127.0.0.1 password={PASSWORD} tail", 'missing "=" after "***"'),
        (f"host=127.0.0.1 password='{PASSWORD}", "unterminated quoted string"),
        (f"postgresql://u:{ENCODED}@[::1/x", "IPv6 host address"),
        ("nonsense-s3cr%zzPw-Secret", "key=value pairs"),
    ],
)
def test_config_rejects_a_malformed_dsn_without_echoing_it(dsn: str, reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        PostgresConfig.model_validate({"dsn": dsn})
    [error] = info.value.errors()
    assert error["loc"] == ("dsn",)
    assert "not a valid PostgreSQL connection string" in error["msg"] and reason in error["msg"], error["msg"]
    for text in (str(info.value), error["msg"], info.value.json(include_input=False)):
        assert "s3cr" not in text and "Secret" not in text and dsn not in text, text


def test_option_named_like_a_piece_of_the_password_is_hidden() -> None:
    with pytest.raises(ValidationError) as info:
        PostgresConfig.model_validate({"dsn": "postgresql://u:hunter2pw@h/x?hunter2pw=1"})
    assert "hunter2" not in str(info.value)
    assert 'invalid URI query parameter: "***"' in str(info.value)


def test_config_accepts_well_formed_dsns() -> None:
    for dsn in ("", "postgresql://u:s3cr%25pw@127.0.0.1:5432/x", "host=/tmp dbname=x password='a b'"):
        assert PostgresConfig.model_validate({"dsn": dsn}).dsn.get_secret_value() == dsn


_PASSWORD_CHARS = st.text(
    alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs")), min_size=0, max_size=24
)


@settings(max_examples=300, deadline=None)
@given(tail=_PASSWORD_CHARS, url=st.booleans())
def test_validation_errors_never_show_the_password(tail: str, url: bool) -> None:
    password = "Qx7Zk" + tail  # a distinctive start: it cannot occur in libpq's own wording
    dsn = f"postgresql://u:{password}@127.0.0.1:5432/db" if url else f"host=127.0.0.1 password={password} dbname=db"
    try:
        PostgresConfig.model_validate({"dsn": dsn})
    except ValidationError as exc:
        text = str(exc)
        assert "Qx7Zk" not in text and dsn not in text, text
        # what libpq quotes is hidden unless it is an option name found nowhere in the password
        for token in re.findall(r'"([^"]*)"', text):
            assert token in ("***", "=", "]", ":", "/") or token not in password, (token, text)


# --- an unreachable server fails fast, with the cause ----------------------------------------


async def test_closed_port_fails_fast_and_says_connection_refused(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    dsn = f"postgresql://seamkit:{ENCODED}@127.0.0.1:{free_port()}/seamkit"
    store = _store(dsn)  # connect_timeout: the default 10 s
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as info:
            await store.save(CheckpointRecord("r", 1, "running", "{}"), expected_version=None)
        elapsed = time.monotonic() - started
        message = str(info.value)
        assert elapsed < 2.0, elapsed  # was 10 s: the pool's retry loop until its timeout
        assert message.startswith("PostgreSQL store (save): cannot connect to the server:"), message
        assert "Connection refused" in message, message
        assert "s3cr" not in message and "Secret" not in message and dsn not in message
        assert info.value.__cause__ is None and info.value.__suppress_context__

        # concurrent operations waiting on that first attempt fail with it, not one after another
        started = time.monotonic()
        results = await asyncio.gather(*(store.get(S, f"k{i}") for i in range(8)), return_exceptions=True)
        assert time.monotonic() - started < 2.0
        assert all(isinstance(r, StoreUnavailable) and "Connection refused" in str(r) for r in results), results
    finally:
        await store.aclose()
    assert not [r for r in caplog.records if r.name == "psycopg.pool" and r.levelno >= logging.WARNING]
    assert "s3cr" not in caplog.text and "Secret" not in caplog.text


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A loopback port that accepts TCP connections and never answers (a hung server)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


async def test_unanswering_server_fails_after_connect_timeout(silent_listener: int) -> None:
    store = _store(f"postgresql://u:pw@127.0.0.1:{silent_listener}/x", connect_timeout=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match=r"\(get\): no connection to the server within 0.5 s"):
            await store.get(S, "k")
        elapsed = time.monotonic() - started
        assert 0.4 <= elapsed < 1.5, elapsed
    finally:
        await store.aclose()


async def test_unvalidated_malformed_dsn_is_reported_at_first_use() -> None:
    cases = {
        f"postgresql://u:{PASSWORD}@127.0.0.1:1/x": 'invalid DSN: invalid percent-encoded token: "***"',
        f"host=127.0.0.1 password={PASSWORD} bogus=1": 'invalid DSN: invalid connection option "bogus"',
        f"host=127.0.0.1 password={PASSWORD} port=notaport": 'invalid integer value "notaport"',
    }
    for dsn, reason in cases.items():
        store = _unvalidated(dsn)
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable) as info:
                await store.get(S, "k")
            assert time.monotonic() - started < 1.0
            assert reason in str(info.value), str(info.value)
            assert "s3cr" not in str(info.value) and "Secret" not in str(info.value)
        finally:
            await store.aclose()


# --- psycopg_pool's log records --------------------------------------------------------------


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_pool_records_are_masked_for_handlers_and_kept_from_the_last_resort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The filter the store installs on ``psycopg.pool``: a record of a seamkit pool is masked
    for configured handlers, and dropped when only :data:`logging.lastResort` would print it."""
    store = _unvalidated(f"postgresql://u:{PASSWORD}@127.0.0.1:1/x")
    logger = logging.getLogger("psycopg.pool")
    last_resort = _Collect()
    monkeypatch.setattr(logging, "lastResort", last_resort)
    monkeypatch.setattr(logger, "propagate", False)  # no handler anywhere: as in a bare script
    assert not logger.hasHandlers()
    error = Exception(f'invalid percent-encoded token: "{PASSWORD}"')
    logger.warning("error connecting in %r: %s", "seamkit-postgres-seamkit", error)
    logger.warning("some other psycopg.pool warning about %s", f"dsn postgresql://u:{PASSWORD}@h/x")
    assert last_resort.lines == ["some other psycopg.pool warning about dsn postgresql://u:***@h/x"]

    configured = _Collect()
    logger.addHandler(configured)
    try:
        logger.warning("error connecting in %r: %s", "seamkit-postgres-seamkit", error)
    finally:
        logger.removeHandler(configured)
    assert configured.lines == [
        "error connecting in 'seamkit-postgres-seamkit': invalid percent-encoded token: \"***\""
    ]
    del store


def test_bare_script_prints_no_pool_lines_on_stderr(tmp_path: Path) -> None:
    """The newcomer's report: a script without logging configuration, a raw "%" in the password and
    a closed port: nothing of psycopg_pool on stderr, errors fast and with their causes."""
    script = tmp_path / "bare.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import asyncio, time
            from pydantic import SecretStr, ValidationError
            from seamkit.errors import StoreUnavailable
            from seamkit.values import Scope
            from seamkit_postgres.config import PostgresConfig
            from seamkit_postgres.store import PostgresStore

            async def use(config):
                store = PostgresStore(config)
                started = time.monotonic()
                try:
                    await store.get(Scope("x"), "k")
                except StoreUnavailable as exc:
                    print(f"{{time.monotonic() - started:.2f}}", exc)
                await store.aclose()

            bad = "postgresql://u:{PASSWORD}@127.0.0.1:1/x"
            try:
                PostgresConfig(dsn=bad)
            except ValidationError as exc:
                print("config:", exc.errors()[0]["msg"])
            asyncio.run(use(PostgresConfig.model_construct(
                dsn=SecretStr(bad), db_schema="s", min_size=1, max_size=2, connect_timeout=10.0)))
            asyncio.run(use(PostgresConfig(dsn="postgresql://u:{ENCODED}@127.0.0.1:{free_port()}/x")))
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert len(lines) == 3, done.stdout
    assert lines[0].startswith("config: Value error, dsn is not a valid") and "percent-encoded" in lines[0]
    assert "invalid DSN: invalid percent-encoded token" in lines[1]
    assert "Connection refused" in lines[2]
    assert all(float(line.split()[0]) < 2.0 for line in lines[1:]), lines
    assert "s3cr" not in done.stdout and "Secret" not in done.stdout


async def test_pool_timeout_names_the_connection_error(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A store whose server goes away after it connected: the pool's timeout error says why, its
    warnings (received by configured handlers) never show the password, and it recovers."""
    caplog.set_level(logging.DEBUG)
    server = start_postgres(tmp_path)
    dsn = server.dsn.replace("postgresql://seamkit@", "postgresql://seamkit:pw-Secret-Zz@")
    try:
        store = _store(dsn, min_size=1, max_size=2, connect_timeout=1)
        await store.setup()
        await store.set(S, "k", 1)
        server.stop(remove=False)
        with pytest.raises(StoreUnavailable) as info:
            await store.get(S, "k")
        message = str(info.value)
        assert "couldn't get a connection" in message and "last connection error:" in message, message
        assert "Connection refused" in message, message
        # the broken pool is gone: the next operation tries a direct connection and fails at once
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match=r"cannot connect to the server: .*Connection refused"):
            await store.get(S, "k")
        assert time.monotonic() - started < 1.0
        server.start()
        assert await store.get(S, "k") == 1
        await store.aclose()
    finally:
        server.stop()
    pool_lines = [r.getMessage() for r in caplog.records if r.name == "psycopg.pool"]
    assert any("error connecting in 'seamkit-postgres-seamkit'" in line for line in pool_lines), pool_lines
    assert "pw-Secret-Zz" not in caplog.text
