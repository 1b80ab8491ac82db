"""The commands the celery runner prints work as printed: a composition path with spaces is quoted
for the shell (issue 18)."""

from __future__ import annotations

import asyncio
import shlex

import pytest
from seamkit.testing import MemoryStore


def test_a_pending_continuations_wait_command_quotes_the_agent_file() -> None:
    from seamkit_celery.pending import ContinuationPending, claim

    async def go() -> str:
        store = MemoryStore()
        await claim(store, "run_1", 3, "approve call_0_0", agent_file="my agents/a.yaml")
        with pytest.raises(ContinuationPending) as caught:
            await claim(store, "run_1", 3, "approve call_0_0", agent_file="my agents/a.yaml")
        return str(caught.value)

    message = asyncio.run(go())
    command = message.split("wait for it: ", 1)[1].split(" (a continuation", 1)[0]
    assert shlex.split(command) == ["seamkit", "runs", "wait", "run_1", "--agent", "my agents/a.yaml"], message
