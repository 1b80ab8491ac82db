"""Plugin discovery and the component registry (``seamkit._plugins.registry``, ``seamkit._hookspecs``)."""

from __future__ import annotations

import inspect
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic
import pytest
from seamkit._hookspecs import KIND_BY_HOOK, SeamkitHookSpecs, hookimpl
from seamkit._plugins.registry import Registry, get_registry, load_object, load_registry, reset_registry
from seamkit.errors import AmbiguousComponent, ComponentNotFound, ConfigError, PluginError


def plugin_module(name: str, **hooks: Callable[..., Any]) -> types.ModuleType:
    """A module object with the given hook implementations (marked with ``@hookimpl``)."""
    mod = types.ModuleType(name)
    for hook_name, fn in hooks.items():
        setattr(mod, hook_name, hookimpl(fn))
    return mod


def providers(*names: str, factory: Any = "builtins:dict") -> Callable[..., None]:
    def hook(register: Any) -> None:
        for n in names:
            register(n, factory, description=f"{n} provider")

    return hook


class FakeDist:
    def __init__(self, name: str, version: str = "1.0") -> None:
        self.metadata = {"Name": name}
        self.version = version


class FakeEntryPoint:
    """What ``load_registry`` reads from an ``importlib.metadata.EntryPoint``."""

    def __init__(self, name: str, plugin: Any, dist: str | None = None, value: str | None = None) -> None:
        self.name = name
        self._plugin = plugin
        self.dist = FakeDist(dist or f"seamkit-{name}")
        self.loaded = False
        if value is not None:
            self.value = value

    def load(self) -> Any:
        self.loaded = True
        if isinstance(self._plugin, BaseException):
            raise self._plugin
        return self._plugin


# --- hookspecs ------------------------------------------------------------------------------


def test_every_hookspec_is_documented_and_registration_hooks_have_kinds() -> None:
    names = [n for n, _ in inspect.getmembers(SeamkitHookSpecs, inspect.isfunction) if n.startswith("seamkit_")]
    assert set(names) == set(KIND_BY_HOOK) | {"seamkit_register_commands"}
    for n in names:
        assert (getattr(SeamkitHookSpecs, n).__doc__ or "").strip(), n


# --- lazy factories -------------------------------------------------------------------------


