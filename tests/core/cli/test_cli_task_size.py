"""A task larger than the model's context window is refused before anything is sent or stored:
``TaskTooLarge`` from the Python API, exit 2 from the CLI; a model that declares no window has a
cap (``MAX_TASK_TOKENS``)."""

from __future__ import annotations

import json

import pytest
from cli_testlib import CLI
from seamkit import Agent
from seamkit._agent.task_size import MAX_TASK_TOKENS, check_task_size
from seamkit._durability.checkpointer import Checkpointer
from seamkit.errors import SeamkitError, TaskTooLarge
from seamkit.testing import MemoryStore, ScriptedModel
from seamkit.values import Message

THIRTY_MB = "word " * 6_000_000


class WindowedModel(ScriptedModel):
    """A scripted model that declares a context window of 1,000 tokens."""

    context_window = 1000


async def test_a_task_over_the_window_is_refused_before_it_is_stored() -> None:
    store = MemoryStore()
    agent = Agent(WindowedModel(["ok"]), checkpointer=Checkpointer(store))
    with pytest.raises(TaskTooLarge) as info:
        await agent.run("many words " * 2000)
    assert isinstance(info.value, SeamkitError)
    message = str(info.value)
    assert "context window of 1,000 tokens (context_window)" in message and "22,000 characters" in message
    assert "nothing was sent or stored" in message
    assert await agent.checkpointer.list_runs() == []
    assert (await agent.run("a short task")).output == "ok"  # one that fits runs


async def test_stream_refuses_it_too() -> None:
    agent = Agent(WindowedModel(["ok"]))
    with pytest.raises(TaskTooLarge):
        async for _ in agent.stream([Message.user("x " * 10_000)]):
            pass


def test_a_model_without_a_window_has_a_cap() -> None:
    with pytest.raises(TaskTooLarge) as info:
        check_task_size([Message.user(THIRTY_MB)], ScriptedModel(["ok"]))
    assert f"over {MAX_TASK_TOKENS:,} tokens" in str(info.value)
    assert "declares no context window" in str(info.value)
    check_task_size([Message.user("word " * 10_000)], ScriptedModel(["ok"]))  # a large task that fits: fine


def test_a_near_fit_is_left_to_the_provider() -> None:
    # within the estimator's margin of the window: not refused (the provider counts exactly)
    check_task_size([Message.user("word " * 1050)], WindowedModel(["ok"]))


@pytest.mark.parametrize(("model", "expected"), [
    ("{use: llamacpp}", "over the model's context window of 2,048 tokens (n_ctx)"),
    ("{use: scripted, turns: [ok]}", f"over {MAX_TASK_TOKENS:,} tokens"),
])
def test_the_cli_refuses_a_30_mb_task_with_exit_2_and_stores_nothing(cli: CLI, write, model: str,
                                                                      expected: str) -> None:
    path = write("big.yaml", f"seamkit: 1\nagent:\n  model: {model}\n  checkpoints: {{use: sqlite, path: big.db}}\n")
    r = cli("run", str(path), "-", input=THIRTY_MB)
    assert r.returncode == 2, r.stderr
    assert "TaskTooLarge: the task is too large: about" in r.stderr and "30,000,000 characters" in r.stderr
    assert expected in r.stderr and "Traceback" not in r.stderr
    runs = cli("runs", "list", "--json", "--agent", str(path))
    assert runs.returncode == 0 and json.loads(runs.stdout) == [], runs


def _random(lo: int, hi: int, n: int, seed: int = 7) -> str:
    import random

    rng = random.Random(seed)
    return "".join(chr(rng.randint(lo, hi)) for _ in range(n))


RANDOM_CJK = _random(0x4E00, 0x9FFF, 450)  # 926 Gemma tokens; the estimate says about 269


class CountingModel(ScriptedModel):
    """A scripted model with a window of 256 tokens that counts tokens exactly (here: two per
    character, as a tokenizer that falls back to bytes on rare characters does)."""

    context_window = 256

    def __init__(self, turns: list[str]) -> None:
        super().__init__(turns)
        self.counted: list[str] = []

    def count_tokens(self, text: str) -> int:
        self.counted.append(text)
        return 2 * len(text)


def test_a_task_the_estimate_puts_within_the_window_is_counted_exactly_when_the_model_can() -> None:
    model = CountingModel(["ok"])
    with pytest.raises(TaskTooLarge) as info:
        check_task_size([Message.user(RANDOM_CJK)], model)
    assert info.value.exact and info.value.estimated == 900
    assert "900 tokens by the model's tokenizer (450 characters)" in str(info.value)
    # a task that cannot be over the window (no more bytes than tokens) is not counted at all
    model.counted.clear()
    check_task_size([Message.user("a" * 256)], model)
    assert model.counted == []


def test_a_model_that_cannot_count_leaves_an_underestimated_task_to_the_provider() -> None:
    class Windowed(ScriptedModel):
        context_window = 256

    check_task_size([Message.user(RANDOM_CJK)], Windowed(["ok"]))  # estimated 269: within the margin


def test_a_context_length_failure_is_told_to_start_again_not_to_resume(capsys: pytest.CaptureFixture[str]) -> None:
    from seamkit._cli.commands import _resume_hint, is_context_length
    from seamkit.errors import FailureClass, ProviderError

    too_long = ProviderError("the prompt is 262 tokens", FailureClass.CONTEXT_LENGTH, provider="llamacpp")
    assert is_context_length(too_long) and is_context_length(f"ProviderError: {too_long}")
    assert not is_context_length(ProviderError("x", FailureClass.RATE_LIMITED)) and not is_context_length("boom")
    _resume_hint("run_1", too_long, None)
    err = capsys.readouterr().err
    assert "resuming it would fail the same way" in err and "--allow-finished" not in err
    _resume_hint("run_1", ProviderError("busy", FailureClass.RATE_LIMITED), None)
    assert "--allow-finished" in capsys.readouterr().err


def test_a_failing_exact_count_leaves_the_task_to_the_provider() -> None:
    class Broken(CountingModel):
        def count_tokens(self, text: str) -> int:
            raise RuntimeError("no model file")

    check_task_size([Message.user(RANDOM_CJK)], Broken(["ok"]))


@pytest.mark.slow
def test_a_prompt_the_provider_refuses_as_too_long_is_not_offered_a_resume(cli: CLI, write) -> None:  # type: ignore[no-untyped-def]
    write("l.yaml", "seamkit: 1\nagent:\n  model: {use: llamacpp, n_ctx: 256}\n")
    r = cli("run", "l.yaml", "hello world " * 126)  # 252 tokens: fits the pre-check, not the template
    assert r.returncode == 1, r
    assert "context_length" in r.stderr and "--allow-finished" not in r.stderr, r.stderr
    assert "resuming it would fail the same way: start a new run with a shorter task" in r.stderr
    (row,) = json.loads(cli("runs", "list", "--json").stdout)
    shown = cli("runs", "show", str(row["run_id"])).stdout
    assert "resuming it would fail the same way" in shown and "--allow-finished" not in shown, shown
