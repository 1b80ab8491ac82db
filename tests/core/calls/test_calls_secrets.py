"""Credentials of ``seamkit.ask``: a ``CredentialRef`` is resolved at dispatch into the provider
config field it names (as ``SecretStr``), and its value never appears in reprs, errors, logs, the
answer, the session or the CLI's JSON form of the answer."""

from __future__ import annotations

import json
import logging
import pickle
import types
from typing import Any

import pytest
from calls_testlib import SECRET, FakeConfig, FakeState, Turn
from pydantic import SecretStr
from seamkit import AskFailed, Binding, CredentialRef, ask
from seamkit._cli.ask_cmd import answer_to_json
from seamkit._hookspecs import hookimpl
from seamkit.errors import ConfigError, FailureClass, PluginError, ProviderError

ENV = "SEAMKIT_TEST_FAKE_KEY"


def everything(answer: Any) -> str:
    """Every textual form of an answer a caller could print, log or store."""
    parts = [repr(answer), str(answer), repr(answer.session), repr(answer.session.binding),
             json.dumps(answer_to_json(answer)), repr(answer.settings), repr(answer.transcript),
             repr(answer.failure), repr(answer.degradations)]
    if answer.failure is not None:
        parts += [answer.failure.message, answer.failure.traceback]
    return "\n".join(parts)


def test_credential_ref_repr_shows_only_its_label() -> None:
    ref = CredentialRef(lambda: SECRET, label="vault:openai")
    assert repr(ref) == "CredentialRef('vault:openai', field='api_key')"
    assert SECRET not in repr(ref) and SECRET not in str(ref)
    b = Binding("fakeprov", "m", credential=ref)
    assert SECRET not in repr(b) and "vault:openai" in repr(b)
    assert repr(CredentialRef.env("OPENAI_API_KEY")) == "CredentialRef('env:OPENAI_API_KEY', field='api_key')"


def test_secret_looking_options_are_masked_in_the_binding_repr() -> None:
    b = Binding("fakeprov", "m", options={"auth_token": SECRET, "headers": {"X-Key": SECRET}, "base_url": "http://h"})
    assert SECRET not in repr(b)
    assert "'base_url': 'http://h'" in repr(b)


async def test_env_credential_is_read_at_dispatch_into_a_secret_str(
    fake: FakeState, monkeypatch: pytest.MonkeyPatch
) -> None:
    binding = Binding("fakeprov", "fake-1", credential=CredentialRef.env(ENV))
    monkeypatch.setenv(ENV, SECRET)  # set after the binding was made: read when the call is dispatched
    fake.script("hello")
    a = await ask(binding, "hi")
    assert a.ok
    key = fake.configs[0].api_key
    assert isinstance(key, SecretStr) and key.get_secret_value() == SECRET
    assert SECRET not in everything(a)
    assert a.session.binding.credential is binding.credential  # the reference, never the value


async def test_the_source_is_called_once_per_call_right_before_the_provider_is_built(fake: FakeState) -> None:
    calls: list[int] = []

    def source() -> str:
        calls.append(len(fake.configs))  # how many providers were built before the value was asked for
        return SECRET

    binding = Binding("fakeprov", "fake-1", credential=CredentialRef(source, label="counter"))
    assert calls == []
    fake.script("a", "b")
    await ask(binding, "one")
    await ask(binding, "two")
    assert calls == [0, 1]


async def test_async_source_and_other_config_field(fake: FakeState) -> None:
    async def source() -> SecretStr:
        return SecretStr("https-token-value-xyz")

    fake.script("ok")
    # a field the provider's config does not have is refused before the source is called
    with pytest.raises(ConfigError):
        await ask(Binding("fakeprov", "m", credential=CredentialRef(source, field="nope")), "hi")
    a = await ask(Binding("fakeprov", "m", credential=CredentialRef(source, label="async")), "hi")
    assert a.ok and fake.configs[-1].api_key is not None
    assert fake.configs[-1].api_key.get_secret_value() == "https-token-value-xyz"


