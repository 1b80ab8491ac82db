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
a wrong media type. Then a third round (recheck3's mutants,
ported onto this provider, and variants): ``tool_choice`` replaced by ``auto`` and excused by a warning
that names it or by an unrelated one; ``seed`` / ``stop`` dropped, a string, or only the first stop;
``extra`` dropped; call arguments as an object or encoded twice; tool results sent as a user or an
assistant turn, unmarked as errors or all marked as errors, their images dropped silently; parallel
calls' ids swapped or their arguments on the other call; ``length`` or ``content_filter`` read as
``stop``; reasoning text thrown away; non-ASCII stripped or NFKD-normalized, long text or tool
results cut; the second image dropped or the images reversed; the key in another header, the URL,
the body, on the error or deep inside an object on it. Correct-but-unusual variants must pass:
rate-limit advice as ``retry_at``, a bad key answered with Gemini's 400 ``API_KEY_INVALID``, every
system text joined into one system message, ``tool_choice`` ``auto`` left out, forced tool choices
refused with ``UnsupportedFeature`` (only the ``tool_choice`` check forces one), bare base64 images on
a class declaring ``images_carry_media_type = False``. ``REASONS`` pins what
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


# --- recheck3's mutants (an outside tester's, ported onto this provider) and variants of each ---


def _warn_first(stream, request, text):
    async def out():
        yield Delta(warning=text)
        async with aclosing(stream(request)) as deltas:
            async for d in deltas:
                yield d
    return out()


class ToolChoiceIgnoredButWarns(OpenAIChatProvider):
    """tool_choice always "auto", with a warning that names tool_choice but replaces it."""

    def body(self, request):
        body, warnings = super().body(request)
        if "tool_choice" in body:
            body["tool_choice"] = "auto"
        if request.tool_choice != "auto":
            warnings.append("note: this server may handle tool_choice differently")
        return body, warnings


class AlwaysWarnsToolChoiceIgnored(OpenAIChatProvider):
    """tool_choice always "auto"; every answer carries an unrelated warning."""

    def body(self, request):
        body, warnings = super().body(request)
        if "tool_choice" in body:
            body["tool_choice"] = "auto"
        return body, [*warnings, "preview API: behaviour may change"]


class SeedDroppedButWarnsVaguely(OpenAIChatProvider):
    """seed and stop dropped, excused by a warning naming neither."""

    def body(self, request):
        body, warnings = super().body(request)
        body.pop("seed", None)
        body.pop("stop", None)
        return body, [*warnings, "preview API: behaviour may change"]


