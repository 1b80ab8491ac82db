"""``seamkit plugins --check`` in child processes: whatever a plugin does cannot take the command
down, hang it or write into its output.

:func:`load_isolated` loads the plugins in a child process (:mod:`seamkit._plugins.check_worker`)
and returns what it found, a :class:`RegistrySnapshot`; the command's own process imports no
plugin. :func:`check_isolated` then runs each check there: a few child processes
(``SEAMKIT_CHECK_WORKERS``, else half the CPUs, at most :data:`MAX_WORKERS`) each check one
component after another, sent over a pipe, and answer over another. The children's stdout and
stderr go to a pipe read here (only the end is kept), never to ours. A check that has not answered after ``timeout_s``
seconds (a factory that blocks, ignores ``SIGALRM``, swallows every exception) has its process
terminated, then killed after :data:`KILL_AFTER_S`, and that is the component's problem; a child
that dies (``os._exit``, a signal) is checked again alone in a fresh process, and if it dies again
that is the component's problem, with the end of what it wrote (secrets masked). A plugin whose
import ends the child (``os._exit`` at import) is named and left out of the next child, so the rest
are still checked.

Needs ``os.pipe`` file descriptors passed to a child (``pass_fds``): POSIX. Elsewhere the command
checks in its own process (:func:`~seamkit._plugins.check.check_component` with its timeout).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from seamkit._plugins.check import ComponentCheck
from seamkit._plugins.redact import mask_message
from seamkit._plugins.registry import ComponentSpec, PluginReport

__all__ = ["KILL_AFTER_S", "MAX_WORKERS", "CheckJob", "RegistrySnapshot", "check_as_dict", "check_isolated",
           "load_isolated", "snapshot_of", "supported"]

#: at most this many child processes check at once
MAX_WORKERS = 4
#: seconds between terminating a child that overran and killing it
KILL_AFTER_S = 2.0
#: characters of a dead or stopped child's output shown with its problem
EXCERPT_CHARS = 600
#: bytes of a child's output kept (its end): a component writing without end fills no disk
LOG_KEPT_BYTES = 64 * 1024


def supported() -> bool:
    """Whether checks can run in child processes here (POSIX: file descriptors passed to a child)."""
    return os.name == "posix"


@dataclass(frozen=True, slots=True)
class CheckJob:
    """One check: the component ``kind``/``name`` of ``distribution`` (entry point ``plugin``), or
    with ``kind`` ``"command"`` the CLI commands of ``plugin``."""

    kind: str
    name: str
    distribution: str
    version: str
    plugin: str

    @classmethod
    def of(cls, spec: ComponentSpec) -> CheckJob:
        return cls(spec.kind, spec.name, spec.distribution, spec.version, spec.plugin)


@dataclass
class RegistrySnapshot:
    """What a child process loaded: plugin ``reports`` and ``components`` as in a
    :class:`~seamkit._plugins.registry.Registry` (their factories are names, never imported here),
    and the plugins adding CLI commands (``(plugin, distribution, version, None)``, as
    :meth:`~seamkit._plugins.registry.Registry.command_hooks` without the hook)."""

    reports: list[PluginReport] = field(default_factory=list)
    components: dict[str, dict[str, list[ComponentSpec]]] = field(default_factory=dict)
    commands: list[tuple[str, str, str, None]] = field(default_factory=list)

    def all_components(self) -> list[ComponentSpec]:
        return [s for by_name in self.components.values() for specs in by_name.values() for s in specs]

    def command_hooks(self) -> list[tuple[str, str, str, None]]:
        return list(self.commands)


def check_as_dict(check: ComponentCheck) -> dict[str, Any]:
    return {"kind": check.kind, "name": check.name, "distribution": check.distribution, "version": check.version,
            "plugin": check.plugin, "problems": list(check.problems), "notes": list(check.notes)}


def _check_from(row: dict[str, Any]) -> ComponentCheck:
    return ComponentCheck(row["kind"], row["name"], row["distribution"], row["version"], row["plugin"],
                          tuple(mask_message(p) for p in row["problems"]), tuple(mask_message(n) for n in row["notes"]))


def snapshot_of(registry: Any) -> dict[str, Any]:
    """A registry's reports, components and command plugins as JSON-ready data (the child's side)."""
    def name(obj: Any) -> str:
        return obj if isinstance(obj, str) else f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', '?')}"

    return {
        "reports": [[r.plugin, r.distribution, r.version, r.status, r.error, [list(c) for c in r.components]]
                    for r in registry.reports],
        "components": [[s.kind, s.name, name(s.factory), None if s.config is None else name(s.config), s.description,
                        s.plugin, s.distribution, s.version, s.toolset] for s in registry.all_components()],
        "commands": [[p, d, v] for p, d, v, _ in registry.command_hooks()],
    }


def _snapshot_from(data: dict[str, Any], failed: Sequence[PluginReport]) -> RegistrySnapshot:
    snap = RegistrySnapshot(commands=[(p, d, v, None) for p, d, v in data["commands"]])
    snap.reports = [PluginReport(p, d, v, s, e, tuple((k, n) for k, n in c)) for p, d, v, s, e, c in data["reports"]]
    snap.reports += failed
    for kind, name, factory, config, desc, plugin, dist, version, toolset in data["components"]:
        spec = ComponentSpec(kind, name, factory, config, desc, plugin, dist, version, toolset)
        snap.components.setdefault(kind, {}).setdefault(name, []).append(spec)
    return snap


# -- one child -------------------------------------------------------------------------------------


class _Died(Exception):
    """The child ended (or said it failed) before answering."""


class _Child:
    """One worker process, its two pipes and its log file."""

    def __init__(self, excluded: Sequence[str]) -> None:
        job_r, self._job_w = os.pipe()
        self._res_r, res_w = os.pipe()
        self._log_r, log_w = os.pipe()  # its stdout and stderr: only the end is kept (LOG_KEPT_BYTES)
        os.set_blocking(self._log_r, False)
        env = dict(os.environ)
        # the same imports as ours (a test or an embedding program may have extended sys.path)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        env.pop("SEAMKIT_STRICT_PLUGINS", None)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "seamkit._plugins.check_worker", str(job_r), str(res_w), *excluded],
                stdin=subprocess.DEVNULL, stdout=log_w, stderr=log_w, pass_fds=(job_r, res_w), env=env,
                start_new_session=True,  # its own process group: what its components start is stopped with it
            )
        finally:
            os.close(job_r)
            os.close(res_w)
            os.close(log_w)
        self._buffer = b""
        self._written = 0  # bytes it wrote to its stdout and stderr so far
        self._tail = bytearray()  # the last LOG_KEPT_BYTES of them
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._res_r, selectors.EVENT_READ)
        self._selector.register(self._log_r, selectors.EVENT_READ)
        self.loading: tuple[str, str, str] | None = None  # the plugin being imported, from its "loading" line
        self._stopped = False

    def _drain_log(self) -> bool:
        """Read what the child wrote to its stdout and stderr and is waiting in the pipe, keeping the
        last :data:`LOG_KEPT_BYTES`; ``False`` once the pipe is at its end."""
        if self._stopped:
            return False
        while True:
            try:
                chunk = os.read(self._log_r, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(self._log_r)
                return False
            self._written += len(chunk)
            self._tail += chunk
            del self._tail[:-LOG_KEPT_BYTES]

    def log_size(self) -> int:
        """Bytes the child wrote to its stdout and stderr so far."""
        self._drain_log()
        return self._written

    def excerpt(self, start: int = 0) -> str:
        """The end of what the child wrote since ``start`` (one line, secrets masked); ``""`` when nothing."""
        end = self.log_size()
        start = max(start, end - EXCERPT_CHARS, end - len(self._tail))
        text = bytes(self._tail[len(self._tail) - (end - start):]).decode("utf-8", "replace") if end > start else ""
        text = " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())
        return mask_message(text)

    def send(self, job: CheckJob) -> None:
        data = json.dumps({"kind": job.kind, "name": job.name, "distribution": job.distribution,
                           "version": job.version, "plugin": job.plugin}) + "\n"
        try:
            os.write(self._job_w, data.encode())
        except OSError as exc:  # BrokenPipeError: it died
            raise _Died() from exc

    def read(self, timeout_s: float, *, rolling: bool = False) -> dict[str, Any]:
        """The next message but ``loading`` ones (recorded in :attr:`loading`; with ``rolling``
        each one restarts the clock). Raises ``TimeoutError`` or :class:`_Died`."""
        deadline = time.monotonic() + timeout_s
        while True:
            line, sep, rest = self._buffer.partition(b"\n")
            if sep:
                self._buffer = rest
                msg: dict[str, Any] = json.loads(line)
                if "loading" in msg:
                    self.loading = (msg["loading"], msg["distribution"], msg.get("version", ""))
                    if rolling:
                        deadline = time.monotonic() + timeout_s
                    continue
                if "error" in msg:
                    raise _Died(msg["error"])
                return msg
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready = {key.fd for key, _ in self._selector.select(left)}
            if self._log_r in ready:
                self._drain_log()
            if self._res_r not in ready:
                continue
            chunk = os.read(self._res_r, 65536)
            if not chunk:
                raise _Died()
            self._buffer += chunk

    def ended(self) -> str:
        """How the (stopped or dead) process ended: ``exit status 4``, ``killed by SIGKILL``."""
        code = self.proc.wait()
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"

    def stop(self) -> None:
        """End the process (terminate, then kill) and close everything; again: nothing."""
        if self._stopped:
            return
        self._stopped = True
        try:
            os.close(self._job_w)
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(KILL_AFTER_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # what its components started and left running (a subprocess, a fork) is in its process group
        # (its number stays reserved while a member is alive: nothing else can have it)
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._selector.close()
        os.close(self._res_r)
        os.close(self._log_r)


def _start(excluded: Sequence[str], load_timeout_s: float) -> tuple[_Child, dict[str, Any]]:
    """A ready child and its snapshot. Raises :class:`_Died` (``args``: the child, what it said)
    or ``TimeoutError`` (``args``: the child) with the child still to stop."""
    child = _Child(excluded)
    try:
        msg = child.read(load_timeout_s, rolling=True)
    except _Died as exc:
        raise _Died(child, exc.args[0] if exc.args else None) from None
    except TimeoutError:
        raise TimeoutError(child) from None
    return child, msg["ready"]


def _load_timeout() -> float:
    from seamkit._plugins.guard import import_timeout

    return 2 * import_timeout() + 10  # its import, then its hooks, each guarded in the child


def load_isolated() -> tuple[RegistrySnapshot, _Child | None, list[str]]:
    """Load the plugins in a child process: the snapshot, that child (ready for checks; ``None``
    when none could start), and the plugins left out (``"NAME DISTRIBUTION"``, each ended a child
    at import and has a ``failed`` report saying so)."""
    excluded: list[str] = []
    failed: list[PluginReport] = []
    while True:
        try:
            child, data = _start(excluded, _load_timeout())
            return _snapshot_from(data, failed), child, excluded
        except (_Died, TimeoutError) as exc:
            child = exc.args[0]
            said = exc.args[1] if len(exc.args) > 1 else None
            timed_out = isinstance(exc, TimeoutError)
            out = child.excerpt()
            child.stop()
            how = "did not finish" if timed_out else child.ended()
            if child.loading is None or f"{child.loading[0]} {child.loading[1]}" in excluded:
                reason = said or out or how
                raise RuntimeError(f"the check process could not load the plugins: {mask_message(reason)}") from None
            plugin, dist, version = child.loading
            excluded.append(f"{plugin} {dist}")
            failed.append(PluginReport(plugin, dist, version, "failed", (
                f"import failed: it ended the process while importing or registering ({how}"
                + (", os._exit at import?" if not timed_out and "exit status" in how else "")
                + f"); every seamkit command would end the same way{f'; its output: {out}' if out else ''}")))


# -- the checks ------------------------------------------------------------------------------------


def check_isolated(jobs: Sequence[CheckJob], *, timeout_s: float, child: _Child | None = None,
                   excluded: Sequence[str] = (), workers: int | None = None) -> list[ComponentCheck]:
    """Run each job's check in a child process (see the module doc); the results in ``jobs``'
    order. ``child``: a ready child to use first (from :func:`load_isolated`); stopped at the end.
    ``workers``: how many children at most (default: ``SEAMKIT_CHECK_WORKERS``, else half the
    CPUs, at most :data:`MAX_WORKERS`; at least 8 checks per child)."""
    todo: queue.Queue[tuple[int, CheckJob]] = queue.Queue()
    for item in enumerate(jobs):
        todo.put(item)
    results: list[ComponentCheck | None] = [None] * len(jobs)
    n = max(1, min(workers or _workers(), (len(jobs) + 7) // 8))  # a process start costs ~8 checks
    children: list[_Child] = []
    lock = threading.Lock()

    def fresh() -> _Child:
        started, _ = _start(excluded, _load_timeout())
        with lock:
            children.append(started)
        return started

    def drive(first: _Child | None) -> None:
        current, ran = first, 0
        while True:
            try:
                index, job = todo.get_nowait()
            except queue.Empty:
                break
            result, current = _run(job, current, ran, fresh, timeout_s)
            ran = ran + 1 if current is not None else 0
            results[index] = result

    if child is not None:
        children.append(child)
    threads = [threading.Thread(target=drive, args=(child if i == 0 else None,), daemon=True) for i in range(n)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.5)  # in small steps: Ctrl-C and SIGTERM reach the main thread
    finally:
        with lock:
            for c in children:
                try:
                    c.stop()
                except OSError:
                    pass
    return [r if r is not None else _failure(j, "the check did not run")
            for r, j in zip(results, jobs, strict=True)]


def _workers() -> int:
    """``SEAMKIT_CHECK_WORKERS`` (a whole number > 0), else half the CPUs (each child loads every
    plugin first: on a 2-CPU machine a second child was slower than one), at least 1, at most
    :data:`MAX_WORKERS`."""
    raw = os.environ.get("SEAMKIT_CHECK_WORKERS", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return max(1, min((os.cpu_count() or 1) // 2, MAX_WORKERS))


def _failure(job: CheckJob, problem: str) -> ComponentCheck:
    return ComponentCheck(job.kind, job.name, job.distribution, job.version, job.plugin, (mask_message(problem),))


def _run(job: CheckJob, child: Any, ran: int, fresh: Any, timeout_s: float) -> tuple[ComponentCheck, Any]:
    """Check ``job`` in ``child`` (a fresh one when ``None``); the result and the child to use next
    (``None``: start another). A child that dies after earlier checks gets the job again, alone."""
    try:
        if child is None:
            child = fresh()
    except (_Died, TimeoutError) as exc:
        starting = exc.args[0]
        out = starting.excerpt()
        starting.stop()
        return _failure(job, f"the check process did not start: {out or starting.ended()}"), None
    start = child.log_size()
    try:
        child.send(job)
        return _check_from(child.read(timeout_s)["result"]), child
    except TimeoutError:
        out = child.excerpt(start)
        child.stop()
        return _failure(job, f"the check did not finish within {timeout_s:g} s (its import or factory blocks, or "
                             "catches every exception in a loop); its process was stopped"
                             + (f"; its output: {out}" if out else "")), None
    except _Died as exc:
        said = exc.args[0] if exc.args else None
        out = child.excerpt(start)
        child.stop()
        how = child.ended()
        if ran:  # maybe a thread an earlier component left behind: again, alone
            again, after = _run(job, None, 0, fresh, timeout_s)
            if after is not None:
                after.stop()
            return again, None
        if said:
            return _failure(job, f"the check failed: {said}"), None
        return _failure(job, f"its check ended the process ({how}"
                             + ("; os._exit in its import or factory?" if "exit status" in how else "")
                             + ")" + (f"; its output: {out}" if out else "")), None
