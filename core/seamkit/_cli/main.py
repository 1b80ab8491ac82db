"""The seamkit command line: ``seamkit run | chat | init | validate | schema | plugins | new | ask`` (and
``resume``, ``runs``, ``stores``, plus plugin commands).

Built on seamkit's public API only. This module imports nothing heavy: pydantic, rich and the
agent machinery are imported by the command that needs them, so ``seamkit --help`` stays fast.

Streams: ``run`` writes the answer to **stdout**: for a free-text agent the model's text as it
streams, for an agent with a typed output only the final output as pretty JSON (the model's text
then streams to stderr, dimmed on a terminal), so ``seamkit run q.yaml task > answer.json`` is
valid JSON. Tool-call lines, the summary line, warnings and errors go to **stderr**. With
``--json``, stdout carries only JSON lines, one per stream event, and a failed run ends with a
``run_failed`` line (``run_id``, ``error: {type, message}``, ``exit_code``).

The secrets among the values a composition's ``${NAME}`` references took from the environment
(:meth:`~seamkit.composition.Composition.secret_values`) are replaced by ``***`` in everything
``run`` and ``validate`` write; other environment values are shown as they are.

Exit codes: ``0`` success; ``1`` the run failed (provider error, output that does not validate, a
component failing to build for a reason other than its configuration, ...); ``2`` usage or
configuration error (bad arguments, missing file, invalid composition, unknown component, a
component refusing its configuration when built, a request the model cannot take
(``UnsupportedFeature``, found before it is sent), strict plugin failure); ``3`` the run waits for a
person (approval, settling a tool call whose outcome is unknown, or, for an agent with
capabilities, the person's answer: a confirmation or a question, ``seamkit resume RUN --answer``);
``4`` a guardrail stopped the run
(a tripwire, :class:`~seamkit._guardrails.GuardrailTripped`: its checkpoint says which guardrail, at
which point and why; it cannot be resumed); ``130`` interrupted: Ctrl-C,
or the run's cancellation token cancelled (``ctx.cancellation.cancel()``, from a tool for example;
like Ctrl-C it is not a failure: the run stays resumable with a plain ``seamkit resume``);
``143`` terminated (SIGTERM). ``seamkit resume`` of a finished run without ``--allow-finished`` is
a usage error (``2``). The docs' one table of these codes is in ``docs/durable-runs.md`` ("Exit
codes"); a test keeps it, ``seamkit --help`` and the ``EXIT_*`` constants the same.
``SEAMKIT_DEBUG=1`` prints tracebacks of errors.

A reader closing stdout early (``seamkit run ... | head``) does not stop a command half way: the
rest of its output is dropped (:mod:`seamkit._cli.pipes`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from seamkit._cli.common import CHECK_ALL, PLUGIN_KINDS
from seamkit._cli.outcomes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SUSPENDED,
    EXIT_TERMINATED,
    EXIT_TRIPPED,
    EXIT_USAGE,
    BuildFailed,
    Terminated,
    UsageError,
    exit_code_for,
    shown_issues,
    write_json_error,
)
from seamkit._cli.overrides import OVERRIDES_HELP, add_override_args

if TYPE_CHECKING:
    from seamkit._plugins.registry import PluginReport, Registry

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_SUSPENDED",
    "EXIT_TERMINATED",
    "EXIT_TRIPPED",
    "EXIT_USAGE",
    "BuildFailed",
    "UsageError",
    "build_parser",
    "exit_code_for",
    "main",
    "report_error",
]

_terminated = False  # a SIGTERM arrived in this process


def _on_sigterm(signum: int, frame: object) -> None:
    global _terminated
    _terminated = True
    raise Terminated()


PROG = "seamkit"
#: the commands whose output streams a run (text left open on a line, a status line)
STREAMING_COMMANDS = frozenset({"run", "resume", "chat", "ask"})


class _Parser(argparse.ArgumentParser):
    """argparse, with errors raised as :class:`UsageError` so ``main`` can return the exit code."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}\n{self.format_usage().rstrip()}")


# -- parser ----------------------------------------------------------------------------------------


