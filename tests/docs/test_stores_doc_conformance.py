"""The example store of docs/plugins/stores.md passes both conformance suites, durability checks
included, as the page says. Its first ``python`` block (up to the demo) is written to a module in
a temporary directory that is put on ``sys.path``, so the suites' child processes (which inherit
``sys.path``) can build it as ``"jsonfile_doc:JsonFileStore"``."""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from docs_testlib import fenced_blocks
from pytest_seamkit.conformance import CheckpointConformance, StoreConformance

PAGE = Path(__file__).resolve().parents[2] / "docs" / "plugins" / "stores.md"
_BLOCK = next(b for b in fenced_blocks(PAGE) if b.info.split() == ["python"])
_HOME = Path(tempfile.mkdtemp(prefix="seamkit-stores-doc-"))
atexit.register(shutil.rmtree, _HOME, True)
(_HOME / "jsonfile_doc.py").write_text(_BLOCK.body.split("# -- try it")[0], encoding="utf-8")
sys.path.insert(0, str(_HOME))
from jsonfile_doc import JsonFileStore  # noqa: E402


def _opener(path: Path) -> Callable[[], Any]:
    return lambda: JsonFileStore(path)


class TestDocStore(StoreConformance):
    @pytest_asyncio.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[Any]:
        backend = JsonFileStore(tmp_path / "db.json")
        yield backend
        await backend.aclose()

    @pytest.fixture
    def open_store(self, tmp_path: Path) -> Callable[[], Any]:
        return _opener(tmp_path / "db.json")

    @pytest.fixture
    def store_component(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return ("jsonfile_doc:JsonFileStore", {"path": str(tmp_path / "db.json")})


class TestDocCheckpoints(CheckpointConformance):
    declared_save_many = False  # the documented store keeps to the required methods
    @pytest_asyncio.fixture
    async def checkpoints(self, tmp_path: Path) -> AsyncIterator[Any]:
        backend = JsonFileStore(tmp_path / "db.json")
        yield backend
        await backend.aclose()

    @pytest.fixture
    def open_checkpoints(self, tmp_path: Path) -> Callable[[], Any]:
        return _opener(tmp_path / "db.json")

    @pytest.fixture
    def checkpoints_component(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return ("jsonfile_doc:JsonFileStore", {"path": str(tmp_path / "db.json")})
