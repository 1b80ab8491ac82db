"""Edges of the seamkit-celery commands found by an outside pass: secrets in a broker URL's query
string, a TLS URL to a plain server, broker URLs that name no broker, ``--concurrency`` beyond
what the machine allows, Ctrl-C on a worker, children sent to their callers' own queue."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from celery_testlib import Env, composition
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from seamkit_celery.app import BROKER_CONNECT_TIMEOUT_S, _reason, make_app, mask_url, url_secrets


def _write(env: Env, name: str, text: str) -> Path:
    path = env.cwd / name
    path.write_text(text)
    return path


def test_query_string_secrets_are_masked() -> None:
    assert mask_url("redis://h:6379/0?password=s3cret") == "redis://h:6379/0?password=***"
    assert mask_url("rediss://h:6380/0?ssl_cert_reqs=required&password=s3cret") == (
        "rediss://h:6380/0?ssl_cert_reqs=required&password=***")
    assert mask_url("amqp://u:pw1@h/v?auth_token=tok&heartbeat=10") == "amqp://u:***@h/v?auth_token=***&heartbeat=10"
    assert mask_url("redis://h:6379/0?db=1") == "redis://h:6379/0?db=1"  # nothing secret: as is
    assert set(url_secrets("redis://:a%40b@h/0?password=x%2Fy")) == {"a%40b", "a@b", "x%2Fy", "x/y"}


_PASSWORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=4, max_size=24)


@settings(max_examples=300, deadline=None)
@given(password=_PASSWORDS, scheme=st.sampled_from(["redis", "rediss", "amqp", "amqps"]),
       where=st.sampled_from(["userinfo", "query", "both"]), key=st.sampled_from(["password", "Password", "token",
                                                                                   "auth", "secret", "passwd"]))
def test_no_generated_password_survives_masking(password: str, scheme: str, where: str, key: str) -> None:
    encoded = quote(password, safe="")
    userinfo = f"user:{encoded}@" if where in ("userinfo", "both") else ""
    query = f"?heartbeat=5&{key}={encoded}" if where in ("query", "both") else ""
    url = f"{scheme}://{userinfo}broker.internal:6379/0{query}"
    rest = url.replace(encoded, "")
    assume(password not in rest and encoded not in rest)  # the password is not also a part of the URL
    masked = mask_url(url)
    assert password not in masked and encoded not in masked
    # an error text may quote the URL, or the password decoded (as a client library saw it)
    said = _reason(RuntimeError(f"cannot connect to {url}: bad password {password!r} ({password})"), url)
    assert password not in said and encoded not in said and repr(password)[1:-1] not in said


def test_the_broker_connect_time_is_bounded() -> None:
    conf = make_app("rediss://h:6380/0").conf
    assert conf.broker_transport_options["socket_connect_timeout"] == BROKER_CONNECT_TIMEOUT_S
    assert conf.broker_connection_timeout == BROKER_CONNECT_TIMEOUT_S


def test_a_tls_url_to_a_plain_server_fails_in_seconds_and_says_why(env: Env) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    plain = env.redis_url.replace("redis://", "rediss://:s3cret-q@").rsplit("/", 1)[0] + "/1"
    for args in (("submit", str(file), "go"), ("worker", str(file))):
        started = time.monotonic()
        r = env.cli(*args, "--broker", plain, timeout=60)  # it used to hang (a minute and more)
        took = time.monotonic() - started
        assert r.returncode == 1, r
        assert "s3cret-q" not in r.stderr + r.stdout and ":***@" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
        assert "timed out" in r.stderr and "TLS" in r.stderr, r.stderr
        assert took < 30, (args[0], took)


@pytest.mark.parametrize(("url", "said"), [
    ("foo://broker/0", "names no transport Celery knows ('foo')"),
    ("redis://h:port/0", "is malformed"),
    ("just-a-host", "is not a URL"),
    ("  ", "no broker"),
    ("redis://127.0.0.1:6379/0?password=s3cret-q", "write it in the URL's userinfo, redis://:PASSWORD@127.0.0.1"),
    ("redis://127.0.0.1:6379/0?nosuch=1", "is not one Celery accepts"),
])
def test_a_broker_url_that_names_no_broker_is_a_usage_error(env: Env, url: str, said: str) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    for args in (("submit", str(file), "go"), ("worker", str(file))):
        r = env.cli(*args, "--broker", url, timeout=60)
        assert r.returncode == 2, r
        assert said in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert "s3cret-q" not in r.stderr + r.stdout


@pytest.mark.parametrize("seconds", ["1e309", "inf", "nan", "0", "-5"])
def test_seconds_must_be_positive_and_finite(env: Env, seconds: str) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    r = env.cli("worker", str(file), "--visibility-timeout", seconds, timeout=60)
    assert r.returncode == 2, r
    assert f"expected a positive, finite number of seconds, got {seconds!r}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_concurrency_beyond_the_machine_is_refused_without_a_traceback(env: Env) -> None:
    import resource
    import subprocess
    import sys

    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    r = env.cli("worker", str(file), "--concurrency", "100000", timeout=60)
    assert r.returncode == 2, r
    assert "at most 1024" in r.stderr and "Traceback" not in r.stderr, r.stderr

    def few_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    r = subprocess.run([sys.executable, "-m", "seamkit", "worker", str(file), "--concurrency", "100", "--queue",
                        env.prefix], cwd=env.cwd, env=env.env(), capture_output=True, text=True, timeout=60,
                       preexec_fn=few_files)
    assert r.returncode == 2, r
    assert "open files" in r.stderr and "ulimit -n" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_ctrl_c_stops_a_worker_cleanly_with_130(env: Env) -> None:
    import os

    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    w = env.worker(file, "--concurrency", "2")
    w.wait_ready()
    assert "whatever its composition and agent" in w.text()  # the banner says it runs any run of its queue
    os.killpg(w.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole foreground group
    assert w.proc.wait(timeout=30) == 130, w.text()
    assert "Traceback" not in w.text()


def test_children_sent_to_their_callers_queue_are_warned_about(env: Env) -> None:
    from test_celery_children import lead_file

    file = lead_file(env, queue="{name: seamkit}")  # the queue 'seamkit submit' sends the lead to
    lines = file.read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if t.strip().startswith("queue:"))
    r = env.cli("validate", str(file))
    assert r.returncode == 0, r
    assert f"lead.yaml:{line}:" in r.stderr and "deadlock" in r.stderr and "'seamkit'" in r.stderr, r.stderr
    fine = lead_file(env)  # children on a queue of their own: no warning
    r = env.cli("validate", str(fine))
    assert r.returncode == 0 and "deadlock" not in r.stderr, r
    # a worker consuming the queue its callers' children go to says so at start
    same = lead_file(env, queue=f"{{name: {env.prefix}}}")
    w = env.worker(same)
    w.wait_ready()
    assert "deadlock" in w.text() and f"the queue {env.prefix!r}" in w.text(), w.text()


@pytest.mark.parametrize("run_id", ["", "two\nlines", "tab\there", "a b", "esc\x1b[31m", "x" * 201])
def test_a_run_id_is_one_printable_word(env: Env, run_id: str) -> None:
    file = _write(env, "rec.yaml", composition(redis_url=env.redis_url, prefix=env.prefix))
    for args in (("submit", str(file), "go", "--run-id", run_id), ("submit", str(file), "--resume", run_id),
                 ("runs", "wait", run_id, "--agent", str(file), "--timeout", "1")):
        r = env.cli(*args, timeout=60)
        assert r.returncode == 2, (args, r)
        assert "run id" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_runs_show_of_a_queued_run_prints_a_resume_that_goes_back_on_its_queue(env: Env) -> None:
    file = _write(env, "ask.yaml", composition(redis_url=env.redis_url, prefix=env.prefix, approvals=True))
    env.worker(file, "--pool", "solo")
    run_id = env.submit(file, "task").stdout.strip()
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 3, (w, env.workers[0].text())
    shown = env.cli("runs", "show", run_id, "--agent", str(file))
    assert shown.returncode == 0, shown
    assert f"decide with: seamkit resume {run_id} --approve call_0_0 --agent {file}" in shown.stdout, shown.stdout
    # the printed command works as printed: the continuation goes to the queue the run came from
    # (this test's own queue, not the default one a 'seamkit submit --resume' would pick)
    decide = next(x for x in shown.stdout.splitlines() if "decide with:" in x).split("decide with: ", 1)[1]
    r = env.cli(*decide.split()[1:])
    assert r.returncode == 0 and r.stdout.strip() == run_id, r
    w = env.cli("runs", "wait", run_id, "--agent", str(file), "--timeout", "30")
    assert w.returncode == 0 and w.stdout.strip() == "recorded", (w, env.workers[0].text())
    (applied,) = env.applied()
    assert applied["pid"] == env.workers[0].pid  # on the worker, not in the resuming process

def test_a_pool_that_cannot_start_is_one_line_not_celerys_traceback() -> None:
    import logging

    from seamkit_celery.cli import _StartFailure

    # Celery logs a failed start as "Unrecoverable error: %r" with the traceback (exc_info) on
    # celery.worker.worker; the worker keeps it for its own one-line report instead
    log = logging.getLogger("celery.worker.worker")
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler, failure = Keep(), _StartFailure()
    log.addHandler(handler)
    log.addFilter(failure)
    try:
        try:
            raise OSError(24, "Too many open files")
        except OSError as exc:
            log.critical("Unrecoverable error: %r", exc, exc_info=True)
        log.warning("something else")
    finally:
        log.removeFilter(failure)
        log.removeHandler(handler)
    assert isinstance(failure.error, OSError) and failure.error.errno == 24
    assert [r.getMessage() for r in seen] == ["something else"]