async def test_provider_error_echoing_the_key_is_scrubbed_everywhere(
    fake: FakeState, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def echo(cfg: FakeConfig) -> BaseException:
        assert cfg.api_key is not None
        return ProviderError(f"Incorrect API key provided: {cfg.api_key.get_secret_value()}",
                             FailureClass.AUTHENTICATION, provider="fakeprov", status=401)

    monkeypatch.setenv(ENV, SECRET)
    fake.script(Turn(error=echo))
    caplog.set_level(logging.DEBUG)
    a = await ask(Binding("fakeprov", "fake-1", credential=CredentialRef.env(ENV)), "hi")
    assert a.outcome == "failed"
    assert a.failure is not None and a.failure.failure_class is FailureClass.AUTHENTICATION
    assert "Incorrect API key provided: ***" in a.failure.message
    assert SECRET not in everything(a)
    with pytest.raises(AskFailed) as info:
        a.raise_for_outcome()
    assert SECRET not in str(info.value) and "***" in str(info.value)
    assert "Incorrect API key" in caplog.text  # the failure was logged...
    assert SECRET not in caplog.text  # ...without the key
    assert SECRET not in pickle.dumps(a.failure).decode("latin-1")


async def test_missing_env_credential_is_a_config_error_naming_the_variable(
    fake: FakeState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(ConfigError, match=f"set the environment variable {ENV}"):
        await ask(Binding("fakeprov", "m", credential=CredentialRef.env(ENV)), "hi")
    assert fake.configs == []


async def test_a_raising_source_does_not_leak_its_message(fake: FakeState) -> None:
    def source() -> str:
        raise RuntimeError(f"vault said: {SECRET}")

    with pytest.raises(ConfigError) as info:
        await ask(Binding("fakeprov", "m", credential=CredentialRef(source, label="vault")), "hi")
    assert SECRET not in str(info.value)
    assert "vault" in str(info.value) and "RuntimeError" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


async def test_a_factory_error_echoing_the_key_is_scrubbed(register_plugin: Any) -> None:
    def build(cfg: FakeConfig) -> Any:
        assert cfg.api_key is not None
        raise RuntimeError(f"cannot connect with key {cfg.api_key.get_secret_value()}")

    @hookimpl
    def seamkit_register_providers(register: Any) -> None:
        register("leaky", build, config=FakeConfig)

    register_plugin(types.SimpleNamespace(seamkit_register_providers=seamkit_register_providers), name="leaky-p")
    with pytest.raises(PluginError) as info:
        await ask(Binding("leaky", "m", credential=CredentialRef(lambda: SECRET)), "hi")
    assert SECRET not in str(info.value) and "cannot connect with key ***" in str(info.value)
    assert info.value.__cause__ is None


def test_credential_ref_validates_its_arguments() -> None:
    with pytest.raises(TypeError, match="callable"):
        CredentialRef(SECRET)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="field"):
        CredentialRef(lambda: SECRET, field="api-key")
    with pytest.raises(ValueError):
        CredentialRef.env("")
    with pytest.raises(ValueError, match="credential provides"):
        Binding("fakeprov", "m", credential=CredentialRef(lambda: SECRET), options={"api_key": "x"})


async def test_a_key_given_as_an_option_is_masked_in_errors_too(fake: FakeState) -> None:
    def echo(cfg: FakeConfig) -> BaseException:
        assert cfg.api_key is not None
        return ProviderError(f"bad key {cfg.api_key.get_secret_value()}", FailureClass.AUTHENTICATION)

    fake.script(Turn(error=echo))
    a = await ask(Binding("fakeprov", "m", options={"api_key": SECRET}), "hi")
    assert a.failure is not None and a.failure.message.endswith("bad key ***")
    assert SECRET not in everything(a)
