"""examples/fetch-local.yaml through ``seamkit run``: the agent fetches a page from a real local
server (``http.server`` on 127.0.0.1) through the guarded ``fetch`` tool with its allow-list, and
the same run with a cloud metadata URL is refused (the egress guardrail stops it, exit 4; without
it, fetch refuses and the model reads the refusal). The example's
model is the bundled local one; here a scripted model (``use: scripted``) stands in for it, so
the tool call is certain and everything else (tool config, prompt, output type) is the example's."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from seamkit._cli import main as cli_main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fetch-local.yaml"
PAGE = "<!doctype html><title>Local</title><h1>Quarterly numbers</h1><p>Revenue rose 4%.</p>"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text(PAGE, encoding="utf-8")
    seen: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            seen.append(self.requestline)

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", seen
    finally:
        server.shutdown()
        server.server_close()


def _scripted(tmp_path: Path, url: str, answer: str) -> Path:
    """The example with its model replaced by a scripted one that calls fetch(url), then answers."""
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    doc["agent"]["model"] = {"use": "scripted", "turns": [
        {"tool_calls": [{"name": "fetch", "arguments": {"url": url}}]}, json.dumps({"heading": answer})]}
    path = tmp_path / "fetch-local.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _run(path: Path, task: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    rc = cli_main.main(["run", str(path), task, "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, [json.loads(line) for line in out.splitlines() if line.strip()]


def test_the_example_fetches_a_local_page_through_the_allow_list(
    site: tuple[str, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    url, seen = site
    rc, events = _run(_scripted(tmp_path, url, "Quarterly numbers"), url, capsys)
    assert rc == 0
    result = next(e["tool_result"] for e in events if e["kind"] == "tool_result")
    assert not result["is_error"]
    assert result["content"].startswith(f"URL: {url}\nStatus: 200\nContent-Type: text/html")
    assert "<h1>Quarterly numbers</h1>" in result["content"]
    assert events[-1]["kind"] == "run_finished" and events[-1]["output"] == {"heading": "Quarterly numbers"}
    assert seen == ["GET / HTTP/1.1"]


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/latest/",
                                 "http://metadata.google.internal/computeMetadata/v1/"])
def test_the_same_run_is_refused_for_a_metadata_url(
    url: str, site: tuple[str, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    rc, events = _run(_scripted(tmp_path, url, "refused"), url, capsys)
    assert rc == 4  # the egress guardrail stopped the run at the tool call (a tripwire)
    failed = events[-1]
    assert failed["kind"] == "run_failed" and failed["error"]["type"] == "GuardrailTripped"
    assert "guardrail 'egress' blocked the run at the tool point" in failed["error"]["message"]
    assert "metadata" in failed["error"]["message"]
    assert not [e for e in events if e["kind"] == "tool_result"]  # fetch never ran
    assert site[1] == []


def test_without_the_guardrail_fetch_refuses_and_the_model_is_told(
    site: tuple[str, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    url = "http://169.254.169.254/latest/meta-data/"
    path = _scripted(tmp_path, url, "refused")
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    del doc["agent"]["guardrails"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    rc, events = _run(path, url, capsys)
    assert rc == 0  # the model was told and answered; the refusal is in the transcript
    result = next(e["tool_result"] for e in events if e["kind"] == "tool_result")
    assert result["is_error"] and result["content"].startswith("EgressRefused: egress refused for ")
    assert "metadata" in result["content"]
    assert site[1] == []
