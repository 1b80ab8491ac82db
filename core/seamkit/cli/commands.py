"""The built-in ``seamkit`` commands. Each takes the parsed arguments and returns an exit code;
errors propagate to :func:`seamkit.cli.main.main`, which prints them and picks the exit code."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seamkit.cli.main import EXIT_FAILED, EXIT_OK, BuildFailed, UsageError

if TYPE_CHECKING:
    from seamkit.agent.agent import Agent
    from seamkit.agent.result import AgentResult
    from seamkit.cli.render import EventSink
    from seamkit.composition import Composition
    from seamkit.plugins.registry import Registry

__all__ = ["cmd_plugins", "cmd_run", "cmd_schema", "cmd_validate", "plugin_rows"]


def _registry() -> Registry:
    from seamkit.plugins.registry import get_registry

    return get_registry()


def _existing_file(name: str) -> Path:
    path = Path(name)
    if not path.exists():
        raise UsageError(f"no such file: {name}")
    if not path.is_file():
        raise UsageError(f"not a file: {name}")
    return path


# -- run -------------------------------------------------------------------------------------------


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8, decoded with "surrogateescape"
        return False
    return True


def _read_task(task: str) -> str:
    """The task text: ``task`` itself, or stdin for ``-``. Raises :class:`UsageError` (exit 2) for
    an empty task or one that is not valid UTF-8."""
    if task == "-":
        if sys.stdin is None:
            raise UsageError("the task is '-' but there is no stdin to read it from")
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError:
            raise UsageError("the task read from stdin is not valid UTF-8") from None
        if not _is_utf8(text):
            raise UsageError("the task read from stdin is not valid UTF-8")
        if not text.strip():
            raise UsageError("the task read from stdin is empty")
        return text
    if not _is_utf8(task):
        raise UsageError("the task is not valid UTF-8")
    if not task.strip():
        raise UsageError("the task is empty")
    return task


def _check_variables(agent: Agent, variables: dict[str, str]) -> None:
    """Fail early (exit 2) when ``--var`` does not match the prompt template's variables."""
    from seamkit.agent.prompt import Prompt

    prompt = agent.prompt
    if isinstance(prompt, str):
        prompt = Prompt(prompt, id=agent.name)
    if prompt is None:
        if variables:
            raise UsageError(f"--var given ({', '.join(sorted(variables))}) but the agent has no prompt")
        return
    names = prompt.variables
    label = f"{prompt.id}@{prompt.version}"
    missing = sorted(names - variables.keys())
    if missing:
        what = "a variable" if len(missing) == 1 else "variables"
        raise UsageError(f"the prompt {label} needs {what} {', '.join(missing)}: pass "
                         f"{'it' if len(missing) == 1 else 'each'} with --var KEY=VALUE")
    extra = sorted(variables.keys() - names)
    if extra:
        has = f"its variables are {', '.join(sorted(names))}" if names else "it has no variables"
        raise UsageError(f"--var {', '.join(extra)}: the prompt {label} does not use "
                         f"{'it' if len(extra) == 1 else 'them'} ({has}); remove that --var")


async def _drive(agent: Agent, task: str, variables: dict[str, str], sink: EventSink) -> AgentResult | None:
    result: AgentResult | None = None
    try:
        async for event in agent.stream(task, variables=variables or None):
            sink.event(event)
            if event.kind == "run_finished":
                result = event.data["result"]
    finally:
        sink.close()
    return result


def cmd_run(args: argparse.Namespace) -> int:
    """``seamkit run FILE TASK [--json] [--var KEY=VALUE ...]``: exit 0 when the run completes,
    1 when it fails or stops without an answer (``max_steps``, ``cancelled``), 2 for a
    configuration problem (also one a component finds when built), 130 when interrupted. With
    ``--json`` a failed run ends with a ``run_failed`` line on stdout."""
    variables = dict(args.var)
    path = _existing_file(args.file)

    import asyncio

    from seamkit.cli.main import exit_code_for
    from seamkit.cli.render import HumanRenderer, JsonRenderer
    from seamkit.cli.scrub import scrub_output
    from seamkit.composition import ComponentBuildError, build_agent, load_composition

    registry = _registry()
    composition = load_composition(path, registry=registry)  # ConfigError: exit 2
    scrub_output(composition.secret_values())  # from here on, stdout and stderr mask the secrets
    try:
        agent = build_agent(composition, registry=registry)  # ConfigError: exit 2
    except ComponentBuildError as exc:  # valid, but a component failed to build: the run failed (exit 1)
        raise BuildFailed(exc.issues) from exc
    _check_variables(agent, variables)
    task = _read_task(args.task)
    secrets = composition.secret_values()
    json_sink = JsonRenderer(secrets=secrets) if args.json else None
    sink: EventSink = (json_sink if json_sink is not None
                       else HumanRenderer(typed=agent.output is not None, secrets=secrets))
    try:
        result = asyncio.run(_drive(agent, task, variables, sink))
    except (Exception, KeyboardInterrupt) as exc:
        if json_sink is not None:
            json_sink.failed(exc, exit_code_for(exc))
        raise
    if result is None:  # the stream ended without run_finished: should not happen
        sys.stderr.write("seamkit: error: the run ended without a result\n")
        return EXIT_FAILED
    if result.stop_reason != "completed":
        sys.stderr.write(f"seamkit: error: the run stopped without an answer ({result.stop_reason})\n")
        return EXIT_FAILED
    return EXIT_OK


