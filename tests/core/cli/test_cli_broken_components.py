"""A plugin whose component is broken, as ``seamkit validate`` and ``seamkit run`` show it: a factory
path with a typo (issue 10, item 20), and components that do not satisfy the port of their slot or
yield the wrong type at run time (issue 10, item 21). Each message names the slot, the component,
its distribution and the members to fix; none is a traceback."""

from __future__ import annotations

import types
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from seamkit._accumulate import collect_result
from seamkit._cli import main as cli_main
from seamkit._hookspecs import hookimpl
from seamkit.values import ChatRequest, Delta, LLMResult

# -- components, good and broken ---------------------------------------------------------------


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = "m1"


class GoodModel:
    """A provider that satisfies the model port (the base of the broken ones)."""

    provider = "brokenprov"

    def __init__(self, cfg: _Config | None = None) -> None:
        self.model = cfg.model if cfg is not None else "m1"

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        yield Delta(text="fine")
        yield Delta(finish_reason="stop")

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)


class NoChat:
    provider = "brokenprov"

    def __init__(self, cfg: _Config) -> None:
        self.model = cfg.model

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        yield Delta(text="x")


class CoroutineStream(GoodModel):
    async def stream(self, request: ChatRequest) -> Any:  # type: ignore[override]  # no yield: a coroutine
        return [Delta(text="x")]


class StreamWithoutRequest(GoodModel):
    async def stream(self) -> AsyncIterator[Delta]:  # type: ignore[override]
        yield Delta(text="x")


class YieldsDict(GoodModel):
    async def stream(self, request: ChatRequest) -> AsyncIterator[Any]:  # type: ignore[override]
        yield {"text": "hello"}


class YieldsStr(GoodModel):
    async def stream(self, request: ChatRequest) -> AsyncIterator[Any]:  # type: ignore[override]
        yield "hello"


def numeric_provider(cfg: _Config) -> Any:
    model = GoodModel(cfg)
    model.provider = 7  # type: ignore[assignment]
    return model


def plain_function_tool() -> Any:
    def add(a: int, b: int) -> int:
        return a + b

    return add


def undocumented_tool() -> Any:
    """A factory wrapping a function without a docstring: ``@tool`` refuses it when the factory runs."""
    from seamkit import tool

    def lookup(key: str) -> str:
        return key

    return tool(side_effecting=False)(lookup)


def _decorated(annotation: Any, doc: str = "Look a key up (a tool for definition tests).") -> Any:
    from seamkit import tool

    def lookup(key):  # type: ignore[no-untyped-def]
        return key

    lookup.__annotations__ = {"key": annotation}
    lookup.__doc__ = doc
    return tool(side_effecting=False)(lookup)


def lambda_annotated_tool() -> Any:
    """``key: (lambda: str)``: refused at decoration, in the factory."""
    return _decorated(lambda: str)


def undefined_name_tool() -> Any:
    """``key: "Nope"``: refused at decoration, in the factory."""
    return _decorated("Nope")


def sections_only_tool() -> Any:
    """A docstring whose first line is ``Args:``: refused when the agent builds the schema."""
    return _decorated(str, "Args:\n        key: the key.\n    ")


def socket_tool() -> Any:
    """``key: socket.socket``: refused when the agent builds the schema."""
    import socket

    return _decorated(socket.socket)


def coroutine_middleware() -> Any:
    async def mw(call: Any) -> Any:
        return None

    return mw


def not_a_checkpoint_store() -> Any:
    return types.SimpleNamespace(aclose=None)


def not_a_compactor() -> Any:
    class Halfway:
        name = "halfway"

        def compact(self, messages: Any) -> Any:  # not async, and no budget_tokens
            return messages

    return Halfway()