def _var(text: str) -> tuple[str, str]:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # argv bytes that were not UTF-8 (decoded with "surrogateescape")
        raise argparse.ArgumentTypeError("the value is not valid UTF-8") from None
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def build_parser(
    registry: Registry | None = None,
) -> tuple[argparse.ArgumentParser, list[PluginReport]]:
    """The ``seamkit`` argument parser, with the sub-commands plugins add when ``registry`` is given.

    Returns the parser and the reports of plugins whose ``seamkit_register_commands`` hook raised
    (they are skipped). Each sub-parser sets ``func`` (``callable(args) -> int``).
    """
    from seamkit import __version__

    parser = _Parser(
        prog=PROG,
        description="seamkit: compose, validate and run LLM agents described in YAML.",
        epilog="Exit codes: 0 ok, 1 the run failed, 2 usage or configuration error, 3 the run waits for "
        "a person (approval, settling, or an answer with --answer: see seamkit resume), "
        "4 a guardrail stopped the run (tripwire), "
        "130 interrupted (Ctrl-C) or cancelled, "
        "143 terminated (SIGTERM); what to do next for each: docs/durable-runs.md#exit-codes. "
        "SEAMKIT_DEBUG=1 shows tracebacks.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands", parser_class=_Parser)

    p = sub.add_parser(
        "run",
        help="run a composed agent on a task",
        description="Load FILE, build its agent and run it on TASK. stdout gets the answer: the streamed text "
        "of a free-text agent, or only the final JSON of an agent with a typed output (its text then streams "
        "to stderr). Tool calls, warnings and a summary go to stderr.",
        epilog=OVERRIDES_HELP,
    )
    p.add_argument("file", metavar="FILE", help="composition YAML file")
    p.add_argument("task", metavar="TASK", help="the task text ('-' reads it from stdin)")
    p.add_argument("--json", action="store_true", help="print one JSON object per stream event, nothing else")
    p.add_argument(
        "--var",
        metavar="KEY=VALUE",
        action="append",
        type=_var,
        default=[],
        help="a prompt template variable (repeatable)",
    )
    p.add_argument("--thread", metavar="ID", help="the conversation thread this run belongs to (approvals "
                   "with policy once_per_thread are remembered per thread)")
    add_override_args(p)
    p.set_defaults(func=_lazy("run"))

    p = sub.add_parser(
        "resume",
        help="continue a run from its last checkpoint (after a crash or an approval)",
        description="Continue RUN_ID from its latest checkpoint. The agent is rebuilt from the file the run "
        "was started with (or --agent FILE); the store is the agent's, or the embedded default "
        "(.seamkit/seamkit.db). A run waiting for approval needs a decision for its calls: --approve, "
        "--reject or --edit (approve with edited arguments); a call without one is rejected. A conversation "
        "with capabilities takes the person's next message with --answer; a workflow waiting at a gate takes the "
        "person's answer with --answer (--gate NAME when several wait), one waiting for an outside event takes it "
        "with --event TYPE=JSON. A run started on a queue (seamkit submit) is continued there: its continuation "
        "is enqueued for the workers (--here: in this process). A run started with -m/-o is rebuilt with them; "
        "-m/-o given to resume apply after those (e.g. to replace a model override that failed).",
    )
    p.add_argument("run_id", metavar="RUN_ID", help="the run id (printed by seamkit run)")
    p.add_argument("--agent", metavar="FILE", help="composition YAML file (default: the one the run started with)")
    p.add_argument("--approve", metavar="CALL_ID", action="append", default=[], help="approve a call (repeatable)")
    p.add_argument("--reject", metavar="CALL_ID[=REASON]", action="append", default=[],
                   help="reject a call, optionally saying why (repeatable)")
    p.add_argument("--edit", metavar="CALL_ID=JSON", action="append", default=[],
                   help="approve a call with these arguments instead (a JSON object; repeatable)")
    p.add_argument("--answer", metavar="TEXT",
                   help="an agent with capabilities: the person's next message (yes / no to a confirmation), "
                   "taken as the conversation's next turn; a workflow: the answer to its gate; '-' reads it "
                   "from stdin")
    p.add_argument("--gate", metavar="NAME",
                   help="a workflow: which waiting gate --answer answers (its step name or activation id)")
    p.add_argument("--event", metavar="TYPE=JSON", action="append", default=[],
                   help="a workflow: an outside event to hand in (one of its external types; repeatable)")
    p.add_argument("--turn-id", metavar="ID",
                   help="an agent with capabilities: the id of that turn (a committed id returns its stored "
                   "result, running nothing)")
    p.add_argument("--allow-finished", action="store_true",
                   help="print a finished run's result, or continue a failed run")
    p.add_argument("--steal", action="store_true", help="take over a run another live worker holds")
    p.add_argument("--here", action="store_true",
                   help="a run started on a queue (seamkit submit): continue it in this process instead of "
                   "enqueuing its continuation for the workers")
    p.add_argument("--json", action="store_true", help="print one JSON object per stream event, nothing else")
    add_override_args(p)
    p.set_defaults(func=_lazy("resume"))

    p = sub.add_parser(
        "runs",
        help="list, show, settle or delete checkpointed runs",
        description="Inspect the runs in a store: the agent's (--agent FILE) or the embedded default "
        "(.seamkit/seamkit.db).",
    )
    runs = p.add_subparsers(dest="runs_command", metavar="ACTION", parser_class=_Parser, required=True)
    q = runs.add_parser("list", help="the runs, newest first: status, creation time, duration, tokens, cost, task")
    q.add_argument("--status", choices=["running", "suspended", "done", "failed"], help="only runs with this status")
    q.add_argument("--limit", type=int, default=50, help="at most this many runs (default 50)")
    q.add_argument("--agent", metavar="FILE", help="use this composition's store")
    q.add_argument("--json", action="store_true", help="print a JSON list")
    q.set_defaults(func=_lazy("runs_list", "runs_cmd"))
    q = runs.add_parser("show", help="a run: why it failed, its steps (model and tool calls, child runs), "
                        "duration, tokens, cost")
    q.add_argument("run_id", metavar="RUN_ID")
    q.add_argument("--version", type=int, help="show the run as it was at this version")
    q.add_argument("--agent", metavar="FILE", help="use this composition's store")
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(func=_lazy("runs_show", "runs_cmd"))
    q = runs.add_parser(
        "settle",
        help="record whether a tool call whose outcome is unknown was applied",
        description="A side-effecting tool call whose outcome is unknown (its process was killed while it ran, "
        "or the tool raised) is never run again automatically: check the outside system, then settle it. "
        "'applied': the model is told it was applied (with --result TEXT when given); 'not-applied': it did "
        "not happen, and the call runs again when the run resumes. A call can be settled before any resume "
        "(its process was killed). For a call the model was already told about (the tool raised), or one of "
        "a run that is done, the settlement is only recorded: nothing runs again. 'seamkit runs show RUN_ID' "
        "lists the unsettled calls. In a conversation with capabilities, a capability's effect whose outcome "
        "is unknown (EFFECT_UNCERTAIN) is settled by its key, capability:<capability id>:<key>: 'applied' "
        "(with --result JSON, what its operation returned) and the effect returns that without running when "
        "the capability runs it again; 'not-applied' and it runs again.",
    )
    q.add_argument("run_id", metavar="RUN_ID")
    q.add_argument("call_id", metavar="CALL_ID",
                   help="the tool call id (from seamkit runs show RUN_ID), or a capability's effect: "
                   "capability:<capability id>:<key> (from EFFECT_UNCERTAIN)")
    q.add_argument("outcome", choices=["applied", "not-applied"], help="what the outside system shows")
    q.add_argument("--result", metavar="TEXT",
                   help="with 'applied': what it did, as the model will read it (a capability's effect: the "
                   "JSON value its operation returned)")
    q.add_argument("--agent", metavar="FILE", help="use this composition's store")
    q.set_defaults(func=_lazy("runs_settle", "runs_cmd"))
    q = runs.add_parser(
        "prune",
        help="retention: drop old versions and old finished runs",
        description="Keep each run's last --keep-last versions (its transcript stays whole); with "
        "--finished-days, delete whole runs that finished (done or failed) more than that many days ago; "
        "also delete expired store keys.",
    )
    q.add_argument("--keep-last", type=int, default=1, help="versions kept per run (default 1)")
    q.add_argument("--finished-days", type=float, help="delete finished runs older than this many days")
    q.add_argument("--agent", metavar="FILE", help="use this composition's store")
    q.set_defaults(func=_lazy("runs_prune", "runs_cmd"))
    q = runs.add_parser("delete", help="delete a run's checkpoints")
    q.add_argument("run_id", metavar="RUN_ID")
    q.add_argument("--force", action="store_true", help="delete it even while a live worker is running it")
    q.add_argument("--agent", metavar="FILE", help="use this composition's store")
    q.set_defaults(func=_lazy("runs_delete", "runs_cmd"))

    p = sub.add_parser(
        "stores",
        help="manage stores (schema setup)",
        description="Store administration. 'setup' applies a store's schema migrations (PostgreSQL needs it "
        "once before first use); stores that need none say so.",
    )
    stores = p.add_subparsers(dest="stores_command", metavar="ACTION", parser_class=_Parser, required=True)
    q = stores.add_parser("setup", help="apply the store's schema migrations")
    q.add_argument("--agent", metavar="FILE", help="use this composition's store (default: the embedded default)")
    q.set_defaults(func=_lazy("stores_setup"))

    p = sub.add_parser(
        "validate",
        help="check a composition without running it",
        description="Load and validate FILE (every component's parameters included); print a summary, "
        "or every problem with its file:line:col (exit 2).",
    )
    p.add_argument("file", metavar="FILE", help="composition YAML file")
    p.set_defaults(func=_lazy("validate"))

    p = sub.add_parser(
        "schema",
        help="print the JSON Schema of the YAML format",
        description="Print the JSON Schema of the composition format, including the config of every "
        "installed component (for editor completion).",
    )
    p.add_argument("--output", "-o", metavar="FILE", help="write the schema to FILE instead of stdout")
    p.set_defaults(func=_lazy("schema"))

    p = sub.add_parser(
        "plugins",
        help="list installed plugins and components",
        description="List installed components (kind, name, description) and plugins, including plugins that "
        "failed to load (their errors under the table). 'seamkit plugins show NAME' describes one component. "
        "Exit codes: 0 ok; 1 a plugin failed to load, or --check found a problem; 2 usage error (an unknown "
        "NAME, with the close names; with --json, also a JSON object {error, exit_code} on stdout).",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list of objects")
    p.add_argument(
        "--check",
        metavar="NAME",
        nargs="?",
        const=CHECK_ALL,
        help="import and validate the component NAME (KIND/NAME picks one kind; command/NAME or plugin/NAME: "
        "a plugin that adds commands) and say what is wrong with it: its module, its config model and default "
        "config, its factory, its port; exit 1 on a problem. Without NAME: check every component (listing "
        "alone imports no component module)",
    )
    p.set_defaults(func=_lazy("plugins", "plugins_cmd"))
    shows = p.add_subparsers(dest="plugins_command", metavar="ACTION", parser_class=_Parser)
    q = shows.add_parser(
        "show",
        help="a component's description, parameters and an example composition",
        description="Show the component NAME (KIND/NAME picks one kind): its description, its parameters "
        "(type, default, description) and a minimal composition that uses it. An unknown name is a usage "
        "error (exit 2) with the close names.",
    )
    q.add_argument("name", metavar="NAME", help="a component name, or KIND/NAME (e.g. tool/calculator)")
    q.add_argument("--json", action="store_true", help="print a JSON list (one object per component)")
    q.set_defaults(func=_lazy("plugins_show", "plugins_cmd"))

    p = sub.add_parser(
        "new",
        help="create a new project from a template (a plugin distribution)",
        description="Create a new project from a template.",
    )
    new = p.add_subparsers(dest="new_command", metavar="WHAT", parser_class=_Parser, required=True)
    q = new.add_parser(
        "plugin",
        help="write a ready plugin distribution: pyproject, plugin module, config, component, tests",
        description="Write seamkit-NAME/, a plugin distribution registering one KIND component called NAME "
        "(entry point group 'seamkit'), with a README and tests (the kind's conformance suite where there is "
        "one). Then: pip install -e ./seamkit-NAME && pytest seamkit-NAME",
    )
    q.add_argument("kind", metavar="KIND", choices=PLUGIN_KINDS, help=f"one of: {', '.join(PLUGIN_KINDS)}")
    q.add_argument("name", metavar="NAME", help="the component's name: lower-case letters, digits, '_' and '-'")
    q.add_argument("--dir", metavar="DIR", default=".", help="where to create seamkit-NAME/ (default: here)")
    q.set_defaults(func=_lazy("new_plugin", "plugins_cmd"))

    from seamkit._cli.ask_cmd import add_ask_parser  # light: the command's body imports lazily

    add_ask_parser(sub)

    from seamkit._cli.chat_cmd import add_chat_parser  # light: the command's body imports lazily

    add_chat_parser(sub, _var, report_error)

    from seamkit._cli.init_cmd import add_init_parser  # light: writes a file, imports nothing heavy

    add_init_parser(sub)

    failures: list[PluginReport] = []
    if registry is not None:
        failures = registry.add_commands(sub)
    return parser, failures


def _lazy(name: str, module: str = "commands") -> Callable[[argparse.Namespace], int]:
    """A command function that imports its module (``seamkit._cli.<module>``) only when it runs."""

    def run(args: argparse.Namespace) -> int:
        import importlib

        fn: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(f"seamkit._cli.{module}"),
                                                          f"cmd_{name}")
        return fn(args)

    run.__name__ = f"cmd_{name}"
    return run


