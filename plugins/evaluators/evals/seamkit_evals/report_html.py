"""The eval report as one self-contained HTML page (``seamkit eval --html OUT.html``).

Made from the report's JSON document (:func:`seamkit_evals.report.report_json`, secrets already
masked). Inline CSS, no script, no external resource (a Content-Security-Policy meta tag forbids
them, so even a value that escaped escaping could not run). Every value is HTML-escaped, its control
and invisible format characters (bidi overrides) written as ``\\uXXXX``. The summary and thresholds
come first, then each case: its attempts with status, scores and reasons, cost, tokens, latency,
and the transcript in a collapsible ``<details>``.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from html import escape
from typing import Any

__all__ = ["render_html"]

_CSS = """
:root { --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --mute: #656d76; --line: #d0d7de; --bg2: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1100px;
       padding: 24px; color: #1f2328; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
.meta { color: var(--mute); margin-bottom: 16px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; min-width: 140px; }
.card b { display: block; font-size: 20px; }
.card span { color: var(--mute); font-size: 12px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 6px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg2); font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: 12px; font-weight: 600;
         color: #fff; }
.pass, .met { background: var(--ok); } .fail, .error, .notmet { background: var(--bad); }
.notrun { background: var(--warn); }
.case { border: 1px solid var(--line); border-radius: 8px; margin: 14px 0; padding: 4px 14px 10px; }
.case h3 { font-size: 15px; margin: 10px 0 6px; }
.reason { color: var(--mute); }
.err { color: var(--bad); white-space: pre-wrap; }
pre { background: var(--bg2); padding: 8px; border-radius: 6px; white-space: pre-wrap; word-break: break-word;
      margin: 4px 0; }
details { margin: 6px 0; } summary { cursor: pointer; color: #0969da; }
.msg { border-left: 3px solid var(--line); padding-left: 8px; margin: 6px 0; }
.role { font-weight: 600; font-size: 12px; text-transform: uppercase; color: var(--mute); }
.stopped { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 8px 12px; }
"""


def _visible(text: str) -> str:
    """``text`` with control and invisible format characters (Unicode Cc, Cf: bidi overrides such
    as U+202E, zero-width characters) written as ``\\uXXXX``, as the terminal shows them: obeyed,
    a right-to-left override in a case id would reverse the text after it ("1/1 passed"). Newline,
    tab and carriage return stay, so a multi-line output keeps its layout."""
    return "".join(
        f"\\u{ord(ch):04x}" if ch not in "\n\t\r" and unicodedata.category(ch) in ("Cc", "Cf") else ch
        for ch in text
    )


def _e(value: Any) -> str:
    return escape(_visible("" if value is None else str(value)), quote=True)


def _rate(value: Any) -> str:
    return "-" if value is None else f"{value:.1%}"


def _points(delta: Any) -> str:
    return "-" if delta is None else f"{delta * 100:+.1f} pts"


def _usd(value: Any) -> str:
    return "unknown" if value is None else f"${value}"


def _secs(value: Any) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _badge(status: str) -> str:
    cls = {"pass": "pass", "fail": "fail", "error": "error", "met": "met", "not met": "notmet",
           "not run": "notrun"}.get(status, "fail")
    return f'<span class="badge {cls}">{_e(status)}</span>'


def _json_block(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return f"<pre>{_e(text)}</pre>"


def _transcript(messages: list[Mapping[str, Any]]) -> str:
    parts: list[str] = []
    for m in messages:
        body = [f'<div class="role">{_e(m.get("role"))}</div>']
        if m.get("text"):
            body.append(f"<pre>{_e(m['text'])}</pre>")
        for c in m.get("tool_calls", []):
            body.append(f"<div>→ tool call <code>{_e(c.get('name'))}</code></div>{_json_block(c.get('arguments'))}")
        for r in m.get("tool_results", []):
            flag = " (error)" if r.get("is_error") else ""
            body.append(f"<div>← result of <code>{_e(r.get('name'))}</code>{flag}</div>{_json_block(r.get('content'))}")
        parts.append(f'<div class="msg">{"".join(body)}</div>')
    return "".join(parts) or "<p class=\"reason\">(no transcript: the run failed before any message)</p>"


def _threshold_value(name: str, value: Any) -> str:
    if value is None:
        return "nothing measured"
    if name == "pass_rate" or name.startswith("evaluators."):
        return _rate(value)
    if name == "max_cost_usd":
        return _usd(value)
    return _secs(value)


def render_html(doc: Mapping[str, Any], *, title: str = "seamkit eval report") -> str:
    """The page for report document ``doc`` (see :mod:`seamkit_evals.report`)."""
    s = doc["summary"]
    out: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # nothing but the inline style may load or run
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{_e(title)}: {_e(doc.get('suite'))}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<div class="meta">suite <code>{_e(doc.get("suite"))}</code> · agent <code>{_e(doc.get("agent"))}</code> '
        f'from <code>{_e(doc.get("agent_file"))}</code> · started {_e(doc.get("started_at"))} · '
        f'{_e(doc.get("duration_s"))} s · exit code {_e(doc.get("exit_code"))}</div>',
    ]
    if doc.get("stopped") == "budget":
        out.append(f'<p class="stopped">The eval\'s budget was spent: {_e(s["not_run"])} attempts were not run.</p>')
    elif doc.get("stopped") == "interrupted":
        out.append(f'<p class="stopped">The eval was interrupted: {_e(s["not_run"])} attempts were not run.</p>')
    cards = [
        (_rate(s["pass_rate"]), "pass rate"),
        (f'{s["passed"]} / {s["attempts"]}', "attempts passed"),
        (str(s["errors"]), "runs failed"),
        (str(s["not_run"]), "not run"),
        (_usd(s["cost_usd"]), "total cost" + (f' ({s["unpriced_attempts"]} unknown)' if s["unpriced_attempts"]
                                              else "")),
        (f'{s["input_tokens"]} / {s["output_tokens"]}', "tokens in / out"),
        (_secs(s["latency_p50_s"]), "latency p50"),
        (_secs(s["latency_p95_s"]), "latency p95"),
    ]
    out.append('<h2>Summary</h2><div class="cards">' +
               "".join(f"<div class=\"card\"><b>{_e(v)}</b><span>{_e(k)}</span></div>" for v, k in cards) + "</div>")
    if s["evaluators"]:
        out.append('<table><tr><th>evaluator</th><th class="num">pass rate</th><th class="num">passed</th></tr>')
        for name, e in s["evaluators"].items():
            out.append(f'<tr><td>{_e(name)}</td><td class="num">{_rate(e["pass_rate"])}</td>'
                       f'<td class="num">{_e(e["passed"])} / {_e(e["total"])}</td></tr>')
        out.append("</table>")
    if doc["thresholds"]:
        out.append('<h2>Thresholds</h2><table><tr><th>threshold</th><th class="num">limit</th>'
                   '<th class="num">actual</th><th></th></tr>')
        for t in doc["thresholds"]:
            limit = _threshold_value(t["name"], t["limit"])
            out.append(f"<tr><td>{_e(t['name'])}</td><td class=\"num\">{_e(limit)}</td>"
                       f"<td class=\"num\">{_e(_threshold_value(t['name'], t['actual']))}</td>"
                       f"<td>{_badge('met' if t['met'] else 'not met')}</td></tr>")
        out.append("</table>")
    cmp = doc.get("comparison")
    if isinstance(cmp, Mapping):
        out.append(f"<h2>Compared with <code>{_e(cmp.get('against'))}</code></h2>")
        out.append('<table><tr><th>case</th><th>change</th><th class="num">pass rate</th>'
                   '<th class="num">Δ pass rate</th><th class="num">Δ cost</th></tr>')
        for c in cmp.get("cases", []):
            out.append(f"<tr><td>{_e(c['id'])}</td><td>{_e(c['change'])}</td>"
                       f"<td class=\"num\">{_rate(c['old_pass_rate'])} → {_rate(c['new_pass_rate'])}</td>"
                       f"<td class=\"num\">{_points(c['pass_rate_delta'])}</td>"
                       f"<td class=\"num\">{_e(_usd(c['cost_delta_usd']) if c['cost_delta_usd'] is not None else '-')}"
                       "</td></tr>")
        out.append("</table>")
        counts: Mapping[str, Any] = cmp["counts"] if isinstance(cmp.get("counts"), Mapping) else {}
        rates: Mapping[str, Any] = cmp["pass_rate"] if isinstance(cmp.get("pass_rate"), Mapping) else {}
        out.append(f'<p>{_e(", ".join(f"{n} {k}" for k, n in counts.items()))}; pass rate '
                   f'{_rate(rates.get("old"))} → {_rate(rates.get("new"))} ({_points(rates.get("delta"))})</p>')
        if counts.get("new") and counts.get("removed") and not any(
                counts.get(k) for k in ("regressed", "improved", "unchanged")):
            out.append(f'<p class="stopped">No case of {_e(cmp.get("against"))} is in this eval: is it a report of '
                       "another suite?</p>")
    out.append("<h2>Cases</h2>")
    for c in doc["cases"]:
        status = ("not run" if not c["attempts"] else "pass" if c["passed"] == c["attempts_run"] and not c["not_run"]
                  else "fail")
        out.append(f'<section class="case"><h3>{_badge(status)} {_e(c["id"])} '
                   f'<span class="reason">· {_e(c["passed"])}/{_e(c["attempts_run"])} passed · '
                   f'{_e(_usd(c["cost_usd"]))}</span></h3>')
        out.append(f"<details><summary>input and expected</summary><div>input</div>{_json_block(c['input'])}"
                   f"<div>expected</div>{_json_block(c['expected'])}</details>")
        if c["not_run"]:
            out.append(f'<p>{_badge("not run")} {_e(c["not_run"])} attempt(s) not started</p>')
        for a in c["attempts"]:
            out.append(f'<h4>{_badge(a["status"])} attempt {_e(a["repeat"] + 1)} · {_e(_usd(a["cost_usd"]))} · '
                       f'{_e(a["input_tokens"])}/{_e(a["output_tokens"])} tokens · {_e(_secs(a["latency_s"]))}</h4>')
            if a["error"]:
                out.append(f'<div class="err">{_e(a["error"])}</div>')
            if a["scores"]:
                out.append('<table><tr><th>evaluator</th><th>status</th><th class="num">value</th><th>reason</th></tr>')
                for sc in a["scores"]:
                    value = "" if sc["value"] is None else f'{sc["value"]:.3g}'
                    out.append(f"<tr><td>{_e(sc['evaluator'])}</td><td>{_badge(sc['status'])}</td>"
                               f"<td class=\"num\">{_e(value)}</td><td class=\"reason\">{_e(sc['reason'])}</td></tr>")
                out.append("</table>")
            # a failed attempt's transcript is open: that is what a person opens the page to read
            opened = " open" if a["status"] != "pass" else ""
            out.append(f"<details{opened}><summary>output and transcript ({len(a['transcript'])} messages)</summary>"
                       f"<div>output</div>{_json_block(a['output'])}{_transcript(a['transcript'])}</details>")
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
