"""``seamkit plugins`` (list, ``--check``, ``show``) and ``seamkit new-plugin``. Each command takes
the parsed arguments and returns an exit code; errors propagate to :func:`seamkit._cli.main.main`,
which prints them and picks the exit code."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seamkit._cli.commands import _registry
from seamkit._cli.outcomes import EXIT_FAILED, EXIT_OK, UsageError

if TYPE_CHECKING:
    from seamkit._plugins.check import ComponentCheck
    from seamkit._plugins.check_isolated import CheckJob, RegistrySnapshot
    from seamkit._plugins.registry import Registry

__all__ = ["cmd_new_plugin", "cmd_plugins", "cmd_plugins_show", "plugin_rows"]

COLUMNS = ("distribution", "version", "kind", "name", "status", "error")
#: ``--check``: seconds a component's import and factory may take (a blocking factory must not hang
#: CI), unless ``SEAMKIT_CHECK_TIMEOUT`` says otherwise
CHECK_TIMEOUT_S = 60.0
#: the kinds ``--check KIND/NAME`` takes for a plugin that adds CLI commands
COMMAND_KINDS = ("command", "plugin")


def check_timeout() -> float:
    """``SEAMKIT_CHECK_TIMEOUT`` (seconds, a number > 0), else :data:`CHECK_TIMEOUT_S`."""
    import math
    import os

    try:
        value = float(os.environ.get("SEAMKIT_CHECK_TIMEOUT", "").strip())
    except ValueError:
        return CHECK_TIMEOUT_S
    return value if value > 0 and math.isfinite(value) else CHECK_TIMEOUT_S


def plugin_rows(registry: Registry | RegistrySnapshot) -> list[dict[str, Any]]:
    """One row per installed component, one per plugin that failed (``kind`` ``plugin``, ``name``
    its entry-point name) and one per plugin that loaded but registered no component. Keys:
    ``distribution``, ``version``, ``kind``, ``name``, ``status`` (``ok``/``failed``), ``error``
    (``None`` when ok), ``plugin`` (entry-point name) and ``description``. A component that another
    distribution registers too is ``ok`` with an ``error`` saying it is ambiguous (a bare ``use:``
    of it is refused). A plugin whose commands failed keeps the rows of its components."""
    rows: list[dict[str, Any]] = []
    for report in registry.reports:
        base = {"distribution": report.distribution, "version": report.version, "plugin": report.plugin}
        if report.status == "failed" or not report.components:
            rows.append({**base, "kind": "plugin", "name": report.plugin, "status": report.status,
                         "error": report.error, "description": ""})
        for kind, name in report.components:
            desc = ""
            specs = registry.components.get(kind, {}).get(name, [])
            for spec in specs:
                if spec.plugin == report.plugin and spec.distribution == report.distribution:
                    desc = spec.description
            others = sorted({s.distribution for s in specs if s.distribution != report.distribution})
            error = (f"ambiguous: {', '.join(others)} also registers {kind} {name!r}; 'use: {name}' is refused "
                     f"without 'from: DISTRIBUTION'") if others else None
            rows.append({**base, "kind": kind, "name": name, "status": "ok", "error": error, "description": desc})
    rows.sort(key=lambda r: (r["status"] == "ok", r["distribution"], r["kind"], r["name"]))
    return rows


class _Checker:
    """Runs ``--check``'s checks: in child processes where the platform allows
    (:mod:`seamkit._plugins.check_isolated`: this process then imports no plugin at all), else here."""

    def __init__(self) -> None:
        from seamkit._plugins.check_isolated import load_isolated, supported

        self._child: Any = None
        self._excluded: list[str] = []
        self.registry: Registry | RegistrySnapshot
        if supported():
            try:
                self.registry, self._child, self._excluded = load_isolated()
            except RuntimeError as exc:  # no child could load the plugins: say why
                raise UsageError(str(exc)) from None
            self.isolated = True
        else:
            self.registry = _registry()
            self.isolated = False

    def run(self, jobs: list[CheckJob]) -> list[ComponentCheck]:
        from seamkit._plugins.check_isolated import check_isolated

        if self.isolated:
            child, self._child = self._child, None
            return check_isolated(jobs, timeout_s=check_timeout(), child=child, excluded=self._excluded)
        from seamkit._plugins.check import check_commands, check_component

        results = []
        registry = self.registry
        for job in jobs:
            if job.kind == "command":
                hook = next(h for h in registry.command_hooks() if (h[0], h[1]) == (job.plugin, job.distribution))
                results.append(check_commands(*hook))
                continue
            specs = registry.components[job.kind][job.name]
            spec = next(s for s in specs if s.plugin == job.plugin and s.distribution == job.distribution)
            results.append(check_component(spec, clashes=[s for s in specs if s is not spec],
                                           timeout_s=check_timeout()))
        return results

    def close(self) -> None:
        if self._child is not None:
            self._child.stop()
            self._child = None


def cmd_plugins(args: argparse.Namespace) -> int:
    """``seamkit plugins [--json] [--check [NAME]]``: installed components and plugin load reports
    (failed ones with their error); exit 1 when a plugin failed to load. ``--check NAME`` checks one
    component (``KIND/NAME``: of that kind); ``--check`` alone checks them all, each in a child
    process. Exit 1 when a check finds a problem. With ``--json``, a usage error (an unknown name,
    exit 2) is a JSON object on stdout too (``json_usage_error``), besides the message on stderr."""
    from seamkit._cli.common import CHECK_ALL
    from seamkit._cli.plugins_show import check_target, json_usage_error

    with json_usage_error(args.json):
        if args.check is None:
            return _list_plugins(_registry(), args)
        if args.check != CHECK_ALL:
            check_target(args.check)  # before starting any child process
        checker = _Checker()
        try:
            if args.check != CHECK_ALL:
                return _check_one(checker, args.check, as_json=args.json)
            return _list_plugins(checker.registry, args, checker)
        finally:
            checker.close()


def _list_plugins(registry: Registry | RegistrySnapshot, args: argparse.Namespace,
                  checker: _Checker | None = None) -> int:
    rows = plugin_rows(registry)
    failed = any(r["status"] == "failed" and r["kind"] == "plugin" for r in rows)
    if checker is not None:
        from seamkit._plugins.check_isolated import CheckJob

        commands = {(p, d) for p, d, _, _ in registry.command_hooks()}
        jobs: list[tuple[dict[str, Any], CheckJob]] = []
        for row in rows:
            if row["kind"] == "plugin":
                if (row["plugin"], row["distribution"]) in commands:  # its hook runs on a throwaway parser
                    jobs.append((row, CheckJob("command", row["plugin"], row["distribution"], row["version"],
                                               row["plugin"])))
                    continue
                row["check"] = "failed" if row["status"] == "failed" else "ok"
                row["problems"] = [row["error"]] if row["error"] else []
                row["notes"] = []
                continue
            jobs.append((row, CheckJob(row["kind"], row["name"], row["distribution"], row["version"], row["plugin"])))
        for (row, _), result in zip(jobs, checker.run([job for _, job in jobs]), strict=True):
            row["check"] = result.status
            row["problems"] = list(result.problems)
            row["notes"] = list(result.notes)  # private imports, processes left running...: shown, not failed
        for row in rows:  # the keys of --check NAME's rows too (CHECK_KEYS)
            row["ok"] = row["check"] != "failed"
            row["checked"] = row["check"] != "unchecked"
        failed = any(r["check"] == "failed" for r in rows)
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return EXIT_FAILED if failed else EXIT_OK
    import os

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 200)
    if not rows:
        limits = [f"{v}={os.environ[v]!r}" for v in ("SEAMKIT_LOAD_PLUGINS", "SEAMKIT_DISABLE_PLUGINS")
                  if v in os.environ]
        console.print("no plugins loaded" + (f" ({', '.join(limits)} in force)" if limits else ""))
        return EXIT_OK
    # the description says what each component is; errors (rare, long) go under the table, whole
    columns = (*COLUMNS[:5], "description") if args.check is None else (*COLUMNS[:5], "check", "problems")
    table = Table(*columns, show_lines=False, box=None, pad_edge=False)
    for r in rows:
        status = "[green]ok[/]" if r["status"] == "ok" else "[bold red]failed[/]"
        cells = [escape(r["distribution"]), escape(r["version"]), r["kind"], escape(r["name"]), status]
        if args.check is None:
            cells.append(escape((r["description"] or "").strip().split("\n")[0]
                                or ("failed to load (see below)" if r["status"] == "failed" else "")))
        else:
            cells.append({"ok": "[green]ok[/]", "unchecked": "[yellow]unchecked[/]"}.get(r["check"],
                                                                                         "[bold red]failed[/]"))
            cells.append(escape("; ".join(r["problems"])))
        table.add_row(*cells)
    console.print(table)
    if args.check is None:
        for r in rows:  # under the table: an error is as long as it needs
            if r["error"]:
                what = "plugin" if r["kind"] == "plugin" else r["kind"]
                console.print(escape(f"error: {what} {r['name']!r} ({r['distribution']} {r['version']}): "
                                     f"{r['error']}"), soft_wrap=True)
    for r in rows:  # under the table: a note is as long as it needs
        for note in r.get("notes", ()):
            console.print(escape(f"note: {r['kind']} {r['name']!r} ({r['distribution']}): {note}"), soft_wrap=True)
    return EXIT_FAILED if failed else EXIT_OK


def _check_one(checker: _Checker, target: str, *, as_json: bool) -> int:
    """``seamkit plugins --check NAME``: check every component called NAME (of the kind KIND for
    ``KIND/NAME``), or report the plugin NAME that failed to load. Exit 1 on a problem; a name that
    matches nothing is a usage error (exit 2) with the close names."""
    import difflib

    from seamkit._plugins.check_isolated import CheckJob

    registry = checker.registry
    kind, sep, name = target.rpartition("/")
    kind = {"schema": "schema_adapter"}.get(kind, kind)  # `seamkit new plugin`'s word for the kind
    kinds = sorted(registry.components)
    commands = not sep or kind in COMMAND_KINDS
    if sep and kind not in kinds and not commands:
        raise UsageError(f"no component of kind {kind!r} is installed (kinds: {', '.join(kinds) or 'none'}; "
                         f"command/NAME or plugin/NAME: a plugin that adds commands)")
    specs = [s for s in registry.all_components() if s.name == name and (not sep or s.kind == kind)]
    hooks = [h for h in registry.command_hooks() if name in (h[0], h[1])] if commands else []
    with_hooks = {(h[0], h[1]) for h in hooks}
    failed = [r for r in registry.reports if r.status == "failed" and (name in (r.plugin, r.distribution))
              and (not sep or commands) and (r.plugin, r.distribution) not in with_hooks]
    if not specs and not failed and not hooks:
        known = sorted({s.name for s in registry.all_components() if not sep or s.kind == kind}
                       | ({r.plugin for r in registry.reports if r.status == "failed"}
                          | {h[0] for h in registry.command_hooks()} if commands else set()))
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        what = f"{kind} component" if sep and not commands else "command plugin" if sep else \
            "component, command plugin or failed plugin"
        raise UsageError(f"no {what} named {name!r} is installed{hint} (see 'seamkit plugins')")

    jobs = [CheckJob.of(s) for s in sorted(specs, key=lambda s: (s.kind, s.distribution))]
    jobs += [CheckJob("command", h[0], h[1], h[2], h[0]) for h in hooks]
    results = checker.run(jobs)
    if as_json:  # the rows of `--check --json` (every component), those of NAME
        listed = {(r["kind"], r["name"], r["distribution"]): r for r in plugin_rows(registry)}
        out: list[dict[str, Any]] = []
        for r in failed:
            row = dict(listed.get(("plugin", r.plugin, r.distribution)) or {
                "distribution": r.distribution, "version": r.version, "plugin": r.plugin, "kind": "plugin",
                "name": r.plugin, "status": "failed", "error": r.error, "description": ""})
            out.append({**row, "check": "failed", "problems": [f"the plugin failed to load: {r.error}"],
                        "notes": [], "ok": False, "checked": True})
        for c in results:
            kind = "plugin" if c.kind == "command" else c.kind  # a command plugin's row in the listing
            row = dict(listed.get((kind, c.name, c.distribution)) or {
                "distribution": c.distribution, "version": c.version, "plugin": c.plugin, "kind": kind,
                "name": c.name, "status": "ok", "error": None, "description": ""})
            out.append({**row, "check": c.status, "problems": list(c.problems), "notes": list(c.notes),
                        "ok": c.ok, "checked": c.checked})
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    else:
        from seamkit._cli.render import visible

        lines: list[str] = []
        for r in failed:
            version = f" {r.version}" if r.version else ""
            lines.append(f"plugin {r.plugin!r} ({r.distribution}{version}): failed to load: {r.error}")
        for c in results:
            if c.ok:
                lines.append(f"{c.label}: {c.status}")
            else:
                n = len(c.problems)
                lines.append(f"{c.label}: {n} problem{'s' if n != 1 else ''}")
                lines += [f"  - {p}" for p in c.problems]
            lines += [f"  note: {note}" for note in c.notes]
        sys.stdout.write("".join(visible(line) + "\n" for line in lines))
    return EXIT_FAILED if failed or any(not c.ok for c in results) else EXIT_OK


def cmd_new_plugin(args: argparse.Namespace) -> int:
    """``seamkit new plugin KIND NAME [--dir DIR]``: write a plugin distribution from the template
    of KIND (see :mod:`seamkit._cli.scaffold`)."""
    from seamkit._cli.scaffold import ScaffoldError, write_plugin

    parent = Path(args.dir)
    missing = next((p for p in reversed((parent, *parent.parents)) if not p.exists() and not p.is_symlink()), None)
    try:
        root = write_plugin(args.kind, args.name, parent)
    except ScaffoldError as exc:
        raise UsageError(str(exc)) from None
    if missing is not None:  # a typo in --dir must not go unnoticed
        sys.stderr.write(f"seamkit: note: --dir {args.dir}: {missing} did not exist; created it\n")
    # pip reads a bare "seamkit-x[test]" as a project name: a relative path needs its "./"
    shown = root.as_posix() if root.is_absolute() or root.as_posix().startswith(".") else f"./{root.as_posix()}"
    sys.stdout.write(
        f"created {shown}/: a {args.kind} plugin, component {args.name!r}\n"
        + _test_kit_step()
        + f"next: pip install -e '{shown}[test]' && pytest {shown}\n"
    )
    return EXIT_OK


def _test_kit_step() -> str:
    """A ``first:`` line when pytest-seamkit (the generated tests' kit, the ``[test]`` extra) is
    not installed: it is not on a package index yet, so ``pip install -e './x[test]'`` cannot find
    it; it comes from a seamkit checkout (this one's path, when seamkit runs from one)."""
    import importlib.util
    import shlex

    if importlib.util.find_spec("pytest_seamkit") is not None:
        return ""
    kit = Path(__file__).resolve().parents[3] / "testkit" / "pytest-seamkit"  # core/seamkit/_cli/ -> checkout
    where = shlex.quote(kit.as_posix()) if kit.is_dir() else "<seamkit checkout>/testkit/pytest-seamkit"
    return f"first: pip install -e {where}   (the test kit, pytest-seamkit, is not on a package index yet)\n"


def cmd_plugins_show(args: argparse.Namespace) -> int:
    """``seamkit plugins show NAME [--json]`` (see :mod:`seamkit._cli.plugins_show`)."""
    from seamkit._cli.plugins_show import cmd_plugins_show as show

    return show(args, _registry())
