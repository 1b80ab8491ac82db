"""The warnings the llamacpp provider gives about a schema read the same on every turn of a run
(the tools' and the output's own locations, not the decoding schema's, which changes with the
tool choice and the tools offered), so the agent loop shows them once per run: a ``read_file``
agent was warned about ``max_bytes``' ``minimum`` once per decoding schema, and the location
(``#/anyOf/1/properties/arguments/...``) named the decoding schema, which the user never wrote."""

from __future__ import annotations

from pathlib import Path

import pytest
from seamkit.values import ToolSchema
from seamkit_llamacpp.grammar import located, relax, unenforced

READ = ToolSchema(
    "read_file", "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"},
                                       "max_bytes": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}},
     "required": ["path"]},
    False,
)
OUTPUT = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]+$"},
                                           "n": {"type": "integer", "maximum": 5}}}


def test_locations_are_the_same_whatever_the_tool_choice() -> None:
    want = ["'minimum' at #/properties/max_bytes/anyOf/0 in read_file's parameters"]
    assert located([READ], "required", None, unenforced) == want
    assert located([READ], "read_file", None, unenforced) == want
    assert located([READ], "auto", None, unenforced) == want
    # with an output schema: the answer's keywords too, where the reply may be the answer
    assert located([READ], "auto", OUTPUT, unenforced) == [*want, "'maximum' at #/properties/n in the output schema"]
    assert located([READ], "required", OUTPUT, unenforced) == want
    assert located([READ], "none", OUTPUT, unenforced) == ["'maximum' at #/properties/n in the output schema"]
    assert located([], "auto", OUTPUT, lambda s: relax(s)[1]) == ["#/properties/code in the output schema"]


@pytest.mark.slow
async def test_a_read_file_agent_is_warned_once_per_run(tmp_path: Path) -> None:
    from seamkit import Agent
    from seamkit_llamacpp.config import LlamaCppConfig
    from seamkit_llamacpp.provider import LlamaCppProvider
    from seamkit_tools_basic.calculator import build_calculator
    from seamkit_tools_basic.config import ReadFileConfig
    from seamkit_tools_basic.files import build_read_file

    (tmp_path / "a.txt").write_text("hello")
    agent = Agent(
        LlamaCppProvider(LlamaCppConfig(threads=2)),
        prompt='Read a.txt. Call: {"name": "read_file", "arguments": {"path": "a.txt"}}',
        # forced to read_file first (the only tool in the first decoding schema), then offered both
        # (read_file second): the decoding schemas place max_bytes differently
        tools=[build_calculator(), build_read_file(ReadFileConfig(root=tmp_path))],
        tool_choice="read_file", max_steps=3, temperature=0, seed=42, max_tokens=48,
    )
    result = await agent.run("What does a.txt say?")
    assert result.usage.requests >= 2  # a forced call, then an auto turn
    about = [w for w in result.warnings if "max_bytes" in w]
    assert about == ["llamacpp: 'minimum' at #/properties/max_bytes/anyOf/0 in read_file's parameters is not "
                     "enforced while decoding (llama-cpp-python's grammar converter ignores it); the reply is "
                     "checked against the full schema afterwards"], result.warnings
