"""``seamkit ask``: streamed text, --schema, --json, limits, options, exit codes and errors.

Happy paths and usage errors run the real entry point in a subprocess (``cli`` fixture, the
``scripted`` provider); failures that need a fake provider run ``main()`` in process with the
provider registered through the ``register_plugin`` fixture."""

from __future__ import annotations

import asyncio
import json
import re
import types
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, SecretStr
from seamkit._accumulate import collect_result
from seamkit._cli import main as cli_main
from seamkit._hookspecs import hookimpl
from seamkit._pricing import Price
from seamkit.errors import FailureClass, ProviderError, UnsupportedFeature
from seamkit.values import ChatRequest, Delta, LLMResult, Usage

SECRET = "sk-cli-SECRET-abcdef0123456789"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}


def turns(*texts: str) -> str:
    return "turns=" + json.dumps(list(texts))


# -- subprocess: the real entry point --------------------------------------------------------------


def test_text_streams_to_stdout_and_the_summary_goes_to_stderr(cli: Any) -> None:
    r = cli("ask", "Say hello", "--model", "scripted:demo", "--option", turns("Hello there, friend."))
    assert r.returncode == 0, r
    assert r.stdout == "Hello there, friend.\n"
    assert re.fullmatch(r"ask call_[0-9a-f]{32}: ok, tokens 0 in / 0 out, 1 request, cost local\n", r.stderr), r


def test_schema_prints_only_the_validated_value_after_a_corrective_turn(cli: Any, tmp_path: Path) -> None:
    schema = tmp_path / "answer.json"
    schema.write_text(json.dumps(SCHEMA))
    r = cli("ask", "2 + 3?", "-m", "scripted:demo", "--schema", str(schema),
            "--option", turns("It is five.", '{"answer": 5}'))
    assert r.returncode == 0, r
    assert r.stdout == '{\n  "answer": 5\n}\n'
    assert ": ok, tokens 0 in / 0 out, 2 requests" in r.stderr


def test_json_prints_the_answer_as_one_object(cli: Any) -> None:
    r = cli("ask", "hi", "--model", "scripted:demo", "--json", "--max-tokens", "12",
            "--system", "Be brief.", "--option", turns("Hi!"))
    assert r.returncode == 0, r
    assert r.stderr == ""
    out = json.loads(r.stdout)
    assert out["outcome"] == "ok" and out["value"] == "Hi!" and out["text"] == "Hi!"
    assert out["failure"] is None
    assert out["usage"]["requests"] == 1 and out["cost"] == "0" and out["cost_source"] == "local"
    assert out["settings"]["model"] == "demo" and out["settings"]["max_tokens"] == 12
    assert [m["role"] for m in out["transcript"]] == ["system", "user", "assistant"]
    assert out["session"] == {
        "binding": {"provider": "scripted", "model": "demo", "credential": None,
                    "options": {"turns": ["Hi!"]}},
        "messages": 3,
    }
    assert out["call_id"].startswith("call_")


def test_prompt_from_stdin(cli: Any) -> None:
    r = cli("ask", "-", "--model", "scripted:demo", "--option", turns("read it"), input="the prompt\n")
    assert r.returncode == 0 and r.stdout == "read it\n", r


def test_timeout_is_a_failed_call(cli: Any) -> None:
    r = cli("ask", "hi", "--model", "scripted:demo", "--option", turns("late"), "--option", "delay=5",
            "--timeout", "0.3")
    assert r.returncode == 1, r
    assert r.stdout == ""
    last = r.stderr.splitlines()[-1]
    assert last == "seamkit: error: timeout: Timeout: the call did not finish within wall_clock_s=0.3", r
    assert "Traceback" not in r.stderr


def test_unknown_provider_suggests_the_close_name(cli: Any) -> None:
    r = cli("ask", "hi", "--model", "scriptd:demo")
    assert r.returncode == 2, r
    assert "no provider named 'scriptd'; did you mean 'scripted'?" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


