"""Fixtures of the seamkit-celery tests: ``env``, the test's subprocess environment (plugins, Redis
as broker and store, a key prefix of its own); every worker it started is killed after the test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery_testlib import Env, plugin_paths


@pytest.fixture(scope="session")
def celery_plugin_paths(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return plugin_paths(tmp_path_factory.mktemp("celery-plugins"))


@pytest.fixture
def env(celery_plugin_paths: list[Path], tmp_path: Path, redis_url: str) -> Iterator[Env]:
    e = Env(celery_plugin_paths, tmp_path, redis_url, f"ct-{uuid.uuid4().hex[:10]}")
    yield e
    e.stop_all()