# -- validate --------------------------------------------------------------------------------------


def describe(composition: Composition) -> str:
    """One line naming the agent, its model component, tools, middlewares and output kind (never
    their parameters, which may hold secrets)."""
    a = composition.agent
    tools = ", ".join(t.use for t in a.tools) or "none"
    parts = [f"agent {a.name or 'agent'!r}", f"model {a.model.use}", f"tools: {tools}"]
    if a.middlewares:
        parts.append(f"middlewares: {', '.join(m.use for m in a.middlewares)}")
    parts.append(f"output: {'typed (JSON Schema)' if a.output is not None else 'text'}")
    return ", ".join(parts)


def cmd_validate(args: argparse.Namespace) -> int:
    """``seamkit validate FILE``: prints ``ok: ...`` (exit 0); problems raise ``ConfigError`` (exit 2)."""
    path = _existing_file(args.file)
    from seamkit.cli.scrub import scrub_output
    from seamkit.composition import load_composition

    composition = load_composition(path, registry=_registry())
    scrub_output(composition.secret_values())
    sys.stdout.write(f"ok: {args.file}: {describe(composition)}\n")
    return EXIT_OK


# -- schema ----------------------------------------------------------------------------------------


def cmd_schema(args: argparse.Namespace) -> int:
    """``seamkit schema [--output FILE]``: the composition JSON Schema, every installed component's
    config included."""
    from seamkit.composition import composition_json_schema

    if args.output is not None and not args.output.strip():
        raise UsageError("--output needs a file name (omit it to print the schema on stdout)")
    schema = composition_json_schema(_registry())
    text = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    if args.output is not None:
        out = Path(args.output)
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        sys.stderr.write(f"seamkit: wrote the schema to {args.output}\n")
    else:
        sys.stdout.write(text)
    return EXIT_OK


# -- plugins ---------------------------------------------------------------------------------------

COLUMNS = ("distribution", "version", "kind", "name", "status", "error")


def plugin_rows(registry: Registry) -> list[dict[str, Any]]:
    """One row per installed component, one per plugin that failed (``kind`` ``plugin``, ``name``
    its entry-point name) and one per plugin that loaded but registered no component. Keys:
    ``distribution``, ``version``, ``kind``, ``name``, ``status`` (``ok``/``failed``), ``error``
    (``None`` when ok), ``plugin`` (entry-point name) and ``description``."""
    rows: list[dict[str, Any]] = []
    for report in registry.reports:
        base = {"distribution": report.distribution, "version": report.version, "plugin": report.plugin}
        if report.status == "failed" or not report.components:
            rows.append({**base, "kind": "plugin", "name": report.plugin, "status": report.status,
                         "error": report.error, "description": ""})
            continue
        for kind, name in report.components:
            desc = ""
            for spec in registry.components.get(kind, {}).get(name, []):
                if spec.plugin == report.plugin and spec.distribution == report.distribution:
                    desc = spec.description
            rows.append({**base, "kind": kind, "name": name, "status": "ok", "error": None, "description": desc})
    rows.sort(key=lambda r: (r["status"] == "ok", r["distribution"], r["kind"], r["name"]))
    return rows


def cmd_plugins(args: argparse.Namespace) -> int:
    """``seamkit plugins [--json]``: installed components and plugin load reports (failed ones with
    their error)."""
    rows = plugin_rows(_registry())
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 200)
    if not rows:
        console.print("no plugins installed")
        return EXIT_OK
    table = Table(*COLUMNS, show_lines=False, box=None, pad_edge=False)
    for r in rows:
        status = "[green]ok[/]" if r["status"] == "ok" else "[bold red]failed[/]"
        from rich.markup import escape

        table.add_row(
            escape(r["distribution"]), escape(r["version"]), r["kind"], escape(r["name"]), status,
            escape(r["error"] or ""),
        )
    console.print(table)
    return EXIT_OK
