"""A plugin imported again in the main thread (it needs it: ``signal.signal`` at import) is held to
the same time limit there (``SIGALRM``), even when it swallows the first stop; the report says its
import ran twice; and a module whose import the loader gave up on is not waited on again by each
other plugin importing it."""

from __future__ import annotations

import importlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from seamkit._plugins.registry import load_registry, run_command_hook
from test_core_plugins_isolation import FakeEntryPoint, plugin_module
from test_core_plugins_load_guard import CallingEntryPoint


@pytest.fixture(autouse=True)
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("SEAMKIT_PLUGIN_IMPORT_TIMEOUT", "0.3")
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def _needs_main_thread() -> None:
    signal.signal(signal.SIGTERM, signal.getsignal(signal.SIGTERM))  # "only works in main thread"


def _blocks_in_main_thread() -> None:
    _needs_main_thread()
    time.sleep(5)  # bounded: without the limit the test fails after 5 s instead of hanging


def _swallows_then_blocks() -> None:
    _needs_main_thread()
    try:
        time.sleep(5)
    except BaseException:  # a plugin catching everything, then blocking again
        pass
    time.sleep(5)


def _swallows_then_returns() -> None:
    _needs_main_thread()
    try:
        time.sleep(5)
    except BaseException:
        pass


@pytest.mark.parametrize("fn", [_blocks_in_main_thread, _swallows_then_blocks, _swallows_then_returns])
def test_a_main_thread_import_that_blocks_fails_and_the_others_load(fn: Any) -> None:
    alarm, before = signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)
    good = FakeEntryPoint("good", plugin_module("good", seamkit_register_tools=lambda register: register(
        "fine", "builtins:dict")))
    reg = load_registry(entry_points=[CallingEntryPoint("stuck", fn), good])
    by_name = {r.plugin: r for r in reg.reports}
    assert by_name["stuck"].status == "failed"
    assert "did not finish importing within 0.3 s in the main thread" in (by_name["stuck"].error or "")
    assert by_name["good"].status == "ok" and reg.names("tool") == ["fine"]
    assert signal.getsignal(signal.SIGALRM) == alarm
    _assert_timer_put_back(before)


def _assert_timer_put_back(before: tuple[float, float]) -> None:
    """No timer after when there was none before; a timer armed before (pytest-timeout's, in the
    test command) armed again with what was left of it."""
    after = signal.getitimer(signal.ITIMER_REAL)
    if before[0] == 0:
        assert after == (0.0, 0.0)
    else:
        assert 0 < after[0] <= before[0] and after[1] == before[1]


def test_a_failed_main_thread_import_says_it_ran_twice() -> None:
    calls: list[str] = []

    def side_effect_then_fails() -> None:
        calls.append(threading.current_thread().name)
        _needs_main_thread()
        raise ImportError("no such backend")

    reg = load_registry(entry_points=[CallingEntryPoint("twice", side_effect_then_fails)])
    assert len(calls) == 2
    assert reg.reports[0].status == "failed"
    assert "ImportError: no such backend; it was imported twice" in (reg.reports[0].error or "")


def test_main_thread_registration_hooks_and_command_hooks_have_the_limit_too() -> None:
    import argparse

    def hook_blocks(register: Any) -> None:
        _blocks_in_main_thread()

    reg = load_registry(entry_points=[FakeEntryPoint("h", plugin_module("h", seamkit_register_tools=hook_blocks))])
    assert "registration hooks did not finish within 0.3 s in the main thread" in (reg.reports[0].error or "")

    def command_blocks(cli: Any) -> None:
        cli.add_parser("slow")
        _blocks_in_main_thread()

    sub = argparse.ArgumentParser().add_subparsers()
    assert "did not finish within 0.3 s in the main thread" in (run_command_hook(command_blocks, sub) or "")
    assert sorted(sub.choices) == []


@pytest.mark.parametrize("where", ["import", "hook"])
def test_a_module_given_up_on_is_not_waited_on_by_each_plugin_importing_it(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    released = threading.Event()
    monkeypatch.setattr(threading, "pi_gate", released, raising=False)  # reachable from the module
    (tmp_path / "shared_slow_mod.py").write_text("import threading\nthreading.pi_gate.wait(10)\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def imports_it() -> None:
        importlib.import_module("shared_slow_mod")

    def hook_imports_it(register: Any) -> None:
        imports_it()

    first = (CallingEntryPoint("a", imports_it) if where == "import"
             else FakeEntryPoint("a", plugin_module("a", seamkit_register_tools=hook_imports_it)))
    try:
        reg = load_registry(entry_points=[first, *(CallingEntryPoint(n, imports_it) for n in ("b", "c"))])
    finally:
        released.set()
        for t in threading.enumerate():
            if t.name == "seamkit-plugin-load":
                t.join(5)
        sys.modules.pop("shared_slow_mod", None)
    errors = {r.plugin: r.error or "" for r in reg.reports}
    assert "did not finish within 0.3 s" in errors["a"] or "did not finish importing within 0.3 s" in errors["a"]
    for late in ("b", "c"):  # failed at once, not after their own 0.3 s each
        assert "it imports shared_slow_mod, whose import (by plugin 'a') did not finish" in errors[late]


def test_a_plugin_imported_again_in_the_main_thread_gets_a_note_from_the_check() -> None:
    from seamkit._plugins.check_worker import _run_job

    reg = load_registry(entry_points=[CallingEntryPoint("twice", _needs_main_thread)])
    assert reg.reports[0].status == "ok" and reg.imported_twice == {("twice", "seamkit-twice")}
    row = _run_job(reg, {"kind": "tool", "name": "fine", "distribution": "seamkit-twice", "plugin": "twice"})
    assert any(n.startswith("its plugin module was imported twice") for n in row["notes"]), row


def test_an_outer_timer_is_suspended_and_put_back() -> None:
    """A limit armed around the loading (pytest-timeout's in the test command, a caller's own) does
    not switch the plugin's limit off: it is suspended meanwhile and armed again after."""
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    outer = signal.setitimer(signal.ITIMER_REAL, 100.0)
    try:
        before = signal.getitimer(signal.ITIMER_REAL)
        reg = load_registry(entry_points=[CallingEntryPoint("stuck", _blocks_in_main_thread)])
        assert "did not finish importing within 0.3 s in the main thread" in (reg.reports[0].error or "")
        _assert_timer_put_back(before)
        assert fired == []
    finally:
        signal.setitimer(signal.ITIMER_REAL, *outer)
        signal.signal(signal.SIGALRM, previous)