# -- errors ----------------------------------------------------------------------------------------


def _err(message: str) -> None:
    sys.stderr.write(f"{PROG}: {message}\n")
    sys.stderr.flush()


def _debug() -> bool:
    return os.environ.get("SEAMKIT_DEBUG", "").strip().lower() in ("1", "true", "yes")


def _plugin_notes() -> list[str]:
    """Hints for a component that cannot be found: plugins that failed, an allow or deny list in
    force."""
    notes: list[str] = []
    raw = os.environ.get("SEAMKIT_LOAD_PLUGINS")
    if raw is not None:
        notes.append(f"note: SEAMKIT_LOAD_PLUGINS={raw!r} limits which plugins load"
                     + (" (empty: none)" if not raw.strip() else ""))
    denied = os.environ.get("SEAMKIT_DISABLE_PLUGINS")
    if denied is not None and any(p.strip() for p in denied.split(",")):
        notes.append(f"note: SEAMKIT_DISABLE_PLUGINS={denied!r} keeps those plugins from loading")
    registry = _loaded_registry  # only if already loaded; never load it here
    if registry is not None:
        failed = [r for r in registry.reports if r.status == "failed"]
        if failed:
            names = ", ".join(f"{r.plugin!r} ({r.distribution})" for r in failed)
            notes.append(f"note: plugin(s) failed to load: {names}; see '{PROG} plugins'")
    return notes


