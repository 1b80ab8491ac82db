"""A broken plugin is reported, never fatal: any exception of its import, hooks or factory (``SystemExit``
included), what it prints, the secrets in its messages, its command names; and ``--check`` checks what
it can without building (a function factory through its return annotation)."""

from __future__ import annotations

import argparse
import sys
import types
from collections.abc import AsyncIterator, Callable
from typing import Any

import pydantic
import pytest
from seamkit._hookspecs import hookimpl
from seamkit._plugins.check import NO_ANNOTATION, check_commands, check_component
from seamkit._plugins.ports_check import method_names
from seamkit._plugins.redact import mask_message
from seamkit._plugins.registry import ComponentSpec, Registry, load_registry
from seamkit._ports import CheckpointPort, StorePort


def plugin_module(name: str, **hooks: Callable[..., Any]) -> types.ModuleType:
    mod = types.ModuleType(name)
    for hook_name, fn in hooks.items():
        setattr(mod, hook_name, hookimpl(fn))
    return mod


class FakeDist:
    def __init__(self, name: str) -> None:
        self.metadata = {"Name": name}
        self.version = "0.1"


class FakeEntryPoint:
    def __init__(self, name: str, plugin: Any) -> None:
        self.name = name
        self._plugin = plugin
        self.dist = FakeDist(f"seamkit-{name}")

    def load(self) -> Any:
        if isinstance(self._plugin, BaseException):
            raise self._plugin
        return self._plugin


def _tools(register: Any) -> None:
    register("fine", "builtins:dict")


def spec(factory: Any, *, kind: str = "tool", config: Any = None, dist: str = "seamkit-x") -> ComponentSpec:
    return ComponentSpec(kind, "x", factory, config, "", "x", dist, "0.1")


# -- registry: a plugin's exceptions ----------------------------------------------------------------


@pytest.mark.parametrize("exc", [SystemExit(7), GeneratorExit(), ImportError("no numpy"), KeyboardInterrupt()])
def test_any_exception_at_import_is_a_failed_plugin_and_the_others_load(exc: BaseException) -> None:
    reg = load_registry(entry_points=[FakeEntryPoint("bad", exc),
                                      FakeEntryPoint("good", plugin_module("good", seamkit_register_tools=_tools))])
    by_name = {r.plugin: r for r in reg.reports}
    assert by_name["bad"].status == "failed"
    assert by_name["bad"].error is not None and by_name["bad"].error.startswith(f"import failed: {type(exc).__name__}")
    assert by_name["good"].status == "ok" and reg.names("tool") == ["fine"]


def test_a_hook_raising_system_exit_is_a_failed_plugin() -> None:
    def exits(register: Any) -> None:
        register("half", "builtins:dict")
        sys.exit(3)

    reg = Registry()
    report = reg.register_plugin(plugin_module("p", seamkit_register_tools=exits), "p")
    assert report.status == "failed" and report.error == "SystemExit: 3"
    assert reg.names("tool") == []  # what it registered before failing is taken out


def test_what_a_plugin_prints_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    def chatty(register: Any) -> None:
        print("hello from the plugin")
        register("fine", "builtins:dict")

    load_registry(entry_points=[FakeEntryPoint("chatty", plugin_module("chatty", seamkit_register_tools=chatty))])
    out, err = capsys.readouterr()
    assert out == "" and "hello from the plugin" in err


def test_a_name_with_a_trailing_newline_is_refused() -> None:
    reg = Registry()
    report = reg.register_plugin(plugin_module("p", seamkit_register_tools=lambda register: register(
        "greet\n", "builtins:dict")), "p")
    assert report.status == "failed" and "invalid tool name 'greet\\n'" in (report.error or "")


def test_secrets_in_a_plugin_error_are_masked() -> None:
    reg = load_registry(entry_points=[
        FakeEntryPoint("db", RuntimeError("cannot start: DATABASE_URL=postgres://admin:hunter2@db/prod")),
        FakeEntryPoint("tok", plugin_module("tok", seamkit_register_tools=lambda register: (_ for _ in ()).throw(
            ValueError("bad token sk-HOOK-SECRET-123")))),
    ])
    errors = " ".join(r.error or "" for r in reg.reports)
    assert "hunter2" not in errors and "sk-HOOK" not in errors
    assert "postgres://***@db/prod" in errors and "bad token ***" in errors


@pytest.mark.parametrize(("text", "shown"), [
    ("connect failed: token=sk-FACTORY-SECRET-999", "connect failed: token=***"),
    ("api_key: 'abcdef123'", "api_key: '***'"),
    ("Authorization: Bearer abc.def", "Authorization: *** ***"),
    ("auth failed for user bob", "auth failed for user bob"),
    ("the config requires api_key, model", "the config requires api_key, model"),
])
def test_mask_message(text: str, shown: str) -> None:
    assert mask_message(text) == shown


