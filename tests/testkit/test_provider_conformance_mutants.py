"""The provider conformance suite fails broken providers, each on the checks its bug breaks.

Each mutant is the bundled ``openai_chat`` provider with one bug (so everything else about it is
correct): what it sends (tool results, system prompt, ``max_tokens``, credential dropped; every
role sent as ``user``; the turns reversed or squashed into one message; tool results without their
own call id; the tools or the output schema never sent), how it answers (a cut-off stream taken for
a whole reply, ``chat()`` turning HTTP errors into empty answers, a tool-call answer finishing
twice, negative usage counts) and how it behaves (the credential in an error's ``__cause__``, the
HTTP response left open when the caller stops early, an HTTP provider hiding its errors by not
declaring ``service``). Two correct-but-unusual variants must pass: rate-limit advice as
``retry_at``, and a bad key answered with Gemini's 400 ``API_KEY_INVALID``. The whole suite runs
against every variant and the unmodified provider in one pytest subprocess (a fresh session, as a
plugin author runs it); the test reads the JUnit report and asserts exactly which suite tests
failed for which.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

FIXTURES = Path(__file__).parents[1] / "plugins" / "providers" / "openai" / "fixtures" / "chat"

MODULE = '''
import dataclasses
import json
from contextlib import aclosing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pytest_seamkit.conformance import CONFORMANCE_SECRET, ProviderConformance, Recorder, WireReply
from seamkit.accumulate import collect_result
from seamkit.errors import FailureClass, ProviderError
from seamkit.values import Delta, Usage
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
            async with aclosing(super().stream(request)) as deltas:
                async for delta in deltas:
                    yield delta
        except ProviderError as exc:
            if "ended before" not in str(exc):
                raise
            yield Delta(finish_reason="stop")


class AllRolesUser(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            if "tool_calls" not in m and m["role"] != "tool":
                m["role"] = "user"
        return body, warnings


class ReversedTurns(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        body["messages"].reverse()
        return body, warnings


class OneBigUserMessage(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        body["messages"] = [{"role": "user", "content": "\\n".join(json.dumps(m) for m in body["messages"])}]
        return body, warnings


class ResultIdsDropped(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            m.pop("tool_call_id", None)
        return body, warnings


class ResultIdsAllFirst(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        ids = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
        for m in body["messages"]:
            if m["role"] == "tool":
                m["tool_call_id"] = ids[0]
        return body, warnings


class ToolsNeverOffered(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        body.pop("tools", None)
        body.pop("tool_choice", None)
        return body, warnings


class SchemaNeverSent(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        body.pop("response_format", None)
        return body, warnings


class ChatSwallowsErrors(OpenAIChatProvider):
    async def chat(self, request):
        async def guarded():
            try:
                async with aclosing(self.stream(request)) as deltas:
                    async for d in deltas:
                        yield d
            except ProviderError as exc:
                if exc.status is None or exc.status < 429:
                    raise
                yield Delta(finish_reason="stop", usage=Usage(requests=1))
        return await collect_result(guarded(), provider=self.provider, model=self.model)


class DoubleFinishOnToolCalls(OpenAIChatProvider):
    async def stream(self, request):
        async with aclosing(super().stream(request)) as deltas:
            async for d in deltas:
                yield d
                if d.finish_reason == "tool_calls":
                    yield Delta(finish_reason="tool_calls")


class NegativeUsage(OpenAIChatProvider):
    def usage_from(self, raw):
        return dataclasses.replace(super().usage_from(raw), cache_read_tokens=-100, cache_write_tokens=-5)


class SecretInCause(OpenAIChatProvider):
    async def stream(self, request):
        try:
            async with aclosing(super().stream(request)) as deltas:
                async for d in deltas:
                    yield d
        except ProviderError as exc:
            exc.__cause__ = RuntimeError(f"request failed; sent {self.headers()['authorization']}")
            raise


class LeaksResponseOnEarlyClose(OpenAIChatProvider):
    async def stream(self, request):
        self.inner = super().stream(request)  # kept, never closed: its HTTP response stays open
        async for d in self.inner:
            yield d


class NoServiceSwallowsErrors(OpenAIChatProvider):
    @property
    def features(self):
        return super().features - {"service"}

    async def stream(self, request):
        try:
            async with aclosing(super().stream(request)) as deltas:
                async for d in deltas:
                    yield d
        except ProviderError as exc:
            if exc.status is None:
                raise
            yield Delta(finish_reason="stop", usage=Usage(requests=1))


class RetryAt(OpenAIChatProvider):
    """Correct: the server's advice as an absolute time (providers.md allows either)."""

    async def stream(self, request):
        try:
            async with aclosing(super().stream(request)) as deltas:
                async for d in deltas:
                    yield d
        except ProviderError as exc:
            if exc.retry_after is None:
                raise
            raise ProviderError(exc.args[0], exc.failure_class, provider=exc.provider, status=exc.status,
                                code=exc.code,
                                retry_at=datetime.now(UTC) + timedelta(seconds=exc.retry_after)) from None