@hookimpl
def seamkit_register_providers(register: Any) -> None:
    for name, factory in [("good", GoodModel), ("nochat", NoChat), ("corostream", CoroutineStream),
                          ("norequest", StreamWithoutRequest), ("yieldsdict", YieldsDict), ("yieldsstr", YieldsStr),
                          ("numeric", numeric_provider)]:
        register(name, factory, config=_Config)
    register("typo_attr", "seamkit.testing._models:ScriptedModle", config=_Config)
    register("typo_module", "seamkit.testing.modles:ScriptedModel", config=_Config)


@hookimpl
def seamkit_register_tools(register: Any) -> None:
    register("plainfn", plain_function_tool)
    register("undocumented", undocumented_tool)
    for name, factory in [("lambdahint", lambda_annotated_tool), ("undefinedhint", undefined_name_tool),
                          ("sectionsonly", sections_only_tool), ("sockettool", socket_tool)]:
        register(name, factory)


@hookimpl
def seamkit_register_middlewares(register: Any) -> None:
    register("coromw", coroutine_middleware)


@hookimpl
def seamkit_register_stores(register: Any) -> None:
    register("nostore", not_a_checkpoint_store)


@hookimpl
def seamkit_register_compactors(register: Any) -> None:
    register("halfway", not_a_compactor)


BROKEN = types.SimpleNamespace(**{n: f for n, f in globals().items() if n.startswith("seamkit_register_")})


