"""scripts/_progress.sh, the progress of the quickstart's long first install (scripts/_setup.sh
compiles llama.cpp for up to ~15 minutes): the notice up front says how long and why; while the
command runs, the elapsed time and the phase read from its pip-style log; in place on a terminal
(pexpect), a line every SEAMKIT_PROGRESS_EVERY seconds elsewhere; the log's end on failure.

The command is a real subprocess printing pip's lines with pauses (the real compile is not run)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pexpect
import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRESS = ROOT / "scripts" / "_progress.sh"

FAKE_PIP = textwrap.dedent("""\
    import sys, time
    def say(line, pause):
        print(line, flush=True)
        time.sleep(pause)
    say("Collecting llama-cpp-python>=0.3.16", 0.2)
    say("  Downloading llama_cpp_python-0.3.36.tar.gz (50.0 MB)", 1.6)
    say("Building wheel for llama-cpp-python (pyproject.toml): started", 1.6)
    say("  [ 12%] Building C object vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o", 1.6)
    say("  [97/210] Building CXX object vendor/llama.cpp/src/CMakeFiles/llama.dir/llama.cpp.o", 1.6)
    say("Installing collected packages: llama-cpp-python", 1.6)
    if len(sys.argv) > 1:
        print("error: subprocess-exited-with-error: cmake failed", flush=True)
        sys.exit(int(sys.argv[1]))
    say("Successfully installed llama-cpp-python-0.3.36", 0)
""")


@pytest.fixture
def fake_pip(tmp_path: Path) -> str:
    path = tmp_path / "fake_pip.py"
    path.write_text(FAKE_PIP)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def _script(body: str) -> str:
    # as scripts/_setup.sh runs it: sourced under set -euo pipefail
    return f"set -euo pipefail\nsource {shlex.quote(str(PROGRESS))}\n{body}"


def _bash(body: str, every: int = 1) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", _script(body)], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "SEAMKIT_PROGRESS_EVERY": str(every)})


def test_the_notice_says_how_long_and_why() -> None:
    first = _bash("seamkit_install_notice 31 0").stderr
    assert "installing the host, 31 plugins and dev tools into .venv" in first
    assert "compiles llama.cpp from source" in first and "15 or more" in first
    assert "once" in first and "pip's cache" in first
    again = _bash("seamkit_install_notice 31 1").stderr
    assert "reuses that wheel" in again and "compiles llama.cpp from source" not in again


def test_lines_with_elapsed_time_and_phase_off_a_terminal(fake_pip: str, tmp_path: Path) -> None:
    log = tmp_path / "setup.log"
    r = _bash(f"seamkit_progress {shlex.quote(str(log))} {fake_pip}; echo after")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "after\n"  # nothing of the command's own output on the terminal
    lines = r.stderr.splitlines()
    assert "\r" not in r.stderr and "\x1b" not in r.stderr  # no redrawing in a log
    progress = [ln for ln in lines if re.match(r"seamkit setup: \d+s elapsed: ", ln)]
    phases = [ln.split(" elapsed: ", 1)[1] for ln in progress]
    assert "downloading llama_cpp_python-0.3.36.tar.gz" in phases
    assert "building wheel for llama-cpp-python: compiling llama.cpp" in phases
    assert "building wheel for llama-cpp-python: compiling llama.cpp (12%)" in phases
    assert "building wheel for llama-cpp-python: compiling llama.cpp (46%, step 97 of 210)" in phases
    assert "installing the packages into .venv" in phases
    seconds = [int(re.search(r"(\d+)s elapsed", ln).group(1)) for ln in progress]  # type: ignore[union-attr]
    assert seconds == sorted(seconds) and seconds[-1] >= 6
    assert re.fullmatch(r"seamkit setup: done in \d+s \(log: .*setup\.log\)", lines[-1])
    assert "Successfully installed" in log.read_text()


def test_off_a_terminal_a_line_every_so_many_seconds(fake_pip: str, tmp_path: Path) -> None:
    r = _bash(f"seamkit_progress {shlex.quote(str(tmp_path / 'setup.log'))} {fake_pip}", every=3)
    progress = [ln for ln in r.stderr.splitlines() if " elapsed: " in ln]
    assert 1 <= len(progress) <= 3, r.stderr  # ~8 s of work, a line every 3 s


def test_a_failure_shows_the_end_of_the_log(fake_pip: str, tmp_path: Path) -> None:
    log = tmp_path / "setup.log"
    r = _bash(f"seamkit_progress {shlex.quote(str(log))} {fake_pip} 7; echo not reached")
    assert r.returncode == 7 and "not reached" not in r.stdout
    err = r.stderr
    assert re.search(r"seamkit setup: failed after \d+s \(exit 7\); the last lines of .*setup\.log:", err), err
    assert "error: subprocess-exited-with-error: cmake failed" in err
    assert "Installing collected packages" in err.split("failed after", 1)[1]


def test_on_a_terminal_the_line_is_redrawn_in_place(fake_pip: str, tmp_path: Path) -> None:
    log = tmp_path / "setup.log"
    child = pexpect.spawn("bash", ["-c", _script(f"seamkit_progress {shlex.quote(str(log))} {fake_pip}")],
                          env={"PATH": "/usr/bin:/bin", "TERM": "xterm"}, encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before
    assert child.exitstatus == 0, screen
    # every update returns to the line's start and erases it: one line, rewritten each second
    updates = re.findall(r"\r\x1b\[Kseamkit setup: (\d+)s elapsed: ([^\r\n]*)", screen)
    assert len(updates) >= 6, repr(screen)
    assert "\n" not in screen.split("done in")[0].rstrip("\r\x1b[K"), repr(screen)
    assert any(phase.startswith("building wheel for llama-cpp-python: compiling llama.cpp") for _, phase in updates)
    assert [int(s) for s, _ in updates] == sorted(int(s) for s, _ in updates)
    assert re.search(r"\r\x1b\[Kseamkit setup: done in \d+s", screen), repr(screen)
