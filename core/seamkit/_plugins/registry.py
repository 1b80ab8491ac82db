"""Plugin discovery (entry-point group ``seamkit``) and the registry of components.

Environment:

- ``SEAMKIT_LOAD_PLUGINS=a,b``: load only the plugins whose entry-point name or distribution name
  is listed (set but empty: load none). Distribution names match as pip matches them, normalised
  by PEP 503 (``seamkit_openai``, ``Seamkit.OpenAI`` and ``seamkit-openai`` are one name);
  entry-point names match exactly.
- ``SEAMKIT_DISABLE_PLUGINS=a,b``: never load the plugins whose entry-point name or distribution
  name is listed, nor another entry point naming the same object. The deny list wins: a plugin in
  both lists is not loaded; an empty deny list denies nothing.

The same plugin object named by several entry points (one distribution listing a module under two
names, or two distributions pointing at one module) is loaded and registered once, under the first
entry point found.
- ``SEAMKIT_STRICT_PLUGINS=1``: a plugin that fails to load raises
  :class:`~seamkit.errors.PluginError` instead of being reported and skipped.
- ``SEAMKIT_PLUGIN_IMPORT_TIMEOUT=SECONDS`` (default 10): how long one plugin's import and
  registration hooks may take. Every command loads the plugins, so a plugin that blocks at import
  (a network call, a sleep) is reported ``failed`` ("did not finish importing within 10 s") and the
  command goes on without it.

Isolation: the plugins' imports and registration hooks run in a daemon worker thread, with file
descriptor 1 pointed at 2 (and ``sys.stdout`` at ``sys.stderr``) meanwhile, so what the plugin
writes cannot reach a command's output, and whatever it raises (``SystemExit``, a
``KeyboardInterrupt`` it raises itself: the user's Ctrl-C arrives in the main thread) is that
plugin's failure. A plugin whose import needs the main thread (``signal.signal`` at import) is
imported again in the main thread, under the same time limit (``SIGALRM``), so its module's code
before that line runs twice (its report says so when it fails). The modules an abandoned import
was in the middle of are ``None`` in ``sys.modules`` after: a later plugin importing one fails at
once instead of waiting on it again. What cannot be stopped in-process: ``os._exit`` at import ends
the process, and a plugin left running past its timeout keeps running in the background
(``seamkit plugins --check`` runs its checks in child processes and names such a plugin).
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import importlib
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pluggy

from seamkit._hookspecs import KIND_BY_HOOK, PROJECT, SeamkitHookSpecs
from seamkit._plugins.guard import (
    COMPONENT_IMPORT_TIMEOUT_S,
    THREAD_NAME,
    Overran,
    abandon_imports,
    error_text,
    import_error,
    import_timeout,
    main_thread_deadline,
    needs_main_thread,
    overran_in_main,
    plugin_output_to_stderr,
    run_guarded,
)
from seamkit.errors import AmbiguousComponent, ComponentNotFound, ConfigError, ConfigIssue, PluginError

__all__ = ["ComponentSpec", "PluginReport", "Registry", "get_registry", "load_registry", "reset_registry",
           "load_object", "load_plugin_object", "run_command_hook", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "seamkit"
#: a component name, matched whole (``fullmatch``: ``$`` would let a final newline through)
_NAME = re.compile(r"[a-z][a-z0-9_-]*")


def load_object(path: str) -> Any:
    """Import ``"package.module:attr"`` (``attr`` may be dotted). Raises ``ImportError`` or
    ``AttributeError`` naming the path (with the closest name the module has, for a typo)."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise ImportError(f"{path!r} is not a 'module:attr' path")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            names = [n for n in dir(obj) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise AttributeError(f"{path!r}: module {module!r} has no attribute {attr!r}{hint}") from None
    return obj


