"""The eval reports: the JSON document (shape, exact money, secrets masked), --compare, and the HTML
page (escaped, self-contained, rendered by headless Chromium without console errors)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import struct
import subprocess
from collections.abc import Callable
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from seamkit.composition import build_agents
from seamkit_evals.report import ReportError, compare, comparison_json, read_report, report_json, write_json
from seamkit_evals.report_html import render_html
from seamkit_evals.runner import EvalRunner
from seamkit_evals.suite import load_suite

Write = Callable[[str, str], Path]
NASTY = "<script>alert(1)</script> \"'&"
SECRET = "sk-eval-7d1f0c9b2a8e4455SECRET"
CHROMIUM = "/usr/bin/chromium"


async def run_report(write: Write, agent: str, suite: str, secrets_env: dict[str, str] | None = None) -> dict[str, Any]:
    write("agent.yaml", agent)
    path = write("suite.yaml", suite)
    s = load_suite(path, env=secrets_env)
    report = await EvalRunner(s, build_agents(s.composition, registry=None)[s.agent_name]).run()
    return report_json(report, s.secrets)


NASTY_AGENT = f"""
seamkit: 1
agent:
  name: nasty
  model:
    use: scripted
    follow_transcript: true
    turns:
      - tool_calls: [{{name: probe, arguments: {{api_key: "sk-live-named-0123456789"}}}}]
      - {json.dumps("answer " + NASTY + " key=${EVAL_KEY}")}
  tools: [probe]
  checkpoints: null
"""

NASTY_SUITE = f"""
version: 1
agent: agent.yaml
evaluators: [{{use: has_text, text: answer}}]
thresholds: {{pass_rate: 0.5, max_cost_usd: "0.10"}}
cases:
  - id: {json.dumps("nasty " + NASTY)}
    input: {json.dumps("question " + NASTY)}
    expected: {{password: hunter2, answer: 42}}
  - id: fails
    input: q
    evaluators: [{{use: has_text, name: missing, text: {json.dumps("not there " + NASTY)}}}]