def report_error(exc: BaseException) -> int:
    """Print ``exc`` as one paragraph on stderr (no traceback unless ``SEAMKIT_DEBUG=1``) and return
    its exit code."""
    from seamkit.errors import ComponentNotFound, ConfigError, OutputValidationError, RunCancelled, SeamkitError

    code = exit_code_for(exc)
    if _debug():
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    lines: list[str]
    if isinstance(exc, UsageError):
        # a usage error may end with the commands that work, one a line (each still shown by visible)
        first, *rest = str(exc).split("\n")
        lines = [f"error: {first}", *rest]
    elif isinstance(exc, ConfigError):
        n = len(exc.issues)
        lines = [f"error: ConfigError: {n} problem{'s' if n != 1 else ''} in configuration:"]
        lines += shown_issues(exc.issues)
    elif isinstance(exc, BuildFailed):
        lines = ["error: the agent could not be built:", *shown_issues(exc.issues)]
    elif isinstance(exc, RunCancelled):
        lines = [f"cancelled: {exc}"]
    elif isinstance(exc, OutputValidationError):
        lines = [f"error: OutputValidationError: {exc}"]
        raw = exc.raw if len(exc.raw) <= 300 else exc.raw[:300] + "..."
        lines.append(f"the model's last answer was: {raw!r}")
    elif isinstance(exc, SeamkitError):
        lines = [f"error: {type(exc).__name__}: {exc}"]
    elif isinstance(exc, FileNotFoundError):
        lines = [f"error: no such file: {exc.filename or exc}"]
    else:
        lines = [f"error: unexpected {type(exc).__name__}: {exc}"]
        if not _debug():
            lines.append("(set SEAMKIT_DEBUG=1 to see the traceback)")
    if isinstance(exc, ComponentNotFound) or (
        isinstance(exc, ConfigError) and any(i.path.rsplit(".", 1)[-1] in ("use", "from") for i in exc.issues)
    ):  # a component name did not resolve: say which plugins are missing or limited
        lines += _plugin_notes()
    # an error may quote what a model, a tool or a web page wrote: control characters are shown
    # escaped, never sent to the terminal (ANSI/OSC escape injection)
    from seamkit._cli.render import visible

    sys.stderr.write(f"{PROG}: " + "\n".join(visible(line) for line in lines) + "\n")
    sys.stderr.flush()
    return code


