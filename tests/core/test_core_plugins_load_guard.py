"""Every command loads the plugins, so loading one can neither hang nor end the host: a plugin that
blocks at import or in its registration hooks is a failed plugin after ``SEAMKIT_PLUGIN_IMPORT_TIMEOUT``
seconds, a ``KeyboardInterrupt`` it raises is its failure, what it writes to file descriptor 1 goes
to stderr, and a plugin needing the main thread at import still loads."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from seamkit._plugins.guard import IMPORT_TIMEOUT_S, import_timeout
from seamkit._plugins.registry import Registry, load_registry
from test_core_plugins_isolation import FakeEntryPoint, plugin_module


def _tools(register: Any) -> None:
    register("fine", "builtins:dict")


class CallingEntryPoint(FakeEntryPoint):
    """An entry point whose ``load()`` runs ``fn`` (the plugin module's top level) and returns ``plugin``."""

    def __init__(self, name: str, fn: Any, plugin: Any = None) -> None:
        super().__init__(name, plugin if plugin is not None else plugin_module(name, seamkit_register_tools=_tools))
        self._fn = fn

    def load(self) -> Any:
        self._fn()
        return self._plugin


@pytest.fixture
def released() -> Iterator[threading.Event]:
    """An event a blocking plugin waits on; set at the end so that no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture(autouse=True)
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEAMKIT_PLUGIN_IMPORT_TIMEOUT", "0.3")


def test_a_plugin_blocking_at_import_fails_and_the_others_load(released: threading.Event) -> None:
    good = FakeEntryPoint("good", plugin_module("good", seamkit_register_tools=_tools))
    reg = load_registry(entry_points=[CallingEntryPoint("stuck", released.wait), good])
    by_name = {r.plugin: r for r in reg.reports}
    assert by_name["stuck"].status == "failed"
    assert (by_name["stuck"].error or "").startswith("it did not finish importing within 0.3 s")
    assert "SEAMKIT_PLUGIN_IMPORT_TIMEOUT" in (by_name["stuck"].error or "")
    assert by_name["good"].status == "ok" and reg.names("tool") == ["fine"]


def test_a_registration_hook_that_blocks_fails_its_plugin_and_cannot_register_late(
        released: threading.Event) -> None:
    registered_late: list[BaseException] = []

    def stuck(register: Any) -> None:
        released.wait()
        try:
            register("late", "builtins:dict")
        except BaseException as exc:
            registered_late.append(exc)

    reg = Registry()
    report = reg.register_plugin(plugin_module("p", seamkit_register_tools=stuck), "p")
    assert report.status == "failed"
    assert "its registration hooks did not finish within 0.3 s" in (report.error or "")
    released.set()
    for t in threading.enumerate():
        if t.name == "seamkit-plugin-load":
            t.join(5)
    assert reg.names("tool") == [] and len(registered_late) == 1


def test_loading_goes_on_after_a_plugin_whose_hook_blocks(released: threading.Event) -> None:
    registered_late: list[BaseException] = []

    def stuck(register: Any) -> None:
        released.wait()
        try:
            register("late", "builtins:dict")
        except BaseException as exc:
            registered_late.append(exc)

    reg = load_registry(entry_points=[FakeEntryPoint("stuck", plugin_module("stuck", seamkit_register_tools=stuck)),
                                      FakeEntryPoint("good", plugin_module("good", seamkit_register_tools=_tools))])
    by_name = {r.plugin: r for r in reg.reports}
    assert (by_name["stuck"].error or "").startswith("its registration hooks did not finish within 0.3 s")
    assert by_name["good"].status == "ok"
    released.set()
    for t in threading.enumerate():
        if t.name == "seamkit-plugin-load":
            t.join(5)
    assert reg.names("tool") == ["fine"] and len(registered_late) == 1
    assert [r.plugin for r in reg.reports].count("stuck") == 1  # reported once, by the loader


def test_a_keyboard_interrupt_raised_by_a_hook_is_its_plugins_failure() -> None:
    def interrupts(register: Any) -> None:
        raise KeyboardInterrupt

    report = Registry().register_plugin(plugin_module("p", seamkit_register_tools=interrupts), "p")
    assert report.status == "failed" and report.error == "KeyboardInterrupt: "


def test_output_bypassing_sys_stdout_goes_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    def writes() -> None:
        os.write(1, b'{"fd1": "import chatter"}\n')
        assert sys.__stdout__ is not None
        sys.__stdout__.write('{"dunder": "unflushed chatter"}\n')  # left in the buffer on purpose

    reg = load_registry(entry_points=[CallingEntryPoint("writer", writes)])
    assert reg.reports[0].status == "ok"
    sys.stdout.write("the command's own output\n")
    sys.stdout.flush()
    out, err = capfd.readouterr()
    assert out == "the command's own output\n"
    assert '{"fd1": "import chatter"}' in err and '{"dunder": "unflushed chatter"}' in err


def test_a_plugin_setting_a_signal_handler_at_import_still_loads() -> None:
    previous = signal.getsignal(signal.SIGTERM)
    imports: list[str] = []

    def sets_handler() -> None:
        imports.append(threading.current_thread().name)
        signal.signal(signal.SIGTERM, signal.getsignal(signal.SIGTERM))  # "only works in main thread"

    try:
        reg = load_registry(entry_points=[CallingEntryPoint("handler", sets_handler)])
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert reg.reports[0].status == "ok", reg.reports
    assert imports == ["seamkit-plugin-load", threading.main_thread().name]  # tried in the worker, then again


@pytest.mark.parametrize(("raw", "seconds"), [("2.5", 2.5), ("0", IMPORT_TIMEOUT_S), ("-1", IMPORT_TIMEOUT_S),
                                              ("soon", IMPORT_TIMEOUT_S), ("nan", IMPORT_TIMEOUT_S),
                                              ("", IMPORT_TIMEOUT_S)])
def test_the_import_timeout_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, raw: str,
                                                       seconds: float) -> None:
    monkeypatch.setenv("SEAMKIT_PLUGIN_IMPORT_TIMEOUT", raw)
    assert import_timeout() == seconds


def test_a_component_module_blocking_at_import_is_an_import_error(
        released: threading.Event, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from seamkit._plugins import registry

    monkeypatch.setattr(registry, "COMPONENT_IMPORT_TIMEOUT_S", 0.3)
    monkeypatch.setattr(threading, "pi_release", released, raising=False)  # reachable from the module
    (tmp_path / "slow_component_mod.py").write_text("import threading\nthreading.pi_release.wait()\nbuild = dict\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = registry.ComponentSpec("tool", "slow", "slow_component_mod:build", None, "", "p", "seamkit-p", "0.1")
    with pytest.raises(ImportError, match=r"'slow_component_mod:build' did not finish importing within 0.3 s"):
        spec.factory_callable()


def test_a_command_hook_that_blocks_or_interrupts_fails_and_adds_nothing(released: threading.Event) -> None:
    import argparse

    from seamkit._plugins.registry import run_command_hook

    def blocks(cli: Any) -> None:
        cli.add_parser("slow")
        released.wait()

    def interrupts(cli: Any) -> None:
        cli.add_parser("ctrl")
        raise KeyboardInterrupt

    sub = argparse.ArgumentParser().add_subparsers()
    assert (run_command_hook(blocks, sub) or "").startswith(
        "its seamkit_register_commands hook did not finish within 0.3 s")
    assert run_command_hook(interrupts, sub) == "KeyboardInterrupt: "
    assert sorted(sub.choices) == []
