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
