"""The provider conformance suite fails broken providers, each on the checks its bug breaks.

Each mutant is the bundled ``openai_chat`` provider with one bug (so everything else about it is
correct): it drops tool results, drops the system prompt, never sends ``max_tokens``, never sends
the credential, or takes a cut-off stream for a whole reply. The suite runs against every mutant
and the unmodified provider in one pytest subprocess (a fresh session, as a plugin author runs
it); the test reads the JUnit report and asserts exactly which suite tests failed for which.
Only the suite's checks of what is sent, of a cut-off stream and of the credential run (``-k``):
the rest of the suite runs against the unmodified provider in ``test_openai_chat_conformance``.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

FIXTURES = Path(__file__).parents[1] / "plugins" / "providers" / "openai" / "fixtures" / "chat"

MODULE = '''
import json
from pathlib import Path

import pytest
from pytest_seamkit.conformance import CONFORMANCE_SECRET, ProviderConformance, Recorder, WireReply
from seamkit.errors import ProviderError
from seamkit.values import Delta
from seamkit_http import make_client
from seamkit_openai.chat import OpenAIChatProvider
from seamkit_openai.config import OpenAIChatConfig

FIX = Path(FIXTURES)


def reply(scenario):
    name = {"truncated": "dropped"}.get(scenario, scenario)
    if (FIX / f"{name}.reply.json").exists():
        spec = json.loads((FIX / f"{name}.reply.json").read_text())
        return WireReply.json(spec["status"], spec["body"], spec["headers"])
    return WireReply.sse((FIX / f"{name}.sse").read_bytes())


class DropsToolResults(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        body["messages"] = [m for m in body["messages"] if m["role"] != "tool"]
        return body, warnings


class DropsSystemPrompt(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        body["messages"] = [m for m in body["messages"] if m["role"] not in ("system", "developer")]
        return body, warnings


class NeverSendsMaxTokens(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        body.pop("max_completion_tokens", None)
        body.pop("max_tokens", None)
        return body, warnings


class NeverSendsCredential(OpenAIChatProvider):
    def headers(self):
        return {k: v for k, v in super().headers().items() if k.lower() != "authorization"}


class SwallowsTruncation(OpenAIChatProvider):
    async def stream(self, request):
        try:
            async for delta in super().stream(request):
                yield delta
        except ProviderError as exc:
            if "ended before" not in str(exc):
                raise
            yield Delta(finish_reason="stop")


def suite_for(cls):
    class Suite(ProviderConformance):
        @pytest.fixture
        def make_provider(self, recorder: Recorder):
            def make(scenario):
                model = "o4-mini" if scenario == "reasoning" else "gpt-4.1-mini"
                config = OpenAIChatConfig(model=model, api_key=CONFORMANCE_SECRET)
                client = make_client(transport=recorder.transport(reply(scenario)))
                return cls(config, client=client, environ={})

            return make

    return Suite


TestUnmodified = suite_for(OpenAIChatProvider)
TestDropsToolResults = suite_for(DropsToolResults)
TestDropsSystemPrompt = suite_for(DropsSystemPrompt)
TestNeverSendsMaxTokens = suite_for(NeverSendsMaxTokens)
TestNeverSendsCredential = suite_for(NeverSendsCredential)
TestSwallowsTruncation = suite_for(SwallowsTruncation)
'''

EXPECTED_FAILURES = {
    "TestUnmodified": set(),
    "TestDropsToolResults": {"test_sends_tool_calls_and_their_results", "test_sends_parallel_tool_results"},
    "TestDropsSystemPrompt": {"test_sends_the_system_prompt"},
    "TestNeverSendsMaxTokens": {"test_sends_max_tokens"},
    "TestNeverSendsCredential": {"test_sends_the_credential"},
    "TestSwallowsTruncation": {"test_a_cut_off_stream_is_an_error"},
}


def test_each_broken_provider_fails_exactly_the_checks_its_bug_breaks(tmp_path: Path) -> None:
    (tmp_path / "test_mutants.py").write_text(f"FIXTURES = {str(FIXTURES)!r}\n" + MODULE)
    report = tmp_path / "report.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
         "-k", "test_sends or test_a_cut_off or test_the_credential", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert report.exists(), proc.stdout + proc.stderr
    failed: dict[str, set[str]] = {name: set() for name in EXPECTED_FAILURES}
    ran: dict[str, int] = dict.fromkeys(EXPECTED_FAILURES, 0)
    for case in ET.parse(report).getroot().iter("testcase"):
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        name = case.get("name", "").split("[", 1)[0]
        assert case.find("error") is None, f"{cls}.{name} errored:\n{proc.stdout[-4000:]}"
        ran[cls] += 1
        if case.find("failure") is not None:
            failed[cls].add(name)
    assert failed == EXPECTED_FAILURES, proc.stdout[-6000:]
    assert len(set(ran.values())) == 1 and ran["TestUnmodified"] >= 10, ran  # every mutant met every check