def test_mask_message_masks_secret_environment_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "opaque-value-42")
    assert mask_message("rejected opaque-value-42") == "rejected ***"


# -- registry: commands -------------------------------------------------------------------------------


def _subparsers() -> Any:
    sub = argparse.ArgumentParser().add_subparsers(dest="command")
    sub.add_parser("plugins", help="built-in")
    return sub


def test_a_command_named_like_a_built_in_fails_its_plugin_and_the_built_in_wins() -> None:
    def clash(cli: Any) -> None:
        cli.add_parser("extra")
        cli.add_parser("plugins")

    reg = Registry()
    reg.register_plugin(plugin_module("c", seamkit_register_commands=clash), "c", distribution="seamkit-c")
    sub = _subparsers()
    builtin = sub.choices["plugins"]
    (failure,) = reg.add_commands(sub)
    assert failure.plugin == "c" and "conflicting subparser: plugins" in (failure.error or "")
    assert sub.choices["plugins"] is builtin and "extra" not in sub.choices  # none of its commands is added
    assert [c.dest for c in sub._choices_actions] == ["plugins"]
    (report,) = reg.reports
    assert report.status == "failed" and report.error == failure.error


def test_check_commands_runs_the_hook_on_a_throwaway_parser() -> None:
    def good(cli: Any) -> None:
        cli.add_parser("my-tool-cmd")

    def clash(cli: Any) -> None:
        cli.add_parser("run")

    ok = check_commands("g", "seamkit-g", "0.1", good)
    assert ok.ok and ok.kind == "command" and ok.notes == ("commands added: my-tool-cmd",)
    bad = check_commands("c", "seamkit-c", "0.1", clash)
    assert not bad.ok and "conflicting subparser: run" in bad.problems[0]


# -- check_component ---------------------------------------------------------------------------------


def exiting() -> Any:
    sys.exit(5)


def printing() -> Any:
    print('{"oops": 1}')
    return object()


def raising() -> Any:
    raise RuntimeError("connect failed: token=sk-FACTORY-SECRET-999")


def test_a_factory_calling_sys_exit_is_its_problem() -> None:
    result = check_component(spec(exiting))
    assert result.problems == (f"factory {exiting.__module__ + ':exiting'!r} raised SystemExit: 5",)


def test_a_factory_printing_does_not_touch_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    check_component(spec(printing))
    out, err = capsys.readouterr()
    assert out == "" and '{"oops": 1}' in err


def test_a_factory_error_is_masked() -> None:
    (problem,) = check_component(spec(raising)).problems
    assert "sk-FACTORY" not in problem and problem.endswith("token=***")


def test_two_distributions_registering_one_name_are_ambiguous() -> None:
    a, b = (spec("builtins:dict", kind="guardrail", dist=d) for d in ("seamkit-a", "seamkit-b"))
    result = check_component(a, clashes=[b])
    assert not result.ok
    assert result.problems[0].startswith("ambiguous: guardrail 'x' is also registered by seamkit-b (plugin 'x'); "
                                         "'use: x' is refused: add 'from: seamkit-a'")
    assert check_component(a).ok


class LaxDefault(pydantic.BaseModel):
    size: int = pydantic.Field(default=-1, ge=0)  # pydantic does not validate a default by itself


def test_a_default_that_does_not_validate_is_a_problem() -> None:
    result = check_component(spec("builtins:dict", config=LaxDefault))
    assert result.problems == ("the default config does not validate: size: Input should be greater than or "
                               "equal to 0",)


# stores: built by functions, checked through the return annotation


def _store_class(name: str, protocol: type, *, without: str = "", **members: Any) -> type:
    """A class with every method of ``protocol`` (its own stubs) but ``without``."""
    body = {n: getattr(protocol, n) for n in method_names(protocol) if n != without}
    return type(name, (), {**body, **members})


HalfStore = _store_class("HalfStore", StorePort, without="increment")
BothButIncrement = type("BothButIncrement", (_store_class("Cp", CheckpointPort), HalfStore), {})
NoneIncrement = _store_class("NoneIncrement", StorePort, increment=None)


def build_half(config: Any = None) -> HalfStore:  # type: ignore[valid-type]
    return HalfStore()


def build_both(config: Any = None) -> BothButIncrement:  # type: ignore[valid-type]
    return BothButIncrement()


def build_unannotated(config=None):  # type: ignore[no-untyped-def]
    return 42


def test_a_store_function_factory_is_checked_through_its_return_annotation() -> None:
    (problem,) = check_component(spec(build_half, kind="store")).problems
    assert problem.startswith("class HalfStore (the factory's return annotation) satisfies neither the store port "
                              "(StorePort: missing increment())")


