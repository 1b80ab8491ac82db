"""The argument parsers of ``seamkit worker``, ``seamkit submit`` and ``seamkit runs wait``
(argparse only: cheap to import; each command's body is in :mod:`seamkit_celery.cli`)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

__all__ = ["add_commands"]

_BROKER_HELP = "the broker URL (default: $SEAMKIT_BROKER_URL), e.g. redis://127.0.0.1:6379/1"


def _lazy(name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from seamkit_celery import cli

        fn: Callable[[argparse.Namespace], int] = getattr(cli, f"cmd_{name}")
        return fn(args)

    run.__name__ = f"cmd_{name}"
    return run


def _var(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < math.inf:  # nan and inf too: no deadline or sleep can be made of them
        raise argparse.ArgumentTypeError(f"expected a positive, finite number of seconds, got {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {text!r}")
    return value


#: Longest run id accepted (it goes into store keys and message ids).
MAX_RUN_ID = 200


def _run_id(text: str) -> str:
    """A run id as typed: 1 to :data:`MAX_RUN_ID` characters, none of them whitespace or control
    characters (a run id is a key, one word on a line of ``seamkit runs list``)."""
    if not text:
        raise argparse.ArgumentTypeError("a run id cannot be empty (leave --run-id out for a new one)")
    if len(text) > MAX_RUN_ID:
        raise argparse.ArgumentTypeError(f"a run id is at most {MAX_RUN_ID} characters, got {len(text)}")
    bad = next((c for c in text if c.isspace() or not c.isprintable()), None)
    if bad is not None:
        raise argparse.ArgumentTypeError(f"a run id has no spaces or control characters, got {text!r} (with "
                                         f"{bad!r})")
    return text


def _runs_actions(cli: Any) -> Any:
    runs = getattr(cli, "choices", {}).get("runs")
    if runs is None:
        return None
    for action in runs._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def add_commands(cli: Any) -> None:
    """Add ``worker``, ``submit`` and ``batch`` to ``seamkit`` and ``wait`` to ``seamkit runs`` (``cli``: the
    ``seamkit`` sub-parsers object)."""
    p = cli.add_parser(
        "worker",
        help="run queued agent runs (a Celery worker; seamkit-celery)",
        description="Start a Celery worker that runs the agent runs 'seamkit submit' enqueues. FILE is checked "
        "first: its agent must checkpoint into a store every worker shares (postgres or redis). A message is "
        "acknowledged only when its run is done, failed or suspended; a run whose worker died is resumed from "
        "its last checkpoint by the next worker that gets the message again. The pool is prefork: each of "
        "--concurrency processes runs one run at a time, and killing the worker kills its processes with it. "
        "The worker also sweeps: every --sweep-every seconds it sends again the runs submitted to its queue "
        "that have not started --requeue-after seconds after they were sent while nothing waits in the queue "
        "or a run sent after them has started (their message was lost, e.g. with a worker killed as it took "
        "it); a message it cannot run (its file "
        "is missing here, it no longer validates) is recorded as rejected in FILE's store, where 'seamkit runs "
        "wait' reports it.",
    )
    p.add_argument("file", metavar="FILE", help="composition YAML file")
    p.add_argument("--agent-name", metavar="NAME", help="the agent of FILE to check (default: its entry agent)")
    p.add_argument("--concurrency", "-c", type=_count, default=1, help="runs at once (processes; default 1)")
    p.add_argument("--queue", "-Q", metavar="NAME", default="seamkit", help="the queue to consume (default seamkit)")
    p.add_argument("--pool", choices=["prefork", "solo"], default="prefork",
                   help="prefork (default): a process per concurrent run; solo: runs in this process, one at a time")
    p.add_argument("--broker", metavar="URL", help=_BROKER_HELP)
    p.add_argument("--visibility-timeout", metavar="S", type=_positive, default=3600.0,
                   help="seconds before a message a dead worker held is delivered again (Redis; default 3600)")
    p.add_argument("--requeue-after", metavar="S", type=_positive, default=60.0,
                   help="send a submitted run again when it has not started S seconds after it was sent (its "
                   "message was lost; default 60); also for child runs this worker's runs wait for")
    p.add_argument("--sweep-every", metavar="S", type=_positive,
                   help="look for such runs every S seconds (default: a quarter of --requeue-after, at least 0.25)")
    p.add_argument("--no-sweep", action="store_true", help="do not look for lost runs (another worker does)")
    p.add_argument("--loglevel", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="Celery's log level (default WARNING)")
    p.set_defaults(func=_lazy("worker"))

    p = cli.add_parser(
        "submit",
        help="enqueue an agent run for the workers; print its run id (seamkit-celery)",
        description="Enqueue a run of FILE's agent on TASK and print its run id; 'seamkit runs wait RUN_ID "
        "--agent FILE' waits for its outcome. With --resume RUN_ID (no TASK) the continuation of a run is "
        "enqueued instead: a suspended run with --approve/--reject/--edit decisions, or an interrupted one. "
        "The send is recorded in FILE's checkpoint store first, so a message lost before any worker started "
        "the run is sent again (by the workers, or by 'runs wait') and a worker's rejection is reported. "
        "Submitting a run id twice with the same task, variables and agent runs it once; with another one it "
        "is refused (exit 2).",
    )
    p.add_argument("file", metavar="FILE", help="composition YAML file (workers need the same path)")
    p.add_argument("task", metavar="TASK", nargs="?", help="the task text ('-' reads it from stdin)")
    p.add_argument("--run-id", metavar="ID", type=_run_id,
                   help="the run id (default: a new one; no spaces or control characters)")
    p.add_argument("--var", metavar="KEY=VALUE", action="append", type=_var, default=[],
                   help="a prompt template variable (repeatable)")
    p.add_argument("--agent-name", metavar="NAME", help="the agent of FILE to run (default: its entry agent)")
    p.add_argument("--queue", "-Q", metavar="NAME", default="seamkit", help="the queue (default seamkit)")
    p.add_argument("--broker", metavar="URL", help=_BROKER_HELP)
    p.add_argument("--resume", metavar="RUN_ID", type=_run_id,
                   help="enqueue the continuation of RUN_ID instead of a new run")
    p.add_argument("--approve", metavar="CALL_ID", action="append", default=[], help="with --resume: approve a call")
    p.add_argument("--reject", metavar="CALL_ID[=REASON]", action="append", default=[],
                   help="with --resume: reject a call, optionally saying why")
    p.add_argument("--edit", metavar="CALL_ID=JSON", action="append", default=[],
                   help="with --resume: approve a call with these arguments instead (a JSON object)")
    p.set_defaults(func=_lazy("submit"))

    p = cli.add_parser(
        "batch",
        help="run every input of a JSON Lines file on the workers; results in input order (seamkit-celery)",
        description="Enqueue a run of FILE's agent for every line of INPUTS (a JSON string: the task; or an "
        "object {\"task\": ..., \"variables\": {...}}), wait for them with a progress bar of done / failed / "
        "suspended (stderr, on a terminal), and write one JSON line per input, in input order: index, line, "
        "run_id, status, output, usage, cost (exact decimal text), error. Run ids are <batch id>-<index>, so "
        "running the same command again does not redo finished inputs (failed ones included: see "
        "--retry-failed) and waits for queued ones; a --batch-id reused for other inputs, composition or agent "
        "is refused. Exit 0 all "
        "done, 1 any failed, suspended or unfinished at --timeout, 2 bad input (nothing enqueued), 130 Ctrl-C "
        "(the runs go on on the workers).",
    )
    p.add_argument("file", metavar="FILE", help="composition YAML file (workers need the same path)")
    p.add_argument("inputs", metavar="INPUTS", help="JSON Lines file, one input per line")
    p.add_argument("--out", "-o", metavar="RESULTS", help="write the results here (JSON Lines; default stdout)")
    p.add_argument("--batch-id", metavar="ID", help="the batch id (default: a digest of INPUTS and FILE's path)")
    p.add_argument("--timeout", metavar="S", type=_positive, help="stop waiting after S seconds (default: wait)")
    p.add_argument("--requeue", action="store_true",
                   help="enqueue again inputs recorded as enqueued that never started (after a broker lost messages)")
    p.add_argument("--retry-failed", action="store_true",
                   help="run again the inputs whose run failed, under new run ids <batch id>-<index>-r<n> (running "
                   "the same command again otherwise reuses failed runs as they are)")
    p.add_argument("--requeue-after", metavar="S", type=_positive, default=60.0,
                   help="send a run again when it has not started S seconds after a run sent later did (its message "
                   "was lost with a killed worker; default 60)")
    p.add_argument("--agent-name", metavar="NAME", help="the agent of FILE to run (default: its entry agent)")
    p.add_argument("--queue", "-Q", metavar="NAME", default="seamkit", help="the queue (default seamkit)")
    p.add_argument("--broker", metavar="URL", help=_BROKER_HELP)
    p.set_defaults(func=_lazy("batch"))

    runs = _runs_actions(cli)
    if runs is None:
        raise RuntimeError("seamkit has no 'runs' command to add 'wait' to")
    q = runs.add_parser(
        "wait",
        help="wait until a (queued) run is done, failed or suspended; print its outcome (seamkit-celery)",
        description="Poll the store of --agent FILE until RUN_ID is done, failed or suspended, then print its "
        "output (stdout) or why it stopped (stderr). A run not started yet is waited for when it was submitted "
        "(its send record is in the store); one still unstarted --requeue-after seconds after it was sent is "
        "sent again (to --broker). Exit 0 done, 1 failed, stopped without an answer or rejected by a worker "
        "(its file missing there, say), 2 no such run was submitted, 3 suspended (it waits for a person), "
        "124 still unfinished after --timeout.",
    )
    q.add_argument("run_id", metavar="RUN_ID", type=_run_id)
    q.add_argument("--agent", metavar="FILE", required=True, help="the composition whose store holds the run")
    q.add_argument("--timeout", metavar="S", type=_positive, help="give up after S seconds (default: wait)")
    q.add_argument("--requeue-after", metavar="S", type=_positive, default=60.0,
                   help="send the run again when it has not started S seconds after it was sent (default 60)")
    q.add_argument("--broker", metavar="URL", help=_BROKER_HELP + "; to send a lost run again")
    q.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    q.set_defaults(func=_lazy("runs_wait"))
