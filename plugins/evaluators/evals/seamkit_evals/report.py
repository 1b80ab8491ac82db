"""Eval reports: the JSON document, ``--compare`` against an earlier one, and the terminal table.

Everything shown is made from one JSON document (:func:`report_json`), in which secrets are
already masked, so the JSON file, the HTML page (:mod:`seamkit_evals.report_html`) and the
terminal say the same thing and none of them carries a secret.

The JSON document (``version`` :data:`REPORT_VERSION`; money as exact decimal strings, ``null``
when unknown; latencies in seconds)::

    {"version": 1, "suite": "evals/suite.yaml", "agent_file": "...", "agent": "quickstart",
     "started_at": "2026-01-01T10:00:00+00:00", "duration_s": 3.2,
     "stopped": null,                  # or "budget" / "interrupted"
     "exit_code": 0,
     "summary": {"attempts": 4, "passed": 3, "failed": 1, "errors": 0, "not_run": 0, "pass_rate": 0.75,
                 "evaluators": {"contains": {"passed": 2, "total": 2, "pass_rate": 1.0}},
                 "cost_usd": "0.0012", "unpriced_attempts": 0, "input_tokens": 812, "output_tokens": 96,
                 "latency_p50_s": 0.7, "latency_p95_s": 1.3},
     "thresholds": [{"name": "pass_rate", "limit": 0.9, "actual": 0.75, "met": false}],
     "cases": [{"id": "multiply", "input": "What is 17 times 23?", "expected": {"answer": 391},
                "metadata": {}, "passed": 1, "attempts_run": 1, "not_run": 0, "pass_rate": 1.0,
                "cost_usd": "0.0003",
                "attempts": [{"repeat": 0, "status": "pass", "error": null, "latency_s": 0.71,
                              "cost_usd": "0.0003", "input_tokens": 203, "output_tokens": 24,
                              "output": {"answer": 391},
                              "scores": [{"evaluator": "contains", "status": "pass", "value": null,
                                          "reason": "...", "cost_usd": null}],
                              "transcript": [{"role": "user", "text": "...", "tool_calls": [],
                                              "tool_results": []}]}]}],
     "comparison": {...}}              # only with --compare (see compare())

A threshold's ``limit`` and ``actual`` are numbers, except ``max_cost_usd``'s (decimal strings).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal, TypeVar

from seamkit.errors import SeamkitError
from seamkit.plugin import mask_named

from seamkit_evals.results import AttemptResult, EvalReport

__all__ = ["REPORT_VERSION", "CaseChange", "Comparison", "ReportError", "compare", "comparison_json", "mask_doc",
           "read_report", "render_terminal", "render_comparison", "report_json", "write_json"]

N = TypeVar("N", float, Decimal)

REPORT_VERSION = 1
MASK = "***"


class ReportError(SeamkitError):
    """An earlier report given to ``--compare`` cannot be read: not JSON, not an eval report, or
    written in another ``version`` of the format."""


# -- the JSON document -----------------------------------------------------------------------------


def _money(value: Decimal | None) -> str | None:
    return None if value is None else format(value, "f")


def _num(value: float | Decimal | None) -> Any:
    if value is None:
        return None
    if isinstance(value, Decimal):
        return format(value, "f")
    return value


def _transcript(attempt: AttemptResult) -> list[dict[str, Any]]:
    from seamkit.plugin import call_json, result_json

    return [{"role": m.role, "text": m.text, "tool_calls": [call_json(c) for c in m.tool_calls],
             "tool_results": [result_json(r) for r in m.tool_results]} for m in attempt.transcript]


def _input(value: Any) -> Any:
    if isinstance(value, str):
        return value
    return [{"role": m.role, "text": m.text} for m in value]


def _attempt_json(a: AttemptResult) -> dict[str, Any]:
    from seamkit.plugin import jsonable

    usage = a.total_usage
    return {
        "repeat": a.repeat, "status": a.status, "error": a.error, "latency_s": round(a.latency_s, 6),
        "cost_usd": _money(a.cost), "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "output": mask_named(jsonable(a.output)),
        "scores": [{"evaluator": s.evaluator, "status": s.status, "value": s.value, "reason": s.reason,
                    "cost_usd": _money(s.usage.cost) if s.usage.requests else None} for s in a.scores],
        "transcript": _transcript(a),
    }


def report_json(report: EvalReport, secrets: Iterable[str] = ()) -> dict[str, Any]:
    """``report`` as the JSON document described in the module doc, secrets masked: values taken
    from the environment everywhere (:func:`mask_doc`), values of keys named like secrets in tool
    arguments, outputs, expected values and metadata (:func:`mask_named`)."""
    from seamkit.plugin import jsonable

    s = report.summary
    doc = {
        "version": REPORT_VERSION,
        "suite": report.suite_file, "agent_file": report.agent_file, "agent": report.agent_name,
        "started_at": report.started_at, "duration_s": round(report.duration_s, 3),
        "stopped": report.stopped, "exit_code": report.exit_code,
        "summary": {
            "attempts": s.attempts, "passed": s.passed, "failed": s.failed, "errors": s.errors,
            "not_run": s.not_run, "pass_rate": s.pass_rate,
            "evaluators": {k: {"passed": v.passed, "total": v.total, "pass_rate": v.pass_rate}
                           for k, v in s.evaluators.items()},
            "cost_usd": _money(s.cost_usd), "unpriced_attempts": s.unpriced,
            "input_tokens": s.input_tokens, "output_tokens": s.output_tokens,
            "latency_p50_s": s.latency_p50_s, "latency_p95_s": s.latency_p95_s,
        },
        "thresholds": [{"name": t.name, "limit": _num(t.limit), "actual": _num(t.actual), "met": t.met}
                       for t in report.thresholds],
        "cases": [
            {"id": c.case.id, "input": _input(c.case.input), "expected": mask_named(jsonable(c.case.expected)),
             "metadata": mask_named(jsonable(c.case.metadata)), "passed": c.passed, "attempts_run": len(c.attempts),
             "not_run": c.not_run, "pass_rate": c.pass_rate, "cost_usd": _money(c.cost),
             "attempts": [_attempt_json(a) for a in c.attempts]}
            for c in report.cases
        ],
    }
    masked: dict[str, Any] = mask_doc(doc, secrets)
    return masked


def mask_doc(doc: Any, secrets: Iterable[str] = ()) -> Any:
    """``doc`` (JSON data) with every ``secrets`` value masked (``***``) in every string, as the
    CLI masks its output (:class:`seamkit._cli.scrub.TextScrubber`: whole values and long enough
    leading parts)."""
    from seamkit.plugin import TextScrubber

    scrubber = TextScrubber(secrets)

    def walk(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {scrubber.scrub(str(k)): walk(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(v) for v in value]
        if isinstance(value, str):
            return scrubber.scrub(value)
        return value

    return walk(doc) if scrubber else doc


def write_json(doc: Mapping[str, Any], path: str | Path) -> None:
    """Write ``doc`` to ``path`` as indented UTF-8 JSON."""
    Path(path).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_report(path: str | Path) -> dict[str, Any]:
    """An earlier report (for ``--compare``), checked enough to compare with. Raises
    :class:`ReportError` saying what is wrong (missing file, not JSON, another version, a field
    of the wrong shape)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"cannot read the report {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ReportError(f"{p} is not a seamkit eval report: not UTF-8 text") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{p} is not a seamkit eval report: not JSON ({exc.msg} at line {exc.lineno}, "
                          f"column {exc.colno})") from None
    except RecursionError:  # json.loads of "[[[[..." (no report nests more than a few levels)
        raise ReportError(f"{p} is not a seamkit eval report: nested too deeply") from None
    if not isinstance(doc, dict) or "cases" not in doc or "summary" not in doc:
        raise ReportError(f"{p} is not a seamkit eval report (expected a JSON object with 'version', "
                          "'summary' and 'cases', as seamkit eval --json writes)")
    version = doc.get("version")
    if version != REPORT_VERSION or isinstance(version, bool):
        raise ReportError(f"{p} is an eval report of format version {version!r}; this seamkit-evals compares "
                          f"with version {REPORT_VERSION} (run the old suite again with --json)")

    def bad(where: str, what: str) -> ReportError:
        return ReportError(f"{p} is not a valid eval report: {where} should be {what}")

    summary = doc["summary"]
    if not isinstance(summary, dict):
        raise bad("summary", "an object")
    _check_rate(summary.get("pass_rate"), "summary.pass_rate", bad)
    _check_money(summary.get("cost_usd"), "summary.cost_usd", bad)
    cases = doc["cases"]
    if not isinstance(cases, list):
        raise bad("cases", "a list")
    seen: set[str] = set()
    for i, c in enumerate(cases):
        if not isinstance(c, dict):
            raise bad(f"cases[{i}]", "an object")
        if not isinstance(c.get("id"), str):
            raise bad(f"cases[{i}].id", "a string")
        if c["id"] in seen:
            raise bad(f"cases[{i}].id", f"unique ({c['id']!r} appears twice)")
        seen.add(c["id"])
        _check_rate(c.get("pass_rate"), f"cases[{i}].pass_rate", bad)
        _check_money(c.get("cost_usd"), f"cases[{i}].cost_usd", bad)
    return doc