def test_a_store_function_factory_without_annotation_gets_a_note() -> None:
    result = check_component(spec(build_unannotated, kind="store"))
    assert result.ok and NO_ANNOTATION in result.notes
    assert not result.checked and result.status == "unchecked"  # nothing wrong found, but "ok" would claim more
    assert NO_ANNOTATION == ("not checked: the factory has no return annotation; annotate it (-> MyStore) so "
                             "the port can be checked")


def test_a_store_meeting_one_port_and_part_of_the_other_gets_a_note() -> None:
    result = check_component(spec(build_both, kind="store"))
    assert result.ok
    assert ("class BothButIncrement (the factory's return annotation) satisfies the checkpoint port (CheckpointPort) "
            "but only part of the store port (StorePort): missing increment()") in result.notes


def test_a_member_set_to_none_is_not_callable() -> None:
    (problem,) = check_component(spec(NoneIncrement, kind="store")).problems
    assert "increment is not callable (it is a NoneType)" in problem


# providers: a required config keeps the factory from being called


class NeedsModel(pydantic.BaseModel):
    model: str


class HalfModel:
    provider = "half"
    model = "half-1"

    async def stream(self, messages: Any, **kwargs: Any) -> AsyncIterator[Any]:
        yield None


def build_provider(config: NeedsModel) -> HalfModel:
    return HalfModel()


def build_provider_unannotated(config):  # type: ignore[no-untyped-def]
    return HalfModel()


def test_a_provider_that_cannot_be_built_is_checked_through_its_return_annotation() -> None:
    result = check_component(spec(build_provider, kind="provider", config=NeedsModel))
    assert result.problems == ("class HalfModel (the factory's return annotation) does not satisfy the model port "
                               "(LLMPort): missing chat()",)
    assert "not built: the config requires 'model' (no default)" in result.notes
    unannotated = check_component(spec(build_provider_unannotated, kind="provider", config=NeedsModel))
    assert unannotated.ok and NO_ANNOTATION in unannotated.notes


def test_a_module_holding_config_and_factory_that_fails_is_one_problem(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fails_both_mod.py").write_text("raise RuntimeError('module is broken')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = check_component(spec("fails_both_mod:build", config="fails_both_mod:Config"))
    assert result.problems == ("config model 'fails_both_mod:Config' and factory 'fails_both_mod:build' do not "
                               "import: RuntimeError: module is broken",)


def blocking() -> Any:
    import time

    time.sleep(30)  # stands for a connect that never returns: the check interrupts it


def test_a_factory_that_blocks_is_interrupted_after_the_timeout() -> None:
    (problem,) = check_component(spec(blocking), timeout_s=0.2).problems
    assert problem.startswith(f"factory {blocking.__module__ + ':blocking'!r} raised CheckTimeout: it did not "
                              "return within 0.2 s")


def test_the_check_timeout_suspends_a_limit_armed_around_it_and_puts_it_back() -> None:
    """A plugin author's test under pytest-timeout (a SIGALRM timer armed around it): the check's
    own limit still fires, and the outer timer runs on afterwards (it was cancelled before)."""
    import signal

    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    outer = signal.setitimer(signal.ITIMER_REAL, 100.0)
    try:
        (problem,) = check_component(spec(blocking), timeout_s=0.2).problems
        assert "raised CheckTimeout: it did not return within 0.2 s" in problem
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left < 100.0 and fired == []
    finally:
        signal.setitimer(signal.ITIMER_REAL, *outer)
        signal.signal(signal.SIGALRM, previous)


def test_names_checked_elsewhere_refuse_a_trailing_newline_too() -> None:
    from seamkit import Binding
    from seamkit._calls.binding import CredentialRef
    from seamkit._cli.scaffold import ScaffoldError, names_for

    with pytest.raises(ValueError, match="provider must be a component name"):
        Binding("openai\n")
    with pytest.raises(ValueError, match="field must be a config field name"):
        CredentialRef(lambda: "s", field="api_key\n")
    with pytest.raises(ScaffoldError, match="invalid plugin name"):
        names_for("tool", "foo\n")


class Several:
    def __init__(self, server: str) -> None:
        self.server = server

    @property
    def tools(self) -> list[Any]:
        return []


class NeedsServer(pydantic.BaseModel):
    server: str


def build_toolset(config: NeedsServer) -> Several:
    return Several(config.server)


def test_a_toolset_factory_is_checked_against_the_toolset_port_not_the_tool_port() -> None:
    toolset = ComponentSpec("tool", "x", build_toolset, NeedsServer, "", "x", "seamkit-x", "0.1", toolset=True)
    result = check_component(toolset)
    assert result.ok, result.problems
    assert "checked the class Several that the factory's return annotation names" in result.notes