GEMINI_BAD_KEY = WireReply.json(400, {"error": {
    "code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
    "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}})


class GeminiStyleBadKey(OpenAIChatProvider):
    """Correct: a bad key answered with 400 API_KEY_INVALID (as Gemini does), classified as such."""

    async def stream(self, request):
        try:
            async with aclosing(super().stream(request)) as deltas:
                async for d in deltas:
                    yield d
        except ProviderError as exc:
            if exc.status == 400 and "API key not valid" in str(exc):
                raise exc.replace(failure_class=FailureClass.AUTHENTICATION) from None
            raise


def suite_for(cls):
    class Suite(ProviderConformance):
        @pytest.fixture
        def make_provider(self, recorder: Recorder):
            def make(scenario):
                model = "o4-mini" if scenario == "reasoning" else "gpt-4.1-mini"
                config = OpenAIChatConfig(model=model, api_key=CONFORMANCE_SECRET)
                answer = GEMINI_BAD_KEY if cls is GeminiStyleBadKey and scenario == "error_auth" else reply(scenario)
                client = make_client(transport=recorder.transport(answer))
                return cls(config, client=client, environ={})

            return make

    return Suite


TestUnmodified = suite_for(OpenAIChatProvider)
TestDropsToolResults = suite_for(DropsToolResults)
TestDropsSystemPrompt = suite_for(DropsSystemPrompt)
TestNeverSendsMaxTokens = suite_for(NeverSendsMaxTokens)
TestNeverSendsCredential = suite_for(NeverSendsCredential)
TestSwallowsTruncation = suite_for(SwallowsTruncation)
TestAllRolesUser = suite_for(AllRolesUser)
TestReversedTurns = suite_for(ReversedTurns)
TestOneBigUserMessage = suite_for(OneBigUserMessage)
TestResultIdsDropped = suite_for(ResultIdsDropped)
TestResultIdsAllFirst = suite_for(ResultIdsAllFirst)
TestToolsNeverOffered = suite_for(ToolsNeverOffered)
TestSchemaNeverSent = suite_for(SchemaNeverSent)
TestChatSwallowsErrors = suite_for(ChatSwallowsErrors)
TestDoubleFinishOnToolCalls = suite_for(DoubleFinishOnToolCalls)
TestNegativeUsage = suite_for(NegativeUsage)
TestSecretInCause = suite_for(SecretInCause)
TestLeaksResponseOnEarlyClose = suite_for(LeaksResponseOnEarlyClose)
TestNoServiceSwallowsErrors = suite_for(NoServiceSwallowsErrors)
TestRetryAt = suite_for(RetryAt)
TestGeminiStyleBadKey = suite_for(GeminiStyleBadKey)
'''

ERRORS = {f"test_errors_are_classified[{s}]"
          for s in ("error_auth", "error_quota", "error_rate_limited", "error_server")}

EXPECTED_FAILURES = {
    "TestUnmodified": set(),
    "TestDropsToolResults": {"test_sends_tool_calls_and_their_results", "test_sends_tool_call_ids",
                             "test_sends_parallel_tool_results"},
    "TestDropsSystemPrompt": {"test_sends_the_system_prompt"},
    "TestNeverSendsMaxTokens": {"test_sends_max_tokens"},
    "TestNeverSendsCredential": {"test_sends_the_credential"},
    "TestSwallowsTruncation": {"test_a_cut_off_stream_is_an_error"},
    "TestAllRolesUser": {"test_sends_every_turn", "test_sends_the_system_prompt"},
    "TestReversedTurns": {"test_sends_every_turn", "test_sends_the_system_prompt"},
    # the squashed system prompt is reported by test_sends_every_turn ("squashed into one message")
    "TestOneBigUserMessage": {"test_sends_every_turn", "test_sends_tool_call_ids", "test_sends_parallel_tool_results"},
    "TestResultIdsDropped": {"test_sends_tool_call_ids", "test_sends_parallel_tool_results"},
    "TestResultIdsAllFirst": {"test_sends_parallel_tool_results"},
    "TestToolsNeverOffered": {"test_sends_tool_calls_and_their_results"},
    "TestSchemaNeverSent": {"test_sends_the_output_schema"},
    # it swallows errors of status 429 and above (quota is a 429 at OpenAI) in chat() only
    "TestChatSwallowsErrors": {f"test_errors_are_classified[{s}]" for s in ("error_quota", "error_rate_limited",
                                                                            "error_server")},
    "TestDoubleFinishOnToolCalls": {"test_every_answer_ends_with_one_finish"},
    "TestNegativeUsage": {"test_usage_is_consistent"},
    "TestSecretInCause": {*ERRORS, "test_an_error_mid_stream_is_raised_not_swallowed",
                          "test_a_cut_off_stream_is_an_error", "test_the_credential_never_shows"},
    "TestLeaksResponseOnEarlyClose": {"test_closing_the_stream_early_is_clean"},
    "TestNoServiceSwallowsErrors": {*ERRORS, "test_the_credential_never_shows"},
    "TestRetryAt": set(),
    "TestGeminiStyleBadKey": set(),
}


def test_each_broken_provider_fails_exactly_the_checks_its_bug_breaks(tmp_path: Path) -> None:
    (tmp_path / "test_mutants.py").write_text(f"FIXTURES = {str(FIXTURES)!r}\n" + MODULE)
    report = tmp_path / "report.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert report.exists(), proc.stdout + proc.stderr
    failed: dict[str, set[str]] = {name: set() for name in EXPECTED_FAILURES}
    ran: dict[str, int] = dict.fromkeys(EXPECTED_FAILURES, 0)
    for case in ET.parse(report).getroot().iter("testcase"):
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        name = case.get("name", "")
        assert case.find("error") is None, f"{cls}.{name} errored:\n{proc.stdout[-4000:]}"
        ran[cls] += 1
        if case.find("failure") is not None:
            failed[cls].add(name)
    wrong = {cls: sorted(names) for cls, names in failed.items() if names != EXPECTED_FAILURES[cls]}
    assert not wrong, f"failed instead of the expected checks: {wrong}\n{proc.stdout[-6000:]}"
    assert len(set(ran.values())) == 1 and ran["TestUnmodified"] >= 10, ran  # every mutant met every check