"""


@pytest.fixture
def nasty_env() -> dict[str, str]:
    return {"EVAL_KEY": SECRET}


async def test_the_json_report_has_its_documented_shape(components: None, write: Write, nasty_env: dict[str, str],
                                                        tmp_path: Path) -> None:
    doc = await run_report(write, NASTY_AGENT, NASTY_SUITE, nasty_env)
    assert doc["version"] == 1 and doc["agent"] == "nasty" and doc["stopped"] is None
    assert doc["suite"].endswith("suite.yaml") and doc["agent_file"].endswith("agent.yaml")
    s = doc["summary"]
    assert (s["attempts"], s["passed"], s["failed"], s["errors"], s["not_run"]) == (2, 1, 1, 0, 0)
    assert s["pass_rate"] == 0.5 and s["cost_usd"] == "0" and isinstance(s["latency_p95_s"], float)
    assert s["evaluators"] == {"has_text": {"passed": 2, "total": 2, "pass_rate": 1.0},
                               "missing": {"passed": 0, "total": 1, "pass_rate": 0.0}}
    assert doc["thresholds"] == [{"name": "pass_rate", "limit": 0.5, "actual": 0.5, "met": True},
                                 {"name": "max_cost_usd", "limit": "0.10", "actual": "0", "met": True}]
    assert doc["exit_code"] == 0
    first, second = doc["cases"]
    assert first["id"] == "nasty " + NASTY and first["passed"] == 1 and first["attempts_run"] == 1
    [a] = first["attempts"]
    assert a["status"] == "pass" and a["scores"][0] == {"evaluator": "has_text", "status": "pass", "value": None,
                                                         "reason": "'answer' in the answer", "cost_usd": None}
    assert [m["role"] for m in a["transcript"]] == ["user", "assistant", "tool", "assistant"]
    assert a["transcript"][1]["tool_calls"][0]["name"] == "probe"
    assert second["attempts"][0]["status"] == "fail"
    path = tmp_path / "r.json"
    write_json(doc, path)
    assert json.loads(path.read_text()) == doc and read_report(path) == doc


async def test_reports_mask_secrets(components: None, write: Write, nasty_env: dict[str, str]) -> None:
    doc = await run_report(write, NASTY_AGENT, NASTY_SUITE, nasty_env)
    text = json.dumps(doc)
    # a value from the environment, wherever it went (here: the model's answer)
    assert SECRET not in text and SECRET[:12] not in text and "key=***" in text
    # values of keys named like secrets: tool arguments, expected values
    assert "sk-live-named-0123456789" not in text and "hunter2" not in text
    a = doc["cases"][0]["attempts"][0]
    assert a["transcript"][1]["tool_calls"][0]["arguments"] == {"api_key": "***"}
    assert doc["cases"][0]["expected"] == {"password": "***", "answer": 42}
    html = render_html(doc)
    assert SECRET not in html and "sk-live-named" not in html and "hunter2" not in html


async def test_money_is_exact_in_the_report(components: None, write: Write) -> None:
    doc = await run_report(write, "seamkit: 1\nagent:\n  model: {use: priced, cost: '0.1'}\n  checkpoints: null\n",
                           "version: 1\nagent: agent.yaml\nrepeat: 3\ncases: [{id: a, input: x}]\n")
    assert doc["summary"]["cost_usd"] == "0.3" and doc["cases"][0]["cost_usd"] == "0.3"
    assert [a["cost_usd"] for a in doc["cases"][0]["attempts"]] == ["0.1", "0.1", "0.1"]


Row = tuple[str, float | None, str | None]


def _doc(cases: list[Row], rate: float | None = 0.5, cost: str = "1") -> dict[str, Any]:
    return {"version": 1, "summary": {"pass_rate": rate, "cost_usd": cost},
            "cases": [{"id": i, "pass_rate": r, "cost_usd": c} for i, r, c in cases]}


def test_compare_says_what_changed_per_case() -> None:
    old = _doc([("same", 1.0, "0.5"), ("worse", 1.0, "0.2"), ("better", 0.0, "0.1"), ("gone", 1.0, "0.1"),
                ("unrun", None, None)], rate=0.75, cost="0.9")
    new = _doc([("same", 1.0, "0.5"), ("worse", 0.5, "0.3"), ("better", 1.0, None), ("fresh", 1.0, "0.1"),
                ("unrun", 1.0, "0.1")], rate=0.875, cost="1.5")
    cmp = compare(old, new)
    assert [(c.id, c.change) for c in cmp.cases] == [
        ("same", "unchanged"), ("worse", "regressed"), ("better", "improved"), ("fresh", "new"),
        ("unrun", "unchanged"), ("gone", "removed")]
    worse = cmp.cases[1]
    assert worse.pass_rate_delta == -0.5 and worse.cost_delta == Decimal("0.1")
    assert cmp.cases[2].cost_delta is None  # unknown on one side: no delta
    assert (cmp.count("regressed"), cmp.count("improved"), cmp.count("new"), cmp.count("removed")) == (1, 1, 1, 1)
    assert cmp.pass_rate_delta == 0.125 and cmp.cost_delta == Decimal("0.6")


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "is not a seamkit eval report: not JSON"),
    ("[1, 2]", "is not a seamkit eval report (expected a JSON object"),
    (json.dumps({"version": 2, "summary": {}, "cases": []}),
     "format version 2; this seamkit-evals compares with version 1"),
    (json.dumps({"version": 1, "summary": {}, "cases": [{"pass_rate": 1}]}), "cases[0].id should be a string"),
    (json.dumps({"version": 1, "summary": {}, "cases": [{"id": "a", "pass_rate": 3}]}),
     "cases[0].pass_rate should be a number between 0 and 1"),
    (json.dumps({"version": 1, "summary": {"cost_usd": 0.5}, "cases": []}), "summary.cost_usd should be a decimal"),
    (json.dumps({"version": 1, "summary": {}, "cases": [{"id": "a"}, {"id": "a"}]}), "unique ('a' appears twice)"),
    ("[" * 100_000, "is not a seamkit eval report: nested too deeply"),  # RecursionError in json.loads
])
def test_a_malformed_earlier_report_is_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "old.json"
    path.write_text(content)
    with pytest.raises(ReportError, match=re.escape(message)):
        read_report(path)
    with pytest.raises(ReportError, match="cannot read the report"):
        read_report(tmp_path / "missing.json")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


async def test_the_html_page_escapes_every_value_and_loads_nothing(components: None, write: Write,
                                                                   nasty_env: dict[str, str]) -> None:
    doc = await run_report(write, NASTY_AGENT, NASTY_SUITE, nasty_env)
    html = render_html(doc)
    page = _Page()
    page.feed(html)
    page.close()
    assert "script" not in page.tags and "img" not in page.tags and "link" not in page.tags
    assert not [v for k, v in page.attrs if k in ("src", "href") or (v and "http" in v and k != "content")]
    text = "".join(page.text)
    assert "nasty " + NASTY in text and "answer " + NASTY in text  # the values, as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &quot;&#x27;&amp;" in html
    assert "details" in page.tags and "summary" in page.tags  # the transcripts fold
    assert "Content-Security-Policy" in html



def test_the_html_page_shows_invisible_and_bidi_characters_rather_than_obeying_them() -> None:
    """A right-to-left override (U+202E) in a case id would reverse the text after it on the page
    ("1/1 passed" shown as "dessap 1/1"), as a crafted id could spoof what passed: the page writes
    such characters as ``\\u202e``, as the terminal does; newlines and tabs stay."""
    doc = {"suite": "s\u202e.yaml", "agent": "a", "agent_file": "f", "started_at": "t", "duration_s": 0.1,
           "exit_code": 0, "stopped": None, "thresholds": [],
           "summary": {"attempts": 1, "passed": 1, "failed": 0, "errors": 0, "not_run": 0, "pass_rate": 1.0,
                       "evaluators": {"e\u200b": {"passed": 1, "total": 1, "pass_rate": 1.0}}, "cost_usd": "0",
                       "unpriced_attempts": 0, "input_tokens": 0, "output_tokens": 0, "latency_p50_s": 0.1,
                       "latency_p95_s": 0.1},
           "cases": [{"id": "ok\u202e1/0 ssap", "input": "in\u2066put", "expected": None, "metadata": {},
                      "passed": 1, "attempts_run": 1, "not_run": 0, "pass_rate": 1.0, "cost_usd": "0",
                      "attempts": [{"repeat": 0, "status": "pass", "error": None, "latency_s": 0.1,
                                    "cost_usd": "0", "input_tokens": 0, "output_tokens": 0,
                                    "output": "line one\n\tline two\u202e", "scores": [],
                                    "transcript": []}]}]}
    html = render_html(doc)
    for ch in ("\u202e", "\u200b", "\u2066"):
        assert ch not in html
    assert "ok\\u202e1/0 ssap" in html and "s\\u202e.yaml" in html and "e\\u200b" in html
    assert "in\\u2066put" in html
    assert "line one\n\tline two\\u202e" in html  # the layout of a multi-line output is kept



def _page_doc(cases: list[str]) -> dict[str, Any]:
    return {"version": 1, "suite": "s.yaml", "agent": "a", "agent_file": "f", "started_at": "t", "duration_s": 0.1,
            "exit_code": 0, "stopped": None, "thresholds": [],
            "summary": {"attempts": 1, "passed": 1, "failed": 0, "errors": 0, "not_run": 0, "pass_rate": 0.5,
                        "evaluators": {}, "cost_usd": "0", "unpriced_attempts": 0, "input_tokens": 0,
                        "output_tokens": 0, "latency_p50_s": 0.1, "latency_p95_s": 0.1},
            "cases": [{"id": i, "input": "x", "expected": None, "metadata": {}, "passed": 1, "attempts_run": 1,
                       "not_run": 0, "pass_rate": 1.0 if i == "a" else 0.0, "cost_usd": "0", "attempts": []}
                      for i in cases]}


def test_the_html_comparison_shows_the_deltas_and_a_report_of_another_suite() -> None:
    old = _page_doc(["a", "b"])
    old["cases"][0]["pass_rate"] = 0.25
    new = _page_doc(["a", "b"])
    new["comparison"] = comparison_json(compare(old, new), "old.json")
    html = render_html(new)
    assert '<th class="num">Δ pass rate</th>' in html and "+75.0 pts" in html  # a: 25% -> 100%
    assert "0 regressed, 1 improved, 1 unchanged, 0 new, 0 removed; pass rate 50.0% → 50.0% (+0.0 pts)" in html
    assert "another suite" not in html
    other = _page_doc(["x"])
    new["comparison"] = comparison_json(compare(other, new), "other.json")
    assert "No case of other.json is in this eval: is it a report of another suite?" in render_html(new)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def test_the_html_page_renders_in_headless_chromium_without_console_errors(
        components: None, write: Write, nasty_env: dict[str, str], tmp_path: Path) -> None:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run 'bash scripts/_services.sh' (it installs Debian's chromium)",
                    pytrace=False)
    doc = await run_report(write, NASTY_AGENT, NASTY_SUITE, nasty_env)
    page = tmp_path / "report.html"
    page.write_text(render_html(doc), encoding="utf-8")
    shot = tmp_path / "r.png"
    proc = await asyncio.to_thread(
        subprocess.run,
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,2000",
         "--enable-logging=stderr", "--v=0", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # every console message of the page (errors, CSP violations, a script that ran) is logged as CONSOLE
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    assert _png_size(shot) == (1200, 2000)
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one (a blank 1200x2000 PNG is ~10 KB)
