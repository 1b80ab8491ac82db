"""The retrieval example over docs/ (examples/docs_retrieval.py), offline: the real MiniLM
embeddings, the real sqlite-vec store, the agent's request grounded with cited sections."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from seamkit._accumulate import collect_result
from seamkit._grounding import citation_id
from seamkit.testing import block_network
from seamkit.values import ChatRequest, Delta, LLMResult, Scope, Usage

pytestmark = pytest.mark.slow

spec = importlib.util.spec_from_file_location(
    "docs_retrieval", Path(__file__).resolve().parents[2] / "examples" / "docs_retrieval.py")
assert spec is not None and spec.loader is not None
example: Any = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)


class CitingModel:
    """Answers by citing the first grounding id it was shown (or ``cite`` when given)."""

    provider = "fake"
    model = "citing"

    def __init__(self, cite: str | None = None) -> None:
        self.cite = cite
        self.requests: list[ChatRequest] = []

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        self.requests.append(request)
        shown = re.findall(r"^\[(s[0-9a-f]{6})\]", request.messages[0].text, re.M)
        yield Delta(text=f"Use seamkit resume RUN_ID --approve CALL_ID [{self.cite or shown[0]}].")
        yield Delta(finish_reason="stop", usage=Usage(input_tokens=1, output_tokens=1, requests=1))

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def memory(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with block_network():
        mem, n = await example.build_memory(tmp_path_factory.mktemp("vec") / "vectors.db")
    assert n > 20, "every docs/*.md section is indexed"
    yield mem
    await mem.vectors.aclose()


@pytest.mark.asyncio(loop_scope="module")
async def test_the_nearest_sections_answer_the_question(memory: Any) -> None:
    items = await memory.retrieve("How do I resume a suspended run after approving a tool call?", scope=Scope(), k=3)
    assert items[0].source.split("#")[0] == "docs/durable-runs.md"
    assert all(i.citation_id == citation_id(i.source) and i.origin == "recorded" for i in items)
    assert items[0].score is not None and items[0].score >= items[-1].score  # type: ignore[operator]
    # another tenant sees nothing of this index
    assert await memory.retrieve("resume a run", scope=Scope(tenant="other"), k=3) == ()


@pytest.mark.asyncio(loop_scope="module")
async def test_the_agent_request_is_grounded_and_its_citations_checked(memory: Any) -> None:
    model = CitingModel()
    result = await example.docs_agent(model, memory).run("How do I resume a suspended run?")
    system = model.requests[0].messages[0].text
    lines = re.findall(r"^\[(s[0-9a-f]{6})\] (docs/[\w.-]+\.md[^:]*):", system, re.M)
    assert len(lines) == 4 and any(src.startswith("docs/durable-runs.md") for _, src in lines)
    assert all(cid == citation_id(src) for cid, src in lines)
    assert f"[{lines[0][0]}]" in str(result.output)
    assert not any("citation" in w for w in result.warnings)
    # an answer citing an id it was never shown is reported
    bad = await example.docs_agent(CitingModel(cite="s000000"), memory).run("How do I resume a suspended run?")
    assert any("s000000" in w for w in bad.warnings)
