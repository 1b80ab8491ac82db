"""The provider conformance suite fails broken providers, each on the checks its bug breaks.

Each mutant is the bundled ``openai_chat`` provider with one bug (so everything else about it is
correct): what it sends (tool results, system prompt, ``max_tokens``, credential dropped; every
role sent as ``user``; the turns reversed or squashed into one message; tool results without their
own call id; the tools or the output schema never sent), how it answers (a cut-off stream taken for
a whole reply, ``chat()`` turning HTTP errors into empty answers, a tool-call answer finishing
twice, negative usage counts) and how it behaves (the credential in an error's ``__cause__``, the
HTTP response left open when the caller stops early, an HTTP provider hiding its errors by not
declaring ``service``). Then the bugs an outside tester's mutants showed passing, and variants of
each: a later system message dropped or sent as a user turn; ``max_tokens`` / ``temperature`` under
another field, rounded or pasted into the prompt; the image labelled with another media type, put
inside an https URL, sent as bare base64 with no media type, pasted into the text, or sent in a
message of its own; tool results before their call; a turn or the whole history sent twice;
``tool_choice`` always ``auto``, ``required`` sent as ``auto``, a named tool sent as ``required``,
``none`` dropped; the credential in a warning delta, the reply text, a Python warning, stderr or
stdout; a test class that does not declare ``sent_fields``; bare base64 images without a media type
on a class that does not say its API has none, and, on one that does, base64 pasted into the text or
a wrong media type. Correct-but-unusual variants must pass: rate-limit advice as ``retry_at``, a bad
key answered with Gemini's 400 ``API_KEY_INVALID``, every system text joined into one system message,
``tool_choice`` ``auto`` left out, forced tool choices refused with ``UnsupportedFeature`` (allowed:
only the ``tool_choice`` check forces one), bare base64 images on a class declaring
``images_carry_media_type = False``. ``REASONS`` pins what
the new mutants' failures say, so each fails on its own bug, not by accident. The whole suite runs
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
import sys
import warnings
from contextlib import aclosing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pytest_seamkit.conformance import CONFORMANCE_SECRET, ProviderConformance, Recorder, WireReply
from seamkit._accumulate import collect_result
from seamkit.errors import FailureClass, ProviderError, UnsupportedFeature
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


def _parts(body):
    """Every content part of every message (OpenAI chat: a list content)."""
    return [part for m in body["messages"] if isinstance(m.get("content"), list) for part in m["content"]]


def _image_urls(body):
    return [part["image_url"] for part in _parts(body) if part.get("type") == "image_url"]


class DropsLaterSystems(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        first = next((i for i, m in enumerate(body["messages"]) if m["role"] in ("system", "developer")), None)
        body["messages"] = [m for i, m in enumerate(body["messages"])
                            if i == first or m["role"] not in ("system", "developer")]
        return body, warnings


class LaterSystemAsUser(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        systems = [m for m in body["messages"] if m["role"] in ("system", "developer")]
        for m in systems[1:]:
            m["role"] = "user"
        return body, warnings


class SystemsJoined(OpenAIChatProvider):
    """Correct: every system text joined into the one leading system message."""

    def body(self, request):
        body, warnings = super().body(request)
        systems = [m for m in body["messages"] if m["role"] in ("system", "developer")]
        if len(systems) > 1:
            systems[0]["content"] = "\\n\\n".join(m["content"] for m in systems)
            body["messages"] = [m for m in body["messages"] if m is systems[0] or m not in systems]
        return body, warnings


class MaxTokensWrongField(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        if "max_completion_tokens" in body:
            body["generationConfig"] = {"maxOutputTokens": body.pop("max_completion_tokens")}
        return body, warnings


class TemperatureWrongField(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        if "temperature" in body:
            body["metadata"] = {"temp": body.pop("temperature")}
        return body, warnings


class TemperatureRounded(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        if "temperature" in body:
            body["temperature"] = round(body["temperature"], 1)
        return body, warnings


class SettingsInPrompt(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        settings = {k: body.pop(k) for k in ("max_completion_tokens", "temperature") if k in body}
        body["messages"].append({"role": "user", "content": json.dumps(settings)})
        body["max_completion_tokens"] = 4096
        return body, warnings


class ImageWrongMediaType(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for image in _image_urls(body):
            image["url"] = image["url"].replace("image/png", "image/jpeg")
        return body, warnings


class ImageInsideHttpUrl(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for image in _image_urls(body):
            image["url"] = image["url"].replace("data:image/png;base64,", "https://cdn.invalid/")
        return body, warnings


class ImageBase64WithoutMediaType(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for image in _image_urls(body):
            image["url"] = image["url"].split(",", 1)[1]
        return body, warnings


class ImagePastedIntoText(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            if isinstance(m.get("content"), list):
                m["content"] = " ".join(p.get("text") or p.get("image_url", {}).get("url", "") for p in m["content"])
        return body, warnings


class ImageInAMessageOfItsOwn(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for i, m in enumerate(body["messages"]):
            if isinstance(m.get("content"), list):
                images = [p for p in m["content"] if p.get("type") == "image_url"]
                m["content"] = [p for p in m["content"] if p not in images]
                body["messages"].insert(i, {"role": "user", "content": images})
                break
        return body, warnings


class ResultsBeforeCall(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        rest = [m for m in body["messages"] if m["role"] != "tool"]
        if tools:
            i = next(i for i, m in enumerate(rest) if "tool_calls" in m)
            rest[i:i] = tools
        body["messages"] = rest
        return body, warnings


class ResultsFirst(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        body["messages"].sort(key=lambda m: m["role"] != "tool")
        return body, warnings


class DuplicatesFirstUser(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        i = next(i for i, m in enumerate(body["messages"]) if m["role"] == "user")
        body["messages"].insert(i, dict(body["messages"][i]))
        return body, warnings


class DuplicatesLastMessage(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        body["messages"].append(dict(body["messages"][-1]))
        return body, warnings


class HistorySentTwice(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        body["messages"] = body["messages"] + [dict(m) for m in body["messages"]]
        return body, warnings


class ToolChoiceAlwaysAuto(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        if "tool_choice" in body:
            body["tool_choice"] = "auto"
        return body, warnings


class NamedChoiceAsRequired(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        if isinstance(body.get("tool_choice"), dict):
            body["tool_choice"] = "required"
        return body, warnings


class NoneChoiceDropped(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        if body.get("tool_choice") == "none":
            del body["tool_choice"]
        return body, warnings


class RequiredSentAsAuto(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        if body.get("tool_choice") == "required":
            body["tool_choice"] = "auto"
        return body, warnings


class AutoChoiceLeftOut(OpenAIChatProvider):
    """Correct: tool_choice auto (every API's default) not sent."""

    def body(self, request):
        body, warnings = super().body(request)
        if body.get("tool_choice") == "auto":
            del body["tool_choice"]
        return body, warnings


class RefusesForcedChoice(OpenAIChatProvider):
    """Correct: cannot force a tool (providers.md: refuse what cannot be sent), so ``required`` and a
    tool's name are refused with UnsupportedFeature before anything is sent."""

    def body(self, request):
        if request.tools and request.tool_choice not in ("auto", "none"):
            raise UnsupportedFeature(f"tool_choice {request.tool_choice!r} cannot be sent", provider=self.provider,
                                     model=self.model, feature="tool_choice")
        return super().body(request)


def _bare_images(body, into_text=False):
    """Each message's image parts as Ollama sends them: a list ``images`` of bare base64 strings
    beside the text (or, ``into_text``, the base64 pasted into the text)."""
    for m in body["messages"]:
        if isinstance(m.get("content"), list):
            urls = [p["image_url"]["url"] for p in m["content"] if p.get("type") == "image_url"]
            text = " ".join(p["text"] for p in m["content"] if p.get("type") == "text")
            b64 = [u.split(",", 1)[1] for u in urls]
            m["content"] = " ".join([text, *b64]) if into_text else text
            if not into_text:
                m["images"] = b64
    return body


class BareBase64Images(OpenAIChatProvider):
    """Correct for an API whose images carry no media type (declared on its test class)."""

    def body(self, request):
        body, warnings = super().body(request)
        return _bare_images(body), warnings


class BareBase64PastedIntoText(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        return _bare_images(body, into_text=True), warnings


class _Leaks(OpenAIChatProvider):
    def leak(self):
        return self.api_key()

    async def stream(self, request):
        async with aclosing(super().stream(request)) as deltas:
            first = True
            async for d in deltas:
                if first:
                    first = False
                    self.before(request)
                yield d

    def before(self, request):
        raise NotImplementedError


class KeyInWarningDelta(_Leaks):
    async def stream(self, request):
        yield Delta(warning=f"using key {self.leak()}")
        async with aclosing(super(_Leaks, self).stream(request)) as deltas:
            async for d in deltas:
                yield d


class KeyInText(_Leaks):
    async def stream(self, request):
        yield Delta(text=f"[{self.leak()}] ")
        async with aclosing(super(_Leaks, self).stream(request)) as deltas:
            async for d in deltas:
                yield d


class KeyInPythonWarning(_Leaks):
    def before(self, request):
        warnings.warn(f"deprecated endpoint, key={self.leak()}", UserWarning, stacklevel=1)


class KeyPrintedToStderr(_Leaks):
    def before(self, request):
        print(f"DEBUG auth={self.leak()}", file=sys.stderr)


class KeyPrintedToStdout(_Leaks):
    def before(self, request):
        print(f"sending with {self.leak()}")


def suite_for(cls, **attributes):
    class Suite(ProviderConformance):
        sent_fields = {"max_tokens": "max_completion_tokens", "temperature": "temperature",
                       "tool_choice": "tool_choice"}

        @pytest.fixture
        def make_provider(self, recorder: Recorder):
            def make(scenario):
                model = "o4-mini" if scenario == "reasoning" else "gpt-4.1-mini"
                config = OpenAIChatConfig(model=model, api_key=CONFORMANCE_SECRET)
                answer = GEMINI_BAD_KEY if cls is GeminiStyleBadKey and scenario == "error_auth" else reply(scenario)
                client = make_client(transport=recorder.transport(answer))
                return cls(config, client=client, environ={})

            return make

    for name, value in attributes.items():
        setattr(Suite, name, value)
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
TestDropsLaterSystems = suite_for(DropsLaterSystems)
TestLaterSystemAsUser = suite_for(LaterSystemAsUser)
TestSystemsJoined = suite_for(SystemsJoined)
TestMaxTokensWrongField = suite_for(MaxTokensWrongField)
TestTemperatureWrongField = suite_for(TemperatureWrongField)
TestTemperatureRounded = suite_for(TemperatureRounded)
TestSettingsInPrompt = suite_for(SettingsInPrompt)
TestImageWrongMediaType = suite_for(ImageWrongMediaType)
TestImageInsideHttpUrl = suite_for(ImageInsideHttpUrl)
TestImageBase64WithoutMediaType = suite_for(ImageBase64WithoutMediaType)
TestImagePastedIntoText = suite_for(ImagePastedIntoText)
TestImageInAMessageOfItsOwn = suite_for(ImageInAMessageOfItsOwn)
TestResultsBeforeCall = suite_for(ResultsBeforeCall)
TestResultsFirst = suite_for(ResultsFirst)
TestDuplicatesFirstUser = suite_for(DuplicatesFirstUser)
TestDuplicatesLastMessage = suite_for(DuplicatesLastMessage)
TestHistorySentTwice = suite_for(HistorySentTwice)
TestToolChoiceAlwaysAuto = suite_for(ToolChoiceAlwaysAuto)
TestNamedChoiceAsRequired = suite_for(NamedChoiceAsRequired)
TestNoneChoiceDropped = suite_for(NoneChoiceDropped)
TestRequiredSentAsAuto = suite_for(RequiredSentAsAuto)
TestAutoChoiceLeftOut = suite_for(AutoChoiceLeftOut)
TestKeyInWarningDelta = suite_for(KeyInWarningDelta)
TestKeyInText = suite_for(KeyInText)
TestKeyInPythonWarning = suite_for(KeyInPythonWarning)
TestKeyPrintedToStderr = suite_for(KeyPrintedToStderr)
TestKeyPrintedToStdout = suite_for(KeyPrintedToStdout)
TestNoFieldsDeclared = suite_for(OpenAIChatProvider)
TestRefusesForcedChoice = suite_for(RefusesForcedChoice)
TestBareBase64Declared = suite_for(BareBase64Images, images_carry_media_type=False)
TestBareBase64Undeclared = suite_for(BareBase64Images)
TestBareBase64PastedIntoText = suite_for(BareBase64PastedIntoText, images_carry_media_type=False)
TestNoMediaTypeDeclaredButWrongOne = suite_for(ImageWrongMediaType, images_carry_media_type=False)
TestNoFieldsDeclared.sent_fields = None
'''

ERRORS = {f"test_errors_are_classified[{s}]"
          for s in ("error_auth", "error_quota", "error_rate_limited", "error_server")}

EXPECTED_FAILURES = {
    "TestUnmodified": set(),
    "TestDropsToolResults": {"test_sends_tool_calls_and_their_results", "test_sends_tool_call_ids",
                             "test_sends_parallel_tool_results"},
    "TestDropsSystemPrompt": {"test_sends_the_system_prompt", "test_sends_every_system_message"},
    "TestNeverSendsMaxTokens": {"test_sends_max_tokens"},
    "TestNeverSendsCredential": {"test_sends_the_credential"},
    "TestSwallowsTruncation": {"test_a_cut_off_stream_is_an_error"},
    "TestAllRolesUser": {"test_sends_every_turn", "test_sends_the_system_prompt", "test_sends_every_system_message"},
    # reversed, the tool results come before their calls too
    "TestReversedTurns": {"test_sends_every_turn", "test_sends_the_system_prompt",
                          "test_sends_tool_calls_and_their_results", "test_sends_parallel_tool_results"},
    # the squashed system prompt is reported by test_sends_every_turn ("squashed into one message"); the
    # image ends up inside the one message's text
    "TestOneBigUserMessage": {"test_sends_every_turn", "test_sends_tool_call_ids", "test_sends_parallel_tool_results",
                              "test_sends_images"},
    "TestResultIdsDropped": {"test_sends_tool_call_ids", "test_sends_parallel_tool_results"},
    "TestResultIdsAllFirst": {"test_sends_parallel_tool_results"},
    "TestToolsNeverOffered": {"test_sends_tool_calls_and_their_results", "test_sends_tool_choice"},
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
    "TestDropsLaterSystems": {"test_sends_every_system_message"},
    "TestLaterSystemAsUser": {"test_sends_every_system_message"},
    "TestSystemsJoined": set(),
    "TestMaxTokensWrongField": {"test_sends_max_tokens"},
    "TestTemperatureWrongField": {"test_sends_temperature"},
    "TestTemperatureRounded": {"test_sends_temperature"},
    "TestSettingsInPrompt": {"test_sends_max_tokens", "test_sends_temperature"},
    "TestImageWrongMediaType": {"test_sends_images"},
    "TestImageInsideHttpUrl": {"test_sends_images"},
    "TestImageBase64WithoutMediaType": {"test_sends_images"},
    "TestImagePastedIntoText": {"test_sends_images"},
    "TestImageInAMessageOfItsOwn": {"test_sends_images"},
    "TestResultsBeforeCall": {"test_sends_tool_calls_and_their_results", "test_sends_parallel_tool_results"},
    "TestResultsFirst": {"test_sends_tool_calls_and_their_results", "test_sends_parallel_tool_results"},
    "TestDuplicatesFirstUser": {"test_sends_every_turn", "test_sends_tool_calls_and_their_results"},
    "TestDuplicatesLastMessage": {"test_sends_every_turn", "test_sends_tool_calls_and_their_results",
                                  "test_sends_parallel_tool_results"},
    "TestHistorySentTwice": {"test_sends_every_turn", "test_sends_the_system_prompt", "test_sends_every_system_message",
                             "test_sends_tool_calls_and_their_results", "test_sends_parallel_tool_results"},
    "TestToolChoiceAlwaysAuto": {"test_sends_tool_choice"},
    "TestNamedChoiceAsRequired": {"test_sends_tool_choice"},
    "TestNoneChoiceDropped": {"test_sends_tool_choice"},
    "TestRequiredSentAsAuto": {"test_sends_tool_choice"},
    "TestAutoChoiceLeftOut": set(),
    "TestKeyInWarningDelta": {"test_the_credential_never_shows"},
    # the reply's text is no longer the JSON document, so structured output fails too
    "TestKeyInText": {"test_the_credential_never_shows", "test_structured_output"},
    "TestKeyInPythonWarning": {"test_the_credential_never_shows"},
    "TestKeyPrintedToStderr": {"test_the_credential_never_shows"},
    "TestKeyPrintedToStdout": {"test_the_credential_never_shows"},
    "TestNoFieldsDeclared": {"test_sends_max_tokens", "test_sends_temperature", "test_sends_tool_choice"},
    # refusing a forced tool choice is allowed: only test_sends_tool_choice asks for one, and accepts it
    "TestRefusesForcedChoice": set(),
    # bare base64 images pass where the test class says the API carries no media type, not elsewhere
    "TestBareBase64Declared": set(),
    "TestBareBase64Undeclared": {"test_sends_images"},
    "TestBareBase64PastedIntoText": {"test_sends_images"},
    "TestNoMediaTypeDeclaredButWrongOne": {"test_sends_images"},
}

#: (mutant, check) -> what its failure says: the check fails for the mutant's bug, not by accident
REASONS = {
    ("TestDropsLaterSystems", "test_sends_every_system_message"): "second system message was not sent",
    ("TestLaterSystemAsUser", "test_sends_every_system_message"): "its role is lost",
    ("TestMaxTokensWrongField", "test_sends_max_tokens"): "not sent as the field 'max_completion_tokens'",
    ("TestTemperatureWrongField", "test_sends_temperature"): "not sent as the field 'temperature'",
    ("TestTemperatureRounded", "test_sends_temperature"): "temperature was not sent",
    ("TestImageWrongMediaType", "test_sends_images"): "labelled 'image/jpeg'",
    ("TestImageInsideHttpUrl", "test_sends_images"): "inside an http(s) URL",
    ("TestImageBase64WithoutMediaType", "test_sends_images"): "without its media type",
    ("TestImagePastedIntoText", "test_sends_images"): "pasted into the text",
    ("TestImageInAMessageOfItsOwn", "test_sends_images"): "not sent in the message holding the text",
    ("TestResultsBeforeCall", "test_sends_tool_calls_and_their_results"): "tool result was sent before the tool call",
    ("TestResultsFirst", "test_sends_tool_calls_and_their_results"): "was sent before the",
    ("TestDuplicatesFirstUser", "test_sends_every_turn"): "first user turn was sent 2 times",
    ("TestDuplicatesLastMessage", "test_sends_every_turn"): "last user turn was sent 2 times",
    ("TestHistorySentTwice", "test_sends_every_turn"): "sent 2 times",
    ("TestToolChoiceAlwaysAuto", "test_sends_tool_choice"): "that is 'auto'",
    ("TestNamedChoiceAsRequired", "test_sends_tool_choice"): "it does not name the tool",
    ("TestNoneChoiceDropped", "test_sends_tool_choice"): "tool_choice 'none' was sent like 'auto'",
    ("TestRequiredSentAsAuto", "test_sends_tool_choice"): "'required' was sent as 'auto'",
    ("TestKeyInWarningDelta", "test_the_credential_never_shows"): "in the answer's warnings",
    ("TestKeyInText", "test_the_credential_never_shows"): "in the answer's text",
    ("TestKeyInPythonWarning", "test_the_credential_never_shows"): "in a Python warning",
    ("TestKeyPrintedToStderr", "test_the_credential_never_shows"): "leaked to stderr",
    ("TestKeyPrintedToStdout", "test_the_credential_never_shows"): "leaked to stdout",
    ("TestNoFieldsDeclared", "test_sends_max_tokens"): "add sent_fields = {",
    ("TestBareBase64Undeclared", "test_sends_images"): "without its media type",
    ("TestBareBase64PastedIntoText", "test_sends_images"): "pasted into the text",
    ("TestNoMediaTypeDeclaredButWrongOne", "test_sends_images"): "labelled 'image/jpeg'",
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
        failure = case.find("failure")
        if failure is not None:
            failed[cls].add(name)
            reason = REASONS.get((cls, name))
            assert reason is None or reason in (failure.get("message") or ""), (
                f"{cls}.{name} failed for another reason than {reason!r}: {failure.get('message')}")
    wrong = {cls: sorted(names) for cls, names in failed.items() if names != EXPECTED_FAILURES[cls]}
    assert not wrong, f"failed instead of the expected checks: {wrong}\n{proc.stdout[-6000:]}"
    assert len(set(ran.values())) == 1 and ran["TestUnmodified"] >= 10, ran  # every mutant met every check
