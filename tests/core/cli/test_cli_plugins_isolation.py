"""A plugin can neither hang, end nor write into a seamkit command: every command loads the plugins
guarded (a timeout, its own exceptions, fd 1 sent to stderr), and ``plugins --check`` loads and checks
them in child processes (a component ending, hanging or outliving its check is its failure row, and
the rest are still checked). Timeouts are made short through the environment."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cli_testlib import CLI, make_dist

#: the module's top level does what EVIL_IMPORT says (nothing when unset)
IMPORT_TIME = '''
import os, sys, time

_m = os.environ.get("EVIL_IMPORT", "")
if _m == "hang":
    time.sleep(3600)
elif _m == "exit":
    os._exit(3)
elif _m == "ctrl-c":
    raise KeyboardInterrupt
elif _m == "fd1":
    os.write(1, b'{"fd1": "import chatter"}\\n')

from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_tools(register):
    register("evil-echo", "evil_impl:echo")
'''

FACTORIES = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_tools(register):
    for name in ("fine", "exits", "ctrl-c", "thread", "swallows", "no-alarm", "fd1", "dunder-stdout"):
        register(name, f"evil_impl:{name.replace('-', '_')}")
    for i in range(4):
        register(f"fine-{i}", "evil_impl:fine")
'''

IMPL = '''
import os, signal, sys, threading, time

from seamkit import tool


@tool(side_effecting=False)
def echo_tool(text: str) -> str:
    """Echo.

    Args:
        text: what
    """
    return text


def echo():
    return echo_tool


fine = echo


def exits():
    os._exit(4)


def ctrl_c():
    raise KeyboardInterrupt


def thread():
    threading.Thread(target=time.sleep, args=(3600,), name="client-worker").start()  # not a daemon
    return echo_tool


def swallows():
    while True:
        try:
            time.sleep(3600)
        except BaseException:
            pass


def no_alarm():
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(3600)


def fd1():
    os.write(1, b'{"fd1": "factory chatter"}\\n')
    return echo_tool


def dunder_stdout():
    sys.__stdout__.write('{"dunder": "factory chatter"}\\n')
    sys.__stdout__.flush()
    return echo_tool
'''

SHORT = {"SEAMKIT_PLUGIN_IMPORT_TIMEOUT": "1", "SEAMKIT_CHECK_TIMEOUT": "1"}


@pytest.fixture
def evil_cli(tmp_path: Path) -> CLI:
    root = make_dist(tmp_path / "site-evil", "evil-import", "evil_import_plugin", IMPORT_TIME,
                     extra={"evil_impl": IMPL})
    make_dist(root, "evil-factories", "evil_factories_plugin", FACTORIES)
    return CLI([root], tmp_path)


def _env(**extra: str) -> dict[str, str]:
    return {**SHORT, "SEAMKIT_LOAD_PLUGINS": "evil-import,evil-factories", **extra}


def _rows(stdout: str) -> dict[str, dict[str, object]]:
    return {str(r["name"]): r for r in json.loads(stdout)}  # stdout is only JSON


@pytest.mark.parametrize("mode", ["hang", "ctrl-c"])
def test_a_plugin_hanging_or_interrupting_at_import_does_not_stop_any_command(evil_cli: CLI, mode: str) -> None:
    env = _env(EVIL_IMPORT=mode)
    started = time.monotonic()
    r = evil_cli("--help", env=env, timeout=30)
    assert r.returncode == 0 and "plugins" in r.stdout, r
    assert time.monotonic() - started < 20
    listed = evil_cli("plugins", "--json", env=env, timeout=30)
    assert listed.returncode == 1, listed
    error = str(_rows(listed.stdout)["evil_import_plugin"]["error"])
    expected = ("it did not finish importing within 1 s" if mode == "hang"
                else "import failed: KeyboardInterrupt")
    assert error.startswith(expected), error
    assert _rows(listed.stdout)["fine"]["status"] == "ok"


def test_a_plugin_writing_to_fd_1_at_import_cannot_corrupt_json(evil_cli: CLI) -> None:
    r = evil_cli("plugins", "--json", env=_env(EVIL_IMPORT="fd1"))
    assert r.returncode == 0, r
    assert _rows(r.stdout)["evil-echo"]["status"] == "ok"
    assert "import chatter" in r.stderr


def test_check_names_a_plugin_ending_the_process_at_import_and_checks_the_others(evil_cli: CLI) -> None:
    r = evil_cli("plugins", "--check", "--json", env=_env(EVIL_IMPORT="exit", SEAMKIT_LOAD_PLUGINS="evil-import"))
    assert r.returncode == 1, r
    row = _rows(r.stdout)["evil_import_plugin"]
    assert row["check"] == "failed" and row["version"] == "0.1"
    assert "it ended the process while importing or registering (exit status 3" in str(row["problems"])
    one = evil_cli("plugins", "--check", "evil_import_plugin", env=_env(EVIL_IMPORT="exit"))
    assert one.returncode == 1, one
    assert one.stdout.startswith("plugin 'evil_import_plugin' (evil-import 0.1): failed to load: import failed: "
                                 "it ended the process"), one


def test_check_all_survives_components_that_exit_interrupt_hang_or_write_to_fd_1(evil_cli: CLI) -> None:
    started = time.monotonic()
    r = evil_cli("plugins", "--check", "--json", env=_env(SEAMKIT_LOAD_PLUGINS="evil-factories",
                                                           SEAMKIT_CHECK_WORKERS="2"), timeout=60)  # 12 checks
    assert r.returncode == 1, r
    assert time.monotonic() - started < 30  # two 1 s timeouts, a kill, a few process starts
    rows = _rows(r.stdout)  # nothing the factories wrote is in it
    assert "chatter" not in r.stdout + r.stderr
    problems = {name: " ".join(map(str, row["problems"])) for name, row in rows.items()}  # type: ignore[call-overload]
    assert rows["fine"]["check"] == "ok" and rows["fd1"]["check"] == "ok" and rows["dunder-stdout"]["check"] == "ok"
    assert "its check ended the process (exit status 4; os._exit" in problems["exits"]
    assert "raised KeyboardInterrupt" in problems["ctrl-c"]
    for name in ("swallows", "no-alarm"):
        assert "the check did not finish within 1 s" in problems[name], problems[name]
    assert rows["thread"]["check"] == "ok"
    assert "left 1 non-daemon thread(s) running" in str(rows["thread"]["notes"])  # check-all keeps notes too
    assert rows["fine"]["notes"] == []
    assert all(rows[f"fine-{i}"]["check"] == "ok" for i in range(4))


def test_check_notes_a_non_daemon_thread_and_still_exits(evil_cli: CLI) -> None:
    # (the 1 s check budget of SHORT is for the hanging plugins' tests; a loaded CI machine can
    # take longer than that to start the check's process: seen as a flaky failure)
    roomy = {"SEAMKIT_CHECK_TIMEOUT": "20"}
    r = evil_cli("plugins", "--check", "thread", env=_env(**roomy), timeout=60)
    assert r.returncode == 0, r
    assert "note: it left 1 non-daemon thread(s) running (client-worker)" in r.stdout
    # (3 s here: the two plugins whose checks hang take the whole budget each)
    every = evil_cli("plugins", "--check", env=_env(SEAMKIT_LOAD_PLUGINS="evil-factories", SEAMKIT_CHECK_TIMEOUT="3"),
                     timeout=120)
    assert "note: tool 'thread' (evil-factories): it left 1 non-daemon thread(s) running (client-worker)" \
        in every.stdout, every  # under the table of a check-all, as with --check NAME


SURROGATE = '''
from seamkit.plugin import hookimpl


def raises():
    raise RuntimeError("bad \\udcff name")  # what os.fsdecode makes of a non-UTF-8 file name


@hookimpl
def seamkit_register_tools(register):
    register("surrogate", f"{__name__}:raises")
'''


@pytest.mark.parametrize("io_errors", ["strict", "surrogateescape"])  # PYTHONIOENCODING's, and the C locale's
@pytest.mark.parametrize("args", [("plugins", "--check", "surrogate", "--json"), ("plugins", "--check", "surrogate"),
                                  ("plugins", "--check", "--json")])
def test_a_lone_surrogate_in_a_message_is_written_as_valid_utf8(tmp_path: Path, io_errors: str,
                                                                 args: tuple[str, ...]) -> None:
    import subprocess
    import sys

    cli = CLI([make_dist(tmp_path / "site", "surrogate-plugin", "surrogate_plugin", SURROGATE)], tmp_path)
    env = cli.env({**SHORT, "SEAMKIT_LOAD_PLUGINS": "surrogate-plugin", "PYTHONIOENCODING": f"utf-8:{io_errors}"})
    done = subprocess.run([sys.executable, "-m", "seamkit", *args], cwd=tmp_path, env=env, capture_output=True,
                          timeout=60)
    assert done.returncode == 1, done
    out = done.stdout.decode("utf-8")  # strict: no raw 0xff byte
    if "--json" in args:  # JSON's own escape: the message comes back as it was
        assert "bad \udcff name" in " ".join(p for row in json.loads(out) for p in row["problems"])
    else:
        assert "bad \\udcff name" in out


LEAVES_CHILDREN = '''
import os, subprocess, sys

from seamkit import tool
from seamkit.plugin import hookimpl


@tool(side_effecting=False)
def noop() -> str:
    """Nothing."""
    return ""


def spawns():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(os.environ["CHILD_PID_FILE"], "w") as f:
        f.write(str(proc.pid))
    return noop


def spams():
    chunk = b"x" * 65536 + b"\\n"
    for _ in range(32):  # 2 MiB
        os.write(2, chunk)
    os.write(2, b"the end\\n")
    return noop


@hookimpl
def seamkit_register_tools(register):
    register("spawns", f"{__name__}:spawns")
    register("spams", f"{__name__}:spams")
'''


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="child processes are found in Linux's /proc")
def test_check_notes_and_stops_the_child_processes_a_factory_leaves(tmp_path: Path) -> None:
    cli = CLI([make_dist(tmp_path / "site", "leaves-plugin", "leaves_plugin", LEAVES_CHILDREN)], tmp_path)
    pid_file = tmp_path / "child.pid"
    r = cli("plugins", "--check", "spawns", env={**SHORT, "SEAMKIT_LOAD_PLUGINS": "leaves-plugin",
                                                  "CHILD_PID_FILE": str(pid_file)}, timeout=60)
    assert r.returncode == 0, r
    pid = int(pid_file.read_text())
    assert f"note: it left 1 child process(es) running ({pid} " in r.stdout, r
    deadline = time.monotonic() + 5  # SIGKILL sent before the command ended; its delivery is asynchronous
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid)


def test_a_check_process_keeps_only_the_end_of_its_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from seamkit._plugins import check_isolated

    monkeypatch.syspath_prepend(str(make_dist(tmp_path / "site", "leaves-plugin", "leaves_plugin", LEAVES_CHILDREN)))
    monkeypatch.setenv("SEAMKIT_LOAD_PLUGINS", "leaves-plugin")
    _, child, _ = check_isolated.load_isolated()
    assert child is not None
    try:
        child.send(check_isolated.CheckJob("tool", "spams", "leaves-plugin", "0.1", "leaves_plugin"))
        assert child.read(30)["result"]["problems"] == []
        assert child.log_size() > 2 * 1024 * 1024  # all of it was read...
        assert len(child._tail) <= check_isolated.LOG_KEPT_BYTES  # ...and only the end kept
        assert child.excerpt().endswith("the end")
    finally:
        child.stop()