def load_plugin_object(path: str) -> Any:
    """:func:`load_object` for a plugin's ``"module:attr"``, guarded like a plugin's import at load: in
    a worker thread, so that an import that has not finished after
    :data:`COMPONENT_IMPORT_TIMEOUT_S` seconds (or ``SEAMKIT_PLUGIN_IMPORT_TIMEOUT``, when
    longer: a component's module may import a heavy SDK, a registration module should not), or
    that raises ``SystemExit`` or ``KeyboardInterrupt`` (the plugin's: the user's Ctrl-C arrives
    in the main thread), raises ``ImportError`` saying so, which every caller reports as that
    component's failure (``validate``, ``run``, :meth:`ComponentSpec.build`). Its output is left
    where it goes: this runs while a program may be writing (a server building an agent)."""
    loaded = sys.modules.get(path.partition(":")[0])
    if loaded is not None and not getattr(getattr(loaded, "__spec__", None), "_initializing", False):
        return load_object(path)  # imported already: no plugin code runs
    timeout = max(import_timeout(), COMPONENT_IMPORT_TIMEOUT_S)
    outcome = run_guarded(lambda: load_object(path), timeout, redirect=False)
    if outcome is None:
        raise ImportError(f"{path!r} did not finish importing within {timeout:g} s (it blocks at import: a network "
                          "call, a sleep; SEAMKIT_PLUGIN_IMPORT_TIMEOUT sets the limit)")
    value, exc = outcome
    if exc is None:
        return value
    if needs_main_thread(exc):
        with main_thread_deadline(timeout) as expired:
            with contextlib.suppress(Overran):
                return load_object(path)
        if expired():
            raise ImportError(f"{path!r} did not finish importing within {timeout:g} s in the main thread (it "
                              "blocks at import; SEAMKIT_PLUGIN_IMPORT_TIMEOUT sets the limit)")
    if isinstance(exc, Exception):
        raise exc
    raise ImportError(f"importing {path!r} raised {type(exc).__name__}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class ComponentSpec:
    """One registered component: its ``kind`` (``provider``, ``store``, ``tool``, ...), ``name``,
    lazy ``factory`` and ``config`` (objects or ``"module:attr"`` paths), and who registered it
    (``plugin`` entry-point name, ``distribution``, ``version``). ``toolset``: a tool component
    whose factory returns a :class:`~seamkit._ports.ToolsetPort` (tools named only once built)."""

    kind: str
    name: str
    factory: str | Callable[..., Any]
    config: str | type | None
    description: str
    plugin: str
    distribution: str
    version: str
    toolset: bool = False

    def config_model(self) -> type | None:
        """The pydantic model class validating this component's parameters (imported now, see
        :func:`load_plugin_object`)."""
        c = self.config
        return load_plugin_object(c) if isinstance(c, str) else c

    def factory_callable(self) -> Callable[..., Any]:
        """The factory (imported now, see :func:`load_plugin_object`)."""
        f = self.factory
        return load_plugin_object(f) if isinstance(f, str) else f

    def build(self, params: Mapping[str, Any] | None = None) -> Any:
        """Validate ``params`` with the config model and call the factory.

        Raises :class:`~seamkit.errors.ConfigError` for invalid parameters and
        :class:`~seamkit.errors.PluginError` when the component's module cannot be imported, its
        factory raises, or what it builds does not satisfy the port of its kind (a provider the
        model port, a tool the tool port...; see :mod:`seamkit._plugins.ports_check`), naming
        each missing or wrong member.
        """
        params = dict(params or {})
        try:
            model = self.config_model()
            factory = self.factory_callable()
        except Exception as exc:
            raise PluginError(
                f"{self.kind} {self.name!r} from {self.distribution} {self.version} cannot be loaded: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if model is None:
            if params:
                raise ConfigError([ConfigIssue(f"{self.kind} {self.name!r} takes no parameters, got "
                                               f"{', '.join(sorted(params))}")])
            return self._call(factory)
        import pydantic

        try:
            cfg = model.model_validate(params)  # type: ignore[attr-defined]
        except pydantic.ValidationError as exc:
            raise ConfigError(
                [ConfigIssue(e["msg"], ".".join(str(p) for p in e["loc"])) for e in exc.errors()]
            ) from None
        return self._call(factory, cfg)

    def _call(self, factory: Callable[..., Any], *args: Any) -> Any:
        try:
            built = factory(*args)
        except (ConfigError, PluginError):
            raise
        except (Exception, SystemExit) as exc:  # sys.exit in a factory must not end the host silently
            raise PluginError(
                f"{self.kind} {self.name!r} from {self.distribution} {self.version} failed to build: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        from seamkit._plugins.ports_check import kind_port, port_problems

        port = kind_port(self.kind)
        if port is not None and (problems := port_problems(built, port)):
            raise PluginError(
                f"{self.kind} {self.name!r} from {self.distribution} {self.version} built "
                f"{type(built).__name__}, which does not satisfy {port.label}: {'; '.join(problems)}"
            )
        return built


@dataclass(frozen=True, slots=True)
class PluginReport:
    """How loading one plugin went: ``status`` ``ok`` or ``failed`` (with ``error``), and the
    ``(kind, name)`` pairs it registered."""

    plugin: str
    distribution: str
    version: str
    status: Literal["ok", "failed"]
    error: str | None = None
    components: tuple[tuple[str, str], ...] = ()


@dataclass
class Registry:
    """Loaded plugins and their components. Build it with :func:`load_registry`; tests may add
    plugins with :meth:`register_plugin`."""

    pm: pluggy.PluginManager = field(default_factory=lambda: _new_pm())
    components: dict[str, dict[str, list[ComponentSpec]]] = field(default_factory=dict)
    reports: list[PluginReport] = field(default_factory=list)
    strict: bool = False
    _plugins: dict[str, tuple[object, str, str]] = field(default_factory=dict)
    #: every plugin object tried, with its report: one object named twice is registered once
    _tried: list[tuple[object, PluginReport]] = field(default_factory=list)
    #: ``(plugin, distribution)`` of the plugins imported a second time, in the main thread (their
    #: module's code before the line needing it ran twice; ``plugins --check`` notes it)
    imported_twice: set[tuple[str, str]] = field(default_factory=set)

    # -- loading ---------------------------------------------------------------------------

    def register_plugin(
        self, plugin: object, name: str, *, distribution: str = "(local)", version: str = ""
    ) -> PluginReport:
        """Register a plugin object (usually a module) and run its registration hooks.

        Returns its report. A plugin whose hook raises, or that implements a hook seamkit does not
        define, is unregistered and reported ``failed``; under ``strict`` it raises
        :class:`~seamkit.errors.PluginError`. A plugin object that was registered (or tried) before,
        under any name, is not registered again: its first report is returned.
        """
        for tried, first in self._tried:
            if tried is plugin:
                return first
        report = self._register(plugin, name, distribution, version)
        self._tried.append((plugin, report))
        return report

    def _register(self, plugin: object, name: str, distribution: str, version: str) -> PluginReport:
        added: list[ComponentSpec] = []
        try:
            self.pm.register(plugin, name=name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a plugin's SystemExit must not end the host
            return self._fail(name, distribution, version, error_text(exc))
        # in the loading worker thread (load_registry), its hooks run right there, guarded by it
        loader: _Batch | None = getattr(_LOADER, "batch", None)
        # set when the hooks ran past the timeout: a late register() is refused
        late = loader.stop if loader is not None else threading.Event()
        failure: BaseException | None = None
        try:
            unknown = self._unknown_hooks(plugin)
            if unknown:
                raise PluginError("; ".join(unknown))
            calls: list[tuple[Callable[..., Any], dict[str, Any]]] = []
            for hook_name, kind in KIND_BY_HOOK.items():
                for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                    if impl.plugin is not plugin:
                        continue
                    reg = self._register_callback(kind, name, distribution, version, added, late)
                    calls.append((impl.function, {"register": reg} if "register" in impl.argnames else {}))

            def run_hooks() -> None:
                for function, kwargs in calls:
                    function(**kwargs)

            if loader is not None:
                try:
                    run_hooks()
                except BaseException as exc:  # the plugin's: the user's Ctrl-C arrives in the main thread
                    failure = exc
                if late.is_set():  # the loader gave up on it meanwhile and reported it
                    raise _Abandoned()
                if failure is not None and needs_main_thread(failure):
                    raise _Abandoned(main_thread=True)
                outcome: tuple[Any, BaseException | None] | None = (None, failure)
            else:
                timeout = import_timeout()
                outcome = run_guarded(run_hooks, timeout, abandon=f"plugin {name!r}")
            if outcome is None:
                late.set()
                raise PluginError(f"its registration hooks did not finish within {timeout:g} s (they block: a "
                                  "network call, a sleep; SEAMKIT_PLUGIN_IMPORT_TIMEOUT sets the limit)")
            failure = outcome[1]  # raised in the worker thread: a KeyboardInterrupt there is the plugin's
            if failure is not None and needs_main_thread(failure):
                for spec in added:  # again, in the main thread
                    self.components[spec.kind][spec.name].remove(spec)
                added.clear()
                failure = None
                with plugin_output_to_stderr(), main_thread_deadline(timeout) as expired:
                    with contextlib.suppress(Overran):
                        run_hooks()
                if expired():
                    raise PluginError(f"its registration hooks did not finish within {timeout:g} s in the main "
                                      "thread (they block; SEAMKIT_PLUGIN_IMPORT_TIMEOUT sets the limit)")
        except _Abandoned:
            self.pm.unregister(plugin, name=name)
            for spec in added:
                self.components[spec.kind][spec.name].remove(spec)
            raise
        except KeyboardInterrupt:  # in the main thread: the user's Ctrl-C
            raise
        except BaseException as exc:  # SystemExit, GeneratorExit...: the plugin fails, the host goes on
            failure = exc
        if failure is not None:
            self.pm.unregister(plugin, name=name)
            for spec in added:
                self.components[spec.kind][spec.name].remove(spec)
            return self._fail(name, distribution, version, import_error(failure))
        self._plugins[name] = (plugin, distribution, version)
        report = PluginReport(name, distribution, version, "ok", None, tuple((s.kind, s.name) for s in added))
        self.reports.append(report)
        return report

    def unregister_plugin(self, name: str) -> None:
        """Remove a plugin and every component it registered."""
        plugin, _, _ = self._plugins.pop(name)
        self.pm.unregister(plugin, name=name)
        self._tried = [(p, r) for p, r in self._tried if p is not plugin]
        for by_name in self.components.values():
            for specs in by_name.values():
                specs[:] = [s for s in specs if s.plugin != name]
        self.reports = [r for r in self.reports if r.plugin != name]

    def _fail(self, name: str, distribution: str, version: str, error: str) -> PluginReport:
        if self.strict:
            raise PluginError(f"plugin {name!r} ({distribution} {version}) failed: {error}")
        report = PluginReport(name, distribution, version, "failed", error)
        self.reports.append(report)
        return report

    def _unknown_hooks(self, plugin: object) -> list[str]:
        known = set(KIND_BY_HOOK) | {"seamkit_register_commands"}
        problems = []
        for caller in self.pm.get_hookcallers(plugin) or ():
            if caller.name not in known:
                close = difflib.get_close_matches(caller.name, sorted(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                problems.append(f"unknown hook {caller.name!r}{hint}")
        return problems

    def _register_callback(
        self, kind: str, plugin: str, distribution: str, version: str, added: list[ComponentSpec],
        late: threading.Event | None = None,
    ) -> Callable[..., None]:
        def register(
            name: str,
            factory: str | Callable[..., Any],
            *,
            config: str | type | None = None,
            description: str = "",
            toolset: bool = False,
        ) -> None:
            if late is not None and late.is_set():
                raise PluginError(f"{kind} {name!r}: registered after the plugin's hooks timed out")
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise ValueError(f"invalid {kind} name {name!r}: use lower-case letters, digits, '_' and '-'")
            if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
                raise ValueError(f"{kind} {name!r}: factory must be a callable or a 'module:attr' path")
            specs = self.components.setdefault(kind, {}).setdefault(name, [])
            if any(s.distribution == distribution and s.plugin == plugin for s in specs):
                raise ValueError(f"{kind} {name!r} registered twice by {plugin}")
            if toolset and kind != "tool":
                raise ValueError(f"{kind} {name!r}: only a tool can be a toolset")
            spec = ComponentSpec(kind, name, factory, config, description, plugin, distribution, version,
                                 bool(toolset))
            specs.append(spec)
            added.append(spec)

        return register

    # -- lookup ----------------------------------------------------------------------------

    def names(self, kind: str) -> list[str]:
        """Names registered for ``kind``, sorted."""
        return sorted(n for n, specs in self.components.get(kind, {}).items() if specs)

    def resolve(self, kind: str, name: str, distribution: str | None = None) -> ComponentSpec:
        """The component ``kind``/``name``. Raises :class:`~seamkit.errors.ComponentNotFound`
        (with close names) or :class:`~seamkit.errors.AmbiguousComponent` when two distributions
        register it and ``distribution`` does not pick one."""
        specs = self.components.get(kind, {}).get(name) or []
        if distribution is not None:
            specs = [s for s in specs if s.distribution == distribution]
        if not specs:
            known = self.names(kind)
            close = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
            if distribution is not None and name in known:
                raise ComponentNotFound(kind, f"{name} (from {distribution})", known, close)
            raise ComponentNotFound(kind, name, known, close)
        if len(specs) > 1:
            raise AmbiguousComponent(kind, name, [s.distribution for s in specs])
        return specs[0]

    def build(self, kind: str, name: str, params: Mapping[str, Any] | None = None,
              distribution: str | None = None) -> Any:
        """Resolve and build a component (see :meth:`ComponentSpec.build`)."""
        return self.resolve(kind, name, distribution).build(params)

    def all_components(self) -> list[ComponentSpec]:
        return [s for by_name in self.components.values() for specs in by_name.values() for s in specs]

    def command_hooks(self) -> list[tuple[str, str, str, Callable[..., Any]]]:
        """``(plugin, distribution, version, hook)`` for every loaded plugin that adds CLI commands
        (implements ``seamkit_register_commands``)."""
        out = []
        for impl in self.pm.hook.seamkit_register_commands.get_hookimpls():
            name = self.pm.get_name(impl.plugin) or "?"
            _, dist, ver = self._plugins.get(name, (None, "?", ""))
            out.append((name, dist, ver, impl.function))
        return out

    def add_commands(self, subparsers: Any) -> list[PluginReport]:
        """Let plugins add CLI sub-commands to ``subparsers`` (an argparse sub-parsers action).

        A plugin whose hook raises (any exception but ``KeyboardInterrupt``; a command named like
        one already there, built-in or another plugin's, is such an error: the first one wins) has
        none of its commands added, is reported ``failed`` in :attr:`reports` (its components stay
        registered) and is returned; under ``strict`` it raises :class:`~seamkit.errors.PluginError`.
        """
        failures = []
        for impl in self.pm.hook.seamkit_register_commands.get_hookimpls():
            name = self.pm.get_name(impl.plugin) or "?"
            error = run_command_hook(impl.function, subparsers)
            if error is None:
                continue
            _, dist, ver = self._plugins.get(name, (None, "?", ""))
            if self.strict:
                raise PluginError(f"plugin {name!r} failed adding commands: {error}")
            failure = PluginReport(name, dist, ver, "failed", f"commands: {error}")
            failures.append(failure)
            self.reports = [dataclasses.replace(r, status="failed", error=failure.error)
                            if r.plugin == name and r.distribution == dist else r for r in self.reports]
        return failures


def run_command_hook(hook: Callable[..., Any], subparsers: Any) -> str | None:
    """Run a plugin's ``seamkit_register_commands`` hook on ``subparsers``; ``None`` when it
    succeeds, else the error (secrets masked), with every command it added taken out again. Every
    command runs these hooks, so they are guarded like a plugin's import: in a worker thread, at most
    ``SEAMKIT_PLUGIN_IMPORT_TIMEOUT`` seconds, whatever they raise (``KeyboardInterrupt`` included)
    being the plugin's failure; a hook needing the main thread runs again there."""
    # argparse keeps the sub-commands in these two (anything else given here is left as it is)
    name_map = getattr(subparsers, "_name_parser_map", None)
    help_list = getattr(subparsers, "_choices_actions", None)
    names = dict(name_map) if isinstance(name_map, dict) else None
    helps = list(help_list) if isinstance(help_list, list) else None

    def undo() -> None:
        if names is not None and isinstance(name_map, dict):
            name_map.clear()
            name_map.update(names)
        if helps is not None and isinstance(help_list, list):
            help_list[:] = helps

    timeout = import_timeout()
    owner = getattr(hook, "__module__", None) or "?"
    outcome = run_guarded(lambda: hook(cli=subparsers), timeout, abandon=f"the commands of {owner}")
    if outcome is None:
        undo()
        return (f"its seamkit_register_commands hook did not finish within {timeout:g} s (it blocks; "
                "SEAMKIT_PLUGIN_IMPORT_TIMEOUT sets the limit)")
    failure = outcome[1]
    if failure is not None and needs_main_thread(failure):
        undo()
        try:
            with plugin_output_to_stderr(), main_thread_deadline(timeout) as expired:
                with contextlib.suppress(Overran):
                    hook(cli=subparsers)
            if expired():
                undo()
                return (f"its seamkit_register_commands hook did not finish within {timeout:g} s in the main "
                        "thread (it blocks; SEAMKIT_PLUGIN_IMPORT_TIMEOUT sets the limit)")
            failure = None
        except KeyboardInterrupt:  # in the main thread: the user's
            raise
        except BaseException as exc:
            failure = exc
    if failure is not None:  # argparse's "conflicting subparser" included: the commands already there win
        undo()
        return import_error(failure)
    return None


class _Abandoned(Exception):
    """Raised out of a registration in the loading worker thread: the loader gave up on this
    plugin (it is reported already), or (``main_thread``) its hooks need the main thread."""

    def __init__(self, *, main_thread: bool = False) -> None:
        super().__init__()
        self.main_thread = main_thread


#: ``batch``: the :class:`_Batch` the current thread is loading (only in the loading worker thread)
_LOADER = threading.local()


class _Batch:
    """Entry points loaded one after another in one worker thread, from ``first``; the main
    thread reads where it is (``index``, ``phase``, since ``started``) under ``lock`` to give up on
    a plugin that overran. One thread for all plugins: a thread handoff per plugin costs more than
    the loading itself on a busy machine."""

    def __init__(self, eps: list[tuple[Any, str, str]], first: int) -> None:
        self.eps = eps
        self.index = first
        self.phase = "importing"
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.stop = threading.Event()  # the main thread gave up on ``index``: touch nothing more
        self.done = threading.Event()
        self.deferred: list[int] = []  # entry points needing the main thread, loaded there after
        self.error: BaseException | None = None  # strict mode's PluginError, raised in the main thread

    def run(self, reg: Registry) -> None:
        _LOADER.batch = self
        try:
            for j in range(self.index, len(self.eps)):
                with self.lock:
                    if self.stop.is_set():
                        return
                    self.index, self.phase, self.started = j, "importing", time.monotonic()
                ep, dist_name, version = self.eps[j]
                try:
                    plugin, exc = ep.load(), None
                except BaseException as raised:  # anything, KeyboardInterrupt included: the plugin's
                    plugin, exc = None, raised
                with self.lock:
                    if self.stop.is_set():
                        return
                    self.phase = "registering"
                if exc is not None:
                    if needs_main_thread(exc):
                        self.deferred.append(j)
                    else:
                        reg._fail(ep.name, dist_name, version, f"import failed: {import_error(exc)}")
                    continue
                try:
                    reg.register_plugin(plugin, ep.name, distribution=dist_name, version=version)
                except _Abandoned as abandoned:
                    if abandoned.main_thread:
                        self.deferred.append(j)
        except BaseException as exc:  # strict mode's PluginError
            self.error = exc
        finally:
            _LOADER.batch = None
            self.done.set()

    def overran(self, timeout_s: float) -> float:
        """Seconds left for the plugin being loaded; ``0`` when it overran: then it is given up on."""
        with self.lock:
            left = self.started + timeout_s - time.monotonic()
            if left <= 0:
                self.stop.set()
            return max(left, 0.0)


def _load_all(reg: Registry, eps: list[tuple[Any, str, str]]) -> None:
    """Import and register ``eps`` (``(entry point, distribution name, version)``) one after
    another in a daemon worker thread, their output sent to stderr (:func:`plugin_output_to_stderr`).
    A plugin that has not finished importing, or registering, within :func:`import_timeout` is
    reported ``failed`` and left running; the next ones are loaded in a fresh worker. Those needing
    the main thread are loaded there at the end."""
    timeout = import_timeout()
    first = 0
    deferred: list[int] = []
    while first < len(eps):
        batch = _Batch(eps, first)
        worker = threading.Thread(target=batch.run, args=(reg,), name=THREAD_NAME, daemon=True)
        with plugin_output_to_stderr():
            worker.start()
            while not batch.done.wait(batch.overran(timeout)):
                if batch.stop.is_set():
                    break
        deferred += batch.deferred
        if batch.error is not None:
            raise batch.error
        if not batch.stop.is_set():
            break
        ep, dist_name, version = eps[batch.index]
        abandon_imports(worker, f"plugin {ep.name!r}")
        what = ("it did not finish importing" if batch.phase == "importing"
                else "its registration hooks did not finish")
        reg._fail(ep.name, dist_name, version, f"{what} within {timeout:g} s (it blocks: a network call, a sleep; "
                  "it was left running in the background; SEAMKIT_PLUGIN_IMPORT_TIMEOUT sets the limit)")
        first = batch.index + 1
    for j in deferred:  # signal.signal at import...: again, in the main thread, with a deadline
        ep, dist_name, version = eps[j]
        try:
            with plugin_output_to_stderr(), main_thread_deadline(timeout) as expired:
                plugin = ep.load()
        except KeyboardInterrupt:  # in the main thread: the user's
            raise
        except BaseException as exc:
            reg._fail(ep.name, dist_name, version, f"{overran_in_main(timeout)}{_TWICE}" if expired()
                      else f"import failed: {import_error(exc)}{_TWICE}")
            continue
        if expired():  # it caught the deadline's exception and returned: it is not to be trusted
            reg._fail(ep.name, dist_name, version, f"{overran_in_main(timeout)}{_TWICE}")
            continue
        reg.imported_twice.add((ep.name, dist_name))
        reg.register_plugin(plugin, ep.name, distribution=dist_name, version=version)


#: said of a plugin imported again in the main thread (it cannot be undone, only told)
_TWICE = ("; it was imported twice (first in a worker thread, up to where it needed the main thread, then in the "
          "main thread): what its module does before that line (files written, atexit handlers, threads) ran twice")


def _new_pm() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(SeamkitHookSpecs)
    return pm


def _name_list(variable: str) -> set[str] | None:
    """The comma-separated names in the environment variable ``variable``; ``None`` when unset."""
    raw = os.environ.get(variable)
    if raw is None:
        return None
    return {p.strip() for p in raw.split(",") if p.strip()}


def _canonical(name: str) -> str:
    """A distribution name normalised as PEP 503 ("Normalized Names") says: runs of ``-``, ``_``
    and ``.`` become one ``-``, lowercased."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _listed(names: set[str], entry_point: str, distribution: str) -> bool:
    """Whether an allow or deny list names an entry point, by its name or its distribution's."""
    return entry_point in names or _canonical(distribution) in {_canonical(n) for n in names}


def _allow_list() -> set[str] | None:
    return _name_list("SEAMKIT_LOAD_PLUGINS")


def _deny_list() -> set[str]:
    return _name_list("SEAMKIT_DISABLE_PLUGINS") or set()


def _entry_point_facts(ep: Any) -> tuple[str, str, str | None]:
    """``(distribution name, version, value)`` of an entry point; ``value`` (``"module:attr"``)
    is ``None`` when the entry point does not say."""
    dist = ep.dist
    dist_name = dist.metadata["Name"] if dist is not None else "(unknown)"
    version = dist.version if dist is not None else ""
    value = getattr(ep, "value", None)
    return dist_name, version, "".join(value.split()) if isinstance(value, str) else None


def load_registry(*, strict: bool | None = None, entry_points: Iterable[Any] | None = None) -> Registry:
    """Discover and load every plugin of the entry-point group ``seamkit``.

    ``strict`` defaults to ``SEAMKIT_STRICT_PLUGINS=1``. A plugin that fails to import or whose
    hook raises is reported in ``Registry.reports`` and skipped (strict: raises
    :class:`~seamkit.errors.PluginError`). Which plugins load: see the module doc
    (``SEAMKIT_LOAD_PLUGINS``, ``SEAMKIT_DISABLE_PLUGINS``); an entry point naming an object
    loaded already (same ``module:attr``, or the same object) is skipped without a report.
    """
    if strict is None:
        strict = os.environ.get("SEAMKIT_STRICT_PLUGINS", "").strip().lower() in ("1", "true", "yes")
    reg = Registry(strict=strict)
    allow, deny = _allow_list(), _deny_list()
    if entry_points is None:
        from importlib.metadata import entry_points as _eps

        entry_points = _eps(group=ENTRY_POINT_GROUP)
    eps = list(entry_points)
    # a denied entry point's object stays out under any other name too
    denied_values = {v for ep in eps for d, _, v in [_entry_point_facts(ep)]
                     if v is not None and _listed(deny, ep.name, d)}
    seen: set[tuple[str, str]] = set()
    seen_values: set[str] = set()
    to_load: list[tuple[Any, str, str]] = []
    for ep in eps:
        dist_name, version, value = _entry_point_facts(ep)
        key = (ep.name, dist_name)
        if key in seen or value in seen_values:  # found twice on sys.path, or one module named twice
            continue
        seen.add(key)
        if allow is not None and not _listed(allow, ep.name, dist_name):
            continue
        if _listed(deny, ep.name, dist_name) or value in denied_values:
            continue
        if value is not None:
            seen_values.add(value)
        to_load.append((ep, dist_name, version))
    # a plugin raising anything (SystemExit, KeyboardInterrupt) or blocking at import must not
    # end or hang every command
    _load_all(reg, to_load)
    return reg


_REGISTRY: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry, loaded on first use."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = load_registry()
    return _REGISTRY


def reset_registry(registry: Registry | None = None) -> None:
    """Replace (or forget, with ``None``) the process-wide registry; for tests."""
    global _REGISTRY
    _REGISTRY = registry