def _check_rate(value: Any, where: str, bad: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and 0 <= value <= 1):
        raise bad(where, "a number between 0 and 1, or null")


def _check_money(value: Any, where: str, bad: Any) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise bad(where, "a decimal string such as \"0.0012\", or null")
    try:
        d = Decimal(value)
    except InvalidOperation:
        raise bad(where, "a decimal string such as \"0.0012\", or null") from None
    if not d.is_finite():
        raise bad(where, "a finite decimal string")


# -- compare -----------------------------------------------------------------------------------------

Change = Literal["regressed", "improved", "unchanged", "new", "removed"]


@dataclass(frozen=True, slots=True)
class CaseChange:
    """How one case changed: ``change`` (``regressed``: its pass rate went down; ``improved``:
    up; ``unchanged``; ``new``: not in the old report; ``removed``: not in the new one), the
    pass rates (``None`` where absent or nothing ran) and costs (USD, ``None`` where unknown),
    old and new."""

    id: str
    change: Change
    old_pass_rate: float | None
    new_pass_rate: float | None
    old_cost: Decimal | None
    new_cost: Decimal | None

    @property
    def pass_rate_delta(self) -> float | None:
        return _delta(self.old_pass_rate, self.new_pass_rate)

    @property
    def cost_delta(self) -> Decimal | None:
        return _delta(self.old_cost, self.new_cost)


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every case's change (new report's order, then removed ones) and the summary's pass rates
    and costs, old and new."""

    cases: tuple[CaseChange, ...]
    old_pass_rate: float | None
    new_pass_rate: float | None
    old_cost: Decimal | None
    new_cost: Decimal | None
    old_suite: str | None = None  # the suite file the earlier report names

    @property
    def disjoint(self) -> bool:
        """Both reports have cases and none in common: likely a report of another suite."""
        return all(c.change in ("new", "removed") for c in self.cases) and {c.change for c in self.cases} == {
            "new", "removed"}

    def count(self, change: Change) -> int:
        return sum(c.change == change for c in self.cases)

    @property
    def pass_rate_delta(self) -> float | None:
        return _delta(self.old_pass_rate, self.new_pass_rate)

    @property
    def cost_delta(self) -> Decimal | None:
        return _delta(self.old_cost, self.new_cost)


def _delta(old: N | None, new: N | None) -> N | None:
    """``new - old``, ``None`` when either is unknown."""
    if old is None or new is None:
        return None
    return new - old


def _dec(value: Any) -> Decimal | None:
    return Decimal(value) if isinstance(value, str) else None


def compare(old: Mapping[str, Any], new: Mapping[str, Any]) -> Comparison:
    """Compare two report documents (``old`` checked by :func:`read_report`), case by case by id.
    A case whose pass rate is unknown on either side (none of its attempts ran) is
    ``unchanged`` unless it is new or removed."""
    old_cases = {c["id"]: c for c in old["cases"]}
    new_ids = {c["id"] for c in new["cases"]}
    rows: list[CaseChange] = []
    for c in new["cases"]:
        o = old_cases.get(c["id"])
        if o is None:
            rows.append(CaseChange(c["id"], "new", None, c.get("pass_rate"), None, _dec(c.get("cost_usd"))))
            continue
        before, after = o.get("pass_rate"), c.get("pass_rate")
        change: Change = "unchanged"
        if before is not None and after is not None:
            if after < before:
                change = "regressed"
            elif after > before:
                change = "improved"
        rows.append(CaseChange(c["id"], change, before, after, _dec(o.get("cost_usd")), _dec(c.get("cost_usd"))))
    for o in old["cases"]:
        if o["id"] not in new_ids:
            rows.append(CaseChange(o["id"], "removed", o.get("pass_rate"), None, _dec(o.get("cost_usd")), None))
    return Comparison(tuple(rows), old["summary"].get("pass_rate"), new["summary"].get("pass_rate"),
                      _dec(old["summary"].get("cost_usd")), _dec(new["summary"].get("cost_usd")),
                      old.get("suite") if isinstance(old.get("suite"), str) else None)


def comparison_json(comparison: Comparison, old_path: str) -> dict[str, Any]:
    """``comparison`` as JSON (the ``comparison`` key of a report written with ``--compare``)."""
    cmp = comparison
    return {
        "against": old_path,
        "counts": {k: cmp.count(k) for k in ("regressed", "improved", "unchanged", "new", "removed")},
        "pass_rate": {"old": cmp.old_pass_rate, "new": cmp.new_pass_rate, "delta": cmp.pass_rate_delta},
        "cost_usd": {"old": _money(cmp.old_cost), "new": _money(cmp.new_cost), "delta": _money(cmp.cost_delta)},
        "cases": [{"id": c.id, "change": c.change, "old_pass_rate": c.old_pass_rate, "new_pass_rate": c.new_pass_rate,
                   "pass_rate_delta": c.pass_rate_delta, "old_cost_usd": _money(c.old_cost),
                   "new_cost_usd": _money(c.new_cost), "cost_delta_usd": _money(c.cost_delta)}
                  for c in cmp.cases],
    }


# -- the terminal -------------------------------------------------------------------------------------

_STATUS_STYLE = {"pass": "green", "fail": "red", "error": "bold red", "not run": "yellow"}
_CHANGE_STYLE = {"regressed": "bold red", "improved": "green", "unchanged": "dim", "new": "cyan", "removed": "yellow"}


def _rate(value: Any) -> str:
    return "-" if value is None else f"{value:.0%}" if value in (0, 1) else f"{value:.1%}"


def _usd(value: Any) -> str:
    return "unknown" if value is None else f"${value}"


def _signed_rate(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f} pts"


def _signed_usd(value: Decimal | None) -> str:
    if value is None:
        return "-"
    return f"+${value:f}" if value >= 0 else f"-${-value:f}"


def _seconds(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}s"


def render_terminal(doc: Mapping[str, Any], console: Any, comparison: Comparison | None = None) -> None:
    """Print the report document ``doc`` on ``console`` (a ``rich.console.Console``): one row
    per attempt (status, scores, cost, tokens, latency), the summary, each threshold met or not,
    and the comparison when given. Text from the model is shown as plain text (no markup) with
    control characters escaped."""
    from rich.table import Table
    from rich.text import Text
    from seamkit.plugin import truncate, visible

    def plain(text: str, style: str = "") -> Text:
        return Text(visible(text), style=style)

    table = Table(title="seamkit eval: " + visible(str(doc.get("suite", ""))), title_justify="left")
    for name, kw in (("case", {}), ("#", {"justify": "right"}), ("status", {}), ("scores", {"ratio": 1}),
                     ("cost", {"justify": "right"}), ("tokens", {"justify": "right"}),
                     ("latency", {"justify": "right"})):
        table.add_column(name, overflow="fold", **kw)
    for c in doc["cases"]:
        for a in c["attempts"]:
            scores = Text()
            for i, s in enumerate(a["scores"]):
                if i:
                    scores.append("\n")
                scores.append(visible(s["evaluator"]) + " ")
                scores.append(s["status"], style=_STATUS_STYLE[s["status"]])
                if s["status"] != "pass" and s["reason"]:
                    scores.append(": " + visible(truncate(s["reason"], 120)), style="dim")
            if a["error"]:
                scores.append(("\n" if a["scores"] else "") + visible(truncate(a["error"], 160)), style="red")
            table.add_row(plain(c["id"]), str(a["repeat"] + 1), plain(a["status"], _STATUS_STYLE[a["status"]]), scores,
                          _usd(a["cost_usd"]), f"{a['input_tokens']}/{a['output_tokens']}", _seconds(a["latency_s"]))
        if c["not_run"]:
            table.add_row(plain(c["id"]), "", plain("not run", _STATUS_STYLE["not run"]),
                          plain(f"{c['not_run']} attempt{'s' if c['not_run'] != 1 else ''} not started"), "", "", "")
    console.print(table)
    s = doc["summary"]
    not_run = f", {s['not_run']} not run" if s["not_run"] else ""
    lines = [
        f"attempts: {s['attempts']} run, {s['passed']} passed, {s['failed']} failed, {s['errors']} errors{not_run}",
        f"pass rate: {_rate(s['pass_rate'])}",
    ]
    for name, e in s["evaluators"].items():
        lines.append(f"  {visible(name)}: {_rate(e['pass_rate'])} ({e['passed']}/{e['total']})")
    unpriced = f" ({s['unpriced_attempts']} attempts of unknown cost not counted)" if s["unpriced_attempts"] else ""
    lines.append(f"cost: ${s['cost_usd']}{unpriced}")
    lines.append(f"tokens: {s['input_tokens']} in / {s['output_tokens']} out")
    lines.append(f"latency: p50 {_seconds(s['latency_p50_s'])}, p95 {_seconds(s['latency_p95_s'])}")
    console.print(Text("\n".join(lines)))
    if doc.get("stopped") == "budget":
        console.print(Text(f"stopped: the eval's budget was spent; {s['not_run']} attempts were not run",
                           style="yellow"))
    elif doc.get("stopped") == "interrupted":
        console.print(Text(f"interrupted: {s['not_run']} attempts were not run", style="yellow"))
    for t in doc["thresholds"]:
        actual = t["actual"]
        shown = "nothing measured" if actual is None else (
            _rate(actual) if t["name"] == "pass_rate" or t["name"].startswith("evaluators.") else
            f"${actual}" if t["name"] == "max_cost_usd" else _seconds(actual))
        limit = (_rate(t["limit"]) if t["name"] == "pass_rate" or t["name"].startswith("evaluators.") else
                 f"${t['limit']}" if t["name"] == "max_cost_usd" else _seconds(t["limit"]))
        mark = Text("met" if t["met"] else "NOT MET", style="green" if t["met"] else "bold red")
        console.print(Text.assemble(f"threshold {visible(t['name'])} {limit}: ", mark, f" ({shown})"))
    if comparison is not None:
        against = doc.get("comparison", {}).get("against") if isinstance(doc.get("comparison"), Mapping) else None
        render_comparison(comparison, console, against)


def render_comparison(cmp: Comparison, console: Any, against: str | None = None) -> None:
    """Print ``cmp``: a row per case (change, pass rates, cost delta), then the totals, and a
    warning when no case is in both reports (``against``: the earlier report's file)."""
    from rich.table import Table
    from rich.text import Text
    from seamkit.plugin import visible

    table = Table(title="compared with the earlier report", title_justify="left")
    for name in ("case", "change", "pass rate", "Δ pass rate", "Δ cost"):
        table.add_column(name, overflow="fold")
    for c in cmp.cases:
        table.add_row(Text(visible(c.id)), Text(c.change, style=_CHANGE_STYLE[c.change]),
                      f"{_rate(c.old_pass_rate)} -> {_rate(c.new_pass_rate)}", _signed_rate(c.pass_rate_delta),
                      _signed_usd(c.cost_delta))
    console.print(table)
    counts = ", ".join(f"{cmp.count(k)} {k}" for k in ("regressed", "improved", "unchanged", "new", "removed"))
    console.print(Text(f"{counts}; pass rate {_rate(cmp.old_pass_rate)} -> {_rate(cmp.new_pass_rate)} "
                       f"({_signed_rate(cmp.pass_rate_delta)}), cost {_usd(_money(cmp.old_cost))} -> "
                       f"{_usd(_money(cmp.new_cost))} ({_signed_usd(cmp.cost_delta)})"))
    if cmp.disjoint:
        suite = f" ({visible(cmp.old_suite)})" if cmp.old_suite else ""
        console.print(Text(f"no case of {visible(against or 'the earlier report')} is in this eval: is it a report "
                           f"of another suite{suite}?", style="yellow"))
