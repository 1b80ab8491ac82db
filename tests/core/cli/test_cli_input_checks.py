"""Regression tests: command-line input the CLI used to crash on or mis-report."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from cli_testlib import CLI

Write = Callable[[str, str], Path]

OK = 'seamkit: 1\nagent:\n  model: {use: scripted, turns: [hi]}\n  prompt: "you help"\n'


def run_bytes(cli: CLI, args: list[bytes], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m seamkit`` with raw bytes arguments (argv that is not UTF-8)."""
    return subprocess.run([os.fsencode(sys.executable), b"-m", b"seamkit", *args], cwd=cli.cwd,
                          env=cli.env(), capture_output=True, timeout=60, **kwargs)  # type: ignore[call-overload]


def test_task_that_is_not_utf8_is_a_usage_error(cli: CLI, write: Write) -> None:
    write("ok.yaml", OK)
    proc = run_bytes(cli, [b"run", b"ok.yaml", b"\xff\xfe hi"])
    assert proc.returncode == 2, proc
    assert b"the task is not valid UTF-8" in proc.stderr and b"Traceback" not in proc.stderr
    assert proc.stdout == b""


def test_var_value_that_is_not_utf8_is_a_usage_error(cli: CLI, write: Write) -> None:
    write("ok.yaml", OK)
    proc = run_bytes(cli, [b"run", b"ok.yaml", b"hi", b"--var", b"a=\xff"])
    assert proc.returncode == 2, proc
    assert b"not valid UTF-8" in proc.stderr and b"usage: seamkit run" in proc.stderr


def test_task_from_stdin_that_is_not_utf8_is_a_usage_error(cli: CLI, write: Write) -> None:
    write("ok.yaml", OK)
    proc = run_bytes(cli, [b"run", b"ok.yaml", b"-"], input=b"\xff\xfe hi")
    assert proc.returncode == 2, proc
    assert b"not valid UTF-8" in proc.stderr and b"Traceback" not in proc.stderr


def test_closed_stdout_exits_1_without_a_traceback(cli: CLI, write: Write) -> None:
    write("ok.yaml", OK)
    proc = subprocess.run([sys.executable, "-m", "seamkit", "run", "ok.yaml", "t"], cwd=cli.cwd, env=cli.env(),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60,
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode == 1, proc.stderr
    assert "standard output is closed" in proc.stderr
    assert "AttributeError" not in proc.stderr and "Traceback" not in proc.stderr


def test_closed_stderr_keeps_the_exit_code(cli: CLI, write: Write) -> None:
    write("bad.yaml", "seamkit: 1\nagent:\n  model: {use: scripted, turns: [hi]}\n  prompt: \"a\x07b\"\n")
    proc = subprocess.run([sys.executable, "-m", "seamkit", "validate", "bad.yaml"], cwd=cli.cwd, env=cli.env(),
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=60,
                          preexec_fn=lambda: os.close(2))
    assert proc.returncode == 2


def test_reader_error_is_a_located_config_error(cli: CLI, write: Write) -> None:
    write("bad.yaml", "seamkit: 1\nagent:\n  model: {use: scripted, turns: [hi]}\n  prompt: \"a\x00b\"\n")
    r = cli("validate", "bad.yaml")
    assert r.returncode == 2, r
    assert "bad.yaml:4:13:" in r.stderr and "U+0000" in r.stderr
    assert "ReaderError" not in r.stderr and "position" not in r.stderr


def test_invalid_regex_in_output_schema_fails_validate(cli: CLI, write: Write) -> None:
    write("re.yaml", OK + '  output: {json_schema: {type: string, pattern: "(abc"}}\n')
    r = cli("validate", "re.yaml")
    assert r.returncode == 2, r
    assert "re.yaml:5:" in r.stderr and "not a valid regular expression" in r.stderr
    assert "metaschema" not in r.stderr.lower() and len(r.stderr.splitlines()) == 2


def test_lone_surrogate_fails_validate_not_run(cli: CLI, write: Write) -> None:
    write("s.yaml", 'seamkit: 1\nagent:\n  name: "\\ud800"\n  model: {use: scripted, turns: [hi]}\n')
    r = cli("run", "s.yaml", "t")
    assert r.returncode == 2, r
    assert "s.yaml:3:9:" in r.stderr and "UnicodeEncodeError" not in r.stderr


def test_extra_argument_shows_the_sub_command_usage(cli: CLI, write: Write) -> None:
    write("ok.yaml", OK)
    r = cli("validate", "ok.yaml", "extra")
    assert r.returncode == 2, r
    assert "unrecognized arguments: extra" in r.stderr
    assert "usage: seamkit validate" in r.stderr and "COMMAND" not in r.stderr


def test_unknown_option_of_run_shows_run_usage(cli: CLI, write: Write) -> None:
    write("ok.yaml", OK)
    r = cli("run", "ok.yaml", "t", "--nope")
    assert r.returncode == 2 and "usage: seamkit run" in r.stderr, r