@pytest.fixture
def broken(register_plugin: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    report = register_plugin(BROKEN, name="broken-plugin", distribution="seamkit-broken", version="1.2")
    assert report.status == "ok", report
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = cli_main.main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "AttributeError" not in err, err
    return rc, out, err


def _agent(root: Path, body: str, model: str = "good") -> str:
    path = root / "agent.yaml"
    path.write_text(f"seamkit: 1\nagent:\n  model: {{use: {model}}}\n  checkpoints: null\n{body}")
    return str(path)


# -- 20. a factory path with a typo: `validate` says so (exit 2), naming the plugin ---------------


@pytest.mark.parametrize(("use", "error"), [
    ("typo_attr", "has no attribute 'ScriptedModle'; did you mean 'ScriptedModel'?"),
    ("typo_module", "No module named 'seamkit.testing.modles'"),
])
def test_validate_imports_each_factory_and_names_the_plugin_of_a_typo(
        broken: Path, capsys: pytest.CaptureFixture[str], use: str, error: str) -> None:
    path = _agent(broken, "", model=use)
    rc, out, err = _cli(capsys, "validate", path)
    assert rc == 2, (out, err)
    assert f"agent.yaml:3:16: agent.model.use: provider {use!r} (from seamkit-broken 1.2, plugin 'broken-plugin') " \
           "cannot be loaded: its factory" in err
    assert error in err and out == ""
    rc, out, err = _cli(capsys, "run", path, "hi")  # the same at run time: exit 2 before anything runs
    assert rc == 2 and error in err, err


# -- 21. a component that does not satisfy the port of its slot --------------------------------


@pytest.mark.parametrize(("model", "problems"), [
    ("nochat", ["missing chat()"]),
    ("corostream", ["stream() is an 'async def' without 'yield'", "make it an async generator"]),
    ("norequest", ["stream() has the wrong parameters: it takes (), the port calls stream(request)"]),
])
def test_validate_names_the_model_slot_and_the_members_a_provider_class_lacks(
        broken: Path, capsys: pytest.CaptureFixture[str], model: str, problems: list[str]) -> None:
    path = _agent(broken, "", model=model)
    rc, out, err = _cli(capsys, "validate", path)
    assert rc == 2, (out, err)
    assert (f"agent.model.use: provider {model!r} (from seamkit-broken 1.2, plugin 'broken-plugin') does not "
            "satisfy the model port (LLMPort): ") in err
    assert all(p in err for p in problems), err


@pytest.mark.parametrize(("body", "model", "slot", "problems"), [
    ("", "numeric", "agent.model: provider 'numeric'",
     ["the model port (LLMPort)", "provider must be a str (got int)"]),
    ("  tools: [plainfn]\n", "good", "agent.tools[0]: tool 'plainfn'",
     ["the tool port (ToolPort)", "missing schema; missing validate(); missing invoke()"]),
    ("  middlewares: [coromw]\n", "good", "agent.middlewares[0]: middleware 'coromw'",
     ["the middleware has the wrong parameters: it takes (call), the port calls mw(call, next)",
      "the middleware is an 'async def' without 'yield'"]),
    ("  context: {compactor: halfway, budget_tokens: 1000}\n", "good", "agent.context.compactor: compactor 'halfway'",
     ["the compactor port (CompactorPort)", "compact() has the wrong parameters"]),
], ids=["model", "tool", "middleware", "compactor"])
def test_run_names_the_slot_and_the_members_a_built_component_gets_wrong(
        broken: Path, capsys: pytest.CaptureFixture[str], body: str, model: str, slot: str,
        problems: list[str]) -> None:
    path = _agent(broken, body, model=model)
    # a factory function: only building it tells; validate builds the tools (item 17), so it
    # reports a tool as run does, and only run finds the other components' problems
    rc, _, err = _cli(capsys, "validate", path)
    assert rc == (2 if "tools" in body else 0), err
    if "tools" in body:
        assert all(p in err for p in problems), err
    rc, out, err = _cli(capsys, "run", path, "hi")
    assert rc == 2, (out, err)
    assert f"{slot} (from seamkit-broken 1.2, plugin 'broken-plugin') built " in err
    assert all(p in err for p in problems), err
    assert "agent: cannot build the agent" not in err


def test_run_names_the_checkpoints_slot_and_the_checkpoint_port(
        broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = broken / "agent.yaml"
    path.write_text("seamkit: 1\nagent:\n  model: good\n  checkpoints: nostore\n")
    rc, _, err = _cli(capsys, "run", str(path), "hi")
    assert rc == 2
    assert "agent.checkpoints: store 'nostore' (from seamkit-broken 1.2, plugin 'broken-plugin') built a " \
           "SimpleNamespace, which does not satisfy the checkpoint port (CheckpointPort): missing save(); " in err
    assert "aclose is not callable (it is a NoneType)" in err


# -- 21. a provider that yields the wrong type: a classified error naming it ---------------------


@pytest.mark.parametrize("model", ["yieldsdict", "yieldsstr"])
@pytest.mark.parametrize("middlewares", ["", "  middlewares: [{use: retry, max_attempts: 3}]\n"],
                         ids=["direct", "through-middleware"])
def test_a_provider_yielding_something_else_than_a_delta_is_a_classified_error_naming_it(
        broken: Path, capsys: pytest.CaptureFixture[str], model: str, middlewares: str) -> None:
    path = _agent(broken, middlewares, model=model)
    assert _cli(capsys, "validate", path)[0] == 0
    rc, out, err = _cli(capsys, "run", path, "hi")
    assert rc == 1, (out, err)
    shown = "a dict" if model == "yieldsdict" else "a str"
    assert (f"ProviderError: brokenprov: unknown: stream() (model m1) yielded {shown} where a seamkit.values.Delta "
            "belongs; the provider is broken") in err
    assert "hello" not in err  # what it yielded is not shown
    assert err.count("ProviderError") == 1  # not retried: a broken provider stays broken


# -- 17. a plugin tool without a description: validate refuses it as run does -------------------


def test_validate_refuses_a_plugin_tool_without_a_description_at_its_slot_as_run_does(
        broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _agent(broken, "  tools: [undocumented]\n")
    for command in (["validate", path], ["run", path, "hi"]):
        rc, out, err = _cli(capsys, *command)
        assert rc == 2, (command, out, err)
        assert ("agent.yaml:5:11: agent.tools[0]: tool 'undocumented' (from seamkit-broken 1.2, "
                "plugin 'broken-plugin'): tool 'lookup' has no description") in err, err
        assert "tool 'lookup' has no description" in err and "add a docstring to " in err, err
        assert out == ""


@pytest.mark.parametrize(("use", "problem"), [
    ("lambdahint", "tool 'lookup': parameter 'key' is annotated with <function"),
    ("undefinedhint", "tool 'lookup': the type hint of parameter 'key' cannot be resolved: 'Nope' is not defined"),
    ("sectionsonly", "tool 'lookup' has no description"),
    ("sockettool", "tool 'lookup': parameter 'key' (socket) cannot be described to a model: Unable to generate "
                   "pydantic-core schema for <class 'socket.socket'>. Use a type JSON Schema can describe"),
])
def test_validate_refuses_a_malformed_plugin_tool_at_its_slot_as_run_does(
        broken: Path, capsys: pytest.CaptureFixture[str], use: str, problem: str) -> None:
    # found after issue 19: some malformed @tool definitions got through (a lambda as a type hint,
    # a docstring starting with "Args:"), others raised a bare NameError from the factory
    path = _agent(broken, f"  tools: [{use}]\n")
    for command in (["validate", path], ["run", path, "hi"]):
        rc, out, err = _cli(capsys, *command)
        assert rc == 2, (command, out, err)
        assert f"agent.yaml:5:11: agent.tools[0]: tool {use!r} (from seamkit-broken 1.2, plugin 'broken-plugin')" \
            in err, err
        assert problem in err and "NameError" not in err and "arbitrary_types_allowed" not in err, err
        assert out == ""


# -- a module holding both the config model and the factory fails to import: one problem, one label ----


def test_validate_says_once_that_the_module_of_config_and_factory_does_not_import(
        register_plugin: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken_both_mod.py").write_text("raise RuntimeError('module is broken')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    plugin = types.ModuleType("broken_both")

    @hookimpl
    def seamkit_register_providers(register: Callable[..., Any]) -> None:
        register("both", "broken_both_mod:build", config="broken_both_mod:Config")

    plugin.seamkit_register_providers = seamkit_register_providers  # type: ignore[attr-defined]
    register_plugin(plugin, name="broken-both", distribution="seamkit-both", version="0.3")
    rc, out, err = _cli(capsys, "validate", _agent(tmp_path, "", model="both"))
    assert rc == 2, (out, err)
    assert err.count("module is broken") == 1, err
    assert ("agent.model.use: provider 'both' (from seamkit-both 0.3, plugin 'broken-both') cannot be loaded: its "
            "config model 'broken_both_mod:Config' does not import: RuntimeError: module is broken") in err


# -- a component module that exits, interrupts or quotes a secret at its (lazy) import ---------------


@pytest.mark.parametrize(("source", "shown"), [
    ("raise SystemExit(5)\n", "ImportError: importing 'lazy_bad_mod:build' raised SystemExit: 5"),
    ("raise KeyboardInterrupt\n", "ImportError: importing 'lazy_bad_mod:build' raised KeyboardInterrupt"),
    ("raise RuntimeError('connect failed: token=hunter2-SECRET')\n", "RuntimeError: connect failed: token=***"),
])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_component_module_exiting_or_interrupting_at_import_is_that_components_problem(
        register_plugin: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], source: str, shown: str, command: str) -> None:
    (tmp_path / "lazy_bad_mod.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    plugin = types.ModuleType("lazy_bad")

    @hookimpl
    def seamkit_register_providers(register: Callable[..., Any]) -> None:
        register("lazy", "lazy_bad_mod:build")

    plugin.seamkit_register_providers = seamkit_register_providers  # type: ignore[attr-defined]
    register_plugin(plugin, name="lazy-bad", distribution="seamkit-lazy", version="0.1")
    rc, out, err = _cli(capsys, command, _agent(tmp_path, "", model="lazy"), *(["hi"] if command == "run" else []))
    assert rc == 2, (out, err)
    assert ("agent.model.use: provider 'lazy' (from seamkit-lazy 0.1, plugin 'lazy-bad') cannot be loaded: its "
            "factory 'lazy_bad_mod:build' does not import: " + shown) in err, err
    assert "hunter2" not in err and "interrupted" not in err