# -- entry point -----------------------------------------------------------------------------------


_loaded_registry: Registry | None = None


def _load_registry() -> Registry:
    global _loaded_registry
    from seamkit._plugins.registry import get_registry
    from seamkit.errors import PluginError

    try:
        _loaded_registry = get_registry()
        return _loaded_registry
    except PluginError as exc:
        raise UsageError(f"{exc} (SEAMKIT_STRICT_PLUGINS is set: a plugin that fails is an error)") from exc


def _main(argv: Sequence[str] | None) -> int:
    from seamkit.errors import PluginError

    argv = list(argv) if argv is not None else sys.argv[1:]
    if argv == ["--version"]:  # answer without loading any plugin
        from seamkit import __version__

        sys.stdout.write(f"{PROG} {__version__}\n")
        return EXIT_OK
    if argv[:1] == ["plugins"]:
        # `plugins --check` loads and checks the plugins in child processes: this one imports none,
        # so that not even os._exit at a plugin's import can end it before it names that plugin
        parser, _ = build_parser(None)
        args = parser.parse_args(argv)
        if args.check is not None:
            from seamkit._plugins.check_isolated import supported  # not before: it imports subprocess...

            if supported():
                return int(args.func(args) or EXIT_OK)
    registry = _load_registry()
    try:
        parser, failures = build_parser(registry)
    except PluginError as exc:  # strict mode: a plugin's command hook raised
        raise UsageError(f"{exc} (SEAMKIT_STRICT_PLUGINS is set: a plugin that fails is an error)") from exc
    for f in failures:
        _err(f"warning: plugin {f.plugin!r} ({f.distribution} {f.version}) could not add its commands: {f.error}")
    try:
        args, extra = parser.parse_known_args(argv)
    except SystemExit:  # --help (or argparse's own exit): say which plugins are missing from it
        if argv[:1] != ["plugins"]:
            _warn_failed(registry, failures)
        raise
    if extra:  # reported by the sub-command's parser, so the usage shown is that command's
        command = getattr(args, "command", None)
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = subparsers[0].choices.get(command) if subparsers and command else None
        (chosen or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    func: Callable[[argparse.Namespace], int | None] | None = getattr(args, "func", None)
    if func is None:
        raise UsageError(f"a command is required (see '{PROG} --help')\n{parser.format_usage().rstrip()}")
    if args.command != "plugins":
        _warn_failed(registry, failures)
    code = func(args)
    return EXIT_OK if code is None else int(code)


def _warn_failed(registry: Registry, failures: Sequence[PluginReport]) -> None:
    """One warning line on stderr per plugin that failed to load (``failures``: those whose
    commands failed, already told)."""
    warned = {(f.plugin, f.distribution) for f in failures}
    for r in registry.reports:
        if r.status == "failed" and (r.plugin, r.distribution) not in warned:
            _err(f"warning: plugin {r.plugin!r} ({r.distribution} {r.version}) failed to load; "
                 f"see '{PROG} plugins'")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``seamkit`` command line with ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    Once a command has loaded a composition, the secrets among the values its ``${NAME}``
    references took from the environment are masked (``***``) in everything written to stdout and stderr, errors and
    tracebacks included (see :mod:`seamkit._cli.scrub`)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        with _unencodable_escaped():
            code = _main_guarded(argv)
    except Terminated:
        _err("terminated")
        code = EXIT_TERMINATED
    except KeyboardInterrupt:  # Ctrl-C before or after the command's own handling (imports, cleanup)
        _err("interrupted")
        return EXIT_INTERRUPTED
    if _terminated:
        from seamkit._cli._loop import tool_threads_left_running

        if tool_threads_left_running():
            # told to stop, the checkpoint and the resume hint written: a sync tool ignoring the
            # cancellation token must not keep the process alive (interpreter exit joins its thread;
            # a supervisor's SIGKILL would come next anyway)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return code


@contextlib.contextmanager
def _unencodable_escaped() -> Iterator[None]:
    """What stdout and stderr cannot encode is written as a backslash escape meanwhile, never as a
    raw byte or an error: a lone surrogate (what ``os.fsdecode`` makes of a non-UTF-8 file name,
    in a plugin's exception message, a file path, a stored run) would otherwise go out as invalid
    UTF-8 (``surrogateescape``, the C locale's default) or raise ``UnicodeEncodeError``. In
    ``--json`` output the escape (``\\udcff``) is a valid JSON escape."""
    saved: list[tuple[Any, str]] = []
    for stream in (sys.stdout, sys.stderr):
        errors = getattr(stream, "errors", None)
        if isinstance(stream, io.TextIOWrapper) and isinstance(errors, str) and errors != "backslashreplace":
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # closed, or written to already in a way that forbids it
                continue
            saved.append((stream, errors))
    try:
        yield
    finally:
        for stream, errors in saved:
            with contextlib.suppress(ValueError, OSError):
                stream.reconfigure(errors=errors)


def _main_guarded(argv: Sequence[str] | None) -> int:
    from seamkit._cli.scrub import restore_output

    devnull = None
    if sys.stderr is None:  # started with stderr closed (``2>&-``): errors go nowhere, exit codes stay
        devnull = open(os.devnull, "w", encoding="utf-8")  # closed in the finally below
        sys.stderr = devnull
    try:
        if sys.stdout is None:  # started with stdout closed (``>&-``): nowhere to write any result
            _err("error: standard output is closed, so nothing could be written; run it with stdout "
                 "open (redirect it to a file or /dev/null)")
            return EXIT_FAILED
        # a reader that stops reading (`seamkit run ... | head`) must not stop a run half way
        from seamkit._cli.pipes import PipeGuard
        from seamkit._cli.render import install_log_handler

        guarded = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = PipeGuard(sys.stdout), PipeGuard(sys.stderr)
        # a log record (a skipped checkpoint) starts on its own line, not after streamed text; only
        # for the commands that stream a run: another (a plugin's `seamkit worker`) sets up its own
        # logging, which a root handler already there would turn off
        words = list(argv) if argv is not None else sys.argv[1:]
        command = next((w for w in words if not w.startswith("-")), None)
        handler = install_log_handler() if command in STREAMING_COMMANDS else None
        try:
            return _main_reporting(argv)
        finally:
            if handler is not None:
                logging.getLogger().removeHandler(handler)
            restore_output()
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.flush()
            sys.stdout, sys.stderr = guarded
    finally:
        restore_output()
        if devnull is not None:
            if sys.stderr is devnull:
                sys.stderr = None
            devnull.close()


def _wants_json(argv: Sequence[str] | None) -> bool:
    """Whether the command line asks for ``--json`` output (before a ``--``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def _main_reporting(argv: Sequence[str] | None) -> int:
    try:
        try:
            return _main(argv)
        except Exception as exc:
            # with --json, stdout holds JSON whatever happens: a usage or configuration error (exit
            # 2) is also one object there, as `plugins show --json` writes it (once: a run's
            # run_failed line already says it)
            if _wants_json(argv) and exit_code_for(exc) == EXIT_USAGE:
                write_json_error(exc, EXIT_USAGE)
            raise
    except Terminated:
        sys.stdout.flush()
        _err("terminated")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        sys.stdout.flush()
        _err("interrupted")
        return EXIT_INTERRUPTED
    except SystemExit as exc:  # --help, --version, or a plugin command calling sys.exit
        c = exc.code
        return c if isinstance(c, int) else (EXIT_OK if c is None else EXIT_FAILED)
    except BrokenPipeError:
        # stdout closed early (``seamkit run ... | head``): not an error of ours.
        # (the recipe of the Python docs: point stdout at devnull so the flush at exit is quiet)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_FAILED
    except Exception as exc:
        return report_error(exc)


if __name__ == "__main__":
    raise SystemExit(main())
