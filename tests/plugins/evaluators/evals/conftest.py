"""Fixtures of the ``seamkit eval`` tests: the test components registered (:mod:`evalrun_testlib`),
files written into the test's directory, and ``seamkit eval`` run in process or as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import evalrun_testlib
import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _state() -> Iterator[None]:
    evalrun_testlib.reset()
    yield
    evalrun_testlib.reset()


@pytest.fixture
def components(register_plugin: Callable[..., Any]) -> None:
    """The test components, registered in this process for one test."""
    report = register_plugin(evalrun_testlib, "evalrun-testlib", distribution="evalrun-testlib")
    assert report.status == "ok", report


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    return write


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def __repr__(self) -> str:
        return f"Ran(code={self.code}, out={self.out!r}, err={self.err!r})"


@pytest.fixture
def seamkit_eval(components: None, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> Callable[..., Ran]:
    """``seamkit_eval(*args)``: ``seamkit eval ARGS`` in this process (``seamkit._cli.main.main``),
    in ``tmp_path``, with the test components registered."""
    from seamkit._cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COLUMNS", raising=False)

    def run(*args: str) -> Ran:
        capsys.readouterr()
        code = main(["eval", *args])
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


@pytest.fixture
def seamkit_subprocess(tmp_path: Path) -> Callable[..., Ran]:
    """``python -m seamkit ARGS`` in ``tmp_path``, with the test components installed as a fake
    distribution (an entry point naming :mod:`evalrun_testlib`)."""
    root = tmp_path / "_dists"
    info = root / "evalrun_testlib-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalrun-testlib\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[seamkit]\nevalrun-testlib = evalrun_testlib\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(HERE), *sys.path])
    env["PYTHONIOENCODING"] = "utf-8"
    env.pop("COLUMNS", None)

    def run(*args: str, timeout: float = 120) -> Ran:
        proc = subprocess.run([sys.executable, "-m", "seamkit", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=timeout)
        return Ran(proc.returncode, proc.stdout, proc.stderr)

    run.env = env  # type: ignore[attr-defined]
    return run


@pytest.fixture
def seamkit_subprocess_popen(seamkit_subprocess: Callable[..., Ran], tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``python -m seamkit ARGS`` started in the background (as :func:`seamkit_subprocess`), killed
    at the end of the test if still running."""
    started: list[subprocess.Popen[str]] = []

    def popen(*args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen([sys.executable, "-m", "seamkit", *args], cwd=tmp_path,
                                env=seamkit_subprocess.env,  # type: ignore[attr-defined]
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(proc)
        return proc

    yield popen
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
