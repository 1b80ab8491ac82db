"""The child process of ``seamkit plugins --check``: ``python -m seamkit._plugins.check_worker
JOB_FD RESULT_FD [EXCLUDED...]`` (started by :mod:`seamkit._plugins.check_isolated`, never by hand).

It loads the plugins (every entry point of the group ``seamkit`` but the ``EXCLUDED``
``"NAME DISTRIBUTION"`` pairs: plugins that ended an earlier worker at import), then reads jobs,
one JSON object a line, from ``JOB_FD`` and writes one JSON object a line to ``RESULT_FD``:

- ``{"loading": NAME, "distribution": DIST, "version": VERSION}`` before each plugin is imported (so that the parent
  can name the plugin whose import ended this process);
- ``{"ready": SNAPSHOT}`` once loaded (:func:`seamkit._plugins.check_isolated.snapshot_of`);
- for a job ``{"kind", "name", "distribution", "plugin"}`` (``kind`` ``"command"``: a plugin's
  CLI commands), ``{"result": CHECK}``: :func:`~seamkit._plugins.check.check_component` (or
  :func:`~seamkit._plugins.check.check_commands`) as a dict.

The process's stdout and stderr are the parent's log file, not a terminal. It ignores ``SIGINT``
(the parent stops it), so a ``KeyboardInterrupt`` here was raised by a component's code: it is
that component's problem. When the jobs end it exits with ``os._exit``: a thread a component
started (a client's worker) must not keep it alive.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

__all__ = ["main"]


class _Announcing:
    """An entry point that announces its import first (attributes are the wrapped one's)."""

    def __init__(self, ep: Any, send: Callable[[dict[str, Any]], None]) -> None:
        self._ep = ep
        self._send = send
        self.name = ep.name
        self.dist = ep.dist
        self.value = getattr(ep, "value", None)

    def load(self) -> Any:
        dist = self.dist.metadata["Name"] if self.dist is not None else "(unknown)"
        version = self.dist.version if self.dist is not None else ""
        self._send({"loading": self.name, "distribution": dist, "version": version})
        return self._ep.load()


def _run_job(registry: Any, job: dict[str, Any]) -> dict[str, Any]:
    from seamkit._plugins.check import ComponentCheck, check_commands, check_component
    from seamkit._plugins.check_isolated import check_as_dict

    kind, name, dist, plugin = job["kind"], job["name"], job["distribution"], job["plugin"]
    before = set(threading.enumerate())
    children_before = _child_processes()
    check: ComponentCheck
    try:
        if kind == "command":
            hooks = [h for h in registry.command_hooks() if h[0] == plugin and h[1] == dist]
            if not hooks:
                return check_as_dict(ComponentCheck(kind, name, dist, job.get("version", ""), plugin, (
                    "its commands were not found in the check process (the plugin loads differently there)",)))
            check = check_commands(*hooks[0])
        else:
            specs = registry.components.get(kind, {}).get(name, [])
            spec = next((s for s in specs if s.distribution == dist and s.plugin == plugin), None)
            if spec is None:
                return check_as_dict(ComponentCheck(kind, name, dist, job.get("version", ""), plugin, (
                    "not found in the check process (the plugin registers differently there)",)))
            check = check_component(spec, clashes=[s for s in specs if s is not spec])
    except KeyboardInterrupt:  # SIGINT is ignored here: the component's code raised it
        from seamkit._plugins.check import ComponentCheck as Check

        check = Check(kind, name, dist, job.get("version", ""), plugin, (
            "its import or factory raised KeyboardInterrupt (seamkit would take it for Ctrl-C and stop)",))
    left = sorted(t.name for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon)
    row = check_as_dict(check)
    if left:
        row["notes"].append(f"it left {len(left)} non-daemon thread(s) running ({', '.join(left)}): a process "
                            "using it does not exit until they end; make them daemon threads or stop them on close")
    if (plugin, dist) in getattr(registry, "imported_twice", ()):
        row["notes"].append("its plugin module was imported twice (it needs the main thread at import: signal.signal; "
                            "tried in a worker thread first): what it does before that line ran twice in every "
                            "seamkit command; set handlers when a component is built instead")
    children = {pid: cmd for pid, cmd in _child_processes().items() if pid not in children_before}
    if children:
        shown = ", ".join(f"{pid} {cmd}" for pid, cmd in sorted(children.items())[:3])
        row["notes"].append(f"it left {len(children)} child process(es) running ({shown}): a process using it keeps "
                            "them until they end; stop them on close (the check stops them at its end)")
    return row


def _child_processes() -> dict[int, str]:
    """This process's running children (not zombies), pid to command line (80 characters at most),
    from Linux's ``/proc``; empty elsewhere."""
    out: dict[int, str] = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children", encoding="ascii") as f:
                pids = [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            continue
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    state = f.read().rpartition(b")")[2].split()[0]
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                out[pid] = cmd[:80]
    return out


def main(argv: Sequence[str]) -> NoReturn:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    job_fd, result_fd, *excluded = argv
    results = os.fdopen(int(result_fd), "w", encoding="utf-8")
    lock = threading.Lock()

    def send(obj: dict[str, Any]) -> None:
        with lock:
            results.write(json.dumps(obj, ensure_ascii=True) + "\n")
            results.flush()

    try:
        from importlib.metadata import entry_points

        from seamkit._plugins.check_isolated import snapshot_of
        from seamkit._plugins.registry import ENTRY_POINT_GROUP, load_registry, reset_registry

        skip = set(excluded)
        eps = [_Announcing(ep, send) for ep in entry_points(group=ENTRY_POINT_GROUP)]
        eps = [ep for ep in eps
               if f"{ep.name} {ep.dist.metadata['Name'] if ep.dist is not None else '(unknown)'}" not in skip]
        registry = load_registry(strict=False, entry_points=eps)
        reset_registry(registry)  # a component asking for the registry gets this one, not a full load
        send({"ready": snapshot_of(registry)})
        with os.fdopen(int(job_fd), "r", encoding="utf-8") as jobs:
            for line in jobs:
                send({"result": _run_job(registry, json.loads(line))})
    except BaseException as exc:
        try:
            send({"error": f"{type(exc).__name__}: {exc}"})
        except BaseException:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
