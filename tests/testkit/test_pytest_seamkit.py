"""pytest-seamkit as a distribution: the host adds nothing to a project's pytest session; the
plugin's fixtures are there only for tests that ask for them; --seamkit-block-network blocks."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path


def test_the_host_distribution_registers_no_pytest_plugin_and_ships_no_services() -> None:
    host = importlib.metadata.distribution("seamkit")
    assert [e for e in host.entry_points if e.group == "pytest11"] == []
    kit = importlib.metadata.distribution("pytest-seamkit")
    assert [(e.name, e.value) for e in kit.entry_points if e.group == "pytest11"] == [
        ("seamkit", "pytest_seamkit.plugin")]
    import seamkit.testing

    assert not (Path(seamkit.testing.__file__).parent / "services.py").exists()


def test_the_plugin_defines_no_autouse_fixture() -> None:
    import pytest_seamkit.plugin as plugin

    marks = [getattr(v, "_fixture_function_marker", None) or getattr(v, "_pytestfixturefunction", None)
             for v in vars(plugin).values()]
    assert all(m is None or not m.autouse for m in marks)


def _pytest(tmp_path: Path, body: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_x.py").write_text(body)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


BODY = '''
import socket

import pytest


def _connect():
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("192.0.2.1", 9))  # TEST-NET-1 (RFC 5737): blocked before any packet leaves
    finally:
        s.close()


def test_blocked():
    from seamkit.testing import NetworkBlocked
    with pytest.raises(NetworkBlocked):
        _connect()


def test_fixtures(seamkit_ctx, register_plugin):
    assert seamkit_ctx.run_id
'''


def test_block_network_option_blocks_for_the_session_and_the_fixtures_work(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, BODY, "--seamkit-block-network")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_without_the_option_nothing_is_blocked(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, BODY.replace("def test_fixtures", "def _unused"), "-k", "test_blocked")
    assert proc.returncode == 1, proc.stdout  # the connect is not refused by seamkit (it times out or fails)
    assert "NetworkBlocked" in proc.stdout


def test_a_store_name_the_child_process_cannot_find_says_to_install_the_plugin() -> None:
    """The durability checks build the store in another process by its registered name: a plugin
    that is on sys.path but not installed has no entry point there, and the error says so (an
    outside tester met a bare ComponentNotFound traceback)."""
    import pytest
    from pytest_seamkit._durable import build_component
    from seamkit.errors import PluginError

    with pytest.raises(PluginError, match=r"no store named 'no-such-store'.*must be installed.*'module:attr'"):
        build_component(("no-such-store", {}))