class ArgumentsAsObject(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            for c in m.get("tool_calls") or ():
                c["function"]["arguments"] = json.loads(c["function"]["arguments"])
        return body, warnings


class ArgumentsDoubleEncoded(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            for c in m.get("tool_calls") or ():
                c["function"]["arguments"] = json.dumps(c["function"]["arguments"])
        return body, warnings


class ToolResultAsUser(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            if m["role"] == "tool":
                m["role"] = "user"
        return body, warnings


class ToolResultAsAssistant(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            if m["role"] == "tool":
                m["role"] = "assistant"
        return body, warnings


class SwapsParallelIds(OpenAIChatProvider):
    """Answer side: the two parallel calls' ids swapped."""

    async def stream(self, request):
        swap = {"call_P4ris0aaaaaa": "call_T0ky0bbbbbbb", "call_T0ky0bbbbbbb": "call_P4ris0aaaaaa"}
        async with aclosing(super().stream(request)) as deltas:
            async for d in deltas:
                tc = d.tool_call
                if tc is not None and tc.id in swap:
                    d = dataclasses.replace(d, tool_call=dataclasses.replace(tc, id=swap[tc.id]))
                yield d


class ArgsToWrongCall(OpenAIChatProvider):
    """Answer side: each call's arguments moved to the other call."""

    async def stream(self, request):
        async with aclosing(super().stream(request)) as deltas:
            async for d in deltas:
                tc = d.tool_call
                if tc is not None and tc.arguments and tc.index in (0, 1):
                    yield dataclasses.replace(d, tool_call=dataclasses.replace(tc, arguments=""))
                    yield Delta(tool_call=dataclasses.replace(tc, index=1 - tc.index, id=None, name=None))
                    continue
                yield d


class LengthAsStop(OpenAIChatProvider):
    async def stream(self, request):
        async with aclosing(super().stream(request)) as deltas:
            async for d in deltas:
                if d.finish_reason == "length":
                    d = dataclasses.replace(d, finish_reason="stop")
                yield d


class FilterAsStop(OpenAIChatProvider):
    async def stream(self, request):
        async with aclosing(super().stream(request)) as deltas:
            async for d in deltas:
                if d.finish_reason == "content_filter":
                    d = dataclasses.replace(d, finish_reason="stop")
                yield d


class DropsReasoningText(OpenAIChatProvider):
    async def stream(self, request):
        async with aclosing(super().stream(request)) as deltas:
            async for d in deltas:
                if d.reasoning:
                    continue
                yield d


def _texts(body, change):
    for m in body["messages"]:
        if isinstance(m.get("content"), str):
            m["content"] = change(m["content"])
        for part in m.get("content") if isinstance(m.get("content"), list) else ():
            if part.get("type") == "text":
                part["text"] = change(part["text"])


class AsciiOnly(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        _texts(body, lambda t: t.encode("ascii", "ignore").decode())
        return body, warnings


class NormalizesToNFKD(OpenAIChatProvider):
    def body(self, request):
        import unicodedata
        body, warnings = super().body(request)
        _texts(body, lambda t: unicodedata.normalize("NFKD", t))
        return body, warnings


class TruncatesLongText(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        _texts(body, lambda t: t[:2000])
        return body, warnings


class TruncatesToolResults(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            if m["role"] == "tool":
                m["content"] = m["content"][:4000]
        return body, warnings


class OnlyFirstImage(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            if isinstance(m["content"], list):
                images = [p for p in m["content"] if p.get("type") == "image_url"]
                m["content"] = [p for p in m["content"] if p.get("type") != "image_url"] + images[:1]
        return body, warnings


class ImagesReversed(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            if isinstance(m["content"], list):
                images = [p for p in m["content"] if p.get("type") == "image_url"]
                m["content"] = [p for p in m["content"] if p.get("type") != "image_url"] + images[::-1]
        return body, warnings


class StopAsString(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        if request.stop:
            body["stop"] = ",".join(request.stop)
        if request.seed is not None:
            body["seed"] = str(request.seed)
        return body, warnings


class OnlyFirstStop(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        if request.stop:
            body["stop"] = list(request.stop[:1])
        return body, warnings


class DropsExtra(OpenAIChatProvider):
    def body(self, request):
        return super().body(request.replace(extra={}))


class ErrorResultsUnmarked(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            if m["role"] == "tool" and m["content"].startswith("Error: "):
                m["content"] = m["content"][len("Error: "):]
        return body, warnings


class EveryResultAnError(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for m in body["messages"]:
            if m["role"] == "tool" and not m["content"].startswith("Error"):
                m["content"] = "Error: " + m["content"]
        return body, warnings


class DropsResultImagesSilently(OpenAIChatProvider):
    def body(self, request):
        from seamkit.values import Message, ToolResult
        messages = tuple(Message(m.role, tuple(dataclasses.replace(b, images=()) if isinstance(b, ToolResult) else b
                                               for b in m.content)) for m in request.messages)
        return super().body(request.replace(messages=messages))


class KeyInOtherHeader(OpenAIChatProvider):
    def headers(self):
        return {**super().headers(), "x-client-debug": f"key={self.api_key()}"}


class KeyInQuery(OpenAIChatProvider):
    def url(self, path):
        return super().url(path) + f"?api_key={self.api_key()}"


class KeyInBody(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        body["user"] = f"key-{self.api_key()}"
        return body, warnings


class _KeepsOnError(OpenAIChatProvider):
    async def stream(self, request):
        try:
            async with aclosing(super().stream(request)) as deltas:
                async for d in deltas:
                    yield d
        except ProviderError as exc:
            self.keep(exc)
            raise


class KeyOnErrorAttribute(_KeepsOnError):
    def keep(self, exc):
        exc.request_headers = dict(self.headers())


class KeyDeepOnError(_KeepsOnError):
    def keep(self, exc):
        class Request:
            pass
        r = Request()
        r.sent = {"headers": [("authorization", f"Bearer {self.api_key()}")]}
        exc.request = r


# the reasoning scenario with reasoning text streamed first (as DeepSeek and vLLM send it)
def _each_schema(schema, change):
    """``change`` applied to ``schema`` and to every property schema under it."""
    change(schema)
    for sub in (schema.get("properties") or {}).values():
        _each_schema(sub, change)


class ToolSchemaLoosened(OpenAIChatProvider):
    """The tools' parameters lose ``required`` and every ``enum``."""

    def body(self, request):
        body, warnings = super().body(request)
        for tool in body.get("tools", []):
            _each_schema(tool["function"]["parameters"],
                         lambda s: [s.pop(k, None) for k in ("required", "enum")])
        return body, warnings


class OnlyFirstToolDescribed(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for tool in body.get("tools", [])[1:]:
            tool["function"]["description"] = ""
        return body, warnings


class PropertyDescriptionsDropped(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        for tool in body.get("tools", []):
            _each_schema(tool["function"]["parameters"], lambda s: s.pop("description", None))
        return body, warnings


class PropertyTypeChanged(OpenAIChatProvider):
    """Every string parameter sent as ``number``."""

    def body(self, request):
        body, warnings = super().body(request)
        for tool in body.get("tools", []):
            _each_schema(tool["function"]["parameters"],
                         lambda s: s.__setitem__("type", "number") if s.get("type") == "string" else None)
        return body, warnings


class StrictModeTools(OpenAIChatProvider):
    """Correct: OpenAI strict mode's additions: every property required, the optional ones nullable
    (a null in their enum too), ``additionalProperties: false``, ``strict: true``."""

    def body(self, request):
        body, warnings = super().body(request)
        for tool in body.get("tools", []):
            fn = tool["function"]
            params = fn["parameters"]
            for name, sub in params["properties"].items():
                if name not in params.get("required", []):
                    sub["type"] = [sub["type"], "null"]
                    if "enum" in sub:
                        sub["enum"] = [*sub["enum"], None]
            params["required"] = list(params["properties"])
            params["additionalProperties"] = False
            fn["strict"] = True
        return body, warnings


class OutputSchemaLoosened(OpenAIChatProvider):
    """The output schema sent with ``additionalProperties`` true."""

    def body(self, request):
        body, warnings = super().body(request)
        if "response_format" in body:
            body["response_format"]["json_schema"]["schema"]["additionalProperties"] = True
        return body, warnings


class OutputSchemaNotStrict(OpenAIChatProvider):
    """The output schema sent with ``strict: false`` and no warning."""

    def body(self, request):
        body, warnings = super().body(request)
        if "response_format" in body:
            body["response_format"]["json_schema"]["strict"] = False
        return body, warnings


class OutputSchemaRequiredDropped(OpenAIChatProvider):
    def body(self, request):
        body, warnings = super().body(request)
        if "response_format" in body:
            body["response_format"]["json_schema"]["schema"].pop("required", None)
        return body, warnings


def _text_parts(request, change):
    """``request`` with each message's text blocks replaced by ``change(texts)`` (this provider
    joins a text-only message's parts itself, so the mutants change the blocks it is given)."""
    messages = []
    for m in request.messages:
        texts = [b for b in m.content if type(b).__name__ == "TextBlock"]
        rest = [b for b in m.content if type(b).__name__ != "TextBlock"]
        messages.append(dataclasses.replace(m, content=(*change(texts), *rest)) if len(texts) > 1 else m)
    return request.replace(messages=tuple(messages))


class TextPartsReversed(OpenAIChatProvider):
    def body(self, request):
        return super().body(_text_parts(request, lambda texts: texts[::-1]))


class OnlyFirstTextPart(OpenAIChatProvider):
    def body(self, request):
        return super().body(_text_parts(request, lambda texts: texts[:1]))


class TextPartsJoined(OpenAIChatProvider):
    """Correct: a message's text parts joined, in order, into one, a blank line between them."""

    def body(self, request):
        return super().body(_text_parts(request, lambda texts: [dataclasses.replace(
            texts[0], text="\\n\\n".join(t.text for t in texts))]))


REASONING_TEXT = "1001/7 = 143 = 11*13"


def reasoning_with_text():
    line = json.dumps({"id": "c", "object": "chat.completion.chunk", "model": "o4-mini", "choices": [
        {"index": 0, "delta": {"reasoning_content": REASONING_TEXT}, "finish_reason": None}]})
    return WireReply.sse(f"data: {line}\\n\\n".encode() + (FIX / "reasoning.sse").read_bytes())


def suite_for(cls, reasoning_text=None, **attributes):
    class Suite(ProviderConformance):
        sent_fields = {"max_tokens": "max_completion_tokens", "temperature": "temperature",
                       "tool_choice": "tool_choice", "seed": "seed", "stop": "stop"}
        tool_fields = {"arguments": "string", "result_role": ("role", "tool"), "is_error": None}
        auth_header = "authorization"
        parallel_call_ids = {"Paris": "call_P4ris0aaaaaa", "Tokyo": "call_T0ky0bbbbbbb"}
        filter_finish = "content_filter"

        @pytest.fixture
        def make_provider(self, recorder: Recorder):
            def make(scenario):
                model = "o4-mini" if scenario == "reasoning" else "gpt-4.1-mini"
                config = OpenAIChatConfig(model=model, api_key=CONFORMANCE_SECRET)
                answer = GEMINI_BAD_KEY if cls is GeminiStyleBadKey and scenario == "error_auth" else reply(scenario)
                if scenario == "reasoning" and reasoning_text is not None:
                    answer = reasoning_with_text()
                client = make_client(transport=recorder.transport(answer))
                return cls(config, client=client, environ={})

            return make

    Suite.reasoning_text = reasoning_text
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
TestToolChoiceIgnoredButWarns = suite_for(ToolChoiceIgnoredButWarns)
TestAlwaysWarnsToolChoiceIgnored = suite_for(AlwaysWarnsToolChoiceIgnored)
TestSeedDroppedButWarnsVaguely = suite_for(SeedDroppedButWarnsVaguely)
TestArgumentsAsObject = suite_for(ArgumentsAsObject)
TestArgumentsDoubleEncoded = suite_for(ArgumentsDoubleEncoded)
TestToolResultAsUser = suite_for(ToolResultAsUser)
TestToolResultAsAssistant = suite_for(ToolResultAsAssistant)
TestSwapsParallelIds = suite_for(SwapsParallelIds)
TestArgsToWrongCall = suite_for(ArgsToWrongCall)
TestLengthAsStop = suite_for(LengthAsStop)
TestAsciiOnly = suite_for(AsciiOnly)
TestNormalizesToNFKD = suite_for(NormalizesToNFKD)
TestTruncatesLongText = suite_for(TruncatesLongText)
TestTruncatesToolResults = suite_for(TruncatesToolResults)
TestOnlyFirstImage = suite_for(OnlyFirstImage)
TestImagesReversed = suite_for(ImagesReversed)
TestStopAsString = suite_for(StopAsString)
TestOnlyFirstStop = suite_for(OnlyFirstStop)
TestDropsExtra = suite_for(DropsExtra)
TestErrorResultsUnmarked = suite_for(ErrorResultsUnmarked)
TestEveryResultAnError = suite_for(EveryResultAnError)
TestDropsResultImagesSilently = suite_for(DropsResultImagesSilently)
TestKeyInOtherHeader = suite_for(KeyInOtherHeader)
TestKeyInQuery = suite_for(KeyInQuery)
TestKeyInBody = suite_for(KeyInBody)
TestKeyOnErrorAttribute = suite_for(KeyOnErrorAttribute)
TestKeyDeepOnError = suite_for(KeyDeepOnError)
TestFilterAsStop = suite_for(FilterAsStop)
TestDropsReasoningText = suite_for(DropsReasoningText, REASONING_TEXT)
TestReasoningTextKept = suite_for(OpenAIChatProvider, REASONING_TEXT)
TestToolSchemaLoosened = suite_for(ToolSchemaLoosened)
TestOnlyFirstToolDescribed = suite_for(OnlyFirstToolDescribed)
TestPropertyDescriptionsDropped = suite_for(PropertyDescriptionsDropped)
TestPropertyTypeChanged = suite_for(PropertyTypeChanged)
TestStrictModeTools = suite_for(StrictModeTools)
TestOutputSchemaLoosened = suite_for(OutputSchemaLoosened)
TestOutputSchemaNotStrict = suite_for(OutputSchemaNotStrict)
TestOutputSchemaRequiredDropped = suite_for(OutputSchemaRequiredDropped)
TestTextPartsReversed = suite_for(TextPartsReversed)
TestOnlyFirstTextPart = suite_for(OnlyFirstTextPart)
TestTextPartsJoined = suite_for(TextPartsJoined)
'''

ERRORS = {f"test_errors_are_classified[{s}]"
          for s in ("error_auth", "error_quota", "error_rate_limited", "error_server")}

#: the checks an image mangled everywhere fails
IMAGE_CHECKS = {"test_sends_images", "test_sends_every_image", "test_sends_tool_result_images"}

EXPECTED_FAILURES = {
    "TestUnmodified": set(),
    "TestDropsToolResults": {"test_sends_parallel_tool_results", "test_sends_text_exactly", "test_sends_tool_call_ids",
                             "test_sends_tool_calls_and_their_results", "test_sends_tool_errors_as_errors",
                             "test_sends_tool_result_images", "test_sends_tool_results_in_their_role"},
    "TestDropsSystemPrompt": {"test_sends_every_system_message", "test_sends_text_exactly",
                              "test_sends_the_system_prompt"},
    "TestNeverSendsMaxTokens": {"test_sends_max_tokens"},
    "TestNeverSendsCredential": {"test_sends_the_credential", "test_sends_the_credential_only_in_its_header"},
    "TestSwallowsTruncation": {"test_a_cut_off_stream_is_an_error"},
    "TestAllRolesUser": {"test_sends_every_turn", "test_sends_the_system_prompt", "test_sends_every_system_message"},
    # reversed, the tool results come before their calls too
    "TestReversedTurns": {"test_sends_every_turn", "test_sends_parallel_tool_results", "test_sends_the_system_prompt",
                          "test_sends_tool_calls_and_their_results", "test_sends_tool_result_images"},
    # the squashed system prompt is reported by test_sends_every_turn ("squashed into one message"); the
    # image ends up inside the one message's text
    "TestOneBigUserMessage": {"test_sends_every_image", "test_sends_every_turn", "test_sends_images",
                              "test_sends_parallel_tool_results", "test_sends_text_exactly",
                              "test_sends_tool_call_arguments_as_the_api_wants", "test_sends_tool_call_ids",
                              "test_sends_tool_result_images", "test_sends_tool_results_in_their_role"},
    "TestResultIdsDropped": {"test_sends_tool_call_ids", "test_sends_parallel_tool_results"},
    "TestResultIdsAllFirst": {"test_sends_parallel_tool_results"},
    "TestToolsNeverOffered": {"test_sends_every_tool_whole", "test_sends_tool_calls_and_their_results",
                              "test_sends_tool_choice"},
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
    "TestImageWrongMediaType": {"test_sends_every_image", "test_sends_images", "test_sends_tool_result_images"},
    "TestImageInsideHttpUrl": {"test_sends_every_image", "test_sends_images", "test_sends_tool_result_images"},
    "TestImageBase64WithoutMediaType": {"test_sends_every_image", "test_sends_images", "test_sends_tool_result_images"},
    "TestImagePastedIntoText": {"test_sends_every_image", "test_sends_images", "test_sends_tool_result_images"},
    "TestImageInAMessageOfItsOwn": {"test_sends_every_image", "test_sends_images"},
    "TestResultsBeforeCall": {"test_sends_parallel_tool_results", "test_sends_tool_calls_and_their_results",
                              "test_sends_tool_result_images"},
    "TestResultsFirst": {"test_sends_parallel_tool_results", "test_sends_tool_calls_and_their_results",
                         "test_sends_tool_result_images"},
    "TestDuplicatesFirstUser": {"test_sends_every_turn", "test_sends_tool_calls_and_their_results"},
    "TestDuplicatesLastMessage": {"test_sends_every_text_part", "test_sends_every_turn",
                                  "test_sends_tool_calls_and_their_results", "test_sends_parallel_tool_results"},
    "TestHistorySentTwice": {"test_sends_every_text_part", "test_sends_every_turn", "test_sends_the_system_prompt",
                             "test_sends_every_system_message", "test_sends_tool_calls_and_their_results",
                             "test_sends_parallel_tool_results"},
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
    # refusing a forced tool choice is allowed: only test_sends_tool_choice asks for one, and accepts it
    "TestRefusesForcedChoice": set(),
    # bare base64 images pass where the test class says the API carries no media type, not elsewhere
    # (every image the mutant sends is mangled alike: the message's, the second one, the tool result's)
    "TestBareBase64Declared": set(),
    "TestBareBase64Undeclared": IMAGE_CHECKS,
    "TestBareBase64PastedIntoText": IMAGE_CHECKS,
    "TestNoMediaTypeDeclaredButWrongOne": IMAGE_CHECKS,
    "TestNoFieldsDeclared": {"test_sends_max_tokens", "test_sends_seed", "test_sends_stop_sequences",
                             "test_sends_temperature", "test_sends_tool_choice"},
    # recheck3's mutants (ported onto this provider) and their variants
    "TestToolChoiceIgnoredButWarns": {"test_sends_tool_choice"},
    "TestAlwaysWarnsToolChoiceIgnored": {"test_sends_tool_choice"},
    "TestSeedDroppedButWarnsVaguely": {"test_sends_seed", "test_sends_stop_sequences"},
    "TestArgumentsAsObject": {"test_sends_tool_call_arguments_as_the_api_wants"},
    "TestArgumentsDoubleEncoded": {"test_sends_tool_call_arguments_as_the_api_wants"},
    "TestToolResultAsUser": {"test_sends_tool_results_in_their_role"},
    "TestToolResultAsAssistant": {"test_sends_tool_results_in_their_role"},
    "TestSwapsParallelIds": {"test_parallel_tool_calls_keep_their_own_ids"},
    # the answer's calls carry each other's arguments: the one-call reading breaks too
    "TestArgsToWrongCall": {"test_parallel_tool_calls_keep_their_own_ids", "test_tool_call"},
    "TestLengthAsStop": {"test_a_length_finish_is_read_as_length"},
    "TestAsciiOnly": {"test_sends_text_exactly"},
    "TestNormalizesToNFKD": {"test_sends_text_exactly"},
    "TestTruncatesLongText": {"test_sends_text_exactly"},
    "TestTruncatesToolResults": {"test_sends_text_exactly"},
    "TestOnlyFirstImage": {"test_sends_every_image"},
    "TestImagesReversed": {"test_sends_every_image"},
    "TestStopAsString": {"test_sends_seed", "test_sends_stop_sequences"},
    "TestOnlyFirstStop": {"test_sends_stop_sequences"},
    "TestDropsExtra": {"test_sends_extra_settings"},
    "TestErrorResultsUnmarked": {"test_sends_tool_errors_as_errors"},
    "TestEveryResultAnError": {"test_sends_tool_errors_as_errors"},
    "TestDropsResultImagesSilently": {"test_sends_tool_result_images"},
    "TestKeyInOtherHeader": {"test_sends_the_credential_only_in_its_header"},
    # httpx logs the URL it requests: the key in the query shows in the log too
    "TestKeyInQuery": {"test_sends_the_credential_only_in_its_header", "test_the_credential_never_shows"},
    "TestKeyInBody": {"test_sends_the_credential_only_in_its_header"},
    # every error the provider raises keeps the request's headers
    "TestKeyOnErrorAttribute": {*ERRORS, "test_a_cut_off_stream_is_an_error",
                                "test_an_error_mid_stream_is_raised_not_swallowed", "test_the_credential_never_shows"},
    # ... or a request object holding them, deep down
    "TestKeyDeepOnError": {*ERRORS, "test_a_cut_off_stream_is_an_error",
                           "test_an_error_mid_stream_is_raised_not_swallowed", "test_the_credential_never_shows"},
    "TestDropsReasoningText": {"test_reasoning_text_reaches_the_answer"},
    "TestFilterAsStop": {"test_a_filtered_answer_finishes_as_the_api_says"},
    "TestReasoningTextKept": set(),
    # final5's false passes: tools and output schema sent whole, every text part
    "TestToolSchemaLoosened": {"test_sends_every_tool_whole"},
    "TestOnlyFirstToolDescribed": {"test_sends_every_tool_whole"},
    "TestPropertyDescriptionsDropped": {"test_sends_every_tool_whole"},
    "TestPropertyTypeChanged": {"test_sends_every_tool_whole"},
    "TestStrictModeTools": set(),
    "TestOutputSchemaLoosened": {"test_sends_the_output_schema"},
    "TestOutputSchemaNotStrict": {"test_sends_the_output_schema"},
    "TestOutputSchemaRequiredDropped": {"test_sends_the_output_schema"},
    "TestTextPartsReversed": {"test_sends_every_text_part"},
    "TestOnlyFirstTextPart": {"test_sends_every_text_part"},
    "TestTextPartsJoined": set(),
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
    ("TestToolChoiceIgnoredButWarns", "test_sends_tool_choice"): "never replaced by 'auto'",
    ("TestAlwaysWarnsToolChoiceIgnored", "test_sends_tool_choice"): "that is 'auto'",
    ("TestSeedDroppedButWarnsVaguely", "test_sends_seed"): "was not sent as the field 'seed'",
    ("TestArgumentsAsObject", "test_sends_tool_call_arguments_as_the_api_wants"): "not sent as a JSON string",
    ("TestArgumentsDoubleEncoded", "test_sends_tool_call_arguments_as_the_api_wants"): "not sent as a JSON string",
    ("TestToolResultAsUser", "test_sends_tool_results_in_their_role"): "not sent with role='tool'",
    ("TestToolResultAsAssistant", "test_sends_tool_results_in_their_role"): "not sent with role='tool'",
    ("TestSwapsParallelIds", "test_parallel_tool_calls_keep_their_own_ids"): "ids were mixed up",
    ("TestArgsToWrongCall", "test_parallel_tool_calls_keep_their_own_ids"): "ids were mixed up",
    ("TestLengthAsStop", "test_a_length_finish_is_read_as_length"): "finished 'stop', not 'length'",
    ("TestAsciiOnly", "test_sends_text_exactly"): "non-ASCII: True) was changed or cut",
    ("TestNormalizesToNFKD", "test_sends_text_exactly"): "non-ASCII: True) was changed or cut",
    ("TestTruncatesLongText", "test_sends_text_exactly"): "was changed or cut",
    ("TestTruncatesToolResults", "test_sends_text_exactly"): "was changed or cut",
    ("TestOnlyFirstImage", "test_sends_every_image"): "second image of the message was not sent",
    ("TestImagesReversed", "test_sends_every_image"): "not sent in their order",
    ("TestStopAsString", "test_sends_stop_sequences"): "each an item of an array",
    ("TestStopAsString", "test_sends_seed"): "was not sent as the field 'seed'",
    ("TestOnlyFirstStop", "test_sends_stop_sequences"): "each an item of an array",
    ("TestDropsExtra", "test_sends_extra_settings"): "was not merged into the body",
    ("TestErrorResultsUnmarked", "test_sends_tool_errors_as_errors"): "sent like a successful one",
    ("TestEveryResultAnError", "test_sends_tool_errors_as_errors"): "successful tool result was sent marked",
    ("TestDropsResultImagesSilently", "test_sends_tool_result_images"): "neither sent nor reported left out",
    ("TestKeyInOtherHeader", "test_sends_the_credential_only_in_its_header"): "besides 'authorization'",
    ("TestKeyInQuery", "test_sends_the_credential_only_in_its_header"): "sent in the URL",
    ("TestKeyInBody", "test_sends_the_credential_only_in_its_header"): "sent in the body",
    ("TestKeyOnErrorAttribute", "test_errors_are_classified[error_auth]"): "(ProviderError.request_headers",
    ("TestKeyDeepOnError", "test_errors_are_classified[error_auth]"): "kept on the error (ProviderError.request.sent",
    ("TestDropsReasoningText", "test_reasoning_text_reaches_the_answer"): "did not reach the answer",
    ("TestFilterAsStop", "test_a_filtered_answer_finishes_as_the_api_says"): "finished 'stop', not 'content_filter'",
    ("TestToolSchemaLoosened", "test_sends_every_tool_whole"): "no longer required",
    ("TestOnlyFirstToolDescribed", "test_sends_every_tool_whole"): "the tool 'clock_marker_2291': its description",
    ("TestPropertyDescriptionsDropped", "test_sends_every_tool_whole"): "property 'city': description",
    ("TestPropertyTypeChanged", "test_sends_every_tool_whole"): "type 'string' was sent as 'number'",
    ("TestOutputSchemaLoosened", "test_sends_the_output_schema"): "additionalProperties false was sent as True",
    ("TestOutputSchemaNotStrict", "test_sends_the_output_schema"): "strict: false",
    ("TestOutputSchemaRequiredDropped", "test_sends_the_output_schema"): "no longer required",
    ("TestTextPartsReversed", "test_sends_every_text_part"): "second text part was sent before the first",
    ("TestOnlyFirstTextPart", "test_sends_every_text_part"): "second text part of the user message was not sent",
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