def test_lazy_factory_is_not_imported_until_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    modname = "seamkit_lazy_probe_heavy"
    (tmp_path / f"{modname}.py").write_text(textwrap.dedent("""
        import pydantic

        IMPORTED = True

        class Config(pydantic.BaseModel):
            model_config = pydantic.ConfigDict(extra="forbid")
            size: int = 1

        def build(cfg):
            return ("built", cfg.size)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, modname, raising=False)

    reg = Registry()
    report = reg.register_plugin(
        plugin_module("lazy", seamkit_register_stores=lambda register: register(
            "heavy", f"{modname}:build", config=f"{modname}:Config", description="Heavy")),
        "lazy", distribution="seamkit-lazy", version="0.1",
    )
    assert report.status == "ok" and report.components == (("store", "heavy"),)
    spec = reg.resolve("store", "heavy")
    assert (spec.distribution, spec.version, spec.plugin, spec.description) == ("seamkit-lazy", "0.1", "lazy", "Heavy")
    assert reg.names("store") == ["heavy"]
    assert modname not in sys.modules
    assert spec.build({"size": 3}) == ("built", 3)
    assert modname in sys.modules
    with pytest.raises(ConfigError, match="size"):
        spec.build({"size": "big"})
    with pytest.raises(ConfigError, match="colour: Extra inputs"):
        spec.build({"colour": 1})


def test_a_factory_that_cannot_be_imported_fails_at_build() -> None:
    reg = Registry()
    reg.register_plugin(plugin_module("p", seamkit_register_tools=lambda register: register(
        "ghost", "no_such_module_seamkit:build")), "p", distribution="seamkit-p", version="2")
    with pytest.raises(PluginError, match=r"ghost.*seamkit-p 2.*cannot be loaded"):
        reg.build("tool", "ghost")


def test_components_without_config_take_no_parameters() -> None:
    reg = Registry()
    reg.register_plugin(plugin_module("p", seamkit_register_stores=lambda register: register(
        "plain", lambda: "built")), "p")
    assert reg.build("store", "plain") == "built"
    with pytest.raises(ConfigError, match="takes no parameters"):
        reg.build("store", "plain", {"x": 1})


def test_config_model_objects_are_accepted() -> None:
    class Cfg(pydantic.BaseModel):
        n: int

    reg = Registry()
    reg.register_plugin(plugin_module("p", seamkit_register_stores=lambda register: register(
        "mem", lambda cfg: cfg.n * 2, config=Cfg)), "p")
    spec = reg.resolve("store", "mem")
    assert spec.config_model() is Cfg and reg.build("store", "mem", {"n": 4}) == 8


def test_load_object() -> None:
    assert load_object("os.path:join") is __import__("os").path.join
    with pytest.raises(ImportError, match="module:attr"):
        load_object("os.path.join")
    with pytest.raises(AttributeError, match="nope"):
        load_object("os:nope")


# --- isolation ------------------------------------------------------------------------------


def test_a_raising_hook_fails_its_plugin_and_removes_partial_registrations() -> None:
    def half_then_raise(register: Any) -> None:
        register("partial-one", "builtins:dict")
        raise RuntimeError("broken half way")

    reg = Registry()
    good = reg.register_plugin(plugin_module("good", seamkit_register_providers=providers("fine")), "good")
    bad = reg.register_plugin(
        plugin_module("bad", seamkit_register_providers=half_then_raise,
                      seamkit_register_tools=providers("other")),
        "bad", distribution="seamkit-bad",
    )
    assert good.status == "ok"
    assert bad.status == "failed" and "broken half way" in (bad.error or "")
    assert reg.names("provider") == ["fine"]
    assert reg.names("tool") == []
    assert [r.status for r in reg.reports] == ["ok", "failed"]
    assert reg.pm.get_plugin("bad") is None


def test_a_misspelled_hook_is_reported_with_did_you_mean() -> None:
    reg = Registry()
    report = reg.register_plugin(plugin_module("typo", seamkit_register_provider=providers("x")), "typo")
    assert report.status == "failed"
    assert "seamkit_register_provider" in (report.error or "")
    assert "did you mean 'seamkit_register_providers'" in (report.error or "")
    assert reg.names("provider") == []


def test_invalid_names_are_refused() -> None:
    reg = Registry()
    for bad_name in ("Upper", "with space", "", "1starts-with-digit", "dots.no"):
        report = reg.register_plugin(plugin_module("p", seamkit_register_tools=providers(bad_name)), f"p-{bad_name}")
        assert report.status == "failed" and "invalid tool name" in (report.error or ""), bad_name
    report = reg.register_plugin(
        plugin_module("p", seamkit_register_tools=providers("ok-name", factory="not a path")), "p-factory")
    assert report.status == "failed" and "factory" in (report.error or "")
    assert reg.names("tool") == []


def test_strict_mode_raises_plugin_error() -> None:
    reg = Registry(strict=True)
    with pytest.raises(PluginError, match="typo"):
        reg.register_plugin(plugin_module("typo", seamkit_register_provider=providers("x")), "typo")

    def boom(register: Any) -> None:
        raise RuntimeError("kaput")

    with pytest.raises(PluginError, match="kaput"):
        load_registry(strict=True, entry_points=[FakeEntryPoint("b", plugin_module("b", seamkit_register_tools=boom))])


def test_strict_mode_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEAMKIT_STRICT_PLUGINS", "1")
    monkeypatch.delenv("SEAMKIT_LOAD_PLUGINS", raising=False)
    with pytest.raises(PluginError, match="import failed"):
        load_registry(entry_points=[FakeEntryPoint("broken", ImportError("no numpy"))])


def test_import_failure_is_reported_and_others_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEAMKIT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("SEAMKIT_STRICT_PLUGINS", raising=False)
    reg = load_registry(entry_points=[
        FakeEntryPoint("broken", ImportError("no numpy")),
        FakeEntryPoint("fine", plugin_module("fine", seamkit_register_providers=providers("fine"))),
    ])
    by_name = {r.plugin: r for r in reg.reports}
    assert by_name["broken"].status == "failed" and "no numpy" in (by_name["broken"].error or "")
    assert by_name["broken"].distribution == "seamkit-broken" and by_name["broken"].version == "1.0"
    assert by_name["fine"].status == "ok"
    assert reg.names("provider") == ["fine"]


# --- allow-list -----------------------------------------------------------------------------


def _eps() -> list[FakeEntryPoint]:
    return [
        FakeEntryPoint("alpha", plugin_module("alpha", seamkit_register_providers=providers("a")), "seamkit-alpha"),
        FakeEntryPoint("beta", plugin_module("beta", seamkit_register_providers=providers("b")), "seamkit-beta"),
        FakeEntryPoint("gamma", plugin_module("gamma", seamkit_register_providers=providers("c")), "seamkit-gamma"),
    ]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (None, ["a", "b", "c"]),
        ("alpha,gamma", ["a", "c"]),
        (" seamkit-beta , ", ["b"]),  # a distribution name works too
        ("", []),  # set but empty: none
        ("zeta", []),
    ],
)
def test_load_plugins_allow_list(monkeypatch: pytest.MonkeyPatch, env: str | None, expected: list[str]) -> None:
    monkeypatch.delenv("SEAMKIT_STRICT_PLUGINS", raising=False)
    if env is None:
        monkeypatch.delenv("SEAMKIT_LOAD_PLUGINS", raising=False)
    else:
        monkeypatch.setenv("SEAMKIT_LOAD_PLUGINS", env)
    eps = _eps()
    reg = load_registry(entry_points=eps)
    assert reg.names("provider") == expected
    # plugins left out by the allow-list are not even imported
    assert [ep.loaded for ep in eps] == [n in expected for n in ("a", "b", "c")]


def test_the_same_distribution_found_twice_loads_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEAMKIT_LOAD_PLUGINS", raising=False)
    mod = plugin_module("dup", seamkit_register_providers=providers("d"))
    reg = load_registry(entry_points=[FakeEntryPoint("dup", mod, "seamkit-dup"),
                                      FakeEntryPoint("dup", mod, "seamkit-dup")])
    assert [r.status for r in reg.reports] == ["ok"]


@pytest.mark.parametrize("with_values", [True, False])
def test_one_plugin_under_two_entry_points_loads_once(monkeypatch: pytest.MonkeyPatch, with_values: bool) -> None:
    monkeypatch.delenv("SEAMKIT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("SEAMKIT_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("SEAMKIT_STRICT_PLUGINS", raising=False)
    mod = plugin_module("shared", seamkit_register_providers=providers("d"))
    value = "seamkit_shared_plugin" if with_values else None
    eps = [FakeEntryPoint("shared", mod, "seamkit-shared", value),  # one distribution, two names
           FakeEntryPoint("shared-alias", mod, "seamkit-shared", value),
           FakeEntryPoint("other", mod, "seamkit-other", value)]  # another distribution, same module
    reg = load_registry(entry_points=eps)
    assert [(r.plugin, r.distribution, r.status) for r in reg.reports] == [("shared", "seamkit-shared", "ok")]
    assert [(s.name, s.plugin) for s in reg.all_components()] == [("d", "shared")]
    assert reg.register_plugin(mod, "again") is reg.reports[0] and len(reg.reports) == 1
    if with_values:  # the same "module:attr" is not even loaded again
        assert [ep.loaded for ep in eps] == [True, False, False]


def _deny_eps() -> list[FakeEntryPoint]:
    shared = plugin_module("beta", seamkit_register_providers=providers("b"))
    return [
        FakeEntryPoint("alpha", plugin_module("alpha", seamkit_register_providers=providers("a")), "seamkit-alpha",
                       "alpha_mod"),
        FakeEntryPoint("beta", shared, "seamkit-beta", "beta_mod"),
        FakeEntryPoint("beta-alias", shared, "seamkit-beta-twin", "beta_mod"),
        FakeEntryPoint("gamma", plugin_module("gamma", seamkit_register_providers=providers("c")), "seamkit-gamma",
                       "gamma_mod"),
    ]


@pytest.mark.parametrize(
    ("allow", "deny", "expected"),
    [
        (None, None, ["a", "b", "c"]),
        (None, "", ["a", "b", "c"]),  # an empty deny list denies nothing
        (None, "alpha, seamkit-gamma", ["b"]),  # entry-point and distribution names
        (None, "beta-alias", ["a", "c"]),  # a module denied under one name stays out under its others
        (None, "seamkit-beta-twin", ["a", "c"]),
        ("alpha,beta", "beta", ["a"]),  # the deny list wins
        ("", "alpha", []),
        # distribution names match as pip matches them (PEP 503 normalisation); regression: the
        # spellings below matched nothing
        (None, "Seamkit_Gamma", ["a", "b"]),
        ("seamkit.alpha,SEAMKIT-GAMMA", None, ["a", "c"]),
        (None, "seamkit__beta-TWIN", ["a", "c"]),
    ],
)
def test_disable_plugins_deny_list(monkeypatch: pytest.MonkeyPatch, allow: str | None, deny: str | None,
                                   expected: list[str]) -> None:
    monkeypatch.delenv("SEAMKIT_STRICT_PLUGINS", raising=False)
    for var, val in (("SEAMKIT_LOAD_PLUGINS", allow), ("SEAMKIT_DISABLE_PLUGINS", deny)):
        if val is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, val)
    eps = _deny_eps()
    reg = load_registry(entry_points=eps)
    assert reg.names("provider") == expected
    assert all(r.status == "ok" for r in reg.reports)
    loaded = {ep.name for ep in eps if ep.loaded}  # denied plugins are not even imported
    assert loaded == {n for n, c in (("alpha", "a"), ("beta", "b"), ("gamma", "c")) if c in expected}


# --- name clashes and lookups ---------------------------------------------------------------


def _model(n: int) -> Any:
    from seamkit.testing import ScriptedModel

    return ScriptedModel(["hi"], model=str(n))


def test_two_distributions_registering_one_name() -> None:
    reg = Registry()
    reg.register_plugin(plugin_module("one", seamkit_register_providers=providers("shared", factory=lambda: _model(1))),
                        "one", distribution="seamkit-one")
    reg.register_plugin(plugin_module("two", seamkit_register_providers=providers("shared", factory=lambda: _model(2))),
                        "two", distribution="seamkit-two")
    with pytest.raises(AmbiguousComponent) as info:
        reg.resolve("provider", "shared")
    assert info.value.distributions == ("seamkit-one", "seamkit-two")
    assert "seamkit-one" in str(info.value) and "seamkit-two" in str(info.value)
    assert reg.resolve("provider", "shared", distribution="seamkit-two").build().model == "2"
    assert reg.build("provider", "shared", distribution="seamkit-one").model == "1"
    with pytest.raises(ComponentNotFound, match="from seamkit-three"):
        reg.resolve("provider", "shared", distribution="seamkit-three")


def test_component_not_found_suggests_close_names() -> None:
    reg = Registry()
    reg.register_plugin(plugin_module("p", seamkit_register_providers=providers("openai", "anthropic")), "p")
    with pytest.raises(ComponentNotFound) as info:
        reg.resolve("provider", "opanai")
    assert info.value.suggestions == ("openai",)
    assert "did you mean 'openai'" in str(info.value) and "anthropic" in str(info.value)
    with pytest.raises(ComponentNotFound, match="none installed"):
        reg.resolve("store", "redis")


def test_unregister_plugin_removes_its_components() -> None:
    reg = Registry()
    reg.register_plugin(plugin_module("p", seamkit_register_providers=providers("x", "y")), "p")
    reg.unregister_plugin("p")
    assert reg.names("provider") == [] and reg.reports == []
    assert reg.all_components() == []


def test_commands_hook_failures_are_reported() -> None:
    added: list[str] = []

    def good(cli: Any) -> None:
        added.append("good")

    def bad(cli: Any) -> None:
        raise RuntimeError("no cli for you")

    reg = Registry()
    reg.register_plugin(plugin_module("g", seamkit_register_commands=good), "g", distribution="seamkit-g")
    reg.register_plugin(plugin_module("b", seamkit_register_commands=bad), "b", distribution="seamkit-b")
    failures = reg.add_commands(object())
    assert added == ["good"]
    assert [(f.plugin, f.distribution, f.status) for f in failures] == [("b", "seamkit-b", "failed")]


def test_the_installed_testkit_registers_the_scripted_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEAMKIT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("SEAMKIT_STRICT_PLUGINS", raising=False)
    reg = load_registry()
    spec = reg.resolve("provider", "scripted")
    assert spec.distribution == "seamkit"
    model = spec.build({"turns": ["hello", {"tool_calls": [{"name": "t", "arguments": {"a": 1}}]}], "delay": 0})
    assert model.provider == "scripted"


def test_get_and_reset_registry() -> None:
    mine = Registry()
    reset_registry(mine)
    try:
        assert get_registry() is mine
    finally:
        reset_registry(None)
    assert get_registry() is not mine


# --- the register_plugin fixture ------------------------------------------------------------


@pytest.fixture
def probe_plugin() -> types.ModuleType:
    return plugin_module("seamkit_probe_fixture", seamkit_register_tools=providers("probe-tool"))


def test_register_plugin_fixture_registers(register_plugin: Any, probe_plugin: types.ModuleType) -> None:
    report = register_plugin(probe_plugin, name="probe")
    assert report.status == "ok"
    assert "probe-tool" in get_registry().names("tool")
    assert get_registry().resolve("tool", "probe-tool").distribution == "test-plugin"


def test_register_plugin_fixture_cleaned_up(register_plugin: Any) -> None:
    # runs after the test above (file order): its plugin must be gone
    assert "probe-tool" not in get_registry().names("tool")
    assert all(r.plugin != "probe" for r in get_registry().reports)


# --- port conformance (issue 10, item 21) -----------------------------------------------------------


def test_a_nested_slot_built_through_the_registry_is_checked_against_its_kinds_port() -> None:
    from seamkit.testing import ScriptedModel

    class HalfModel:
        provider, model = "half", "h1"

        def stream(self, request: Any) -> Any:  # a plain generator: no 'async'
            yield from ()

    reg = Registry()
    reg.register_plugin(plugin_module("p", seamkit_register_providers=lambda register: (
        register("half", HalfModel), register("fine", lambda: ScriptedModel(["hi"])))),
        "p", distribution="seamkit-half", version="3")
    with pytest.raises(PluginError) as info:
        reg.build("provider", "half")  # what a fallback middleware does for its `to:` models
    assert str(info.value) == (
        "provider 'half' from seamkit-half 3 built HalfModel, which does not satisfy the model port (LLMPort): "
        "stream() is a plain generator: write 'async def' so that it is an async generator; missing chat()")
    assert reg.build("provider", "fine").provider == "scripted"


def test_every_installed_component_satisfies_its_port(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No false alarms: each installed component that builds with its defaults (or a scripted
    turn) satisfies its port; the stores satisfy the checkpoint port."""
    from seamkit._plugins.ports_check import port_problems, slot_port

    monkeypatch.delenv("SEAMKIT_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("SEAMKIT_DISABLE_PLUGINS", raising=False)
    monkeypatch.chdir(tmp_path)
    reg = load_registry()
    model = {"model": "m", "api_key": "sk-test-not-used"}
    scripted = {"use": "scripted", "turns": ["x"]}
    params: dict[str, Any] = {
        "scripted": {"turns": ["x"]}, "openai": model, "openai_chat": model, "anthropic": model,
        "read_file": {"root": str(tmp_path)}, "write_file": {"root": str(tmp_path)},
        "sqlite": {"path": str(tmp_path / "s.db")}, "summarization": {"model": scripted},
        "importance": {"model": scripted}, "budget": {"max_cost_usd": "1"},
        "compaction": {"compactor": "sliding_window", "budget_tokens": 1000}, "fallback": {"to": [scripted]}}
    built: list[str] = []
    for spec in reg.all_components():
        spec.factory_callable()  # every factory path resolves
        if spec.kind not in ("provider", "tool", "compactor", "middleware", "store") or spec.name in (
                "postgres", "redis", "llamacpp"):  # servers, or a model file loaded when built
            continue
        try:
            component = spec.build(params.get(spec.name, {}))  # raises PluginError when off its port
        except ConfigError:  # needs parameters (an API key, a budget...)
            continue
        if spec.kind == "store":
            assert port_problems(component, slot_port("store", "checkpoints")) == [], spec.name  # type: ignore[arg-type]
        built.append(spec.name)
    assert {"scripted", "openai", "anthropic", "calculator", "read_file", "retry", "budget", "fallback",
            "sliding_window", "summarization", "memory", "sqlite"} <= set(built), built