@pytest.mark.parametrize("model", [":demo", "scripted:", "Scripted:demo", "Scripted", " "])
def test_bad_model_format_is_a_usage_error(cli: Any, model: str) -> None:
    r = cli("ask", "hi", "--model", model)
    assert r.returncode == 2, r
    assert r.stderr.startswith("seamkit: error: --model: "), r
    assert "Traceback" not in r.stderr


def test_missing_schema_file(cli: Any) -> None:
    r = cli("ask", "hi", "--model", "scripted:demo", "--schema", "nope.json", "--option", turns("x"))
    assert r.returncode == 2, r
    assert r.stderr == "seamkit: error: no such file: nope.json\n"


def test_schema_file_that_is_not_json(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "object",\n  "properties": }\n')
    r = cli("ask", "hi", "--model", "scripted:demo", "--schema", str(bad), "--option", turns("x"))
    assert r.returncode == 2, r
    assert f"--schema {bad}: not valid JSON: Expecting value (line 2, column 17)" in r.stderr, r


def test_schema_file_that_is_not_a_json_schema(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "objekt"}')
    r = cli("ask", "hi", "--model", "scripted:demo", "--schema", str(bad), "--option", turns("x"))
    assert r.returncode == 2, r
    assert "invalid output JSON Schema" in r.stderr and "Traceback" not in r.stderr


def test_an_option_the_provider_refuses_is_a_config_error(cli: Any) -> None:
    r = cli("ask", "hi", "--model", "scripted:demo", "--option", turns("x"), "--option", "tunrs=1")
    assert r.returncode == 2, r
    assert "scripted.tunrs: unknown key 'tunrs' for provider 'scripted'; did you mean 'turns'? (allowed: " in r.stderr
    assert "Extra inputs" not in r.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--max-cost", "abc"], "expected a USD amount"),
    (["--max-cost", "0"], "greater than 0"),
    (["--timeout", "-1"], "positive number of seconds"),
    (["--max-tokens", "0"], "at least 1"),
    (["--option", "novalue"], "expected KEY=VALUE"),
    (["--option", "model=x"], "--model PROVIDER:MODEL"),
])
def test_bad_arguments_are_usage_errors(cli: Any, args: list[str], message: str) -> None:
    r = cli("ask", "hi", "--model", "scripted:demo", *args)
    assert r.returncode == 2, r
    assert message in r.stderr and "Traceback" not in r.stderr


def test_empty_prompt_is_a_usage_error(cli: Any) -> None:
    r = cli("ask", "  ", "--model", "scripted:demo")
    assert r.returncode == 2 and r.stderr == "seamkit: error: the prompt is empty\n", r


# -- in process: a fake provider that can fail, is priced and records its requests -----------------


class LeakyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str
    api_key: SecretStr | None = None
    fail: str | None = None


class FakeProvider:
    provider = "fakecli"
    price = Price(Decimal("2.50"), Decimal("10.00"))
    requests: ClassVar[list[ChatRequest]] = []

    def __init__(self, cfg: LeakyConfig) -> None:
        self.cfg = cfg
        self.model = cfg.model

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        FakeProvider.requests.append(request)
        await asyncio.sleep(0)
        if self.cfg.fail == "auth":
            key = self.cfg.api_key.get_secret_value() if self.cfg.api_key else "none"
            raise ProviderError(f"Incorrect API key provided: {key}", FailureClass.AUTHENTICATION,
                                provider="fakecli", status=401)
        if self.cfg.fail == "capability":
            raise UnsupportedFeature("temperature is not supported by this model", provider="fakecli",
                                  model=self.model, feature="temperature")
        yield Delta(text="not json")
        if self.cfg.fail == "midstream":
            raise ProviderError("the stream ended without its terminal event", FailureClass.SERVER_ERROR,
                                provider="fakecli")
        yield Delta(usage=Usage(10, 5, requests=1, cost=Decimal("0.000075"), cost_source="estimated"),
                    finish_reason="length" if self.cfg.fail == "length" else "stop")

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)


@pytest.fixture
def fakecli(register_plugin: Callable[..., Any]) -> type[FakeProvider]:
    @hookimpl
    def seamkit_register_providers(register: Any) -> None:
        register("fakecli", FakeProvider, config=LeakyConfig)

    FakeProvider.requests = []
    register_plugin(types.SimpleNamespace(seamkit_register_providers=seamkit_register_providers), name="fakecli-p")
    return FakeProvider


def test_provider_failure_is_one_classified_line_and_exit_1(fakecli: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main.main(["ask", "hi", "--model", "fakecli:m1", "--option", "fail=auth",
                        "--option", f"api_key={SECRET}"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert out == ""
    lines = err.splitlines()
    assert lines[-1] == ("seamkit: error: failed [authentication]: ProviderError: fakecli: authentication: "
                         "Incorrect API key provided: ***")
    assert SECRET not in out + err and "Traceback" not in err


def test_provider_failure_with_json(fakecli: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main.main(["ask", "hi", "--model", "fakecli:m1", "--json", "--option", "fail=auth",
                        "--option", f"api_key={SECRET}"])
    out, err = capsys.readouterr()
    assert rc == 1
    answer = json.loads(out)
    assert answer["outcome"] == "failed"
    assert answer["failure"]["failure_class"] == "authentication"
    assert answer["failure"]["type"] == "ProviderError"
    assert answer["session"]["binding"]["options"]["api_key"] == "***"
    assert SECRET not in out + err


def test_max_tokens_reaches_the_request(fakecli: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main.main(["ask", "hi", "--model", "fakecli:m1", "--max-tokens", "33", "--temperature", "0.5"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert out == "not json\n"
    assert (fakecli.requests[0].max_tokens, fakecli.requests[0].temperature) == (33, 0.5)
    assert "cost ~$0.000075 (estimated)" in err


def test_max_cost_refusing_the_corrective_turn_is_budget_exceeded(
    fakecli: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SCHEMA))
    rc = cli_main.main(["ask", "hi", "--model", "fakecli:m1", "--schema", str(schema),
                        "--max-cost", "0.00005", "--max-tokens", "10"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert out == ""
    assert len(fakecli.requests) == 1  # the corrective turn was never sent
    assert err.splitlines()[-1].startswith("seamkit: error: budget_exceeded: BudgetExceeded: budget: ")


def test_capability_error_is_a_usage_error_exit_2(fakecli: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main.main(["ask", "hi", "--model", "fakecli:m1", "--option", "fail=capability", "--temperature", "0"])
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert out == ""
    assert err == ("seamkit: error: UnsupportedFeature: fakecli:m1: temperature is not supported by this model\n")


def test_a_request_that_failed_mid_stream_is_counted(fakecli: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main.main(["ask", "hi", "--model", "fakecli:m1", "--option", "fail=midstream"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert out == "not json\n"
    assert re.search(r": failed, tokens unknown, 1 request, cost unknown\n", err), err
    assert "0 in / 0 out" not in err


def test_a_length_cut_answer_is_ok_with_a_warning(fakecli: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main.main(["ask", "hi", "--model", "fakecli:m1", "--option", "fail=length", "--max-tokens", "2"])
    out, err = capsys.readouterr()
    assert rc == 0
    assert out == "not json\n"
    assert "seamkit: warning: the answer was cut off at max_tokens (finish_reason length)\n" in err


def test_an_unknown_option_gets_a_did_you_mean_and_the_allowed_keys(cli: Any) -> None:
    r = cli("ask", "hi", "--model", "scripted:demo", "--option", turns("x"), "--option", "delya=1")
    assert r.returncode == 2, r
    assert "scripted.delya: unknown key 'delya' for provider 'scripted'; did you mean 'delay'" in r.stderr
    assert "(allowed: turns, delay, " in r.stderr


def test_max_cost_help_states_the_admission_rule(cli: Any) -> None:
    r = cli("ask", "--help")
    assert r.returncode == 0, r
    text = " ".join(r.stdout.split())
    assert "admitted while spend plus reservations is under it" in text
    assert "overshot by at most one request's reservation" in text
    assert "hard" not in text
